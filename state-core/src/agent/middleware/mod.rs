//! LangChain's built-in middleware, each behaving as langchain 1.4.7's
//! does for the same run (`tests/middleware/`, against LangChain's own
//! output recorded by `tests/reference/middleware/*.py`).
//!
//! Each is an [`AgentMiddleware`](super::AgentMiddleware) generic over any
//! state that has the messages and, where the middleware keeps state of its
//! own (call counts, a to-do list), that state's part: put the part in your
//! state with `#[state(flatten)]`, as seed 003's agent does.
//!
//! | middleware | LangChain's | its part of the state |
//! | --- | --- | --- |
//! | [`Summarization`] | `SummarizationMiddleware` | none (rewrites the messages) |
//! | [`TodoList`] | `TodoListMiddleware` | [`TodoListState`] |
//! | [`ModelCallLimit`] | `ModelCallLimitMiddleware` | [`ModelCallLimitState`] |
//! | [`ToolCallLimit`] | `ToolCallLimitMiddleware` | [`ToolCallLimitState`] |

mod limits;
mod model_call_limit;
mod pyrepr;
mod summarization;
mod todo_list;
mod token_count;
mod tool_call_limit;

pub use limits::LimitConfigError;
pub use model_call_limit::{
    ModelCallExit, ModelCallLimit, ModelCallLimitExceeded, ModelCallLimitState,
};
pub use summarization::{
    ContextSize, Summarization, SummarizationConfigError, TokenCounter, TriggerClause,
    DEFAULT_SUMMARY_PROMPT, SUMMARY_PREFIX,
};
pub use todo_list::{
    Todo, TodoList, TodoListState, TodoStatus, PARALLEL_WRITE_TODOS_ERROR,
    WRITE_TODOS_SYSTEM_PROMPT, WRITE_TODOS_TOOL_DESCRIPTION,
};
pub use token_count::ApproximateTokenCounter;
pub use tool_call_limit::{
    ToolCallExit, ToolCallLimit, ToolCallLimitExceeded, ToolCallLimitState, ALL_TOOLS, STOPPED_CALL,
};
