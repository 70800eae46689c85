//! The rule a message keeps to be stored, and the error for a value that
//! is not a message.

use std::fmt;

use serde_json::Value;

use super::{Message, MessageType};

impl Message {
    /// Checks that the message reads back from its JSON as itself: the one
    /// rule for messages coming in (JSON or Rust) and going out (a
    /// checkpoint). A tool message must answer a call (a non-empty
    /// `tool_call_id`, which LangChain's `ToolMessage` requires), and
    /// `usage_metadata` and `artifact` must not be `Some(null)` (JSON's
    /// `null` reads back as `None`).
    #[inline]
    pub fn validate(&self) -> Result<(), MessageError> {
        // The checks inline, the errors built out of line: a message that
        // passes (every message of a step, nearly always) costs three
        // comparisons.
        if self.kind == MessageType::Tool && self.tool_call_id.as_deref().is_none_or(str::is_empty)
        {
            return Err(tool_without_call_id(self.tool_call_id.is_none()));
        }
        if matches!(self.usage_metadata, Some(Value::Null)) {
            return Err(some_null("usage_metadata"));
        }
        if matches!(self.artifact, Some(Value::Null)) {
            return Err(some_null("artifact"));
        }
        Ok(())
    }
}

/// A tool message without a `tool_call_id`, or with an empty one.
#[cold]
fn tool_without_call_id(missing: bool) -> MessageError {
    if missing {
        MessageError::MissingField {
            field: "tool_call_id",
        }
    } else {
        MessageError::InvalidField {
            field: "tool_call_id",
            reason: "must not be empty".to_owned(),
        }
    }
}

/// A field that is `Some(null)`, which reads back as `None`.
#[cold]
fn some_null(field: &'static str) -> MessageError {
    MessageError::InvalidField {
        field,
        reason: "`Some(null)` reads back as `None`: leave it `None`".to_owned(),
    }
}

/// Why a JSON value is not a message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageError {
    /// The `type` or `role` is not one LangChain knows.
    UnknownType {
        /// The name that came.
        name: String,
    },
    /// A serialised LangChain object (`{"lc": 1, "type": "constructor",
    /// ..}`) of a class that is not a message's.
    UnknownClass {
        /// The class (the last name of its `id`).
        name: String,
    },
    /// A field the message type needs is missing.
    MissingField {
        /// The missing field.
        field: &'static str,
    },
    /// A field has the wrong shape.
    InvalidField {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The value is not a message at all.
    NotAMessage {
        /// The JSON type that came.
        found: &'static str,
    },
}

impl MessageError {
    /// The error for a tool call that cannot be read.
    pub(super) fn tool_call(reason: String) -> Self {
        Self::InvalidField {
            field: "tool_calls",
            reason,
        }
    }
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownType { name } => write!(
                f,
                "unknown message type `{name}`, expected one of `human`, `user`, `ai`, `assistant`, `system`, `developer`, `tool`, `remove`"
            ),
            Self::UnknownClass { name } => write!(
                f,
                "unknown LangChain message class `{name}`, expected one of `HumanMessage`, `AIMessage`, `SystemMessage`, `ToolMessage` (or their `Chunk` classes) or `RemoveMessage`"
            ),
            Self::MissingField { field } => write!(f, "message is missing `{field}`"),
            Self::InvalidField { field, reason } => write!(f, "message field `{field}`: {reason}"),
            Self::NotAMessage { found } => write!(
                f,
                "expected a message (an object with `type` or `role`, a [role, content] pair or a string), found {found}"
            ),
        }
    }
}

impl std::error::Error for MessageError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ai, tool};
    use serde_json::json;

    #[test]
    fn tool_message_needs_its_call_id() {
        let missing = MessageError::MissingField {
            field: "tool_call_id",
        };
        for value in [
            json!({"type": "tool", "content": "x"}),
            json!({"role": "tool", "content": "x", "tool_call_id": null}),
            json!(["tool", "42"]),
        ] {
            assert_eq!(
                Message::from_json(value.clone()).unwrap_err(),
                missing,
                "{value}"
            );
        }
        let empty = Message::from_json(json!({"type": "tool", "content": "x", "tool_call_id": ""}));
        assert!(
            matches!(
                empty,
                Err(MessageError::InvalidField {
                    field: "tool_call_id",
                    ..
                })
            ),
            "{empty:?}"
        );
        // Built in Rust: the same rule, and such a message does not serialize.
        let built = Message::new(MessageType::Tool, "x");
        assert_eq!(built.validate().unwrap_err(), missing);
        let err = serde_json::to_string(&built).unwrap_err();
        assert!(err.to_string().contains("tool_call_id"), "{err}");
        assert!(tool("x", "").validate().is_err());
        assert!(tool("x", "c1").validate().is_ok());
    }

    #[test]
    fn some_null_extras_are_refused() {
        let mut msg = ai("x");
        msg.usage_metadata = Some(Value::Null);
        assert!(matches!(
            msg.validate(),
            Err(MessageError::InvalidField {
                field: "usage_metadata",
                ..
            })
        ));
        msg.usage_metadata = None;
        msg.artifact = Some(Value::Null);
        assert!(serde_json::to_value(&msg).is_err());
    }
}
