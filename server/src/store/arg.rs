//! What a statement binds and what it returns, in the one form both
//! drivers take: text, null or an integer in; text columns out.

/// A statement's parameter: both drivers bind these.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Text(String),
    Null,
    Int(i64),
}

impl From<&str> for Arg {
    fn from(s: &str) -> Self {
        Arg::Text(s.to_owned())
    }
}

impl From<String> for Arg {
    fn from(s: String) -> Self {
        Arg::Text(s)
    }
}

impl From<Option<String>> for Arg {
    fn from(s: Option<String>) -> Self {
        s.map_or(Arg::Null, Arg::Text)
    }
}

impl From<i64> for Arg {
    fn from(n: i64) -> Self {
        Arg::Int(n)
    }
}

/// A row as text, column by column (every column is text).
pub(crate) type TextRow = Vec<Option<String>>;
