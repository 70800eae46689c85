//! The debate server as users run it, over LangGraph's Agent Server API:
//! a debate streamed live and stored, its input refused out of bounds,
//! the server killed (SIGKILL) mid-debate and started again, the approval
//! graph's interrupt answered across a restart, the deep agent
//! answering, and the page.

#[allow(dead_code)]
#[path = "../../../tests/support/pg.rs"]
mod pg;
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_state::checkpoint::MemoryCheckpointer;
use agent_state::graph::Input;
use agent_state::AgentState;
use debate_server::debate::{build_graph, DebateState, ScriptedModel};
use serde_json::{json, Value};
use support::{names, of, Events, Server, TempDir};

/// The transcript of a debate on `topic` run to its end in memory, as
/// (speaker, text) pairs.
async fn expected(topic: &str, rounds: u32) -> Vec<(String, String)> {
    let graph = build_graph(Arc::new(ScriptedModel::default())).unwrap();
    let saver = MemoryCheckpointer::new();
    let input = Input::State(DebateState::new(topic, rounds).unwrap());
    let out = graph.run(input).on_thread(&saver, "t").await.unwrap();
    assert!(out.next.is_empty());
    transcript(&out.state.to_json())
}

/// A state's messages as (speaker, text) pairs.
fn transcript(values: &Value) -> Vec<(String, String)> {
    let messages = values["messages"].as_array().expect("a state has messages");
    messages
        .iter()
        .map(|m| {
            let who = m["name"].as_str().unwrap_or("?").to_owned();
            (who, m["content"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The text streamed in pieces per message id (`messages` events of
/// `AIMessageChunk`s), with the node that streamed it.
fn streamed(events: &[(String, Value)]) -> BTreeMap<String, (String, String)> {
    let mut by_id: BTreeMap<String, (String, String)> = BTreeMap::new();
    for data in of(events, "messages") {
        let (chunk, meta) = (&data[0], &data[1]);
        if chunk["type"] != "AIMessageChunk" {
            continue;
        }
        let id = chunk["id"].as_str().expect("a piece has its message's id");
        let node = meta["langgraph_node"].as_str().unwrap().to_owned();
        let entry = by_id
            .entry(id.to_owned())
            .or_insert((node.clone(), String::new()));
        assert_eq!(entry.0, node, "the pieces of {id} come from one node");
        entry.1.push_str(chunk["content"].as_str().unwrap());
    }
    by_id
}

/// A debate's run body: its input, in the modes given.
fn debate(topic: &str, rounds: u32, modes: Value) -> Value {
    json!({
        "assistant_id": "debate",
        "input": {"topic": topic, "maxRounds": rounds},
        "stream_mode": modes,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debate_streams_live_and_ends_as_stored() {
    let dir = TempDir::new("live");
    let server = Server::start(&dir.db(), 1);
    let thread = server.thread().await;
    let modes = json!(["values", "updates", "messages-tuple", "custom"]);
    let events = server
        .stream(&thread, debate("Cats or dogs?", 2, modes))
        .await
        .unwrap()
        .rest()
        .await;
    assert_eq!(events[0].0, "metadata");
    assert!(events[0].1["run_id"].is_string());
    assert_eq!(events[1].0, "values", "{:?}", names(&events));
    assert_eq!(events[1].1["topic"], "Cats or dogs?");
    assert_eq!(events[1].1["maxRounds"], 2);

    let (status, stored) = server.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(status, 200);
    let last = *of(&events, "values").last().unwrap();
    assert_eq!(last, &stored["values"], "the last values event is stored");
    assert_eq!(stored["next"], json!([]));
    assert_eq!(stored["values"]["status"], "completed");
    let said = transcript(&stored["values"]);
    assert_eq!(said, expected("Cats or dogs?", 2).await);

    // Each debater's tokens add up to the message the state keeps.
    let by_id = streamed(&events);
    assert_eq!(by_id.len(), 4, "two debaters, two rounds");
    for message in stored["values"]["messages"].as_array().unwrap() {
        if let Some((node, text)) = by_id.get(message["id"].as_str().unwrap()) {
            assert_eq!(Some(node.as_str()), message["name"].as_str());
            assert_eq!(Some(text.as_str()), message["content"].as_str());
        }
    }
    // The updates in graph order, a step's tokens before its update; the
    // moderator's progress in custom mode.
    let updates: Vec<&str> = of(&events, "updates")
        .iter()
        .flat_map(|u| u.as_object().unwrap().keys().map(String::as_str))
        .collect();
    let order = ["optimist", "skeptic", "moderator"];
    assert_eq!(updates, [order, order].concat());
    let first = |name: &str| events.iter().position(|(n, _)| n == name).unwrap();
    assert!(first("messages") < first("updates"));
    assert_eq!(
        of(&events, "custom"),
        [
            &json!({"round": 1, "maxRounds": 2, "done": false}),
            &json!({"round": 2, "maxRounds": 2, "done": true})
        ]
    );
}

/// Streams `body` on a new thread, which must be refused 422: the detail.
async fn refused(server: &Server, body: Value) -> String {
    let thread = server.thread().await;
    let (status, answer) = server.stream(&thread, body).await.err().expect("refused");
    assert_eq!(status, 422, "{answer}");
    let (_, state) = server.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(state["values"], json!({}), "nothing stored: {state}");
    answer["detail"].as_str().expect("a detail").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_out_of_bounds_is_refused_naming_the_field() {
    let dir = TempDir::new("refused");
    let server = Server::start(&dir.db(), 0);
    let modes = json!(["values"]);
    // A 1 MB topic used to become a 152 MiB stream.
    let huge = "x".repeat(1_000_000);
    let detail = refused(&server, debate(&huge, 3, modes.clone())).await;
    assert!(
        detail.contains("`topic`") && detail.contains("at most 500"),
        "{detail}"
    );
    for rounds in [0, 11] {
        let detail = refused(&server, debate("Tea?", rounds, modes.clone())).await;
        assert!(
            detail.contains("`maxRounds`") && detail.contains("1 to 10"),
            "{detail}"
        );
    }
    let mut body = debate("Tea?", 2, modes.clone());
    body["input"]["maxRounds"] = json!("three");
    assert!(refused(&server, body).await.contains("`maxRounds`"));
    body = debate("Tea?", 2, modes.clone());
    body["input"]["colour"] = json!(1);
    assert!(refused(&server, body).await.contains("colour"));
    body = debate("Tea?", 2, json!(["values", "bogus"]));
    assert!(refused(&server, body).await.contains("bogus"));

    // The topic is set once: a second input naming it fails the run.
    let thread = server.thread().await;
    let first = server.stream(&thread, debate("Tea?", 1, modes.clone()));
    assert_eq!(
        first.await.unwrap().rest().await.last().unwrap().0,
        "values"
    );
    let again = server.stream(&thread, debate("Coffee?", 1, modes)).await;
    let events = again.unwrap().rest().await;
    let error = of(&events, "error");
    assert_eq!(error.len(), 1, "{:?}", names(&events));
    assert!(error[0]["message"]
        .as_str()
        .unwrap()
        .contains("already exists"));
    let (_, state) = server.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(state["values"]["topic"], "Tea?");
}

/// Reads `events` until the debater of step `step` has streamed three
/// tokens: the middle of a node.
async fn read_into_step(events: &mut Events, step: i64) -> Vec<(String, Value)> {
    let mut seen = Vec::new();
    let mut tokens = 0;
    while let Some(event) = events.next().await {
        if event.0 == "messages" && event.1[1]["langgraph_step"] == step {
            tokens += 1;
        }
        seen.push(event);
        if tokens == 3 {
            return seen;
        }
    }
    panic!("the stream ended early: {:?}", names(&seen));
}

/// A `checkpoints` event's step: under `metadata` as the official server
/// sends it, or at the top as the runtime writes it.
fn step_of(checkpoint: &Value) -> i64 {
    let step = checkpoint["metadata"]["step"].as_i64();
    step.or(checkpoint["step"].as_i64()).expect("a step")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_resumes_the_thread_with_nothing_lost_or_doubled() {
    let dir = TempDir::new("killed");
    let server = Server::start(&dir.db(), 20);
    let thread = server.thread().await;
    let modes = json!(["values", "messages-tuple", "checkpoints"]);
    let body = debate("Tea or coffee?", 3, modes.clone());
    let mut events = server.stream(&thread, body).await.unwrap();
    // Into the skeptic of round 2 (step 5; steps up to 4 are stored).
    let before = read_into_step(&mut events, 5).await;
    let cut = streamed(&before).into_keys().last().unwrap();
    server.kill();
    assert!(events.next().await.is_none(), "the stream breaks");

    let server = Server::start(&dir.db(), 0);
    let (_, head) = server.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(
        head["next"],
        json!(["skeptic"]),
        "the step cut short runs next"
    );
    let stored_step = head["metadata"]["step"].as_i64().unwrap();
    let (_, info) = server.get(&format!("/threads/{thread}")).await;
    assert_ne!(info["status"], "busy", "no run is left running: {info}");

    let body = json!({"assistant_id": "debate", "input": null, "stream_mode": modes});
    let after = server.stream(&thread, body).await.unwrap().rest().await;
    assert_eq!(
        of(&after, "values")[0],
        &head["values"],
        "it starts from the head"
    );
    // The steps after the head are stored once each, in order.
    let steps: Vec<i64> = of(&after, "checkpoints").into_iter().map(step_of).collect();
    let want: Vec<i64> = (stored_step..stored_step + steps.len() as i64).collect();
    assert_eq!(steps, want);
    // The message cut short streams again from its first token, whole.
    let (node, text) = &streamed(&after)[&cut];
    assert_eq!(node, "skeptic");
    let (_, done) = server.get(&format!("/threads/{thread}/state")).await;
    let said = transcript(&done["values"]);
    assert_eq!(said, expected("Tea or coffee?", 3).await);
    assert!(said.iter().any(|(_, t)| t == text));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_interrupt_is_answered_after_a_restart() {
    let dir = TempDir::new("approval");
    let server = Server::start(&dir.db(), 0);
    let thread = server.thread().await;
    let body = json!({"assistant_id": "approval", "input": {"topic": "Rust async"}});
    let (status, paused) = server
        .post(&format!("/threads/{thread}/runs/wait"), body)
        .await;
    assert_eq!(status, 200, "{paused}");
    let interrupt = &paused["__interrupt__"][0]["value"];
    assert_eq!(interrupt["draft"], "Five things to know about Rust async.");
    server.kill();

    let server = Server::start(&dir.db(), 0);
    let (_, info) = server.get(&format!("/threads/{thread}")).await;
    assert_eq!(info["status"], "interrupted", "{info}");
    let verdict = json!({"approve": true, "comment": "Looks good."});
    let body = json!({"assistant_id": "approval", "command": {"resume": verdict}});
    let (status, done) = server
        .post(&format!("/threads/{thread}/runs/wait"), body)
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        (&done["status"], &done["comment"]),
        (&json!("published"), &json!("Looks good."))
    );
    let (_, info) = server.get(&format!("/threads/{thread}")).await;
    assert_eq!(info["status"], "idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deep_agent_answers_on_its_scripted_model() {
    let dir = TempDir::new("agent");
    let server = Server::start(&dir.db(), 0);
    let thread = server.thread().await;
    let ask = |text: &str| {
        let input = json!({"messages": [{"role": "user", "content": text}]});
        json!({"assistant_id": "agent", "input": input})
    };
    let wait = format!("/threads/{thread}/runs/wait");
    let idea = "I have a business idea: an app for students to plan their study time";
    let (status, first) = server.post(&wait, ask(idea)).await;
    assert_eq!(status, 200, "{first}");
    let last = |out: &Value| out["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last(&first)["content"],
        "Your idea is recorded, planned and written to /idea.md."
    );
    assert_eq!(first["business_idea_complete"], true);
    assert_eq!(first["materialized_business_idea"], idea);
    assert_eq!(first["todos"].as_array().unwrap().len(), 2);
    assert!(
        first.get("skills_metadata").is_none(),
        "private: not in the output"
    );

    let (_, second) = server
        .post(&wait, ask("Can you evaluate another idea?"))
        .await;
    assert_eq!(
        last(&second)["content"],
        "Your idea is already complete: next, a pitch deck."
    );
    // A field the input may not set is refused, nothing run.
    let mut body = ask("hi");
    body["input"]["business_idea_complete"] = json!(false);
    let (status, refused) = server.post(&wait, body).await;
    assert_eq!(status, 422);
    assert!(refused["detail"]
        .as_str()
        .unwrap()
        .contains("business_idea_complete"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_the_three_graphs_are_served() {
    let dir = TempDir::new("page");
    let server = Server::start(&dir.db(), 0);
    let page = reqwest::get(server.url("/")).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("/runs/stream"));
    let (status, found) = server.post("/assistants/search", json!({})).await;
    assert_eq!(status, 200);
    let mut graphs: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["graph_id"].as_str().unwrap())
        .collect();
    graphs.sort_unstable();
    assert_eq!(graphs, ["agent", "approval", "debate"]);
    let (status, missing) = server.get("/nothing-here").await;
    assert_eq!((status, &missing["detail"]), (404, &json!("Not Found")));
}

/// Two servers on one PostgreSQL serve one thread: B reads what A stores
/// and refuses (`reject`) to run it while A does; A dies mid-node and B
/// carries the debate on from A's last stored step; a third server reads
/// the finished thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_a_thread_on_postgresql() {
    let url = pg::url();
    let a = Server::start_on(&["--pg", url], 20);
    let b = Server::start_on(&["--pg", url], 0);
    let thread = a.thread().await;
    let modes = json!(["values", "messages-tuple"]);
    let mut on_a = a
        .stream(&thread, debate("Books or films?", 3, modes.clone()))
        .await
        .unwrap();
    read_into_step(&mut on_a, 4).await;

    let (status, head) = b.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(status, 200);
    assert!(transcript(&head["values"]).len() >= 2, "{head}");
    let mut again =
        json!({"assistant_id": "debate", "input": null, "multitask_strategy": "reject"});
    let (status, refused) = b
        .stream(&thread, again.clone())
        .await
        .err()
        .expect("refused");
    assert_eq!(status, 409, "{refused}");

    a.kill();
    // B waits for A's lock to go with A's connection.
    again["multitask_strategy"] = json!("enqueue");
    let after = b.stream(&thread, again).await.unwrap().rest().await;
    assert_eq!(after.last().unwrap().0, "values", "{:?}", names(&after));

    let c = Server::start_on(&["--pg", url], 0);
    let (_, done) = c.get(&format!("/threads/{thread}/state")).await;
    assert_eq!(done["next"], json!([]));
    assert_eq!(
        transcript(&done["values"]),
        expected("Books or films?", 3).await
    );
}
