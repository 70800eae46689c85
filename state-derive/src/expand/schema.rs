//! `AgentState::schema()`: every field with its JSON name,
//! Rust type, reducer, default, doc, visibility and owner, a part's fields
//! through the part's own schema.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Expansion, Slot};
use crate::ast::Field;
use crate::attr::{Channel, Reducer};
use crate::names::text_of;

/// `AgentState::schema()`, built once, after the name checks of a generic
/// state.
pub(super) fn schema_fn(ex: &Expansion, inline_checks: &TokenStream) -> TokenStream {
    let p = &ex.p;
    let state_name = ex.cont.ident.to_string();
    let state_doc = &ex.cont.doc;
    let fields = field_schemas(ex);
    quote! {
        #[inline]
        fn schema() -> &'static #p::StateSchema {
            #inline_checks
            static __SCHEMA: ::std::sync::OnceLock<#p::StateSchema> = ::std::sync::OnceLock::new();
            __SCHEMA.get_or_init(|| {
                let mut __fields = ::std::vec::Vec::new();
                let mut __parts: ::std::vec::Vec<#p::PartSchema> = ::std::vec::Vec::new();
                #(#fields)*
                #p::StateSchema {
                    name: #state_name,
                    doc: #state_doc,
                    fields: __fields,
                    parts: __parts,
                }
            })
        }
    }
}

/// The statements filling `__fields` and `__parts`, in field order: a run
/// of own fields without `cfg` is one `extend_from_slice` of their
/// `FieldSchema`s (one statement, not one per field, in a function a wide
/// state makes long), a part or a field with a `cfg` a statement of its own.
fn field_schemas(ex: &Expansion) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut run: Vec<TokenStream> = Vec::new();
    let flush = |run: &mut Vec<TokenStream>, out: &mut Vec<TokenStream>| {
        if !run.is_empty() {
            out.push(quote!(__fields.extend_from_slice(&[#(#run),*]);));
            run.clear();
        }
    };
    for (f, s) in &ex.slots {
        match s {
            Slot::Own(_) if f.cfgs.is_empty() => run.push(field_schema(ex, f)),
            Slot::Own(_) => {
                flush(&mut run, &mut out);
                let (cfgs, schema) = (&f.cfgs, field_schema(ex, f));
                out.push(quote!(#(#cfgs)* __fields.push(#schema);));
            }
            Slot::Part => {
                flush(&mut run, &mut out);
                out.push(part_schema(ex, f));
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A part: its fields, with the part's visibility applied on top, and
/// its `PartSchema`.
fn part_schema(ex: &Expansion, f: &Field) -> TokenStream {
    let p = &ex.p;
    let rust_name = &f.plain_name;
    let visibility = visibility(p, f);
    let pa = ex.part_as(f);
    let doc = &f.doc;
    quote! {
        {
            let __ps = #pa::schema();
            __fields.extend(#p::part_fields(#rust_name, #visibility, __ps));
            __parts.push(#p::PartSchema {
                field: #rust_name,
                state: __ps.name,
                doc: #p::part_doc(#doc, __ps),
                visibility: #visibility,
            });
        }
    }
}

/// An own field's `FieldSchema`.
fn field_schema(ex: &Expansion, f: &Field) -> TokenStream {
    let p = &ex.p;
    let rust_name = &f.plain_name;
    let visibility = visibility(p, f);
    let json = &f.json_name;
    let ty = text_of(f.ty);
    let kind = reducer_kind(p, f);
    let doc = &f.doc;
    let state_name = ex.cont.ident.to_string();
    let default = match &f.attrs.default {
        Some(expr) => {
            let text = text_of(expr);
            quote!(::core::option::Option::Some(#text))
        }
        None => quote!(::core::option::Option::None),
    };
    quote! {
        #p::FieldSchema {
            name: #json,
            rust_name: #rust_name,
            ty: #ty,
            reducer: #kind,
            default: #default,
            doc: #doc,
            visibility: #visibility,
            owner: #state_name,
            part: ::core::option::Option::None,
        }
    }
}

/// The schema's `ReducerKind` of a field.
fn reducer_kind(p: &TokenStream, field: &Field) -> TokenStream {
    let kind = match field.reducer() {
        Reducer::Replace => quote!(Replace),
        Reducer::Immutable => quote!(Immutable),
        Reducer::Merge => quote!(Merge),
        Reducer::Messages => quote!(Messages),
        Reducer::Union => quote!(Union),
        Reducer::Append => quote!(Append),
        Reducer::With { path, .. } => {
            let path_str = text_of(path);
            quote!(With(#path_str))
        }
        Reducer::Channel(Channel::Ephemeral) => quote!(Ephemeral),
        Reducer::Channel(Channel::AnyValue) => quote!(AnyValue),
        Reducer::Channel(Channel::Untracked) => quote!(Untracked),
        Reducer::Channel(Channel::Topic { accumulate }) => {
            quote!(Topic { accumulate: #accumulate })
        }
    };
    quote!(#p::ReducerKind::#kind)
}

/// The schema's `Visibility` of a field as declared on it.
fn visibility(p: &TokenStream, f: &Field) -> TokenStream {
    let v = match (f.attrs.omit_from_input, f.attrs.omit_from_output) {
        (false, false) => quote!(Public),
        (true, false) => quote!(OmitFromInput),
        (false, true) => quote!(OmitFromOutput),
        (true, true) => quote!(Private),
    };
    quote!(#p::Visibility::#v)
}
