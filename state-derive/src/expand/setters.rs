//! The methods of `FooUpdate` and `FooInput`: per field, the setters its
//! reducer calls for (the names come from [`crate::names`], which `check`
//! reads too), and per part, a setter of the part's update or input.

use std::collections::HashSet;

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Type;

use super::{Expansion, Kind};
use crate::ast::Field;
use crate::attr::{Channel, Reducer};
use crate::names::{method_ident, setter_names, singular, text_of};
use crate::ty::{collection_item, is_primitive, option_inner};

/// A method's name with its tokens.
type Method = (String, TokenStream);

/// Every method of the struct of `kind`. A method name is generated once:
/// `check` has already reported any clash, and a second definition would
/// only add a knock-on error.
pub(super) fn methods(ex: &Expansion, kind: Kind) -> Vec<TokenStream> {
    let taken = taken(ex);
    let mut emitted: HashSet<String> = HashSet::new();
    // Immutable fields' stand-ins come last so they never displace a setter.
    let (mutable, immutable): (Vec<&Field>, Vec<&Field>) =
        ex.cont.fields.iter().partition(|f| f.is_updatable());
    mutable
        .into_iter()
        .chain(immutable)
        .filter(|f| kind.holds(f))
        .flat_map(|f| {
            if f.is_part() {
                vec![(f.plain_name.clone(), part_setter(ex, f, kind))]
            } else {
                setter(ex, f, &taken)
            }
        })
        .filter_map(|(name, tokens)| emitted.insert(name).then_some(tokens))
        .collect()
}

/// Names a one-item setter may not take: fields and required setters.
fn taken(ex: &Expansion) -> HashSet<String> {
    ex.cont
        .fields
        .iter()
        .flat_map(|f| {
            let mut names: Vec<String> = setter_names(f)
                .into_iter()
                .filter(|(_, opt)| !opt)
                .map(|(n, _)| n)
                .collect();
            names.push(f.plain_name.clone());
            names
        })
        .collect()
}

/// The setter of a part on the update (or input) type.
fn part_setter(ex: &Expansion, f: &Field, kind: Kind) -> TokenStream {
    let vis = ex.cont.vis;
    let name = f.ident;
    let pa = ex.part_as(f);
    let ty = text_of(f.ty);
    let assoc = kind.part_type();
    let arg = quote!(#pa::#assoc);
    let what = kind.word();
    let doc =
        format!("Sets the {what} of the part `{ty}`, replacing what this {what} held for it.");
    quote! {
        #[doc = #doc]
        #[must_use]
        #vis fn #name(mut self, #name: #arg) -> Self {
            self.#name = #name;
            self
        }
    }
}

/// The methods of one field on the update type, each with its name.
fn setter(ex: &Expansion, f: &Field, taken: &HashSet<String>) -> Vec<Method> {
    match f.reducer() {
        Reducer::Immutable => vec![immutable_stand_in(ex, f)],
        Reducer::Replace
        | Reducer::Channel(Channel::Ephemeral | Channel::AnyValue | Channel::Untracked) => {
            match option_inner(f.ty) {
                Some(inner) => option_setters(ex, f, inner),
                None => vec![replace_setter(ex, f)],
            }
        }
        Reducer::Merge => vec![merge_setter(ex, f), overwrite_setter(ex, f)],
        Reducer::With { update, .. } => {
            let input: &Type = update.as_deref().unwrap_or(f.ty);
            vec![with_setter(ex, f, input), overwrite_setter(ex, f)]
        }
        Reducer::Messages
        | Reducer::Union
        | Reducer::Append
        | Reducer::Channel(Channel::Topic { .. }) => {
            let mut out = collection_setters(ex, f, taken);
            out.push(overwrite_setter(ex, f));
            out
        }
    }
}

/// The field's doc comment as a paragraph to append to a setter's doc.
fn field_line(f: &Field) -> String {
    if f.doc.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", f.doc)
    }
}

/// How a setter takes a value of `ty`, and turns it into `ty`: primitives
/// by value (`impl Into<u32>` would make the literal `2` an `i32`), the
/// rest as `impl Into<ty>`.
fn arg(ty: &Type) -> (TokenStream, TokenStream) {
    if is_primitive(ty) {
        (quote!(#ty), quote!(value))
    } else {
        (
            quote!(impl ::core::convert::Into<#ty>),
            quote!(value.into()),
        )
    }
}

/// No setter exists for an immutable field. This stand-in turns a call
/// into an error that says why, instead of "no method named `topic`".
fn immutable_stand_in(ex: &Expansion, f: &Field) -> Method {
    let (p, vis, cfgs) = (&ex.p, ex.cont.vis, &f.cfgs);
    let plain = &f.plain_name;
    let msg = format!(
        "`{plain}` is immutable: it is set when the state is built and no update may change it"
    );
    let method = f.ident;
    let tokens = quote! {
        #(#cfgs)*
        #[doc(hidden)]
        #[doc = #msg]
        #[allow(clippy::unused_self, clippy::needless_pass_by_value)]
        #vis fn #method<__T: #p::ImmutableField>(self, _value: __T) -> Self {
            self
        }
    };
    (plain.clone(), tokens)
}

/// `replace` on a type that is not an `Option`: `field(value)`.
fn replace_setter(ex: &Expansion, f: &Field) -> Method {
    let (vis, cfgs, name) = (ex.cont.vis, &f.cfgs, f.ident);
    let plain = &f.plain_name;
    let (arg_ty, conv) = arg(f.ty);
    let doc = format!("Sets `{plain}`.{}", field_line(f));
    let tokens = quote! {
        #(#cfgs)*
        #[doc = #doc]
        #[must_use]
        #vis fn #name(mut self, value: #arg_ty) -> Self {
            self.#name = ::core::option::Option::Some(#conv);
            self
        }
    };
    (plain.clone(), tokens)
}

/// `replace` on an `Option<inner>`: `field(value)` sets `Some`,
/// `clear_field()` sets `None`, so both differ from "no change".
fn option_setters(ex: &Expansion, f: &Field, inner: &Type) -> Vec<Method> {
    let (vis, cfgs, name) = (ex.cont.vis, &f.cfgs, f.ident);
    let plain = &f.plain_name;
    let (arg_ty, conv) = arg(inner);
    let clear_name = format!("clear_{plain}");
    let clear = method_ident(&clear_name, name.span());
    let doc = format!("Sets `{plain}` to `Some(value)`.{}", field_line(f));
    let clear_doc = format!(
        "Sets `{plain}` to `None` (JSON `null`), which is not the same as leaving it unchanged."
    );
    let set = quote! {
        #(#cfgs)*
        #[doc = #doc]
        #[must_use]
        #vis fn #name(mut self, value: #arg_ty) -> Self {
            self.#name = ::core::option::Option::Some(::core::option::Option::Some(#conv));
            self
        }
    };
    let clear = quote! {
        #(#cfgs)*
        #[doc = #clear_doc]
        #[must_use]
        #vis fn #clear(mut self) -> Self {
            self.#name = ::core::option::Option::Some(::core::option::Option::None);
            self
        }
    };
    vec![(plain.clone(), set), (clear_name, clear)]
}

/// `merge`: `field(partial)` with the field's `MergeField::Partial`.
fn merge_setter(ex: &Expansion, f: &Field) -> Method {
    let (p, vis, cfgs, name, ty) = (&ex.p, ex.cont.vis, &f.cfgs, f.ident, f.ty);
    let plain = &f.plain_name;
    let partial = quote_spanned!(ty.span()=> <#ty as #p::MergeField>::Partial);
    let doc = format!(
        "Merges into `{plain}`: the keys or fields given override, the others are kept.{}",
        field_line(f)
    );
    let tokens = quote! {
        #(#cfgs)*
        #[doc = #doc]
        #[must_use]
        #vis fn #name(mut self, partial: impl ::core::convert::Into<#partial>) -> Self {
            self.#name = ::core::option::Option::Some(#p::FieldWrite::Reduce(partial.into()));
            self
        }
    };
    (plain.clone(), tokens)
}

/// `with = path`: `field(value)` with the function's input type.
fn with_setter(ex: &Expansion, f: &Field, input: &Type) -> Method {
    let (p, vis, cfgs, name) = (&ex.p, ex.cont.vis, &f.cfgs, f.ident);
    let plain = &f.plain_name;
    let (arg_ty, conv) = arg(input);
    let doc = format!(
        "Writes `{plain}` through its reducer function.{}",
        field_line(f)
    );
    let tokens = quote! {
        #(#cfgs)*
        #[doc = #doc]
        #[must_use]
        #vis fn #name(mut self, value: #arg_ty) -> Self {
            self.#name = ::core::option::Option::Some(#p::FieldWrite::Reduce(#conv));
            self
        }
    };
    (plain.clone(), tokens)
}

/// `overwrite_field(value)`, LangGraph's `Overwrite`, on every reducer
/// field.
fn overwrite_setter(ex: &Expansion, f: &Field) -> Method {
    let (p, vis, cfgs, name, ty) = (&ex.p, ex.cont.vis, &f.cfgs, f.ident, f.ty);
    let plain = &f.plain_name;
    let overwrite_name = format!("overwrite_{plain}");
    let method = method_ident(&overwrite_name, name.span());
    let doc = format!(
        "Sets `{plain}` outright, bypassing its reducer (LangGraph's `Overwrite`). \
         Within one update, the last of this and the other setters of the field decides.{}",
        field_line(f)
    );
    let tokens = quote! {
        #(#cfgs)*
        #[doc = #doc]
        #[must_use]
        #vis fn #method(mut self, value: impl ::core::convert::Into<#ty>) -> Self {
            self.#name = ::core::option::Option::Some(#p::FieldWrite::Overwrite(value.into()));
            self
        }
    };
    (overwrite_name, tokens)
}

/// `messages`, `union` and `append`: a plural setter that accumulates and
/// a one-item one, skipped when its name is another field's or another
/// required method's.
fn collection_setters(ex: &Expansion, f: &Field, taken: &HashSet<String>) -> Vec<Method> {
    let (p, vis, cfgs, name, ty) = (&ex.p, ex.cont.vis, &f.cfgs, f.ident, f.ty);
    let plain = &f.plain_name;
    let (item, what) = collection_item_and_doc(p, f);
    let primitive_items =
        !matches!(f.reducer(), Reducer::Messages) && collection_item(ty).is_some_and(is_primitive);
    let (many_bound, many_conv, one_arg, one_conv) = item_args(&item, primitive_items);
    let many_doc = format!(
        "{what}. Calls accumulate; after an `overwrite_{plain}` in the same update, they start over.{}",
        field_line(f)
    );
    let one_doc = format!("{what}: one item.");
    let mut out = vec![(
        plain.clone(),
        quote! {
            #(#cfgs)*
            #[doc = #many_doc]
            #[must_use]
            #vis fn #name<I>(mut self, items: I) -> Self
            where
                #many_bound
            {
                #p::extend_write(&mut self.#name, #many_conv);
                self
            }
        },
    )];
    let one = singular(plain);
    if !taken.contains(&one) {
        let one_method = method_ident(&one, name.span());
        let tokens = quote! {
            #(#cfgs)*
            #[doc = #one_doc]
            #[must_use]
            #vis fn #one_method(mut self, item: #one_arg) -> Self {
                let __item: #item = #one_conv;
                #p::extend_write(&mut self.#name, [__item]);
                self
            }
        };
        out.push((one, tokens));
    }
    out
}

/// The item a collection setter takes, and the sentence its docs start
/// with.
fn collection_item_and_doc(p: &TokenStream, f: &Field) -> (TokenStream, String) {
    let ty = f.ty;
    let tspan = ty.span();
    let (item, what) = match f.reducer() {
        Reducer::Messages => (
            quote_spanned!(tspan=> #p::MessageOp<<#ty as #p::MessagesField>::Message>),
            "Adds messages to `{plain}`: a new id appends, a known id replaces in place, a removal removes",
        ),
        Reducer::Union => (
            quote_spanned!(tspan=> <#ty as #p::UnionField>::Item),
            "Adds items to `{plain}` that it does not hold yet",
        ),
        _ => (quote_spanned!(tspan=> <#ty as #p::AppendField>::Item), "Appends items to `{plain}`"),
    };
    (item, what.replace("{plain}", &f.plain_name))
}

/// The plural setter's bound and conversion, and the one-item setter's
/// argument and conversion. Primitive items are taken as they are, so a
/// literal takes the item's type.
fn item_args(
    item: &TokenStream,
    primitive_items: bool,
) -> (TokenStream, TokenStream, TokenStream, TokenStream) {
    if primitive_items {
        (
            quote!(I: ::core::iter::IntoIterator<Item = #item>),
            quote!(items),
            quote!(#item),
            quote!(item),
        )
    } else {
        (
            quote!(I: ::core::iter::IntoIterator, I::Item: ::core::convert::Into<#item>),
            quote!(::core::iter::Iterator::map(
                ::core::iter::IntoIterator::into_iter(items),
                ::core::convert::Into::into
            )),
            quote!(impl ::core::convert::Into<#item>),
            quote!(::core::convert::Into::into(item)),
        )
    }
}
