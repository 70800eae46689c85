//! `#[state(json_schema)]`: `schemars::JsonSchema` for the state, its update
//! and its input, flat across parts and honouring visibility.
//!
//! The impls are wrapped in the runtime's `if_json_schema!`, which expands
//! them when agent-state's `schemars` feature is on and otherwise turns them
//! into one error saying to enable it: a proc-macro cannot see the features
//! of the crate its output calls.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

use super::{Expansion, Slot};
use crate::ast::Field;

/// The impls of `StateJsonSchema` and `JsonSchema`, inside
/// `if_json_schema!`.
pub(super) fn expand(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let ident = ex.cont.ident;
    let (impl_generics, ty_generics, _) = ex.cont.generics.split_for_impl();
    let js = quote!(#p::json_schema);
    let (preds, props) = properties(ex);
    let bounds = if preds.is_empty() {
        TokenStream::new()
    } else {
        quote!(where #(#preds,)*)
    };
    let name = ident.to_string();
    let (update, input) = (&ex.update, &ex.input);
    let state_impl = schema_impl(
        ex,
        &bounds,
        quote!(#ident #ty_generics),
        name.clone(),
        quote!(State),
    );
    let update_impl = schema_impl(
        ex,
        &bounds,
        quote!(#update #ty_generics),
        format!("{name}Update"),
        quote!(Update),
    );
    let input_impl = schema_impl(
        ex,
        &bounds,
        quote!(#input #ty_generics),
        format!("{name}Input"),
        quote!(Input),
    );
    quote! {
        #p::if_json_schema! {
            #[automatically_derived]
            impl #impl_generics #js::StateJsonSchema for #ident #ty_generics #bounds {
                fn add_properties(
                    __gen: &mut #js::schemars::SchemaGenerator,
                    __target: #js::SchemaTarget,
                    __props: &mut #p::serde_json::Map<::std::string::String, #p::serde_json::Value>,
                ) {
                    #(#props)*
                }
            }

            #state_impl
            #update_impl
            #input_impl
        }
    }
}

/// The where-clause predicates of the impls, and the statements of
/// `add_properties`: per field or part, its properties when `__target`
/// shows it.
fn properties(ex: &Expansion) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let p = &ex.p;
    let js = quote!(#p::json_schema);
    let mut preds: Vec<TokenStream> = ex
        .cont
        .generics
        .where_clause
        .as_ref()
        .map(|w| w.predicates.iter().map(ToTokens::to_token_stream).collect())
        .unwrap_or_default();
    let mut props = Vec::new();
    for (f, slot) in &ex.slots {
        let ty = f.ty;
        let (in_input, in_output) = (f.in_input(), f.in_output());
        if let Slot::Part = slot {
            // Higher-ranked, as the other impls' part bounds: see
            // `bounds`.
            preds.push(quote!(for<'__part> #ty: #js::StateJsonSchema));
            props.push(quote! {
                if __target.shows(true, #in_input, #in_output) {
                    <#ty as #js::StateJsonSchema>::add_properties(__gen, __target, __props);
                }
            });
            continue;
        }
        let write = match slot.gen().and_then(|g| g.partial_ty.as_ref()) {
            Some(partial) => {
                if ex.generic {
                    preds.push(quote!(#partial: #js::schemars::JsonSchema));
                }
                quote!(#js::write_schema::<#ty, #partial>(__gen))
            }
            None => quote!(__gen.subschema_for::<#ty>()),
        };
        if ex.generic {
            preds.push(quote!(#ty: #js::schemars::JsonSchema));
        }
        props.push(field_property(&js, f, slot.gen().is_some(), &write));
    }
    (preds, props)
}

/// An own field's property: its write's schema in an update or input, its
/// value's in the state and the output.
fn field_property(
    js: &TokenStream,
    f: &Field,
    updatable: bool,
    write: &TokenStream,
) -> TokenStream {
    let (ty, cfgs, json, doc) = (f.ty, &f.cfgs, &f.json_name, &f.doc);
    let (in_input, in_output) = (f.in_input(), f.in_output());
    quote! {
        #(#cfgs)*
        if __target.shows(#updatable, #in_input, #in_output) {
            let __schema = if __target.is_write() {
                #write
            } else {
                __gen.subschema_for::<#ty>()
            };
            __props.insert(
                ::std::string::String::from(#json),
                #js::describe(__schema, #doc),
            );
        }
    }
}

/// `JsonSchema` for `ty`, named `name`, the flat object of `target`.
fn schema_impl(
    ex: &Expansion,
    bounds: &TokenStream,
    ty: TokenStream,
    name: String,
    target: TokenStream,
) -> TokenStream {
    let p = &ex.p;
    let js = quote!(#p::json_schema);
    let ident = ex.cont.ident;
    let (impl_generics, ty_generics, _) = ex.cont.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #js::schemars::JsonSchema for #ty #bounds {
            #[inline]
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(#name)
            }

            #[inline]
            fn schema_id() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(::core::any::type_name::<Self>())
            }

            #[inline]
            fn json_schema(__gen: &mut #js::schemars::SchemaGenerator) -> #js::schemars::Schema {
                #js::object_schema::<#ident #ty_generics>(__gen, #js::SchemaTarget::#target)
            }
        }
    }
}
