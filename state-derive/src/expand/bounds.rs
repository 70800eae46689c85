//! The where-clauses of the generated items: the user's own predicates,
//! for generic states the bounds each field's type needs, and for every
//! part the bounds that make it a state.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::Generics;

use super::field_checks::needs_union_check;
use super::{FieldGen, Slot};
use crate::ast::{Container, Field};
use crate::attr::Reducer;
use crate::ty::{collection_item, mentions_params, plainly_serde};

/// The three where-clauses the items use.
pub(super) struct Bounds {
    /// Serde-facing items (the trait impls, which call each other):
    /// `SerdeValue` on each field's type and write, `UnionField` on a
    /// union field's type.
    pub state: TokenStream,
    /// The generated structs, which name the parts' associated types and
    /// a union field's item type.
    pub parts: TokenStream,
    /// `Default` for the state: `Default` on the fields without a
    /// `#[state(default = ..)]`.
    pub default: TokenStream,
}

impl Bounds {
    pub fn new(cont: &Container, p: &TokenStream, slots: &[(&Field, Slot)]) -> Self {
        // One bound set for every serde-facing impl: they call each other.
        let both = quote!(#p::SerdeValue);
        let clause = |extra: &dyn Fn(&Field, Option<&FieldGen>) -> Option<TokenStream>| {
            where_clause(cont, p, slots, extra)
        };
        // A field of a generic type without `#[state(default = ..)]` takes
        // its `Default`: in the state's `Default`, and (its own fields, not
        // parts, which read their own) for a key missing from its JSON.
        let default = |f: &Field| {
            let ty = f.ty;
            (f.attrs.default.is_none() && mentions_params(ty, cont.generics))
                .then(|| quote!(#ty: ::core::default::Default))
        };
        Bounds {
            default: clause(&|f, _| default(f)),
            state: clause(&|f, g| {
                let own_default = default(f).filter(|_| !f.is_part());
                let preds: Vec<TokenStream> = serde_preds(f, g, &both)
                    .into_iter()
                    .chain(own_default)
                    .chain(union_pred(p, f, cont.generics))
                    .collect();
                (!preds.is_empty()).then(|| quote!(#(#preds),*))
            }),
            // The generated structs name a part's associated types, which
            // exist only where the part is a state (`where_clause` adds the
            // part bounds to every set), and a union field's item type.
            parts: clause(&|f, _| union_pred(p, f, cont.generics)),
        }
    }
}

/// The user's predicates, then `extra` of each field, then the part
/// bounds.
fn where_clause(
    cont: &Container,
    p: &TokenStream,
    slots: &[(&Field, Slot)],
    extra: &dyn Fn(&Field, Option<&FieldGen>) -> Option<TokenStream>,
) -> TokenStream {
    let mut preds: Vec<TokenStream> = cont
        .generics
        .where_clause
        .as_ref()
        .map(|w| w.predicates.iter().map(ToTokens::to_token_stream).collect())
        .unwrap_or_default();
    preds.extend(slots.iter().filter_map(|(f, s)| extra(f, s.gen())));
    preds.extend(
        slots
            .iter()
            .filter(|(f, _)| f.is_part())
            .map(|(f, _)| part_preds(p, f)),
    );
    if preds.is_empty() {
        TokenStream::new()
    } else {
        quote!(where #(#preds,)*)
    }
}

/// Every item that names a part's types is conditional on the part being a
/// state (and its update and input, fields of the generated structs,
/// having what their derives of `Debug`, `Clone` and `PartialEq` need;
/// those derives copy these bounds). Written higher-ranked, a bound is not
/// checked where it is declared, so a part that is not a state gives one
/// error (in the name check of `parts`) instead of one per item.
fn part_preds(p: &TokenStream, f: &Field) -> TokenStream {
    let traits = quote!(::core::fmt::Debug + ::core::clone::Clone + ::core::cmp::PartialEq);
    let ty = f.ty;
    quote! {
        for<'__part> #ty: #p::AgentState,
        for<'__part> <#ty as #p::AgentState>::Update: #traits,
        for<'__part> <#ty as #p::AgentState>::Input: #traits
    }
}

/// `SerdeValue` (serde's traits) bounds on each field's type and, for reducer fields, on what an
/// update carries; a part brings its own, and a type that is plainly
/// serde's (`u32`, `Vec<String>`) needs none. Written higher-ranked, a
/// bound on a concrete type is not checked where it is declared: a field
/// type without serde then gets the one error of `field_checks`, on its
/// type, instead of one from every impl that serializes it.
fn serde_preds(f: &Field, g: Option<&FieldGen>, tr: &TokenStream) -> Option<TokenStream> {
    let ty = f.ty;
    if f.is_part() {
        return None;
    }
    // A `with` reducer's update type is its own; the other partials are
    // made of the field type.
    let partial_plain = match f.reducer() {
        Reducer::With {
            update: Some(update),
            ..
        } => plainly_serde(update),
        _ => plainly_serde(ty),
    };
    let mut preds = Vec::new();
    if !plainly_serde(ty) {
        preds.push(quote!(for<'__f> #ty: #tr));
    }
    if let Some(partial) = g
        .and_then(|g| g.partial_ty.as_ref())
        .filter(|_| !partial_plain)
    {
        preds.push(quote!(for<'__f> #partial: #tr));
    }
    (!preds.is_empty()).then(|| quote!(#(#preds),*))
}

/// `for<'__f> T: UnionField<Item = I>` for a `union` field whose items may
/// not serve the reducer: the one error is then `field_checks`'s, on the
/// type. The item is spelled out so the update's item type stays `I` (and
/// has `I`'s `Debug`, `Clone`, `PartialEq`) under the assumed bound.
fn union_pred(p: &TokenStream, f: &Field, generics: &Generics) -> Option<TokenStream> {
    let ty = f.ty;
    let item = collection_item(ty)?;
    needs_union_check(f, generics).then(|| quote!(for<'__f> #ty: #p::UnionField<Item = #item>))
}
