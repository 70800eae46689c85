//! The chat-completions answer as servers send it. OpenAI's own servers
//! fill every field; third-party ones (Ollama, vLLM, llama.cpp, proxies)
//! often leave out a choice's `index`, `usage`, `created`, `object`,
//! `system_fingerprint`, a tool call's `type`, a stream chunk's
//! `finish_reason`, or send a finish reason of their own. The official
//! clients read all of that (they do not validate an answer), so these
//! types require only what an answer cannot do without: a completion's
//! `choices` and a choice's `message` (a stream chunk may even lack
//! those). A `null` reads as a missing field.

use serde::Deserialize;
use serde_json::Value;

/// A completion (`stream: false`).
#[derive(Debug, Deserialize)]
pub(super) struct Completion {
    pub(super) id: Option<String>,
    pub(super) model: Option<String>,
    /// `None` when missing or `null` (an error, named as such).
    pub(super) choices: Option<Vec<Choice>>,
    pub(super) usage: Option<WireUsage>,
    /// What some servers send, with status 200, instead of a completion.
    pub(super) error: Option<Value>,
}

/// One choice of a completion.
#[derive(Debug, Deserialize)]
pub(super) struct Choice {
    pub(super) message: Reply,
    pub(super) finish_reason: Option<String>,
}

/// The assistant's message: `content` is `null` beside tool calls.
#[derive(Debug, Deserialize)]
pub(super) struct Reply {
    pub(super) content: Option<String>,
    pub(super) tool_calls: Option<Vec<WireToolCall>>,
    pub(super) refusal: Option<String>,
}

/// A tool call: a function call (with or without `"type": "function"`),
/// or a custom tool's call (`"type": "custom"`).
#[derive(Debug, Deserialize)]
pub(super) struct WireToolCall {
    pub(super) id: Option<String>,
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) function: Option<Function>,
    pub(super) custom: Option<Custom>,
}

/// A function call's name and arguments (JSON text; missing or empty is
/// no argument).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Function {
    pub(super) name: Option<String>,
    pub(super) arguments: Option<String>,
}

/// A custom tool's call.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Custom {
    pub(super) name: Option<String>,
    pub(super) input: Option<String>,
}

/// Token counts; a missing total is the sum of the others, as LangChain
/// counts it.
#[derive(Debug, Deserialize)]
pub(super) struct WireUsage {
    pub(super) prompt_tokens: Option<u64>,
    pub(super) completion_tokens: Option<u64>,
    pub(super) total_tokens: Option<u64>,
}

/// One SSE chunk of a streamed completion.
#[derive(Debug, Deserialize)]
pub(super) struct Chunk {
    pub(super) id: Option<String>,
    pub(super) model: Option<String>,
    /// Empty (or missing) on the last chunk, which carries the usage.
    pub(super) choices: Option<Vec<ChunkChoice>>,
    pub(super) usage: Option<WireUsage>,
}

/// One choice of a chunk.
#[derive(Debug, Deserialize)]
pub(super) struct ChunkChoice {
    pub(super) delta: Option<Delta>,
    pub(super) finish_reason: Option<String>,
}

/// What a chunk adds to the message.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta {
    pub(super) content: Option<String>,
    pub(super) tool_calls: Option<Vec<ToolCallPiece>>,
}

/// A piece of a streamed tool call; pieces with one `index` make one call
/// (a piece without one is a call of its own).
#[derive(Debug, Deserialize)]
pub(super) struct ToolCallPiece {
    pub(super) index: Option<usize>,
    pub(super) id: Option<String>,
    pub(super) function: Option<Function>,
}
