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

/// Methods every update type has besides the setters, with how messages
/// name them. A setter of one of these names would be a second definition
/// (`new`) or would shadow a trait method for every caller (`with`,
/// `is_empty`, `clone`, ..), since inherent methods win method resolution.
pub const RESERVED: &[(&str, &str)] = &[
    ("new", "the update's constructor `new`"),
    ("with", "`StateUpdate::with` (it adds a part's update)"),
    ("is_empty", "`StateUpdate::is_empty`"),
    ("to_json", "`StateUpdate::to_json`"),
    ("from_json", "`StateUpdate::from_json`"),
    ("clone", "`Clone::clone` of the update"),
    ("default", "`Default::default` of the update"),
];

/// The one-item setter of a collection field by the plural rule: the field
/// name less its final `s` when its last word is a plain English plural
/// (`messages` → `message`, `loaded_plugins` → `loaded_plugin`, `ids` →
/// `id`); `None` otherwise.
///
/// Not plain plurals, so `None`: a last word that ends in `ss`, `us` or
/// `is` (`class`, `status`, `analysis`: singular nouns), or in `ies`,
/// `sses`, `shes`, `ches`, `xes` or `zzes` (plurals whose singular is not
/// the word less its `s`: `entries`, `classes`, `matches`, `boxes`), or
/// whose stem would be shorter than two letters or a path keyword.
pub fn plural_stem(plain: &str) -> Option<String> {
    let word = plain.rsplit('_').next().unwrap_or(plain);
    let word_stem = word.strip_suffix('s')?;
    let not_plural = ["ss", "us", "is"].iter().any(|end| word.ends_with(end));
    let irregular = ["ies", "sses", "shes", "ches", "xes", "zzes"]
        .iter()
        .any(|end| word.ends_with(end));
    let stem = plain.strip_suffix('s')?;
    let keyword = matches!(stem, "self" | "Self" | "super" | "crate");
    (word_stem.chars().count() >= 2 && !not_plural && !irregular && !keyword)
        .then(|| stem.to_owned())
}

/// A collection field's one-item setter: its name, and where the name
/// comes from.
pub struct ItemSetter {
    pub name: String,
    pub origin: ItemOrigin,
}

/// Where a one-item setter's name comes from.
pub enum ItemOrigin {
    /// `#[state(item_setter = "..")]`, with the string's span.
    Attribute(Span),
    /// The plural rule ([`plural_stem`]).
    Plural,
    /// `add_<field>`, for a field name that is not a plain plural.
    Add,
}

impl ItemSetter {
    /// A sentence for the setter's rustdoc on where its name comes from.
    pub fn doc(&self, plain: &str) -> String {
        match self.origin {
            ItemOrigin::Attribute(_) => {
                "Named by the field's `#[state(item_setter = \"..\")]`.".to_owned()
            }
            ItemOrigin::Plural => format!(
                "Named by the plural rule: `{plain}` less its final `s`; \
                 `#[state(item_setter = \"..\")]` on the field names it otherwise."
            ),
            ItemOrigin::Add => format!(
                "Named `add_{plain}` because `{plain}` is not a plain plural (a name ending in \
                 `s`, not `ss`, `us`, `is`, `ies`, `sses`, `shes`, `ches`, `xes` or `zzes`); \
                 `#[state(item_setter = \"..\")]` on the field names it otherwise."
            ),
        }
    }
}

/// The one-item setter of a `messages`, `union` or `append` field: the
/// attribute's name, else the plural rule, else `add_<field>`. `None` for
/// other fields.
pub fn item_setter(field: &Field) -> Option<ItemSetter> {
    if field.is_part()
        || !matches!(
            field.reducer(),
            Reducer::Messages
                | Reducer::Union
                | Reducer::Append
                | Reducer::Channel(Channel::Topic { .. })
        )
    {
        return None;
    }
    let plain = &field.plain_name;
    Some(match &field.attrs.item_setter {
        Some(lit) => ItemSetter {
            name: lit.value(),
            origin: ItemOrigin::Attribute(lit.span()),
        },
        None => match plural_stem(plain) {
            Some(name) => ItemSetter {
                name,
                origin: ItemOrigin::Plural,
            },
            None => ItemSetter {
                name: format!("add_{plain}"),
                origin: ItemOrigin::Add,
            },
        },
    })
}

/// The setters named after the field besides its own (which is the field's
/// name): `clear_<field>` for an `Option`, `overwrite_<field>` for a
/// reducer field. The one-item setter is [`item_setter`].
pub fn prefixed_setter_names(field: &Field) -> Vec<String> {
    let plain = &field.plain_name;
    if field.is_part() {
        return Vec::new();
    }
    match field.reducer() {
        Reducer::Replace
        | Reducer::Channel(Channel::Ephemeral | Channel::AnyValue | Channel::Untracked)
            if option_inner(field.ty).is_some() =>
        {
            vec![format!("clear_{plain}")]
        }
        Reducer::Replace
        | Reducer::Immutable
        | Reducer::Channel(Channel::Ephemeral | Channel::AnyValue | Channel::Untracked) => {
            Vec::new()
        }
        _ => vec![format!("overwrite_{plain}")],
    }
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

#[cfg(test)]
mod tests {
    use super::plural_stem;

    #[test]
    fn the_plural_rule() {
        for (field, item) in [
            ("messages", Some("message")),
            ("loaded_plugins", Some("loaded_plugin")),
            ("todos", Some("todo")),
            ("ids", Some("id")),
            ("responses", Some("response")),
            ("news", Some("new")), // a clash the check reports
            ("status", None),
            ("class", None),
            ("analysis", None),
            ("entries", None),
            ("classes", None),
            ("matches", None),
            ("wishes", None),
            ("boxes", None),
            ("buzzes", None),
            ("xs", None),
            ("selfs", None),
            ("trace", None),
            ("history", None),
        ] {
            assert_eq!(plural_stem(field).as_deref(), item, "{field}");
        }
    }
}
