//! LangChain's built-in middleware (`agent_state::agent::middleware`), each
//! run as langchain 1.4.7 runs it: the expected events and states are
//! LangChain's own, recorded by `tests/reference/middleware/<name>.py`
//! into `tests/expected/middleware/<name>.json` (rerun and compared by
//! `tests/reference/run.sh`, in `.ci/run`).

#[cfg(feature = "agent")]
mod context_editing;
#[cfg(feature = "agent")]
mod human_in_the_loop;
#[cfg(feature = "agent")]
mod llm_tool_selector;
#[cfg(feature = "agent")]
mod model_call_limit;
#[cfg(feature = "agent")]
mod model_fallback;
#[cfg(feature = "agent")]
mod model_retry;
#[cfg(feature = "agent")]
mod pii;
#[cfg(feature = "agent")]
mod script;
#[cfg(feature = "agent")]
mod summarization;
mod support;
#[cfg(feature = "agent")]
mod todo_list;
#[cfg(feature = "agent")]
mod tool_call_limit;
#[cfg(feature = "agent")]
mod tool_retry;
