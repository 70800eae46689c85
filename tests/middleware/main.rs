//! LangChain's built-in middleware (`agent_state::agent::middleware`), each
//! run as langchain 1.4.7 runs it: the expected events and states are
//! LangChain's own, recorded by `tests/reference/middleware/<name>.py`
//! into `tests/expected/middleware/<name>.json` (rerun and compared by
//! `tests/reference/run.sh`, in `.ci/run`).
#![cfg(feature = "agent")]

mod context_editing;
mod human_in_the_loop;
mod llm_tool_selector;
mod model_call_limit;
mod model_fallback;
mod model_retry;
mod pii;
mod script;
mod structured_output;
mod summarization;
mod support;
mod todo_list;
mod tool_call_limit;
mod tool_retry;
