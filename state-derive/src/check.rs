//! Rules across fields, run after every field has been parsed.

use std::collections::HashMap;

use crate::ast::Container;
use crate::attr::Reducer;
use crate::ctxt::Ctxt;
use crate::expand::setter_names;

pub fn check(cx: &Ctxt, cont: &Container) {
    check_json_names(cx, cont);
    check_setter_names(cx, cont);
}

/// Two fields may not share a JSON name (after `rename`/`rename_all`).
fn check_json_names(cx: &Ctxt, cont: &Container) {
    let mut seen: HashMap<&str, &syn::Ident> = HashMap::new();
    for field in &cont.fields {
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
