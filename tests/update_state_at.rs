//! `update_state` at an older checkpoint forks the thread there, as
//! LangGraph's `update_state` with a `checkpoint_id` in the config does.

use agent_state::checkpoint::{block_on, CheckpointId, MemoryCheckpointer, Source};
use agent_state::graph::{Graph, GraphError, Input, StateGraph, END, START};
use agent_state::AgentState;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Count {
    n: u32,
    #[reducer(append)]
    log: Vec<String>,
}

fn log(entry: &str) -> CountUpdate {
    CountUpdate::new().log(vec![entry.to_owned()])
}

/// a (n + 1, logs "a") → b (logs "b") → END.
fn a_then_b() -> Graph<Count> {
    StateGraph::<Count>::new()
        .add_node("a", |s: &Count| log("a").n(s.n + 1))
        .add_node("b", |_: &Count| log("b"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .compile()
        .unwrap()
}

/// The history newest first as `step source values next parent-step`.
fn history(graph: &Graph<Count>, saver: &MemoryCheckpointer) -> Vec<String> {
    let snapshots = block_on(graph.state_history(saver, "t", 100)).unwrap();
    let step_of = |id: Option<CheckpointId>| {
        snapshots
            .iter()
            .map(|s| s.checkpoint.as_ref().unwrap())
            .find(|m| Some(m.id) == id)
            .map_or("-".to_owned(), |m| {
                format!("{}{}", m.step, &m.source.as_str()[..1])
            })
    };
    snapshots
        .iter()
        .map(|s| {
            let meta = s.checkpoint.as_ref().unwrap();
            let (log, n) = (s.values.log.join(","), s.values.n);
            let parent = step_of(meta.parent);
            format!(
                "{} {} [{log}] n={n} {:?} <- {parent}",
                meta.step,
                meta.source.as_str(),
                s.next
            )
        })
        .collect()
}

fn checkpoint_at(graph: &Graph<Count>, saver: &MemoryCheckpointer, step: i64) -> CheckpointId {
    block_on(graph.state_history(saver, "t", 100))
        .unwrap()
        .into_iter()
        .filter_map(|s| s.checkpoint)
        .find(|m| m.step == step && m.source == Source::Loop)
        .unwrap()
        .id
}

#[test]
fn an_update_at_an_older_checkpoint_forks_the_thread_there() {
    // langgraph 1.2.22, InMemorySaver, the same a -> b graph, after
    // `invoke({"log": ["in"]})`, `update_state(<config of step 1>, {"log":
    // ["edit"]}, as_node="a")` answers a new checkpoint: source update,
    // step 2, parent step 1, next ('b',), values log ['in', 'a', 'edit'];
    // `invoke(None)` then runs b from it, and the history (newest first):
    //   3 loop   ['in', 'a', 'edit', 'b']  ()      <- 2 update
    //   2 update ['in', 'a', 'edit']       ('b',)  <- 1 loop
    //   2 loop   ['in', 'a', 'b']          ()      <- 1 loop
    //   1 loop   ['in', 'a']               ('b',)  <- 0 loop
    //   0 loop   ['in']                    ('a',)  <- -1 input
    //  -1 input  []                        ('__start__',)
    let graph = a_then_b();
    let saver = MemoryCheckpointer::new();
    block_on(graph.run(Input::Update(log("in"))).on_thread(&saver, "t")).unwrap();
    let after_a = checkpoint_at(&graph, &saver, 1);
    let meta =
        block_on(graph.update_state_at(&saver, "t", after_a, log("edit"), Some("a"))).unwrap();
    assert_eq!(
        (meta.step, meta.source, meta.parent),
        (2, Source::Update, Some(after_a))
    );
    let head = block_on(graph.get_state(&saver, "t")).unwrap();
    assert_eq!(head.values.log, ["in", "a", "edit"]);
    assert_eq!(head.next, ["b"]);

    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "t")).unwrap();
    assert_eq!(out.state.log, ["in", "a", "edit", "b"]);
    assert_eq!(
        history(&graph, &saver),
        [
            r#"3 loop [in,a,edit,b] n=1 [] <- 2u"#,
            r#"2 update [in,a,edit] n=1 ["b"] <- 1l"#,
            r#"2 loop [in,a,b] n=1 [] <- 1l"#,
            r#"1 loop [in,a] n=1 ["b"] <- 0l"#,
            r#"0 loop [in] n=0 ["a"] <- -1i"#,
            r#"-1 input [] n=0 ["__start__"] <- -"#,
        ]
    );
}

#[test]
fn without_a_node_the_update_writes_as_the_checkpoints_writer() {
    // langgraph 1.2.22: `update_state(<config of step 0>, {"n": 5})` after
    // the run above: step 1, source update, next ('a',) (step 0 was the
    // input's, so the update routes as the input does), values n 5.
    let graph = a_then_b();
    let saver = MemoryCheckpointer::new();
    block_on(graph.run(Input::Update(log("in"))).on_thread(&saver, "t")).unwrap();
    let input_step = checkpoint_at(&graph, &saver, 0);
    let update = CountUpdate::new().n(5);
    let meta = block_on(graph.update_state_at(&saver, "t", input_step, update, None)).unwrap();
    assert_eq!((meta.step, meta.source), (1, Source::Update));
    let head = block_on(graph.get_state(&saver, "t")).unwrap();
    assert_eq!(
        (head.values.n, head.next.clone()),
        (5, vec!["a".to_owned()])
    );
    let out = block_on(graph.run(Input::Resume).on_thread(&saver, "t")).unwrap();
    assert_eq!(
        (out.state.n, out.state.log.clone()),
        (6, vec!["in".into(), "a".into(), "b".into()])
    );
}

#[test]
fn a_refused_update_at_an_older_checkpoint_stores_nothing() {
    let graph = a_then_b();
    let saver = MemoryCheckpointer::new();
    block_on(graph.run(Input::Update(log("in"))).on_thread(&saver, "t")).unwrap();
    let before = history(&graph, &saver);
    let after_a = checkpoint_at(&graph, &saver, 1);
    let err =
        block_on(graph.update_state_at(&saver, "t", after_a, log("x"), Some("zz"))).unwrap_err();
    assert!(matches!(err, GraphError::UnknownAsNode { .. }), "{err}");
    // An unknown checkpoint is the store's error.
    let unknown = CheckpointId(u64::MAX);
    let err =
        block_on(graph.update_state_at(&saver, "t", unknown, log("x"), Some("a"))).unwrap_err();
    assert!(matches!(err, GraphError::Checkpoint(_)), "{err}");
    assert_eq!(history(&graph, &saver), before, "nothing stored");
}
