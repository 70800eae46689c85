//! Field metadata of a derived state, available at run time, from which
//! reference tables (field | type | default | reducer | description) and
//! other docs are rendered.
//!
//! A state that flattens parts (`#[state(flatten)]`) lists their fields
//! too, in declaration order, each with the state that declares it
//! ([`FieldSchema::owner`]): the schema describes the flat JSON a client
//! sees.

use std::fmt::{self, Write as _};

use serde_json::Value;

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
    /// LangGraph's `EphemeralValue`: seen by the next step only.
    Ephemeral,
    /// LangGraph's `AnyValue`: the last write of a step; cleared by a step
    /// that writes none.
    AnyValue,
    /// LangGraph's `Topic`: the items of the last step (`accumulate`:
    /// of every step).
    Topic {
        /// Whether the items add up across steps.
        accumulate: bool,
    },
    /// LangGraph's `UntrackedValue`: a plain field never stored.
    Untracked,
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
            Self::Ephemeral => f.write_str("ephemeral"),
            Self::AnyValue => f.write_str("any_value"),
            Self::Topic { accumulate: false } => f.write_str("topic"),
            Self::Topic { accumulate: true } => f.write_str("topic(accumulate)"),
            Self::Untracked => f.write_str("untracked"),
        }
    }
}

/// Where a field shows: in the graph's input, its output, both or neither.
///
/// The field attributes `#[state(omit_from_input)]`,
/// `#[state(omit_from_output)]` and `#[state(private)]` are LangChain's
/// `OmitFromInput`, `OmitFromOutput` and `PrivateStateAttr`. Every field,
/// whatever its visibility, is part of the state and of its checkpoints
/// (`to_json` / `from_json`), and nodes may update it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Visibility {
    /// In the input and the output (no attribute).
    #[default]
    Public,
    /// Not accepted as input; shown in the output.
    OmitFromInput,
    /// Accepted as input; not shown in the output.
    OmitFromOutput,
    /// Neither input nor output: internal to the graph.
    Private,
}

impl Visibility {
    /// The visibility that omits what `omit_input` and `omit_output` say.
    pub const fn from_omissions(omit_input: bool, omit_output: bool) -> Self {
        match (omit_input, omit_output) {
            (false, false) => Self::Public,
            (true, false) => Self::OmitFromInput,
            (false, true) => Self::OmitFromOutput,
            (true, true) => Self::Private,
        }
    }

    /// Whether the graph's input may set the field.
    pub const fn in_input(self) -> bool {
        matches!(self, Self::Public | Self::OmitFromOutput)
    }

    /// Whether the graph's output shows the field.
    pub const fn in_output(self) -> bool {
        matches!(self, Self::Public | Self::OmitFromInput)
    }

    /// Omits what either omits: a field of a part marked
    /// `omit_from_input`, inside a part flattened as `omit_from_output`,
    /// is private.
    #[must_use]
    pub const fn and(self, other: Self) -> Self {
        Self::from_omissions(
            !self.in_input() || !other.in_input(),
            !self.in_output() || !other.in_output(),
        )
    }
}

impl fmt::Display for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Public => "public",
            Self::OmitFromInput => "omit from input",
            Self::OmitFromOutput => "omit from output",
            Self::Private => "private",
        })
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
    /// Whether the graph's input and output show the field, the visibility
    /// of the parts it comes through included.
    pub visibility: Visibility,
    /// The name of the state struct that declares the field: this state's
    /// own name, or the part's for a field of a flattened part.
    pub owner: &'static str,
    /// The Rust name of the `#[state(flatten)]` field of this state the
    /// field comes through; `None` for the state's own fields.
    pub part: Option<&'static str>,
}

/// A part: a derived state embedded with `#[state(flatten)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSchema {
    /// The Rust name of the flattened field.
    pub field: &'static str,
    /// The part's state struct, as its schema names it.
    pub state: &'static str,
    /// The doc comment of the flattened field, else the part struct's.
    pub doc: &'static str,
    /// The visibility given on the flattened field, applied to every field
    /// of the part on top of its own.
    pub visibility: Visibility,
}

/// All fields of a state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSchema {
    /// The struct's name.
    pub name: &'static str,
    /// The struct's doc comment.
    pub doc: &'static str,
    /// The fields as JSON sees them, in declaration order: a flattened
    /// part's fields stand where the part is declared.
    pub fields: Vec<FieldSchema>,
    /// The flattened parts, in declaration order.
    pub parts: Vec<PartSchema>,
}

impl StateSchema {
    /// The field with this JSON name.
    pub fn field(&self, name: &str) -> Option<&FieldSchema> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The fields an update may write (all but immutable ones).
    pub fn update_fields(&self) -> impl Iterator<Item = &FieldSchema> {
        self.fields
            .iter()
            .filter(|f| f.reducer != ReducerKind::Immutable)
    }

    /// The fields the graph's input may set: updatable and not omitted
    /// from input.
    pub fn input_fields(&self) -> impl Iterator<Item = &FieldSchema> {
        self.update_fields().filter(|f| f.visibility.in_input())
    }

    /// The fields the graph's output shows.
    pub fn output_fields(&self) -> impl Iterator<Item = &FieldSchema> {
        self.fields.iter().filter(|f| f.visibility.in_output())
    }

    /// The fields that come through the part flattened as `part` (its Rust
    /// field name).
    pub fn part_fields<'s>(&'s self, part: &'s str) -> impl Iterator<Item = &'s FieldSchema> {
        self.fields.iter().filter(move |f| f.part == Some(part))
    }

    /// Renders the Markdown reference table LangGraph projects write by
    /// hand: `Field | Type | Default | Reducer | Description`, with an
    /// `Owner` column when the state has parts and a `Visibility` column
    /// when a field is omitted from input or output.
    ///
    /// `defaults` is the JSON of the default state (what
    /// [`AgentState::reference_table`](crate::AgentState::reference_table)
    /// passes); a field missing from it shows its `#[state(default = ..)]`
    /// expression, or `Default::default()`. The description is the first
    /// paragraph of the doc comment.
    ///
    /// ```
    /// use agent_state::{AgentState, Messages};
    ///
    /// #[derive(AgentState)]
    /// struct Chat {
    ///     /// Conversation history.
    ///     #[reducer(messages)]
    ///     messages: Messages,
    ///     /// Turns taken.
    ///     #[state(default = 1)]
    ///     turns: u32,
    /// }
    ///
    /// assert_eq!(
    ///     Chat::reference_table(),
    ///     "\
    /// | Field | Type | Default | Reducer | Description |
    /// | --- | --- | --- | --- | --- |
    /// | `messages` | `Messages` | `[]` | messages | Conversation history. |
    /// | `turns` | `u32` | `1` | replace | Turns taken. |
    /// "
    /// );
    /// ```
    pub fn to_markdown(&self, defaults: Option<&Value>) -> String {
        let owners = !self.parts.is_empty();
        let visibility = self
            .fields
            .iter()
            .any(|f| f.visibility != Visibility::Public);
        let mut header = vec!["Field", "Type", "Default", "Reducer"];
        if owners {
            header.push("Owner");
        }
        if visibility {
            header.push("Visibility");
        }
        header.push("Description");
        let mut out = String::new();
        row(&mut out, header.iter().map(|h| (*h).to_owned()));
        row(&mut out, header.iter().map(|_| "---".to_owned()));
        for field in &self.fields {
            let default = match defaults.and_then(|d| d.get(field.name)) {
                Some(value) => code(&value.to_string()),
                None => code(field.default.unwrap_or("Default::default()")),
            };
            let reducer = match field.reducer {
                ReducerKind::With(path) => format!("with {}", code(path)),
                other => other.to_string(),
            };
            let mut cells = vec![code(field.name), code(field.ty), default, reducer];
            if owners {
                cells.push(code(field.owner));
            }
            if visibility {
                cells.push(field.visibility.to_string());
            }
            cells.push(cell(first_paragraph(field.doc)));
            row(&mut out, cells);
        }
        out
    }
}

fn row(out: &mut String, cells: impl IntoIterator<Item = String>) {
    out.push('|');
    for c in cells {
        let _ = write!(out, " {c} |");
    }
    out.push('\n');
}

/// Text made safe for a table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// A code span for a table cell; GitHub's tables need the pipe escaped even
/// inside one.
fn code(text: &str) -> String {
    let text = cell(text);
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

fn first_paragraph(doc: &str) -> &str {
    doc.split("\n\n").next().unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visibility_combines_omissions() {
        use Visibility::*;
        assert_eq!(OmitFromInput.and(OmitFromOutput), Private);
        assert_eq!(Public.and(OmitFromInput), OmitFromInput);
        assert_eq!(Public.and(Public), Public);
        assert!(OmitFromOutput.in_input() && !OmitFromOutput.in_output());
        assert!(!Private.in_input() && !Private.in_output());
    }

    #[test]
    fn cells_stay_on_one_line_and_escape_pipes() {
        assert_eq!(cell("a |\n b"), "a \\| b");
        assert_eq!(code("'a' | 'b'"), "`'a' \\| 'b'`");
        assert_eq!(code("x`y"), "`` x`y ``");
        assert_eq!(first_paragraph("One.\nTwo.\n\nThree."), "One.\nTwo.");
    }
}
