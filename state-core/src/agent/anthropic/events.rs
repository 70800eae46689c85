//! A streamed message's SSE events as [`ChatChunk`]s, as LangChain's
//! `ChatAnthropic` makes them: `message_start` gives the id and model,
//! `content_block_start`/`content_block_delta` the text and the tool call
//! pieces (indexed by their content block), `message_delta` the usage and
//! stop reason; `ping`, `content_block_stop`, `message_stop` and events
//! this version does not know give nothing; `error` is the stream's
//! error. Unlike LangChain, a tool call whose streamed input does not
//! parse as a JSON object is an error at its `content_block_stop` (the
//! call would be lost otherwise), and a stream that ends before
//! `message_stop` is an error, not a shorter message.

use std::collections::HashMap;
use std::error::Error;

use eventsource_stream::{Event, EventStreamError};
use futures::stream::{self, BoxStream, Stream, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use super::super::model::{ChatChunk, ModelError};
use super::wire::{ErrorBody, WireUsage};
use crate::agent::excerpt;
use crate::message::{parse_args, MessageChunk, ToolCallChunk};

/// One event's data.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: Start,
    },
    ContentBlockStart {
        index: usize,
        content_block: BlockStart,
    },
    ContentBlockDelta {
        index: usize,
        delta: Piece,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDelta,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        error: ErrorBody,
    },
    /// `ping`, and events added after this version.
    #[serde(other)]
    Other,
}

/// The message as `message_start` announces it.
#[derive(Debug, Deserialize)]
struct Start {
    id: Option<String>,
    model: Option<String>,
    usage: Option<WireUsage>,
}

/// A content block as it starts.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Option<Value>,
    },
    #[serde(other)]
    Other,
}

/// A piece of a content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Piece {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

/// The message's end: why it stopped.
#[derive(Debug, Deserialize)]
struct MessageDelta {
    stop_reason: Option<String>,
    stop_sequence: Option<String>,
}

/// A tool call being streamed: who it is, and its input so far.
struct Call {
    id: String,
    name: String,
    input: String,
}

/// What the decoder remembers between events.
#[derive(Default)]
struct Decoder {
    calls: HashMap<usize, Call>,
    start_usage: WireUsage,
    stopped: bool,
}

/// The SSE events of a response as chunks, ending with the first error.
pub(super) fn chunks<'a, E>(
    events: impl Stream<Item = Result<Event, EventStreamError<E>>> + Send + 'a,
) -> BoxStream<'a, Result<ChatChunk, ModelError>>
where
    E: Error + Send + Sync + 'static,
{
    let start = Some((events.boxed(), Decoder::default()));
    stream::unfold(start, |state| async move {
        let (mut events, mut decoder) = state?;
        loop {
            let result = match events.next().await {
                None if decoder.stopped => return None,
                None => Err(ModelError::Transport(
                    "the stream ended before `message_stop`".into(),
                )),
                Some(Err(error)) => Err(stream_error(error)),
                Some(Ok(event)) => match decoder.event(&event) {
                    Ok(None) => continue,
                    Ok(Some(chunk)) => Ok(chunk),
                    Err(error) => Err(error),
                },
            };
            let next = result.is_ok().then_some((events, decoder));
            return Some((result, next));
        }
    })
    .boxed()
}

fn stream_error<E: Error + Send + Sync + 'static>(error: EventStreamError<E>) -> ModelError {
    match error {
        EventStreamError::Transport(error) => ModelError::Transport(Box::new(error)),
        other => ModelError::InvalidResponse {
            message: format!("the event stream does not parse: {other}"),
        },
    }
}

impl Decoder {
    /// The chunk an event makes, if any.
    fn event(&mut self, event: &Event) -> Result<Option<ChatChunk>, ModelError> {
        let parsed: StreamEvent =
            serde_json::from_str(&event.data).map_err(|error| ModelError::InvalidResponse {
                message: format!(
                    "the `{}` event does not parse: {error}; its data: {}",
                    event.event,
                    excerpt(&event.data)
                ),
            })?;
        Ok(match parsed {
            StreamEvent::MessageStart { message } => Some(self.start(message)),
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.block_start(index, content_block),
            StreamEvent::ContentBlockDelta { index, delta } => self.delta(index, delta),
            StreamEvent::ContentBlockStop { index } => self.block_stop(index)?,
            StreamEvent::MessageDelta { delta, usage } => Some(self.end(delta, usage)),
            StreamEvent::MessageStop => {
                self.stopped = true;
                None
            }
            StreamEvent::Error { error } => {
                let status = error.status();
                return Err(error.into_error(status, None));
            }
            StreamEvent::Other => None,
        })
    }

    fn start(&mut self, message: Start) -> ChatChunk {
        self.start_usage = message.usage.unwrap_or_default();
        let mut chunk = MessageChunk::ai("");
        let meta = &mut chunk.response_metadata;
        meta.extend(message.id.map(|id| ("id".to_owned(), id.into())));
        meta.extend(message.model.map(|m| ("model_name".to_owned(), m.into())));
        meta.insert("model_provider".to_owned(), "anthropic".into());
        chunk
    }

    fn block_start(&mut self, index: usize, block: BlockStart) -> Option<ChatChunk> {
        match block {
            BlockStart::Text { text } if !text.is_empty() => Some(MessageChunk::ai(text)),
            BlockStart::ToolUse { id, name, input } => {
                // The input usually streams in afterwards; a non-empty one
                // given whole at the start is its first piece.
                let first = input
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                let piece = call_chunk(index, Some(id.clone()), Some(name.clone()), &first);
                self.calls.insert(
                    index,
                    Call {
                        id,
                        name,
                        input: first,
                    },
                );
                Some(piece)
            }
            _ => None,
        }
    }

    fn delta(&mut self, index: usize, delta: Piece) -> Option<ChatChunk> {
        match delta {
            Piece::TextDelta { text } => Some(MessageChunk::ai(text)),
            Piece::InputJsonDelta { partial_json } => {
                let call = self.calls.get_mut(&index)?;
                call.input.push_str(&partial_json);
                Some(call_chunk(index, None, None, &partial_json))
            }
            Piece::Other => None,
        }
    }

    /// A tool call's end: its input must be a JSON object by now.
    fn block_stop(&mut self, index: usize) -> Result<Option<ChatChunk>, ModelError> {
        if let Some(call) = self.calls.remove(&index) {
            if let Err(error) = parse_args(&call.input) {
                return Err(ModelError::InvalidResponse {
                    message: format!(
                        "the streamed input of tool call `{}` ({}) does not parse: {error}; it was: {}",
                        call.id,
                        call.name,
                        excerpt(&call.input)
                    ),
                });
            }
        }
        Ok(None)
    }

    fn end(&mut self, delta: MessageDelta, usage: Option<WireUsage>) -> ChatChunk {
        let mut chunk = MessageChunk::ai("");
        let usage = usage.unwrap_or_default().or(&self.start_usage);
        chunk.usage_metadata = Some(usage.to_json());
        let meta = &mut chunk.response_metadata;
        meta.insert("stop_reason".to_owned(), delta.stop_reason.into());
        meta.insert("stop_sequence".to_owned(), delta.stop_sequence.into());
        chunk
    }
}

fn call_chunk(index: usize, id: Option<String>, name: Option<String>, args: &str) -> ChatChunk {
    let mut chunk = MessageChunk::ai("");
    chunk.tool_call_chunks.push(ToolCallChunk {
        name,
        args: args.to_owned(),
        id,
        index: Some(index),
    });
    chunk
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(data: Value) -> Event {
        Event {
            event: data["type"].as_str().unwrap_or("message").to_owned(),
            data: data.to_string(),
            id: String::new(),
            retry: None,
        }
    }

    /// Events this version does not know, thinking blocks and their
    /// deltas give nothing; a tool input given whole at the start is the
    /// call's first piece; a delta for a block never started is dropped.
    #[test]
    fn unknown_events_and_blocks_give_nothing() {
        let mut decoder = Decoder::default();
        let mut feed = |data: Value| decoder.event(&event(data)).unwrap();
        assert!(feed(json!({"type": "some_future_event", "x": 1})).is_none());
        assert!(feed(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": ""}}))
        .is_none());
        assert!(feed(json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hmm"}}))
        .is_none());
        assert!(feed(json!({"type": "content_block_delta", "index": 5,
            "delta": {"type": "input_json_delta", "partial_json": "{"}}))
        .is_none());
        let whole = feed(
            json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}}),
        )
        .unwrap();
        assert_eq!(whole.tool_call_chunks[0].args, "{\"a\":1}");
        assert!(feed(json!({"type": "content_block_stop", "index": 1})).is_none());
    }

    #[test]
    fn data_that_does_not_parse_is_named() {
        let mut decoder = Decoder::default();
        let bad = Event {
            event: "content_block_delta".to_owned(),
            data: "{\"type\": \"content_block_delta\", \"index\": ".to_owned(),
            id: String::new(),
            retry: None,
        };
        let error = decoder.event(&bad).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("the `content_block_delta` event does not parse"),
            "{error}"
        );
    }
}
