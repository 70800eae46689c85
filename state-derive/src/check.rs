//! Rules across fields, run after every field has been parsed.

use std::collections::HashMap;

use crate::ast::{Container, Field};
use crate::attr::{Channel, Reducer};
use crate::ctxt::Ctxt;
use crate::names::{item_setter, prefixed_setter_names, text_of, ItemOrigin, ItemSetter, RESERVED};
use crate::ty::{collection_item, float_in, generic_arg_of, Shape};

pub fn check(cx: &Ctxt, cont: &mut Container) {
    check_json_names(cx, cont);
    check_union_types(cx, cont);
    check_reducer_types(cx, cont);
    check_parts(cx, cont);
    // Last: the setters follow the reducers the checks above settled on.
    check_setter_names(cx, cont);
}

/// A part type flattened twice would give the state two `HasPart` impls of
/// one type and every field twice; `#[cfg]` on a part would leave a hole in
/// the compile-time name check. Both are reported on the field, which is
/// then expanded as an immutable field: a derived state has everything such
/// a field needs, so no knock-on error follows.
fn check_parts(cx: &Ctxt, cont: &mut Container) {
    let mut seen: HashMap<String, &syn::Ident> = HashMap::new();
    for field in &mut cont.fields {
        if !field.is_part() {
            continue;
        }
        if let Some(cfg) = field.cfgs.first() {
            cx.error_spanned_by(
                cfg,
                "a `#[state(flatten)]` part cannot be `#[cfg]`'d; put the `#[cfg]` on the part's fields instead",
            );
            field.attrs.flatten = None;
            field.attrs.reducer = Reducer::Immutable;
            continue;
        }
        let ty = text_of(field.ty);
        if let Some(first) = seen.get(&ty) {
            cx.error_spanned_by(
                field.ty,
                format!(
                    "`{ty}` is already flattened as `{first}`: a state embeds each part type once"
                ),
            );
            field.attrs.flatten = None;
            field.attrs.reducer = Reducer::Immutable;
            continue;
        }
        seen.insert(ty, field.ident);
    }
}

/// `union` never holds an item twice, which needs an index of the items
/// and an equality that holds for every value. A list (`Vec`) has no index
/// (each item would be looked up by a scan, at a cost that grows with the
/// list), and floats have no such equality (NaN is not equal to itself, so
/// a NaN would be added again by every write). Each is one error, on the
/// type, and the field falls back to `replace`.
fn check_union_types(cx: &Ctxt, cont: &mut Container) {
    for field in cont.fields.iter_mut().filter(|f| !f.is_part()) {
        if !matches!(field.reducer(), Reducer::Union) {
            continue;
        }
        let item = collection_item(field.ty);
        if let Some(float) = item.and_then(float_in) {
            cx.error_spanned_by(
                float,
                format!(
                    "`#[reducer(union)]` cannot hold `{}` items: NaN is not equal to itself, so a NaN would be added again by every write and \"never twice\" would not hold; store the values as integers or strings, use a wrapper with a total equality (such as `ordered_float::OrderedFloat`), or use `#[reducer(append)]`",
                    text_of(float)
                ),
            );
        } else if generic_arg_of(field.ty, &["Vec"]).is_some() {
            // Served, by a scan: a warning (not an error) points at the
            // indexed types, so a small list stays a plain `Vec`.
            field.attrs.union_scans = true;
            continue;
        } else {
            continue;
        }
        field.attrs.reducer = Reducer::Replace;
        field.attrs.type_reported = true;
    }
}

/// Types that plainly cannot serve a reducer get one error here, on the
/// type, and the field falls back to `replace`. The trait bounds in the
/// generated code catch the rest (aliases, other crates' types), but a
/// failed bound is reported at every place generated code uses it.
fn check_reducer_types(cx: &Ctxt, cont: &mut Container) {
    for field in cont.fields.iter_mut().filter(|f| !f.is_part()) {
        let shape = Shape::of(field.ty);
        let (serves, what) = match field.reducer() {
            Reducer::Merge => (
                !matches!(
                    shape,
                    Shape::Scalar | Shape::Option | Shape::List | Shape::ListOfScalars | Shape::Set | Shape::Messages
                ),
                "merge works on HashMap, BTreeMap, serde_json::Map, serde_json::Value and structs that derive AgentState",
            ),
            Reducer::Union => (
                !matches!(shape, Shape::Scalar | Shape::Option | Shape::Map | Shape::Messages),
                "union works on agent_state::UnionVec<T>, HashSet<T>, BTreeSet<T>, indexmap::IndexSet<T> and Vec<T>",
            ),
            Reducer::Append => (
                !matches!(shape, Shape::Scalar | Shape::Option | Shape::Map | Shape::Set | Shape::Messages),
                "append works on Vec<T> and VecDeque<T>",
            ),
            Reducer::Messages => (
                !matches!(shape, Shape::Scalar | Shape::Option | Shape::Map | Shape::Set | Shape::ListOfScalars),
                "messages works on agent_state::Messages<M> and Vec<M> where M: agent_state::MessageLike",
            ),
            Reducer::Channel(Channel::Topic { .. }) => (
                crate::ty::generic_arg_of(field.ty, &["Vec"]).is_some(),
                "topic collects a step's writes into a Vec<T>",
            ),
            _ => (true, ""),
        };
        if !serves {
            cx.error_spanned_by(
                field.ty,
                format!(
                    "`#[reducer({})]` cannot serve a field of type `{}`; {what}",
                    field.reducer().name(),
                    text_of(field.ty),
                ),
            );
            field.attrs.reducer = Reducer::Replace;
            field.attrs.type_reported = true;
        }
    }
}

/// Two fields may not share a JSON name (after `rename`/`rename_all`).
fn check_json_names(cx: &Ctxt, cont: &Container) {
    let mut seen: HashMap<&str, &syn::Ident> = HashMap::new();
    for field in cont.fields.iter().filter(|f| !f.is_part()) {
        if let Some(first) = seen.insert(&field.json_name, field.ident) {
            cx.error_spanned_by(
                field.ident,
                format!(
                    "field `{}` has the JSON name `{}`, which field `{}` already uses",
                    field.plain_name, field.json_name, first
                ),
            );
        }
    }
}

/// The update type's methods must not collide: with each other (a field
/// named `overwrite_messages` next to a `messages` field, a `todos` field
/// whose item setter `todo` is another field's setter) or with the methods
/// every update has (`new`, `with`, `is_empty`, ..). Each clash is one
/// error on the field that can change, saying how.
fn check_setter_names(cx: &Ctxt, cont: &Container) {
    let mut taken: HashMap<String, String> = RESERVED
        .iter()
        .map(|(name, what)| ((*name).to_owned(), (*what).to_owned()))
        .collect();
    // `clear_<field>` and `overwrite_<field>` first: a field whose own name
    // is one of them (or reserved) is the one to rename. Item setters come
    // last: they yield, since an attribute can name them.
    for field in &cont.fields {
        for name in prefixed_setter_names(field) {
            let what = fixed_role(field, &name);
            taken.insert(name, what);
        }
    }
    for field in &cont.fields {
        let plain = &field.plain_name;
        if matches!(field.reducer(), Reducer::Immutable) {
            // No setter, only a hidden stand-in that explains why (skipped
            // when its name is taken); an item setter of this name would
            // read as the field's.
            taken
                .entry(plain.clone())
                .or_insert_with(|| format!("the name of immutable field `{plain}`"));
        } else if let Some(what) = taken.get(plain) {
            own_name_clash(cx, field, what);
        } else {
            taken.insert(plain.clone(), format!("the setter of field `{plain}`"));
        }
    }
    for field in &cont.fields {
        if let Some(item) = item_setter(field) {
            match taken.get(&item.name) {
                Some(what) => item_name_clash(cx, field, &item, what),
                None => {
                    let what = format!("the one-item setter of field `{}`", field.plain_name);
                    taken.insert(item.name, what);
                }
            }
        } else if let Some(lit) = field
            .attrs
            .item_setter
            .as_ref()
            .filter(|_| !field.attrs.type_reported)
        {
            cx.error_spanned_by(
                lit,
                format!(
                    "`item_setter` names the one-item setter of a `messages`, `union` or `append` field; `{}` has `{}`, whose setter takes the whole value",
                    field.plain_name,
                    field.reducer().name()
                ),
            );
        }
    }
}

/// What a `clear_` or `overwrite_` name is, for messages.
fn fixed_role(field: &Field, name: &str) -> String {
    let plain = &field.plain_name;
    if name.starts_with("clear_") {
        format!("the `{name}` setter of field `{plain}` (sets it to `None`)")
    } else {
        format!("the `{name}` setter of field `{plain}` (LangGraph's `Overwrite`)")
    }
}

/// A field whose own name, or a name made from it, is taken.
fn own_name_clash(cx: &Ctxt, field: &Field, what: &str) {
    let plain = &field.plain_name;
    let json = &field.json_name;
    cx.error_spanned_by(
        field.ident,
        format!(
            "field `{plain}` gives the update the setter `{plain}`, which is already {what}; rename the field, and keep its JSON name with `#[state(rename = \"{json}\")]`"
        ),
    );
}

/// A one-item setter whose name is taken: the error is on the attribute
/// that named it, or on the field with the attribute to add.
fn item_name_clash(cx: &Ctxt, field: &Field, item: &ItemSetter, what: &str) {
    let (plain, name) = (&field.plain_name, &item.name);
    match item.origin {
        ItemOrigin::Attribute(span) => cx.syn_error(syn::Error::new(
            span,
            format!("the item setter `{name}` of field `{plain}` is already {what}; choose another name"),
        )),
        ItemOrigin::Plural | ItemOrigin::Add => {
            let rule = match item.origin {
                ItemOrigin::Plural => format!("`{plain}` less its final `s`"),
                _ => format!("`add_` and the name, since `{plain}` is not a plain plural"),
            };
            let suggestion = if name == &format!("add_{plain}") {
                format!("push_{plain}")
            } else {
                format!("add_{plain}")
            };
            cx.error_spanned_by(
                field.ident,
                format!(
                    "field `{plain}` gets the one-item setter `{name}` ({rule}), which is already {what}; name it with `#[state(item_setter = \"{suggestion}\")]`"
                ),
            );
        }
    }
}
