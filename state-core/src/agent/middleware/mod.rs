//! LangChain's built-in middleware, each behaving as langchain 1.4.7's
//! does for the same run (`tests/middleware/`, against LangChain's own
//! output recorded by `tests/reference/middleware/*.py`).
//!
//! Each is an [`AgentMiddleware`](super::AgentMiddleware) generic over any
//! state that has the messages and, where the middleware keeps state of its
//! own (call counts, a to-do list), that state's part: put the part in your
//! state with `#[state(flatten)]`, as the `middleware_schemas` example's
//! agent does.
//!
//! With state of their own or rewriting the conversation (node hooks):
//!
//! | middleware | LangChain's | its part of the state |
//! | --- | --- | --- |
//! | [`Summarization`] | `SummarizationMiddleware` | none (rewrites the messages) |
//! | [`TodoList`] | `TodoListMiddleware` | [`TodoListState`] |
//! | [`ModelCallLimit`] | `ModelCallLimitMiddleware` | [`ModelCallLimitState`] |
//! | [`ToolCallLimit`] | `ToolCallLimitMiddleware` | [`ToolCallLimitState`] |
//! | [`HumanInTheLoop`] | `HumanInTheLoopMiddleware` | [`HumanInTheLoopState`] (a person approves, edits, rejects or answers tool calls) |
//!
//! Around the calls (`wrap_model_call` / `wrap_tool_call`, no state of
//! their own):
//!
//! | middleware | LangChain's | does |
//! | --- | --- | --- |
//! | [`ModelRetry`] | `ModelRetryMiddleware` | retries failed model calls with [`Backoff`] |
//! | [`ModelFallback`] | `ModelFallbackMiddleware` | other models, in order, on error |
//! | [`ToolRetry`] | `ToolRetryMiddleware` | retries failed tool calls, per tool |
//! | [`LlmToolSelector`] | `LLMToolSelectorMiddleware` | a model picks the tools each call is offered |
//! | [`ContextEditing`] | `ContextEditingMiddleware` | clears old tool results from what the model is sent |
//! | [`Pii`] | `PIIMiddleware` | redacts, masks, hashes or blocks personal data (node hooks) |

mod context_editing;
mod human_in_the_loop;
mod limits;
mod llm_tool_selector;
mod model_call_limit;
mod model_fallback;
mod model_retry;
mod pii;
mod pii_detect;
mod retry;
mod summarization;
mod todo_list;
mod token_count;
mod tool_call_limit;
mod tool_retry;

pub use context_editing::{ClearToolUses, ContextEdit, ContextEditing};
pub use human_in_the_loop::{
    Action, ActionRequest, Decision, DecisionType, DescribeFn, HitlError, HitlRequest,
    HitlResponse, HumanInTheLoop, HumanInTheLoopState, HumanInTheLoopStateUpdate, InterruptMode,
    InterruptOn, InterruptOnEntry, ReviewConfig, ToolApprovalRequest, WhenFn,
};
pub use limits::LimitConfigError;
pub use llm_tool_selector::{
    LlmToolSelector, OnParsingFailure, PickOnFailure, ToolSelectionError, DEFAULT_SELECTOR_PROMPT,
};
pub use model_call_limit::{
    ModelCallExit, ModelCallLimit, ModelCallLimitExceeded, ModelCallLimitState,
};
pub use model_fallback::ModelFallback;
pub use model_retry::ModelRetry;
pub use pii::{Pii, PiiError};
pub use pii_detect::{
    apply_strategy, builtin_detector, detect_credit_card, detect_email, detect_ip,
    detect_mac_address, detect_url, pattern_detector, Detector, PiiMatch, PiiStrategy, BUILTIN_PII,
};
pub use retry::{Backoff, OnFailure, RetryConfigError, RetryOn, Sleeper};
pub use summarization::{
    ContextSize, Summarization, SummarizationConfigError, TriggerClause, DEFAULT_SUMMARY_PROMPT,
    SUMMARY_PREFIX,
};
pub use todo_list::{
    Todo, TodoList, TodoListState, TodoStatus, PARALLEL_WRITE_TODOS_ERROR,
    WRITE_TODOS_SYSTEM_PROMPT, WRITE_TODOS_TOOL_DESCRIPTION,
};
pub use token_count::{count_tokens_approximately, ApproximateTokenCounter, TokenCounter};
pub use tool_call_limit::{
    ToolCallExit, ToolCallLimit, ToolCallLimitExceeded, ToolCallLimitState, ALL_TOOLS, STOPPED_CALL,
};
pub use tool_retry::{tool_failed, ToolRetry};
