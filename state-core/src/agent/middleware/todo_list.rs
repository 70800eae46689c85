//! LangChain's `TodoListMiddleware`: a `write_todos` tool keeping a plan in
//! the state, a system prompt section telling the model how to use it, and
//! an error answer to parallel `write_todos` calls.

use std::sync::Arc;

use agent_state_derive::AgentState;
use futures::future::ready;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::limits::last_ai;
use crate::agent::{
    AgentMiddleware, HookOutput, HookResult, Hooks, ModelFuture, ModelHandler, ModelRequest, Tool,
    ToolDefinition, ToolError, ToolFuture, ToolOutput, ToolRuntime,
};
use crate::base::{HasMessages, MessagesStateUpdate};
use crate::graph::NodeContext;
use crate::message::{Message, MessageType, ToolStatus};
use crate::pyrepr;
use crate::HasPart;

/// The description of `write_todos` the model is shown (LangChain's
/// `WRITE_TODOS_TOOL_DESCRIPTION`, to the letter).
pub const WRITE_TODOS_TOOL_DESCRIPTION: &str = r#"Use this tool to create and manage a structured task list for your current work session. This helps you track progress and organize complex tasks.

Only use this tool if you think it will be helpful in staying organized. If the user's request is trivial and takes less than 3 steps, it is better to NOT use this tool and just do the task directly.

## When to Use This Tool

Use this tool in these scenarios:

1. Complex multi-step tasks - When a task requires 3 or more distinct steps or actions
2. Non-trivial and complex tasks - Tasks that require careful planning or multiple operations
3. User explicitly requests todo list - When the user directly asks you to use the todo list
4. User provides multiple tasks - When users provide a list of things to be done (numbered or comma-separated)
5. The plan may need future revisions or updates based on results from the first few steps

## How to Use This Tool

1. When you start working on a task - Mark it as in_progress BEFORE beginning work.
2. After completing a task - Mark it as completed and add any new follow-up tasks discovered during implementation.
3. You can also update future tasks, such as deleting them if they are no longer necessary, or adding new tasks that are necessary. Don't change previously completed tasks.
4. You can make several updates to the todo list at once. For example, when you complete a task, you can mark the next task you need to start as in_progress.

## When NOT to Use This Tool

It is important to skip using this tool when:
1. There is only a single, straightforward task
2. The task is trivial and tracking it provides no benefit
3. The task can be completed in less than 3 trivial steps
4. The task is purely conversational or informational

## Task States and Management

1. **Task States**: Use these states to track progress:
    - pending: Task not yet started
    - in_progress: Currently working on (you can have multiple tasks in_progress at a time if they are not related to each other and can be run in parallel)
    - completed: Task finished successfully

2. **Task Management**:
    - Update task status in real-time as you work
    - Mark tasks complete IMMEDIATELY after finishing (don't batch completions)
    - Complete current tasks before starting new ones
    - Remove tasks that are no longer relevant from the list entirely
    - IMPORTANT: When you write this todo list, you should mark your first task (or tasks) as in_progress immediately!.
    - IMPORTANT: Unless all tasks are completed, you should always have at least one task in_progress.

3. **Task Completion Requirements**:
    - ONLY mark a task as completed when you have FULLY accomplished it
    - If you encounter errors, blockers, or cannot finish, keep the task as in_progress
    - When blocked, create a new task describing what needs to be resolved
    - Never mark a task as completed if:
        - There are unresolved issues or errors
        - Work is partial or incomplete
        - You encountered blockers that prevent completion
        - You couldn't find necessary resources or dependencies
        - Quality standards haven't been met

4. **Task Breakdown**:
    - Create specific, actionable items
    - Break complex tasks into smaller, manageable steps
    - Use clear, descriptive task names

Being proactive with task management ensures you complete all requirements successfully
Remember: If you only need to make a few tool calls to complete a task, and it is clear what you need to do, it is better to just do the task directly and NOT call this tool at all.

## When You Finish

`write_todos` tracks your work; it does not deliver the answer. Whatever the user asked for — computations, summaries, comparisons, data — must appear as text content in a message after your final `write_todos` call. Marking the last todo complete is not itself an answer to the user."#;

/// The section appended to the system prompt (LangChain's
/// `WRITE_TODOS_SYSTEM_PROMPT`, to the letter).
pub const WRITE_TODOS_SYSTEM_PROMPT: &str = r#"## `write_todos`

You have access to the `write_todos` tool to help you manage and plan complex objectives.
Use this tool for complex objectives to ensure that you are tracking each necessary step.
This tool is very helpful for planning complex objectives, and for breaking down these larger complex objectives into smaller steps.

It is critical that you mark todos as completed as soon as you are done with a step. Do not batch up multiple steps before marking them as completed.
For simple objectives that only require a few steps, it is better to just complete the objective directly and NOT use this tool.
Writing todos takes time and tokens, use it when it is helpful for managing complex many-step problems! But not for simple few-step requests.

## Important To-Do List Usage Notes to Remember

- The `write_todos` tool should never be called multiple times in parallel.
- Don't be afraid to revise the To-Do list as you go. New information may reveal new tasks that need to be done, or old tasks that are irrelevant.

## Finishing a task

When you finish all work, write your final answer in the message AFTER your last `write_todos` call — not in the same turn as that call. Start the final message with the substantive content the user asked for — the data, computation, summary, or analysis. The user wants the result, not confirmation that the work is done."#;

/// The answer to each of several `write_todos` calls in one response.
pub const PARALLEL_WRITE_TODOS_ERROR: &str = "Error: The `write_todos` tool should never be called multiple times in parallel. Please call it only once per model invocation to update the todo list.";

/// Where a todo stands (LangChain's `Literal["pending", "in_progress",
/// "completed"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One item of the plan (LangChain's `Todo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// [`TodoList`]'s part of the state (LangChain's `PlanningState`):
/// flatten it into the agent's state.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate)]
pub struct TodoListState {
    /// The plan, replaced whole by each `write_todos` call.
    #[state(omit_from_input)]
    pub todos: Vec<Todo>,
}

/// `write_todos`' arguments.
#[derive(Deserialize)]
struct WriteTodosArgs {
    todos: Vec<Todo>,
}

/// The JSON Schema of `write_todos`' arguments, as LangChain shows it to
/// the model (pydantic's schema of `WriteTodosInput`, through
/// `convert_to_openai_tool`).
fn write_todos_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"todos": {"type": "array", "items": {
            "type": "object",
            "description": "A single todo item with content and status.",
            "properties": {
                "content": {"type": "string"},
                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
            },
            "required": ["content", "status"],
        }}},
        "required": ["todos"],
    })
}

/// The `write_todos` tool: replaces the plan, answers with it.
struct WriteTodos {
    definition: ToolDefinition,
}

impl WriteTodos {
    /// The update and answer of a call with `args`.
    fn write<S>(&self, args: Map<String, Value>) -> Result<ToolOutput<S>, ToolError>
    where
        S: HasPart<TodoListState> + HasMessages,
    {
        let invalid = |error: String, args: Map<String, Value>| ToolError::InvalidArguments {
            tool: self.definition.name.clone(),
            args: Value::Object(args),
            error,
        };
        let parsed: WriteTodosArgs = match serde_json::from_value(Value::Object(args.clone())) {
            Ok(parsed) => parsed,
            Err(e) => return Err(invalid(e.to_string(), args)),
        };
        let listed =
            serde_json::to_value(&parsed.todos).map_err(|e| invalid(e.to_string(), args))?;
        let answer = format!("Updated todo list to {}", pyrepr::repr(&listed));
        let update = S::lift(TodoListStateUpdate::new().todos(parsed.todos));
        Ok(ToolOutput::update(answer, update))
    }
}

impl<S> Tool<S> for WriteTodos
where
    S: HasPart<TodoListState> + HasMessages + Send + Sync + 'static,
    S::Update: Send,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, _: ToolRuntime<S>) -> ToolFuture<'_, S> {
        Box::pin(ready(self.write(args)))
    }
}

/// Gives the agent a plan it keeps in [`TodoListState`], as LangChain's
/// `TodoListMiddleware`: the `write_todos` tool (LangChain's name,
/// description and argument schema; it answers `Updated todo list to
/// [...]` with the list as Python prints it), the
/// [`WRITE_TODOS_SYSTEM_PROMPT`] section after the system prompt of every
/// model call, and an error answer to each `write_todos` call when a
/// response makes several (the plan is replaced whole, so parallel writes
/// could not be ordered).
///
/// ```
/// use agent_state::agent::middleware::{TodoList, TodoListState, TodoStatus};
/// use agent_state::agent::{create_agent, input, ScriptedModel};
/// use agent_state::base::MessagesState;
/// use agent_state::checkpoint::block_on;
/// use agent_state::{ai, AgentState, ToolCall};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Planner {
///     #[state(flatten)]
///     base: MessagesState,
///     #[state(flatten)]
///     plan: TodoListState,
/// }
///
/// let args = serde_json::json!({"todos": [{"content": "Draft", "status": "in_progress"}]});
/// let call = ToolCall::new("write_todos", args.as_object().unwrap().clone(), "c1");
/// let model = ScriptedModel::new([ai("").with_tool_call(call), ai("Drafting.")]);
/// let agent = create_agent(model).middleware(TodoList::new()).compile()?;
/// let out = block_on(agent.run(input::<Planner>("Write a plan")))?;
/// assert_eq!(out.state.plan.todos[0].status, TodoStatus::InProgress);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoList {
    system_prompt: String,
    tool_description: String,
}

impl Default for TodoList {
    fn default() -> Self {
        Self::new()
    }
}

impl TodoList {
    /// With LangChain's system prompt section and tool description.
    pub fn new() -> Self {
        Self {
            system_prompt: WRITE_TODOS_SYSTEM_PROMPT.to_owned(),
            tool_description: WRITE_TODOS_TOOL_DESCRIPTION.to_owned(),
        }
    }

    /// The section appended to the system prompt instead of
    /// [`WRITE_TODOS_SYSTEM_PROMPT`].
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// `write_todos`' description instead of
    /// [`WRITE_TODOS_TOOL_DESCRIPTION`].
    #[must_use]
    pub fn tool_description(mut self, description: impl Into<String>) -> Self {
        self.tool_description = description.into();
        self
    }
}

impl<S> AgentMiddleware<S> for TodoList
where
    S: HasPart<TodoListState> + HasMessages + Send + Sync + 'static,
    S::Update: Send,
{
    fn name(&self) -> &str {
        "TodoListMiddleware"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL | Hooks::AFTER_MODEL
    }

    fn tools(&self) -> Vec<Arc<dyn Tool<S>>> {
        let definition = ToolDefinition {
            name: "write_todos".to_owned(),
            description: self.tool_description.clone(),
            parameters: write_todos_schema(),
        };
        vec![Arc::new(WriteTodos { definition })]
    }

    /// LangChain adds the section as a second text block of the system
    /// message, `"\n\n"` first; the text the model reads is the same.
    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        let prompt = match request.system_prompt() {
            Some(prompt) => format!("{prompt}\n\n{}", self.system_prompt),
            None => self.system_prompt.clone(),
        };
        handler.call(request.with_system_prompt(prompt))
    }

    fn after_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        let Some(message) = last_ai(state.messages()) else {
            return Ok(HookOutput::none());
        };
        let writes: Vec<_> = message
            .tool_calls
            .iter()
            .filter(|c| c.name == "write_todos")
            .collect();
        if writes.len() < 2 {
            return Ok(HookOutput::none());
        }
        // LangChain's error answers carry no tool name.
        let errors = writes.iter().map(|call| {
            let mut answer = Message::new(MessageType::Tool, PARALLEL_WRITE_TODOS_ERROR);
            answer.tool_call_id.clone_from(&call.id);
            answer.status = Some(ToolStatus::Error);
            answer
        });
        let update = MessagesStateUpdate::new().messages(errors.collect::<Vec<_>>());
        Ok(HookOutput::update(S::lift(update)))
    }
}
