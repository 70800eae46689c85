//! The where-clauses of the generated items: the user's own predicates,
//! for generic states the bounds each field's type needs, and for every
//! part the bounds that make it a state.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

use super::{FieldGen, Slot};
use crate::ast::{Container, Field};

/// The three where-clauses the items use.
pub(super) struct Bounds {
    /// Serde-facing items (the trait impls, which call each other):
    /// `Serialize + DeserializeOwned` on each field's type and write.
    pub state: TokenStream,
    /// The generated structs, which name the parts' associated types.
    pub parts: TokenStream,
    /// `Default` for the state: `Default` on the fields without a
    /// `#[state(default = ..)]`.
    pub default: TokenStream,
}

impl Bounds {
    pub fn new(cont: &Container, p: &TokenStream, slots: &[(&Field, Slot)]) -> Self {
        // One bound set for every serde-facing impl: they call each other.
        let both = quote!(#p::serde::Serialize + #p::serde::de::DeserializeOwned);
        let clause = |extra: &dyn Fn(&Field, Option<&FieldGen>) -> Option<TokenStream>| {
            where_clause(cont, p, slots, extra)
        };
        Bounds {
            default: clause(&|f, _| {
                let ty = f.ty;
                f.attrs
                    .default
                    .is_none()
                    .then(|| quote!(#ty: ::core::default::Default))
            }),
            state: clause(&|f, g| serde_preds(f, g, &both)),
            // The generated structs name a part's associated types, which
            // exist only where the part is a state: `where_clause` adds the
            // part bounds to every set.
            parts: clause(&|_, _| None),
        }
    }
}

/// The user's predicates, then for generic states `extra` of each field,
/// then the part bounds.
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
    if !cont.generics.params.is_empty() {
        preds.extend(slots.iter().filter_map(|(f, s)| extra(f, s.gen())));
    }
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

/// Serde bounds of generic states: on each field's type and, for reducer
/// fields, on what an update carries. A part brings its own.
fn serde_preds(f: &Field, g: Option<&FieldGen>, tr: &TokenStream) -> Option<TokenStream> {
    let ty = f.ty;
    if f.is_part() {
        return None;
    }
    Some(match g.and_then(|g| g.partial_ty.as_ref()) {
        Some(partial) => quote!(#ty: #tr, #partial: #tr),
        None => quote!(#ty: #tr),
    })
}
