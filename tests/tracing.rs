//! The runtime's `tracing` spans: runs, steps, nodes, model and tool calls,
//! with their thread id, step, node and duration.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agent_state::agent::{create_agent, input, FnTool, ScriptedModel, ToolRuntime};
use agent_state::base::MessagesState;
use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{Input, StateGraph, END, START};
use agent_state::schemars::JsonSchema;
use agent_state::{ai, AgentState, ToolCall};
use serde::Deserialize;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// A closed span: its name, its parent's name, its fields.
#[derive(Debug, Clone)]
struct Closed {
    name: &'static str,
    parent: Option<&'static str>,
    fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Closed>>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        ctx.span(id).unwrap().extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let mut ext = span.extensions_mut();
        values.record(ext.get_mut::<Fields>().unwrap());
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        let fields = span.extensions().get::<Fields>().unwrap().0.clone();
        self.0.lock().unwrap().push(Closed {
            name: span.name(),
            parent: span.parent().map(|p| p.name()),
            fields,
        });
    }
}

fn recorded(run: impl FnOnce()) -> Vec<Closed> {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    tracing::subscriber::with_default(subscriber, run);
    let spans = recorder.0.lock().unwrap().clone();
    spans
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Count {
    n: u32,
}

#[test]
fn a_run_its_steps_and_its_nodes_are_spans() {
    let graph = StateGraph::<Count>::new()
        .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
        .add_node("async_inc", |s: Arc<Count>| async move {
            CountUpdate::new().n(s.n + 1)
        })
        .add_edge(START, "inc")
        .add_edge("inc", "async_inc")
        .add_conditional_edges("async_inc", |s: &Count| if s.n < 4 { "inc" } else { END })
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let spans = recorded(|| {
        block_on(
            graph
                .run(Input::Update(CountUpdate::new()))
                .on_thread(&saver, "traced"),
        )
        .unwrap();
    });
    let run: Vec<_> = spans.iter().filter(|s| s.name == "graph.run").collect();
    assert_eq!(run.len(), 1);
    assert_eq!(run[0].fields["thread_id"], "traced");
    assert_eq!(run[0].fields["steps"], "5");
    assert!(run[0].fields.contains_key("duration_us"));
    let steps: Vec<_> = spans.iter().filter(|s| s.name == "graph.step").collect();
    let described: Vec<(String, String)> = steps
        .iter()
        .map(|s| (s.fields["step"].clone(), s.fields["nodes"].clone()))
        .collect();
    assert_eq!(
        described,
        [
            ("1", "inc"),
            ("2", "async_inc"),
            ("3", "inc"),
            ("4", "async_inc")
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert!(steps
        .iter()
        .all(|s| s.parent == Some("graph.run") && s.fields.contains_key("duration_us")));
    let nodes: Vec<_> = spans.iter().filter(|s| s.name == "graph.node").collect();
    assert_eq!(nodes.len(), 4);
    for node in nodes {
        assert_eq!(node.parent, Some("graph.step"), "{node:?}");
        assert!(node.fields.contains_key("duration_us"), "{node:?}");
    }
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agent_state::schemars")]
struct Echo {
    text: String,
}

#[test]
fn model_and_tool_calls_are_spans_inside_their_nodes() {
    let args = serde_json::json!({"text": "hi"})
        .as_object()
        .cloned()
        .unwrap();
    let model = ScriptedModel::new([
        ai("").with_tool_call(ToolCall::new("echo", args, "call-1")),
        ai("done"),
    ]);
    let echo = FnTool::sync("echo", "Echoes", |a: Echo, _: &ToolRuntime<Chat>| a.text);
    let agent = create_agent(model).tool(echo).compile().unwrap();
    let spans = recorded(|| {
        block_on(agent.run(input::<Chat>("go"))).unwrap();
    });
    let models: Vec<_> = spans.iter().filter(|s| s.name == "agent.model").collect();
    assert_eq!(models.len(), 2);
    assert!(models.iter().all(|s| s.parent == Some("graph.node")));
    let tool = spans.iter().find(|s| s.name == "agent.tool").unwrap();
    assert_eq!(tool.fields["tool"], "echo");
    assert_eq!(tool.fields["call_id"], "call-1");
    assert!(tool.fields.contains_key("duration_us"));
    assert!(spans
        .iter()
        .all(|s| s.name != "graph.run" || !s.fields.contains_key("thread_id")));
}

#[test]
fn without_a_subscriber_nothing_is_recorded() {
    let graph = StateGraph::<Count>::new()
        .add_node("inc", |s: &Count| CountUpdate::new().n(s.n + 1))
        .add_edge(START, "inc")
        .compile()
        .unwrap();
    assert!(tracing::Span::current().is_none());
    let out = block_on(graph.run(Input::Update(CountUpdate::new()))).unwrap();
    assert_eq!(out.state.n, 1);
}
