//! `TodoList` against LangChain's `TodoListMiddleware`
//! (`tests/reference/middleware/todo_list.py`): the `write_todos` tool as
//! the model sees it, its answer and update, the system prompt section, the
//! error answers to parallel calls, custom prompts; and a bad call.

use agent_state::agent::middleware::{TodoList, TodoListState};
use agent_state::agent::{create_agent, input};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::block_on;
use agent_state::serde_json::json;
use agent_state::{ai, AgentState, Message, MessageType, ToolStatus};

use crate::support::{call, dump, recorded, Recorder};

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Planner {
    #[state(flatten)]
    base: MessagesState,
    #[state(flatten)]
    plan: TodoListState,
}

fn write(todos: agent_state::serde_json::Value, id: &str) -> agent_state::ToolCall {
    call("write_todos", json!({"todos": todos}), id)
}

#[test]
fn write_todos_replaces_the_plan_and_parallel_calls_are_refused() {
    let plan = json!([
        {"content": "Write the 'intro'", "status": "in_progress"},
        {"content": "Say \"café\" \\ ship", "status": "pending"},
    ]);
    let done = json!([{"content": "Write the 'intro'", "status": "completed"}]);
    let model = Recorder::new([
        ai("").with_tool_call(write(plan, "p1")),
        ai("")
            .with_tool_call(write(done, "p2"))
            .with_tool_call(write(json!([]), "p3")),
        ai("Planned."),
    ]);
    let agent = create_agent(model.clone())
        .system_prompt("You plan.")
        .middleware(TodoList::new())
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Planner>("Plan it"))).unwrap();
    let got = json!({
        "messages": dump(out.state.messages()),
        "todos": out.state.plan.todos,
        "requests": model.seen(),
        "tools": model.tools(),
    });
    assert_eq!(got, recorded("todo_list")["planning"]);
}

#[test]
fn a_custom_system_prompt_and_tool_description_replace_langchains() {
    let model = Recorder::new([ai("ok")]);
    let todo = TodoList::new()
        .system_prompt("Track work.")
        .tool_description("Plans.");
    let agent = create_agent(model.clone())
        .middleware(todo)
        .compile()
        .unwrap();
    block_on(agent.run(input::<Planner>("hi"))).unwrap();
    let got = json!({"requests": model.seen(), "tools": model.tools()});
    assert_eq!(got, recorded("todo_list")["custom"]);
}

#[test]
fn a_todo_with_an_unknown_status_is_answered_with_an_error_and_the_plan_kept() {
    let bad = json!([{"content": "Draft", "status": "someday"}]);
    let model = Recorder::new([ai("").with_tool_call(write(bad, "b1")), ai("Sorry.")]);
    let agent = create_agent(model)
        .middleware(TodoList::new())
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Planner>("Plan it"))).unwrap();
    let answer: &Message = &out.state.messages()[2];
    assert_eq!(answer.kind, MessageType::Tool);
    assert_eq!(answer.status, Some(ToolStatus::Error));
    assert!(answer.text().contains("someday"), "{}", answer.text());
    assert!(out.state.plan.todos.is_empty());
}
