//! Field metadata of a derived state, available at run time, from which
//! reference tables (field | type | default | reducer | description) and
//! other docs are rendered.

use std::fmt;

/// The reducer of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReducerKind {
    /// No attribute: the update's value replaces the field's.
    Replace,
    /// Keys or fields present in the update override, the rest are kept.
    Merge,
    /// LangGraph's `add_messages`.
    Messages,
    /// Add missing items, never remove.
    Union,
    /// Extend the list.
    Append,
    /// Set when the state is built; no update may change it.
    Immutable,
    /// A user function; the string is its path as written.
    With(&'static str),
}

impl fmt::Display for ReducerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Replace => f.write_str("replace"),
            Self::Merge => f.write_str("merge"),
            Self::Messages => f.write_str("messages"),
            Self::Union => f.write_str("union"),
            Self::Append => f.write_str("append"),
            Self::Immutable => f.write_str("immutable"),
            Self::With(path) => write!(f, "with {path}"),
        }
    }
}

/// One field of a state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSchema {
    /// The name in JSON (after `rename` / `rename_all`).
    pub name: &'static str,
    /// The name of the Rust field.
    pub rust_name: &'static str,
    /// The Rust type, as written.
    pub ty: &'static str,
    /// The reducer.
    pub reducer: ReducerKind,
    /// The `#[state(default = ..)]` expression as written; `None` when the
    /// type's `Default` is used.
    pub default: Option<&'static str>,
    /// The field's doc comment.
    pub doc: &'static str,
}

/// All fields of a state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSchema {
    /// The struct's name.
    pub name: &'static str,
    /// The struct's doc comment.
    pub doc: &'static str,
    /// The fields, in declaration order.
    pub fields: Vec<FieldSchema>,
}

impl StateSchema {
    /// The field with this JSON name.
    pub fn field(&self, name: &str) -> Option<&FieldSchema> {
        self.fields.iter().find(|f| f.name == name)
    }
}
