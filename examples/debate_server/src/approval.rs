//! The approval example's graph (the same code): a draft that pauses in
//! `review` until a client answers the interrupt with `command.resume`
//! (`{"approve": true, "comment": ".."}`).

#[path = "../../approval/graph.rs"]
mod shared;

pub use shared::{graph as build_graph, Post, PostUpdate, Verdict};
