//! The JSON of the update, the input and the state: the bodies of their
//! `from_json` (which names the field on error) and `serialize_fields`
//! (which writes the fields into a map being serialized, so a part writes
//! its own into the outer map and the JSON stays flat).
//!
//! Reading, a key the struct does not own is routed to the part whose
//! `has_field` claims it; one map is gathered per part and handed to the
//! part's `from_json`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{defaults, Expansion, Kind, Slot};
use crate::ast::Field;

/// The body of `StateUpdate::from_json` (or `StateInput::from_json`).
pub(super) fn write_from_json(ex: &Expansion, kind: Kind) -> TokenStream {
    let p = &ex.p;
    let ident = ex.cont.ident;
    let (_, ty_generics, _) = ex.cont.generics.split_for_impl();
    let part_maps = part_maps(ex);
    let arms = write_arms(ex, kind);
    let route = route(ex, &|f| {
        (kind == Kind::Input && !f.in_input())
            .then(|| quote!(return ::core::result::Result::Err(#p::not_input(__k));))
    });
    let read_parts = read_parts(ex, kind);
    let unknown = match kind {
        Kind::Update => quote!(unknown_update_field),
        Kind::Input => quote!(unknown_input_field),
    };
    quote! {
        let __map = #p::expect_object(__value)?;
        let mut __out = <Self as ::core::default::Default>::default();
        #(#part_maps)*
        for (__k, __v) in __map {
            match __k.as_str() {
                #(#arms)*
                _ => {
                    #(#route)*
                    let __schema = <#ident #ty_generics as #p::AgentState>::schema();
                    return ::core::result::Result::Err(#p::#unknown(__k, __schema));
                }
            }
        }
        #(#read_parts)*
        ::core::result::Result::Ok(__out)
    }
}

/// One match arm per own field: read its write, or refuse the key (an
/// immutable field; in an input, a field omitted from input).
fn write_arms(ex: &Expansion, kind: Kind) -> Vec<TokenStream> {
    let p = &ex.p;
    ex.slots
        .iter()
        .filter_map(|(f, s)| {
            let name = f.ident;
            let cfgs = &f.cfgs;
            let json = &f.json_name;
            let arm = match s {
                // No `?`: see `__private::value_into`.
                Slot::Own(Some(g)) if kind.holds(f) => {
                    let read_into = &g.read_into;
                    quote! {
                        if let ::core::result::Result::Err(__e) = #read_into(&mut __out.#name, #json, __v) {
                            return ::core::result::Result::Err(__e);
                        }
                    }
                }
                Slot::Own(_) if kind == Kind::Input && f.attrs.omit_from_input => {
                    quote!({ return ::core::result::Result::Err(#p::not_input(__k)); })
                }
                Slot::Own(_) => {
                    quote!({ return ::core::result::Result::Err(#p::immutable_field(__k)); })
                }
                Slot::Part => return None,
            };
            Some(quote!(#(#cfgs)* #json => #arm))
        })
        .collect()
}

/// `let mut __p_<part> = Map::new();`: where a part's keys are gathered.
fn part_maps(ex: &Expansion) -> Vec<TokenStream> {
    let p = &ex.p;
    ex.parts()
        .map(|f| {
            let m = format_ident!("__p_{}", f.plain_name);
            quote!(let mut #m = #p::serde_json::Map::new();)
        })
        .collect()
}

/// Per part: a key it claims goes to its map, unless `reject` says what to
/// do instead.
fn route(ex: &Expansion, reject: &dyn Fn(&Field) -> Option<TokenStream>) -> Vec<TokenStream> {
    ex.parts()
        .map(|f| {
            let pa = ex.part_as(f);
            let m = format_ident!("__p_{}", f.plain_name);
            let take = reject(f).unwrap_or_else(|| quote! { #m.insert(__k, __v); continue; });
            quote! {
                if #pa::has_field(&__k) { #take }
            }
        })
        .collect()
}

/// Per part the struct holds: its gathered keys read as its update (or
/// input), when there were some.
fn read_parts(ex: &Expansion, kind: Kind) -> Vec<TokenStream> {
    let p = &ex.p;
    let what = kind.part_type();
    let tr = kind.trait_path(p);
    ex.parts()
        .filter(|f| kind.holds(f))
        .map(|f| {
            let name = f.ident;
            let pa = ex.part_as(f);
            let m = format_ident!("__p_{}", f.plain_name);
            quote! {
                if !#m.is_empty() {
                    __out.#name = <#pa::#what as #tr>::from_json(#p::serde_json::Value::Object(#m))?;
                }
            }
        })
        .collect()
}

/// The statements of `StateUpdate::serialize_fields` (or `StateInput`'s):
/// the set fields, and each part's.
pub(super) fn write_serialize_fields(ex: &Expansion, kind: Kind) -> Vec<TokenStream> {
    let tr = kind.trait_path(&ex.p);
    // An untracked field's writes are never stored, so never in the JSON.
    let held = ex
        .slots
        .iter()
        .filter(|(f, _)| kind.holds(f) && !f.is_untracked());
    held.filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        match s {
            Slot::Own(None) => None,
            Slot::Own(Some(g)) => {
                let p = &ex.p;
                let write = if g.partial_ty.is_some() {
                    quote!(#p::opt_write_entry)
                } else {
                    quote!(#p::opt_entry)
                };
                Some(quote! {
                    #(#cfgs)*
                    if let ::core::result::Result::Err(__e) = #write(__m, #json, &self.#name) {
                        return ::core::result::Result::Err(__e);
                    }
                })
            }
            Slot::Part => Some(quote!(#tr::serialize_fields(&self.#name, __m)?;)),
        }
    })
    .collect()
}

/// The body of `AgentState::from_json`: one `Option` per own field, filled
/// from its key; a missing key takes the field's default.
pub(super) fn state_from_json(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let slots = ex.own().map(|f| {
        let ty = f.ty;
        let cfgs = &f.cfgs;
        let slot = format_ident!("__f_{}", f.plain_name);
        quote!(#(#cfgs)* let mut #slot: ::core::option::Option<#ty> = ::core::option::Option::None;)
    });
    let part_maps = part_maps(ex);
    let arms = ex.own().map(|f| {
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        let slot = format_ident!("__f_{}", f.plain_name);
        quote! {
            #(#cfgs)*
            #json => if let ::core::result::Result::Err(__e) = #p::value_into(&mut #slot, #json, __v) {
                return ::core::result::Result::Err(__e);
            }
        }
    });
    let route = route(ex, &|_| None);
    let init = state_init(ex);
    quote! {
        let __map = #p::expect_object(__value)?;
        #(#slots)*
        #(#part_maps)*
        for (__k, __v) in __map {
            match __k.as_str() {
                #(#arms)*
                _ => {
                    #(#route)*
                    let __schema = <Self as #p::AgentState>::schema();
                    return ::core::result::Result::Err(#p::unknown_state_field(__k, __schema));
                }
            }
        }
        ::core::result::Result::Ok(Self { #(#init)* })
    }
}

/// The state's fields from what was read: a value or the default; a part
/// from its gathered map.
fn state_init(ex: &Expansion) -> Vec<TokenStream> {
    let p = &ex.p;
    ex.slots
        .iter()
        .map(|(f, s)| {
            let name = f.ident;
            let cfgs = &f.cfgs;
            match s {
                Slot::Own(_) => {
                    let slot = format_ident!("__f_{}", f.plain_name);
                    let default = defaults::default_expr(p, f);
                    quote!(#(#cfgs)* #name: match #slot { ::core::option::Option::Some(__v) => __v, ::core::option::Option::None => #default },)
                }
                Slot::Part => {
                    let pa = ex.part_as(f);
                    let m = format_ident!("__p_{}", f.plain_name);
                    quote!(#name: #pa::from_json(#p::serde_json::Value::Object(#m))?,)
                }
            }
        })
        .collect()
}

/// The statements of `AgentState::serialize_fields`: every field for `All`
/// (`to_json`), all but the untracked ones for `Stored` (a checkpoint's
/// snapshot), all but those omitted from output for `Output`
/// (`state.output()`).
pub(super) fn state_serialize_fields(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let fields = ex.slots.iter().map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        let write = match s {
            Slot::Own(_) => quote! {
                if let ::core::result::Result::Err(__e) = #p::entry(__m, #json, &self.#name) {
                    return ::core::result::Result::Err(__e);
                }
            },
            Slot::Part => {
                let pa = ex.part_as(f);
                quote!(#pa::serialize_fields(&self.#name, __m, __view)?;)
            }
        };
        match (f.in_output(), f.is_untracked()) {
            (true, false) => quote!(#(#cfgs)* { #write }),
            (false, false) => quote!(#(#cfgs)* if __view != #p::FieldView::Output { #write }),
            (true, true) => quote!(#(#cfgs)* if __view != #p::FieldView::Stored { #write }),
            (false, true) => quote!(#(#cfgs)* if __view == #p::FieldView::All { #write }),
        }
    });
    quote!(#(#fields)*)
}
