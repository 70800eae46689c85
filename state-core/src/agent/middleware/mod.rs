//! LangChain's built-in middleware, each behaving as langchain 1.4.7's
//! does for the same run (`tests/middleware/`, against LangChain's own
//! output recorded by `tests/reference/middleware/*.py`).
//!
//! Each is an [`AgentMiddleware`](super::AgentMiddleware) generic over any
//! state that has the messages and, where the middleware keeps state of its
//! own (call counts, a to-do list), that state's part: put the part in your
//! state with `#[state(flatten)]`, as seed 003's agent does.
//!
//! * [`HumanInTheLoop`]: a person approves, edits, rejects or answers the
//!   model's tool calls before they run (LangChain's
//!   `HumanInTheLoopMiddleware`).

mod human_in_the_loop;

pub use human_in_the_loop::{
    Action, ActionRequest, Decision, DecisionType, DescribeFn, HitlError, HitlRequest,
    HitlResponse, HumanInTheLoop, HumanInTheLoopState, HumanInTheLoopStateUpdate, InterruptOn,
    InterruptOnEntry, ReviewConfig, WhenFn,
};
