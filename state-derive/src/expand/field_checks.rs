//! A check of each field type where the state is declared, spanned on the
//! type the user wrote: serde's traits, which a state needs to be stored
//! and sent as JSON, and for a `union` field, items the reducer can index.
//!
//! The items that use a field type carry what they need of it as bounds
//! written higher-ranked (see `bounds.rs`), which rustc does not check
//! where they are declared; each check here is then the one error a type
//! gets, instead of one per trait and per generated item, all pointing at
//! the derive.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Generics, Type};

use super::Expansion;
use crate::ast::Field;
use crate::attr::Reducer;
use crate::ty::{collection_item, mentions_params, plainly_hashable_items, plainly_serde};

/// `const _: fn() = || { assert_serde::<T, _>((&Probe::<T>::new()).serde_verdict()); .. };`
/// for each concrete field type (and `with` update type) not plainly
/// serde's, or for a `union` field whose items are not plainly hashable,
/// `assert_union` instead (a set's `Deserialize` needs its items hashable
/// too, so the serde check would only repeat it). Types naming the state's
/// generic parameters are checked by the where-clauses, where the state is
/// used; a type `check` already reported on is not checked again.
pub(super) fn type_checks(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let generics = ex.cont.generics;
    let checks: Vec<TokenStream> = ex
        .own()
        .filter(|f| !f.attrs.type_reported)
        .flat_map(|f| checked_types(f, generics).map(move |(ty, union)| (f, ty, union)))
        .filter(|(_, ty, _)| !mentions_params(ty, generics))
        .map(|(f, ty, union)| {
            let cfgs = &f.cfgs;
            let check = if union {
                probe(p, ty, "assert_union", "union_verdict")
            } else {
                probe(p, ty, "assert_serde", "serde_verdict")
            };
            quote!(#(#cfgs)* #check;)
        })
        .collect();
    if checks.is_empty() {
        return TokenStream::new();
    }
    quote! {
        const _: fn() = || {
            #[allow(unused_imports)]
            use #p::{ViaNotSerde as _, ViaNotUnion as _, ViaSerde as _, ViaUnion as _};
            #(#checks)*
        };
    }
}

/// The types of `f` to check, each with whether it is a union check.
fn checked_types<'a>(f: &'a Field, generics: &Generics) -> impl Iterator<Item = (&'a Type, bool)> {
    let (field, update) = match f.reducer() {
        Reducer::Union if needs_union_check(f, generics) => (Some((f.ty, true)), None),
        Reducer::With {
            update: Some(t), ..
        } => (Some((f.ty, false)), Some((&**t, false))),
        _ => (Some((f.ty, false)), None),
    };
    field
        .into_iter()
        .chain(update)
        .filter(|(ty, union)| *union || !plainly_serde(ty))
}

/// Whether a `union` field's items, spelled out in its concrete type, may
/// not serve the reducer. A type that hides its items (an alias) is left to
/// the reducer trait's own error, and one naming the state's generic
/// parameters to the bounds the user declares on them.
pub(super) fn needs_union_check(f: &Field, generics: &Generics) -> bool {
    matches!(f.reducer(), Reducer::Union)
        && !f.attrs.type_reported
        && !f.attrs.union_scans
        && collection_item(f.ty).is_some()
        && !plainly_hashable_items(f.ty)
        && !mentions_params(f.ty, generics)
}

/// A probe of one type, spanned on it so the error points there.
fn probe(p: &TokenStream, ty: &Type, assert: &str, verdict: &str) -> TokenStream {
    let span = ty.span();
    let assert = syn::Ident::new(assert, span);
    let verdict = syn::Ident::new(verdict, span);
    quote_spanned! {span=>
        #p::#assert::<#ty, _>((&#p::Probe::<#ty>::new()).#verdict())
    }
}

/// A warning on each `#[reducer(union)]` field that is a `Vec`: it is served
/// by a scan of the list, so adding an item costs the list's length. A use
/// of a deprecated constant, spanned on the type, is how a derive warns on
/// stable Rust.
pub(super) fn union_scan_warnings(ex: &Expansion) -> TokenStream {
    ex.own()
        .filter(|f| f.attrs.union_scans)
        .map(|f| {
            let cfgs = &f.cfgs;
            let item = collection_item(f.ty).map_or_else(|| "T".to_owned(), |t| crate::names::text_of(t));
            let note = format!(
                "`#[reducer(union)]` on a `Vec` checks each new item against the whole list, a cost that grows with it; `agent_state::UnionVec<{item}>` keeps the same order with an index (one item costs the same at any size), as do `HashSet`, `BTreeSet` and `IndexSet`"
            );
            let span = f.ty.span();
            let name = syn::Ident::new("union_on_a_vec_scans_the_list", span);
            quote_spanned! {span=>
                #(#cfgs)*
                const _: () = {
                    #[deprecated(note = #note)]
                    #[allow(non_upper_case_globals)]
                    const #name: () = ();
                    #name
                };
            }
        })
        .collect()
}
