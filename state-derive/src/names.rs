//! Names the derive makes up, and how it writes tokens as text.
//!
//! `check` asks which methods a field's update will have, to report a clash
//! before anything is generated; `expand` generates those methods. Both read
//! the names from here, so neither depends on the other.

use proc_macro2::Span;
use quote::ToTokens;
use syn::Ident;

use crate::ast::Field;
use crate::attr::{Channel, Reducer};
use crate::ty::option_inner;

/// The one-item setter's name for a collection field: `messages` →
/// `message`, else `add_<name>`.
pub fn singular(plain: &str) -> String {
    match plain.strip_suffix('s') {
        Some(stem) if !stem.is_empty() && !stem.ends_with('s') && !stem.ends_with('_') => {
            stem.to_owned()
        }
        _ => format!("add_{plain}"),
    }
}

/// The methods the update type gets for `field`, each with whether it is
/// optional (a convenience skipped when its name is taken).
pub fn setter_names(field: &Field) -> Vec<(String, bool)> {
    let plain = &field.plain_name;
    let mut names = vec![(plain.clone(), false)];
    if field.is_part() {
        return names;
    }
    match field.reducer() {
        Reducer::Replace
        | Reducer::Channel(Channel::Ephemeral | Channel::AnyValue | Channel::Untracked) => {
            if option_inner(field.ty).is_some() {
                names.push((format!("clear_{plain}"), false));
            }
        }
        Reducer::Immutable => names.clear(),
        Reducer::Messages
        | Reducer::Union
        | Reducer::Append
        | Reducer::Channel(Channel::Topic { .. }) => {
            names.push((singular(plain), true));
            names.push((format!("overwrite_{plain}"), false));
        }
        Reducer::Merge | Reducer::With { .. } => names.push((format!("overwrite_{plain}"), false)),
    }
    names
}

/// A Rust identifier for a derived name, raw when it is a keyword.
pub fn method_ident(name: &str, span: Span) -> Ident {
    syn::parse_str::<Ident>(name).unwrap_or_else(|_| Ident::new_raw(name, span))
}

/// Tokens as a person writes them, for messages, docs and the schema:
/// `Option<String>`, not `Option < String >`.
pub fn text_of(tokens: &dyn ToTokens) -> String {
    tidy(&tokens.to_token_stream().to_string())
}

/// Token text made readable: `Option < String >` → `Option<String>`.
fn tidy(tokens: &str) -> String {
    let mut out = String::with_capacity(tokens.len());
    let chars: Vec<char> = tokens.chars().collect();
    for (i, &ch) in chars.iter().enumerate() {
        if ch == ' ' {
            let prev = out.chars().last().unwrap_or(' ');
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let glue_after = matches!(prev, '<' | '(' | '[' | '&' | ':' | '!' | '#');
            let glue_before = matches!(
                next,
                '<' | '>' | ',' | ')' | ']' | ':' | '(' | '!' | '?' | ';' | '.'
            );
            let keep = (prev == ','
                || prev == '='
                || prev == '>' && next != '>' && next != ',' && next != ')')
                && !glue_before
                || !(glue_after || glue_before);
            if keep {
                out.push(' ');
            }
        } else {
            out.push(ch);
        }
    }
    out
}
