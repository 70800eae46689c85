//! The one error type of state updates.
//!
//! Every error names the field it is about (a dotted path for nested states,
//! `user_context.identity`) and says what went wrong, so a node author or a
//! client sending JSON can fix the input without reading our source.

use std::fmt;

/// Why an update or a step was rejected. The state is unchanged when you get
/// one: staging checks everything before anything is written.
///
/// One pointer wide (the field and the case are boxed), so a `Result` of a
/// step's staging moves no more than its `Ok` value on the path that
/// succeeds.
#[derive(Clone, PartialEq, Eq)]
pub struct StateError(Box<Inner>);

#[derive(Clone, PartialEq, Eq)]
struct Inner {
    field: String,
    kind: ErrorKind,
}

impl fmt::Debug for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateError")
            .field("field", &self.0.field)
            .field("kind", &self.0.kind)
            .finish()
    }
}

/// The case of a [`StateError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A field without a reducer was written more than once in one step
    /// (LangGraph's `INVALID_CONCURRENT_GRAPH_UPDATE`).
    ConcurrentWrites {
        /// How many writes the step carried.
        writes: usize,
    },
    /// A reducer field was overwritten more than once in one step.
    ConcurrentOverwrites {
        /// How many overwrites the step carried.
        overwrites: usize,
    },
    /// An update combined from two (`StateUpdate::with`, a part's setter)
    /// carried two writes of the field that only its reducer could fold
    /// into one: two writes through a `with` function, or a write after an
    /// overwrite in a nested state. Apply them as two updates of one step
    /// (`apply_all`) instead.
    Uncombined,
    /// A message removal named an id that is not in the history.
    MessageNotFound {
        /// The id the removal asked for.
        id: String,
    },
    /// A user's `with = path` reducer returned an error.
    Rejected {
        /// The reducer's error, rendered with `Display`.
        reason: String,
    },
    /// A dynamic update named an immutable field.
    Immutable,
    /// The graph's input named a field omitted from input
    /// (`#[state(omit_from_input)]` or `#[state(private)]`).
    NotInput,
    /// A dynamic update or state named a field the state does not have.
    UnknownField {
        /// The names that are accepted.
        expected: Vec<&'static str>,
    },
    /// A value could not be read as the field's type.
    InvalidValue {
        /// What the decoder said.
        reason: String,
    },
    /// The input was not a JSON object of fields.
    NotAnObject {
        /// The JSON type that came instead (`"array"`, `"string"`, ...).
        found: &'static str,
    },
    /// The value nests deeper than a checkpoint can store and read back
    /// ([`MAX_FIELD_DEPTH`](crate::MAX_FIELD_DEPTH) arrays and objects).
    TooDeep {
        /// The deepest nesting accepted.
        max: usize,
    },
    /// The value cannot be stored as JSON and read back as itself: a NaN or
    /// an infinite float, an integer beyond 64 bits, `Some` of a value
    /// written as `null`, a text PostgreSQL cannot hold, a message that would
    /// not read back, a value whose `Serialize` fails.
    NotStorable {
        /// What cannot be stored, and why.
        reason: String,
    },
}

impl StateError {
    /// An error about `field`.
    #[cold]
    pub fn new(field: impl Into<String>, kind: ErrorKind) -> Self {
        Self(Box::new(Inner {
            field: field.into(),
            kind,
        }))
    }

    /// The field the error is about: its JSON name, or a dotted path into a
    /// nested state. Empty for errors about the whole input.
    pub fn field(&self) -> &str {
        &self.0.field
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Prefixes the field path with `parent`, so an error from a nested
    /// state reads `user_context.identity`.
    #[must_use]
    #[cold]
    pub fn within(mut self, parent: &str) -> Self {
        self.0.field = if self.0.field.is_empty() {
            parent.to_owned()
        } else {
            format!("{parent}.{}", self.0.field)
        };
        self
    }

    /// The error for a value that could not be decoded as the field's type.
    pub fn invalid_value(field: impl Into<String>, reason: impl fmt::Display) -> Self {
        Self::new(
            field,
            ErrorKind::InvalidValue {
                reason: reason.to_string(),
            },
        )
    }
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = &self.0.field;
        match &self.0.kind {
            ErrorKind::ConcurrentWrites { writes } => write!(
                f,
                "at key `{field}`: can receive only one value per step, got {writes}; \
                 give the field a reducer to combine several writes"
            ),
            ErrorKind::ConcurrentOverwrites { overwrites } => write!(
                f,
                "at key `{field}`: can receive only one overwrite per step, got {overwrites}"
            ),
            ErrorKind::Uncombined => write!(
                f,
                "at key `{field}`: an update combined from two (`with`, or a part's setter) carries two writes of this field that only its reducer can fold; apply the two updates as one step (`apply_all`) instead"
            ),
            ErrorKind::MessageNotFound { id } => write!(
                f,
                "at key `{field}`: attempting to delete a message with an ID that doesn't exist ('{id}')"
            ),
            ErrorKind::Rejected { reason } => {
                write!(f, "at key `{field}`: the reducer rejected the update: {reason}")
            }
            ErrorKind::Immutable => write!(
                f,
                "at key `{field}`: the field is immutable; it is set when the state is built and no update may change it"
            ),
            ErrorKind::NotInput => write!(
                f,
                "at key `{field}`: the field is not accepted as input; it is omitted from the graph's input schema"
            ),
            ErrorKind::UnknownField { expected } => {
                write!(f, "unknown field `{field}`, expected ")?;
                write_expected(f, expected)
            }
            ErrorKind::InvalidValue { reason } => {
                write!(f, "at key `{field}`: invalid value: {reason}")
            }
            ErrorKind::TooDeep { max } => write!(
                f,
                "at key `{field}`: nested deeper than {max} arrays and objects, which a checkpoint cannot store and read back"
            ),
            ErrorKind::NotStorable { reason } => {
                write!(f, "at key `{field}`: cannot be stored: {reason}")
            }
            ErrorKind::NotAnObject { found } => {
                if field.is_empty() {
                    write!(f, "expected a JSON object of fields, found {found}")
                } else {
                    write!(f, "at key `{field}`: expected a JSON object, found {found}")
                }
            }
        }
    }
}

impl std::error::Error for StateError {}

/// The names an unknown field could have been: "no fields", "`a`", or
/// "one of `a`, `b`".
fn write_expected(f: &mut fmt::Formatter<'_>, expected: &[&str]) -> fmt::Result {
    match expected {
        [] => f.write_str("no fields"),
        [only] => write!(f, "`{only}`"),
        _ => {
            f.write_str("one of ")?;
            for (i, name) in expected.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "`{name}`")?;
            }
            Ok(())
        }
    }
}

/// The JSON type name of `value`, for error messages.
pub(crate) fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_field_lists_the_valid_names() {
        let err = StateError::new(
            "rounds",
            ErrorKind::UnknownField {
                expected: vec!["messages", "round"],
            },
        );
        assert_eq!(
            err.to_string(),
            "unknown field `rounds`, expected one of `messages`, `round`"
        );
    }

    #[test]
    fn within_builds_a_dotted_path() {
        let err = StateError::invalid_value("identity", "expected a string").within("user_context");
        assert_eq!(err.field(), "user_context.identity");
        assert_eq!(
            err.to_string(),
            "at key `user_context.identity`: invalid value: expected a string"
        );
    }
}
