//! Rules across fields, run after every field has been parsed.

use std::collections::HashMap;

use crate::ast::Container;
use crate::attr::{Channel, Reducer};
use crate::ctxt::Ctxt;
use crate::names::{setter_names, text_of};
use crate::ty::Shape;

pub fn check(cx: &Ctxt, cont: &mut Container) {
    check_json_names(cx, cont);
    check_setter_names(cx, cont);
    check_reducer_types(cx, cont);
    check_parts(cx, cont);
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
                "union works on Vec<T>, HashSet<T> and BTreeSet<T>",
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

/// The update type's methods must not collide: a field named
/// `overwrite_messages` next to a `messages` field would otherwise produce
/// two methods of one name and a baffling error in generated code.
fn check_setter_names(cx: &Ctxt, cont: &Container) {
    let mut taken: HashMap<String, String> = HashMap::new();
    taken.insert("new".to_owned(), "the constructor `new`".to_owned());
    for field in &cont.fields {
        if matches!(field.reducer(), Reducer::Immutable) {
            continue;
        }
        for (name, optional) in setter_names(field) {
            if let Some(owner) = taken.get(&name) {
                if optional {
                    continue; // a convenience setter is skipped on a clash
                }
                cx.error_spanned_by(
                    field.ident,
                    format!(
                        "field `{}` needs the update method `{name}`, which clashes with {owner}; rename the field",
                        field.plain_name
                    ),
                );
            } else {
                taken.insert(name, format!("the method of field `{}`", field.plain_name));
            }
        }
    }
}
