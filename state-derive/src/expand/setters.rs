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
use crate::names::{item_setter, method_ident, text_of, RESERVED};
use crate::ty::{collection_item, is_primitive, option_inner};

/// A method's name with its tokens.
type Method = (String, TokenStream);

/// Every method of the struct of `kind`. A method name is generated once,
/// and never one of the names every update has (`new`, `with`, ..):
/// `check` has already reported any clash, and a second definition would
/// only add a knock-on error.
pub(super) fn methods(ex: &Expansion, kind: Kind) -> Vec<TokenStream> {
    let mut emitted: HashSet<String> = RESERVED.iter().map(|(n, _)| (*n).to_owned()).collect();
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
                setter(ex, f)
            }
        })
        .filter_map(|(name, tokens)| emitted.insert(name).then_some(tokens))
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
    let tr = kind.trait_path(&ex.p);
    let p = &ex.p;
    let doc = format!(
        "Adds an {what} of the part `{ty}`: its writes come after those this {what} \
         already holds for the part, as `StateUpdate::with` adds them."
    );
    quote! {
        #[doc = #doc]
        #[must_use]
        #[inline]
        #vis fn #name(mut self, #name: #arg) -> Self {
            #tr::combine(&mut self.#name, #name, #p::StepRule::Superstep);
            self
        }
    }
}

/// The methods of one field on the update type, each with its name.
fn setter(ex: &Expansion, f: &Field) -> Vec<Method> {
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
            let mut out = collection_setters(ex, f);
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
        #[inline]
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
        #[inline]
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
        #[inline]
        #vis fn #name(mut self, value: #arg_ty) -> Self {
            self.#name = ::core::option::Option::Some(::core::option::Option::Some(#conv));
            self
        }
    };
    let clear = quote! {
        #(#cfgs)*
        #[doc = #clear_doc]
        #[must_use]
        #[inline]
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
        #[inline]
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
        #[inline]
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
        #[inline]
        #vis fn #method(mut self, value: impl ::core::convert::Into<#ty>) -> Self {
            self.#name = ::core::option::Option::Some(#p::FieldWrite::Overwrite(value.into()));
            self
        }
    };
    (overwrite_name, tokens)
}

/// `messages`, `union` and `append`: a plural setter named after the
/// field, which accumulates, and a one-item setter named by
/// [`item_setter`]'s rule, each documented with where its name comes from.
fn collection_setters(ex: &Expansion, f: &Field) -> Vec<Method> {
    let (p, vis, cfgs, name, ty) = (&ex.p, ex.cont.vis, &f.cfgs, f.ident, f.ty);
    let plain = &f.plain_name;
    let (item, what, one_what) = collection_item_and_doc(p, f);
    let primitive_items =
        !matches!(f.reducer(), Reducer::Messages) && collection_item(ty).is_some_and(is_primitive);
    let (many_bound, many_call, one_arg, one_conv) = item_args(&item, primitive_items);
    let one = item_setter(f).expect("a collection field has an item setter");
    let one_method = method_ident(&one.name, name.span());
    let (one_name, link) = (&one.name, one_method.to_string());
    let many_doc = format!(
        "{what}. Calls accumulate; after an `overwrite_{plain}` in the same update, they start over. \
         One item: [`{one_name}`](Self::{link}).{}",
        field_line(f)
    );
    let one_doc = format!(
        "{one_what}, as `{plain}([item])` does.\n\n{}",
        one.doc(plain)
    );
    vec![
        (
            plain.clone(),
            quote! {
                #(#cfgs)*
                #[doc = #many_doc]
                #[must_use]
                #[inline]
                #vis fn #name<I>(mut self, items: I) -> Self
                where
                    #many_bound
                {
                    #p::#many_call(&mut self.#name, items);
                    self
                }
            },
        ),
        (
            one.name.clone(),
            quote! {
                #(#cfgs)*
                #[doc = #one_doc]
                #[must_use]
                #[inline]
                #vis fn #one_method(mut self, item: #one_arg) -> Self {
                    let __item: #item = #one_conv;
                    #p::push_write(&mut self.#name, __item);
                    self
                }
            },
        ),
    ]
}

/// The item a collection setter takes, and the sentences the docs of the
/// plural and the one-item setter start with.
fn collection_item_and_doc(p: &TokenStream, f: &Field) -> (TokenStream, String, String) {
    let ty = f.ty;
    let tspan = ty.span();
    let (item, many, one) = match f.reducer() {
        Reducer::Messages => (
            quote_spanned!(tspan=> #p::MessageOp<<#ty as #p::MessagesField>::Message>),
            "Adds messages to `{plain}`: a new id appends, a known id replaces in place, a removal removes",
            "Adds one message (or removal) to `{plain}`",
        ),
        Reducer::Union => (
            quote_spanned!(tspan=> <#ty as #p::UnionField>::Item),
            "Adds items to `{plain}` that it does not hold yet",
            "Adds one item to `{plain}` unless it holds it",
        ),
        _ => (
            quote_spanned!(tspan=> <#ty as #p::AppendField>::Item),
            "Appends items to `{plain}`",
            "Appends one item to `{plain}`",
        ),
    };
    let plain = &f.plain_name;
    (
        item,
        many.replace("{plain}", plain),
        one.replace("{plain}", plain),
    )
}

/// The plural setter's bound and the `__private` function it calls with
/// its items, and the one-item setter's argument and conversion. Primitive
/// items are taken as they are, so a literal takes the item's type.
fn item_args(
    item: &TokenStream,
    primitive_items: bool,
) -> (TokenStream, TokenStream, TokenStream, TokenStream) {
    if primitive_items {
        (
            quote!(I: ::core::iter::IntoIterator<Item = #item>),
            quote!(extend_write),
            quote!(#item),
            quote!(item),
        )
    } else {
        (
            quote!(I: ::core::iter::IntoIterator, I::Item: ::core::convert::Into<#item>),
            quote!(extend_into::<#item, _, _, _>),
            quote!(impl ::core::convert::Into<#item>),
            quote!(::core::convert::Into::into(item)),
        )
    }
}
