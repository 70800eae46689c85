//! `HumanInTheLoop` side by side with langchain 1.4.7's
//! `HumanInTheLoopMiddleware` (batched mode): the same scenarios as
//! `tests/reference/middleware/human_in_the_loop.py`, run on a checkpointer
//! and resumed with the same decisions; the interrupt payloads and the
//! conversation at the end must be LangChain's, and the errors name the
//! same case. Then the pause and the approval in two openings of one
//! SQLite file, as two processes would.

use agent_state::agent::middleware::{
    Action, Decision, DecisionType, HitlError, HitlResponse, HumanInTheLoop, HumanInTheLoopState,
    InterruptMode, InterruptOn, InterruptOnEntry,
};
use agent_state::agent::{create_agent, input, FnTool, ScriptedModel};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{Graph, Input, Resume};
use agent_state::schemars::JsonSchema;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Map, Value};
use agent_state::{ai, AgentState, ToolCall};

use crate::support::{plain, recorded};

/// The agent's state: the conversation and the middleware's edits.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[state(flatten)]
    pub base: MessagesState,
    #[state(flatten)]
    pub hitl: HumanInTheLoopState,
}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Email {
    to: String,
    body: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct City {
    city: String,
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn email() -> ToolCall {
    let args = json!({"body": "Hi 'Al'\nSee you", "to": "alice@example.com"});
    ToolCall::new("send_email", object(args), "call_1")
}

fn weather() -> ToolCall {
    ToolCall::new("get_weather", object(json!({"city": "Paris"})), "call_2")
}

/// The script's agent: one model turn with `calls`, then "Done.".
fn agent(calls: &[ToolCall], review: HumanInTheLoop<Chat>) -> Graph<Chat> {
    let mut first = ai("");
    for call in calls {
        first = first.with_tool_call(call.clone());
    }
    let model = ScriptedModel::new([first, ai("Done.")]);
    let send = FnTool::sync("send_email", "Send an email.", |a: Email, _: &_| {
        format!("Email sent to {}: {}", a.to, a.body)
    });
    let weather = FnTool::sync(
        "get_weather",
        "Today's weather in a city.",
        |a: City, _: &_| format!("Sunny in {}", a.city),
    );
    create_agent(model)
        .tool(send)
        .tool(weather)
        .middleware(review)
        .compile()
        .unwrap()
}

/// One scenario: the calls, the config, the decisions of each resume.
struct Scenario {
    calls: Vec<ToolCall>,
    interrupt_on: Vec<(&'static str, InterruptOnEntry<Chat>)>,
    resumes: Vec<Vec<Decision>>,
    prefix: Option<&'static str>,
    notice: bool,
}

impl Scenario {
    fn new(
        calls: Vec<ToolCall>,
        interrupt_on: Vec<(&'static str, InterruptOnEntry<Chat>)>,
    ) -> Self {
        Self {
            calls,
            interrupt_on,
            resumes: Vec::new(),
            prefix: None,
            notice: true,
        }
    }

    fn resume(mut self, decisions: Vec<Decision>) -> Self {
        self.resumes.push(decisions);
        self
    }

    fn middleware(&mut self) -> Result<HumanInTheLoop<Chat>, HitlError> {
        let mut review = HumanInTheLoop::new(std::mem::take(&mut self.interrupt_on))?;
        if let Some(prefix) = self.prefix {
            review = review.description_prefix(prefix);
        }
        if !self.notice {
            review = review.edit_notice(None);
        }
        Ok(review)
    }
}

/// What a run shows: the interrupt payloads, the conversation at the end,
/// and the error that stopped it (its text), if one did.
fn run(name: &str, mut scenario: Scenario) -> (Value, Option<String>) {
    let review = match scenario.middleware() {
        Ok(review) => review,
        Err(error) => return (json!({}), Some(error.to_string())),
    };
    let agent = agent(&scenario.calls, review);
    let saver = MemoryCheckpointer::new();
    let mut interrupts = Vec::new();
    let mut error = None;
    let mut out = block_on(
        agent
            .run(input::<Chat>("Please help."))
            .on_thread(&saver, name),
    );
    let mut resumes = scenario.resumes.into_iter();
    while let Ok(done) = &out {
        interrupts.extend(done.interrupts.iter().map(|i| i.value.clone()));
        let (false, Some(decisions)) = (done.interrupts.is_empty(), resumes.next()) else {
            break;
        };
        let resume = Resume::value(HitlResponse { decisions });
        out = block_on(agent.run(Input::ResumeWith(resume)).on_thread(&saver, name));
    }
    if let Err(e) = out {
        error = Some(e.to_string());
    }
    let state = block_on(agent.get_state(&saver, name)).unwrap();
    let messages: Vec<Value> = state.values.messages().iter().map(plain).collect();
    (
        json!({"interrupts": interrupts, "messages": messages}),
        error,
    )
}

/// Runs `name` and compares it with LangChain's run of it: payloads and
/// conversation equal; an error on both sides or on neither, both naming
/// the case (`case`: the words both say, quotes and case aside).
fn same_as_langchain(name: &str, scenario: Scenario, case: Option<&str>) {
    let expected = &recorded("human_in_the_loop")[name];
    let (ours, error) = run(name, scenario);
    if let Some(messages) = expected.get("messages") {
        assert_eq!(ours["messages"], *messages, "{name}: messages");
        assert_eq!(
            ours["interrupts"], expected["interrupts"],
            "{name}: interrupts"
        );
    }
    let words = |text: &str| text.to_lowercase().replace(['\'', '`', '"'], "");
    match (case, expected.get("error"), error) {
        (None, None, None) => {}
        (Some(case), Some(theirs), Some(ours)) => {
            let theirs = theirs.as_str().unwrap();
            assert!(
                words(theirs).contains(case),
                "{name}: LangChain says {theirs}"
            );
            assert!(words(&ours).contains(case), "{name}: we say {ours}");
        }
        (case, theirs, ours) => {
            panic!("{name}: expected error {case:?}; LangChain's {theirs:?}, ours {ours:?}")
        }
    }
}

fn all(tool: &'static str) -> (&'static str, InterruptOnEntry<Chat>) {
    (tool, true.into())
}

fn edit(name: &str, args: Value) -> Decision {
    Decision::Edit {
        edited_action: Action {
            name: name.to_owned(),
            args: object(args),
        },
    }
}

fn approve_reject() -> InterruptOn<Chat> {
    InterruptOn::allow([DecisionType::Approve, DecisionType::Reject])
}

#[test]
fn approve_runs_the_call() {
    let s = Scenario::new(vec![email()], vec![all("send_email")]).resume(vec![Decision::Approve]);
    same_as_langchain("approve", s, None);
}

#[test]
fn edit_runs_the_reviewers_call_with_the_notice() {
    let args = json!({"body": "Hello", "to": "bob@example.com"});
    let s = Scenario::new(vec![email()], vec![all("send_email")])
        .resume(vec![edit("send_email", args.clone())]);
    same_as_langchain("edit", s, None);
    let mut quiet = Scenario::new(vec![email()], vec![all("send_email")])
        .resume(vec![edit("send_email", args)]);
    quiet.notice = false;
    same_as_langchain("edit_without_notice", quiet, None);
}

#[test]
fn an_edit_may_name_another_tool() {
    let s = Scenario::new(vec![email()], vec![all("send_email")])
        .resume(vec![edit("get_weather", json!({"city": "Oslo"}))]);
    same_as_langchain("edit_to_other_tool", s, None);
}

#[test]
fn reject_answers_with_an_error_message() {
    let reason = Decision::Reject {
        message: Some("Not to Alice.".to_owned()),
    };
    let s = Scenario::new(vec![email()], vec![all("send_email")]).resume(vec![reason]);
    same_as_langchain("reject_with_message", s, None);
    let bare = Decision::Reject { message: None };
    let s = Scenario::new(vec![email()], vec![all("send_email")]).resume(vec![bare]);
    same_as_langchain("reject_without_message", s, None);
}

#[test]
fn respond_answers_for_the_tool() {
    let respond = Decision::Respond {
        message: "Alice is on leave.".to_owned(),
    };
    let s = Scenario::new(vec![email()], vec![all("send_email")]).resume(vec![respond]);
    same_as_langchain("respond", s, None);
}

#[test]
fn only_the_configured_call_of_two_is_reviewed() {
    let config = approve_reject().description("Check the recipient.");
    let interrupt_on = vec![("send_email", config.into()), ("get_weather", false.into())];
    let no = Decision::Reject {
        message: Some("No.".to_owned()),
    };
    let s = Scenario::new(vec![email(), weather()], interrupt_on).resume(vec![no]);
    same_as_langchain("mixed", s, None);
}

#[test]
fn two_reviewed_calls_take_a_decision_each() {
    let describe = |call: &ToolCall, state: &Chat, _: &_| {
        let args: Vec<String> = call
            .args
            .iter()
            .map(|(k, v)| format!("{}: {v}", json!(k)))
            .collect();
        let seen = state.messages().len();
        format!(
            "{} wants {{{}}} after {seen} messages",
            call.name,
            args.join(", ")
        )
    };
    let weather_review =
        InterruptOn::allow([DecisionType::Approve, DecisionType::Edit]).describe_with(describe);
    let interrupt_on = vec![all("send_email"), ("get_weather", weather_review.into())];
    let decisions = vec![
        edit("get_weather", json!({"city": "Rome"})),
        Decision::Respond {
            message: "Sent it myself.".to_owned(),
        },
    ];
    let mut s = Scenario::new(vec![weather(), email()], interrupt_on).resume(decisions);
    s.prefix = Some("Review needed");
    same_as_langchain("two_reviewed", s, None);
}

#[test]
fn a_call_to_a_tool_not_configured_runs_without_a_pause() {
    let s = Scenario::new(vec![weather()], vec![all("send_email")]);
    same_as_langchain("not_configured", s, None);
}

#[test]
fn a_decision_the_tool_does_not_allow_fails_naming_it() {
    let interrupt_on = vec![("send_email", approve_reject().into())];
    let respond = Decision::Respond {
        message: "x".to_owned(),
    };
    let s = Scenario::new(vec![email()], interrupt_on).resume(vec![respond]);
    let case = "decision type respond is not allowed for tool send_email";
    same_as_langchain("error_not_allowed", s, Some(case));
}

#[test]
fn a_wrong_number_of_decisions_fails_naming_both_counts() {
    let s = Scenario::new(vec![email()], vec![all("send_email")])
        .resume(vec![Decision::Approve, Decision::Approve]);
    let case = "number of human decisions (2) does not match number of hanging tool calls (1)";
    same_as_langchain("error_count", s, Some(case));
}

#[test]
fn a_config_allowing_no_decision_is_refused() {
    let none = InterruptOn::allow([]);
    let s = Scenario::new(vec![email()], vec![("send_email", none.into())]);
    let case = "invalid interrupt_on config for tool send_email: allowed_decisions must be a \
                non-empty list of decision types";
    same_as_langchain("error_config", s, Some(case));
}

// --- beyond the side-by-side scenarios -----------------------------------

#[test]
fn decisions_read_and_write_langchains_json() {
    let cases = [
        (Decision::Approve, json!({"type": "approve"})),
        (
            Decision::Reject { message: None },
            json!({"type": "reject"}),
        ),
        (
            Decision::Respond {
                message: "ok".to_owned(),
            },
            json!({"type": "respond", "message": "ok"}),
        ),
        (
            edit("t", json!({"a": 1})),
            json!({"type": "edit", "edited_action": {"name": "t", "args": {"a": 1}}}),
        ),
    ];
    for (decision, value) in cases {
        assert_eq!(agent_state::serde_json::to_value(&decision).unwrap(), value);
        let back: Decision = agent_state::serde_json::from_value(value).unwrap();
        assert_eq!(back, decision);
    }
    let unknown = json!({"type": "maybe"});
    let error = agent_state::serde_json::from_value::<Decision>(unknown).unwrap_err();
    assert!(error.to_string().contains("maybe"), "{error}");
}

#[test]
fn a_resume_value_of_the_wrong_shape_fails_and_the_call_stays_pending() {
    let review = HumanInTheLoop::new([all("send_email")]).unwrap();
    let agent = agent(&[email()], review);
    let saver = MemoryCheckpointer::new();
    let out = block_on(
        agent
            .run(input::<Chat>("Please help."))
            .on_thread(&saver, "bad"),
    );
    assert_eq!(out.unwrap().interrupts.len(), 1);
    let wrong = Resume::value(json!({"decisions": [{"type": "maybe"}]}));
    let error = block_on(agent.run(Input::ResumeWith(wrong)).on_thread(&saver, "bad"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("HitlResponse"), "{error}");
    // Nothing applied: the call is still unanswered and still paused on.
    let state = block_on(agent.get_state(&saver, "bad")).unwrap();
    assert_eq!(state.values.messages().len(), 2);
    let ok = Resume::value(HitlResponse {
        decisions: vec![Decision::Approve],
    });
    let out = block_on(agent.run(Input::ResumeWith(ok)).on_thread(&saver, "bad")).unwrap();
    assert_eq!(out.state.messages().last().unwrap().text(), "Done.");
}

/// `when` picks the calls to review; an earlier turn's edit does not apply
/// to a later, unreviewed call (LangChain clears the edits then too).
#[test]
fn when_skips_calls_and_an_earlier_edit_is_dropped() {
    let to = |body: &str| {
        let args = json!({"body": body, "to": "alice@example.com"});
        ai("").with_tool_call(ToolCall::new("send_email", object(args), "call_1"))
    };
    let model = ScriptedModel::new([to("A"), to("C"), ai("Done.")]);
    let send = FnTool::sync("send_email", "Send an email.", |a: Email, _: &_| {
        format!("sent {}", a.body)
    });
    let only_a =
        InterruptOn::all().when(|call: &ToolCall, _: &Chat, _: &_| call.args["body"] == "A");
    let review = HumanInTheLoop::new([("send_email", only_a)]).unwrap();
    let agent = create_agent(model)
        .tool(send)
        .middleware(review)
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let out = block_on(agent.run(input::<Chat>("go")).on_thread(&saver, "w")).unwrap();
    assert_eq!(out.interrupts.len(), 1);
    let b = edit(
        "send_email",
        json!({"body": "B", "to": "alice@example.com"}),
    );
    let resume = Resume::value(HitlResponse { decisions: vec![b] });
    let out = block_on(agent.run(Input::ResumeWith(resume)).on_thread(&saver, "w")).unwrap();
    assert!(out.interrupts.is_empty());
    let answers: Vec<String> = out
        .state
        .messages()
        .iter()
        .filter(|m| m.kind == agent_state::MessageType::Tool)
        .map(|m| m.text().lines().last().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(answers, ["sent B", "sent C"]);
    assert!(out.state.hitl.hitl_edited_tool_calls.is_empty());
}

/// The done-when of the issue: the agent pauses on a tool call in one
/// opening of a SQLite file, is approved from another, and finishes; the
/// tool runs once.
#[cfg(feature = "sqlite")]
#[test]
fn paused_in_one_sqlite_opening_and_approved_from_another() {
    use agent_state::agent::{FnModel, ModelRequest};
    use agent_state::checkpoint::sqlite::SqliteCheckpointer;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let sent = Arc::new(AtomicUsize::new(0));
    let build = |sent: &Arc<AtomicUsize>| {
        // A model that reads the conversation, as a new process's would.
        let model = FnModel(|r: &ModelRequest<Chat>| {
            Ok(match r.messages().last().map(|m| m.kind) {
                Some(agent_state::MessageType::Tool) => ai("Sent."),
                _ => ai("").with_tool_call(email()),
            })
        });
        let sent = Arc::clone(sent);
        let send = FnTool::sync("send_email", "Send an email.", move |a: Email, _: &_| {
            sent.fetch_add(1, Ordering::SeqCst);
            format!("Email sent to {}", a.to)
        });
        let review = HumanInTheLoop::new([all("send_email")]).unwrap();
        create_agent(model)
            .tool(send)
            .middleware(review)
            .compile()
            .unwrap()
    };
    let path = crate::support::temp_db("hitl-two-openings");
    {
        let saver = SqliteCheckpointer::open(&path).unwrap();
        let out = block_on(
            build(&sent)
                .run(input::<Chat>("Email Alice."))
                .on_thread(&saver, "t"),
        );
        let out = out.unwrap();
        assert_eq!(out.interrupts.len(), 1);
        assert_eq!(
            out.interrupts[0].value["action_requests"][0]["name"],
            "send_email"
        );
    }
    assert_eq!(sent.load(Ordering::SeqCst), 0);
    let saver = SqliteCheckpointer::open(&path).unwrap();
    let agent = build(&sent);
    let paused = block_on(agent.get_state(&saver, "t")).unwrap();
    let request = &paused.interrupts[0].value;
    assert_eq!(
        request["review_configs"][0]["allowed_decisions"],
        json!(["approve", "edit", "reject", "respond"])
    );
    let yes = Resume::value(HitlResponse {
        decisions: vec![Decision::Approve],
    });
    let out = block_on(agent.run(Input::ResumeWith(yes)).on_thread(&saver, "t")).unwrap();
    assert!(out.interrupts.is_empty() && out.next.is_empty());
    assert_eq!(out.state.messages().last().unwrap().text(), "Sent.");
    assert_eq!(sent.load(Ordering::SeqCst), 1);
}

// --- per call -------------------------------------------------------------

/// A per-call run: every pending interrupt answered at once, by id, with
/// `answer(payload)`; the payloads in call id order, the conversation, and
/// the error with the count of interrupts still pending, if the answers
/// were refused.
fn run_per_call(
    name: &str,
    calls: &[ToolCall],
    interrupt_on: Vec<(&'static str, InterruptOnEntry<Chat>)>,
    answer: impl Fn(&Value) -> Decision,
) -> (Value, Option<String>) {
    let review = HumanInTheLoop::new(interrupt_on)
        .unwrap()
        .interrupt_mode(InterruptMode::PerCall);
    let agent = agent(calls, review);
    let saver = MemoryCheckpointer::new();
    let out = block_on(
        agent
            .run(input::<Chat>("Please help."))
            .on_thread(&saver, name),
    )
    .unwrap();
    let mut pending = out.interrupts.clone();
    pending.sort_by(|a, b| {
        a.value["tool_call_id"]
            .as_str()
            .cmp(&b.value["tool_call_id"].as_str())
    });
    let mut shown =
        json!({"interrupts": pending.iter().map(|i| i.value.clone()).collect::<Vec<_>>()});
    let resume = pending
        .iter()
        .fold(Resume::new(), |r, i| r.answer(&i.id, answer(&i.value)));
    let resumed = block_on(agent.run(Input::ResumeWith(resume)).on_thread(&saver, name));
    let state = block_on(agent.get_state(&saver, name)).unwrap();
    let error = resumed.err().map(|e| {
        shown["still_pending"] = json!(state.interrupts.len());
        e.to_string()
    });
    shown["messages"] = state.values.messages().iter().map(plain).collect();
    (shown, error)
}

/// Compares a per-call run with LangChain's: everything but the error's
/// words, which are pydantic's there; ours must name `case`.
fn per_call_as_langchain(name: &str, ours: (Value, Option<String>), case: Option<&str>) {
    let mut expected = recorded("human_in_the_loop")[name].clone();
    let theirs = expected.as_object_mut().unwrap().remove("error");
    let (shown, error) = ours;
    assert_eq!(shown, expected, "{name}");
    assert_eq!(theirs.is_some(), error.is_some(), "{name}: {error:?}");
    if let (Some(case), Some(error)) = (case, error) {
        assert!(error.contains(case), "{name}: {error}");
    }
}

#[test]
fn per_call_two_calls_pause_side_by_side_and_are_decided_by_id() {
    let interrupt_on = vec![all("send_email"), ("get_weather", approve_reject().into())];
    let ours = run_per_call("per_call_two", &[email(), weather()], interrupt_on, |v| {
        if v["name"] == "get_weather" {
            Decision::Reject {
                message: Some("No.".to_owned()),
            }
        } else {
            edit("send_email", json!({"body": "B", "to": "x@y"}))
        }
    });
    per_call_as_langchain("per_call_two", ours, None);
}

#[test]
fn per_call_a_decision_not_allowed_is_refused_and_the_call_still_waits() {
    let interrupt_on = vec![("get_weather", approve_reject().into())];
    let ours = run_per_call("per_call_not_allowed", &[weather()], interrupt_on, |_| {
        Decision::Respond {
            message: "x".to_owned(),
        }
    });
    let case = "decision type `respond` is not allowed for tool `get_weather`";
    per_call_as_langchain("per_call_not_allowed", ours, Some(case));
}

#[test]
fn per_call_an_edit_naming_another_tool_is_refused() {
    let ours = run_per_call(
        "per_call_edit_renames",
        &[email()],
        vec![all("send_email")],
        |_| edit("get_weather", json!({"city": "Oslo"})),
    );
    let case =
        "names tool `get_weather`; an edit answering a call of `send_email` must keep the tool";
    per_call_as_langchain("per_call_edit_renames", ours, Some(case));
}

#[test]
fn per_call_a_refused_answer_can_be_given_again() {
    let review = HumanInTheLoop::new([("get_weather", approve_reject())])
        .unwrap()
        .interrupt_mode(InterruptMode::PerCall);
    let agent = agent(&[weather()], review);
    let saver = MemoryCheckpointer::new();
    let out = block_on(
        agent
            .run(input::<Chat>("Please help."))
            .on_thread(&saver, "again"),
    )
    .unwrap();
    let id = out.interrupts[0].id.clone();
    assert!(id.contains("call_2"), "{id}");
    let respond = Decision::Respond {
        message: "x".to_owned(),
    };
    let refused = Resume::new().answer(&id, respond);
    let error = block_on(
        agent
            .run(Input::ResumeWith(refused))
            .on_thread(&saver, "again"),
    );
    assert!(error.is_err());
    let approve = Resume::new().answer(&id, Decision::Approve);
    let out = block_on(
        agent
            .run(Input::ResumeWith(approve))
            .on_thread(&saver, "again"),
    )
    .unwrap();
    let texts: Vec<String> = out.state.messages().iter().map(|m| m.text()).collect();
    assert_eq!(texts[2..], ["Sunny in Paris", "Done."]);
}

/// A batched review answered wrongly (a decision the tool does not allow,
/// or too many) fails that run and changes nothing: the thread still waits
/// on the same review, and a right answer then finishes it.
#[test]
fn a_wrong_batched_answer_leaves_the_review_waiting() {
    let interrupt_on: Vec<(&str, InterruptOnEntry<Chat>)> =
        vec![("send_email", approve_reject().into())];
    let review = HumanInTheLoop::new(interrupt_on).unwrap();
    let agent = agent(&[email()], review);
    let saver = MemoryCheckpointer::new();
    let paused = block_on(
        agent
            .run(input::<Chat>("Email Alice."))
            .on_thread(&saver, "w"),
    )
    .unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    let wrong = [
        vec![Decision::Respond {
            message: "x".to_owned(),
        }],
        vec![Decision::Approve, Decision::Approve],
    ];
    for decisions in wrong {
        let resume = Input::ResumeWith(Resume::value(HitlResponse { decisions }));
        assert!(block_on(agent.run(resume).on_thread(&saver, "w")).is_err());
        let state = block_on(agent.get_state(&saver, "w")).unwrap();
        assert_eq!(state.interrupts.len(), 1, "the review still waits");
        assert_eq!(state.interrupts[0].id, paused.interrupts[0].id);
        assert_eq!(state.values.messages().len(), 2, "nothing was answered");
    }
    let right = HitlResponse {
        decisions: vec![Decision::Approve],
    };
    let done = block_on(
        agent
            .run(Input::ResumeWith(Resume::value(right)))
            .on_thread(&saver, "w"),
    )
    .unwrap();
    assert!(done.interrupts.is_empty());
    assert_eq!(done.state.messages().last().unwrap().text(), "Done.");
}
