//! LangChain's built-in middleware, each behaving as langchain 1.4.7's
//! does for the same run (`tests/middleware/`, against LangChain's own
//! output recorded by `tests/reference/middleware/*.py`).
//!
//! Each is an [`AgentMiddleware`](super::AgentMiddleware) generic over any
//! state that has the messages and, where the middleware keeps state of its
//! own (call counts, a to-do list), that state's part: put the part in your
//! state with `#[state(flatten)]`, as seed 003's agent does.

mod human_in_the_loop;

pub use human_in_the_loop::{
    Action, ActionRequest, Decision, DecisionType, DescribeFn, Entry, HitlError, HitlRequest,
    HitlResponse, HumanInTheLoop, HumanInTheLoopState, HumanInTheLoopStateUpdate, InterruptOn,
    ReviewConfig, WhenFn,
};
