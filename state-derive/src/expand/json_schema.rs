//! `#[state(json_schema)]`: `schemars::JsonSchema` for the state, its update
//! and its input, flat across parts and honouring visibility.
//!
//! The impls are wrapped in the runtime's `if_json_schema!`, which expands
//! them when agent-state's `schemars` feature is on and otherwise turns them
//! into one error saying to enable it: a proc-macro cannot see the features
//! of the crate its output calls.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};

use super::{FieldGen, Slot};
use crate::ast::{Container, Field};

pub(super) fn expand(p: &TokenStream, cont: &Container, slots: &[(&Field, Slot)]) -> TokenStream {
    let ident = cont.ident;
    let update = format_ident!("{}Update", ident);
    let input = format_ident!("{}Input", ident);
    let (impl_generics, ty_generics, where_clause) = cont.generics.split_for_impl();
    let js = quote!(#p::json_schema);

    let mut preds: Vec<TokenStream> = where_clause
        .map(|w| w.predicates.iter().map(ToTokens::to_token_stream).collect())
        .unwrap_or_default();
    let generic = !cont.generics.params.is_empty();
    let mut props = Vec::new();
    for (f, slot) in slots {
        let ty = f.ty;
        let cfgs = &f.cfgs;
        let in_input = f.in_input();
        let in_output = f.in_output();
        match slot {
            Slot::Part => {
                // Higher-ranked, as the other impls' part bounds: see
                // `expand`.
                preds.push(quote!(for<'__part> #ty: #js::StateJsonSchema));
                props.push(quote! {
                    if __target.shows(true, #in_input, #in_output) {
                        <#ty as #js::StateJsonSchema>::add_properties(__gen, __target, __props);
                    }
                });
            }
            Slot::Own(g) => {
                let json = &f.json_name;
                let doc = &f.doc;
                let updatable = g.is_some();
                let write = match g.and_then(|g: &FieldGen| g.partial_ty.as_ref()) {
                    Some(partial) => {
                        if generic {
                            preds.push(quote!(#partial: #js::schemars::JsonSchema));
                        }
                        quote!(#js::write_schema::<#ty, #partial>(__gen))
                    }
                    None => quote!(__gen.subschema_for::<#ty>()),
                };
                if generic {
                    preds.push(quote!(#ty: #js::schemars::JsonSchema));
                }
                props.push(quote! {
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
                });
            }
        }
    }
    let bounds = if preds.is_empty() {
        TokenStream::new()
    } else {
        quote!(where #(#preds,)*)
    };
    let name = ident.to_string();
    let schema_impl = |ty: TokenStream, name: String, target: TokenStream| {
        quote! {
            #[automatically_derived]
            impl #impl_generics #js::schemars::JsonSchema for #ty #bounds {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#name)
                }

                fn schema_id() -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(::core::any::type_name::<Self>())
                }

                fn json_schema(__gen: &mut #js::schemars::SchemaGenerator) -> #js::schemars::Schema {
                    #js::object_schema::<#ident #ty_generics>(__gen, #js::SchemaTarget::#target)
                }
            }
        }
    };
    let state_impl = schema_impl(quote!(#ident #ty_generics), name.clone(), quote!(State));
    let update_impl = schema_impl(
        quote!(#update #ty_generics),
        format!("{name}Update"),
        quote!(Update),
    );
    let input_impl = schema_impl(
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
