//! A check of each field type where the state is declared, spanned on the
//! type the user wrote: serde's traits, which a state needs to be stored
//! and sent as JSON.
//!
//! The impls that serialize a field carry its serde bound written
//! higher-ranked (see `bounds.rs`), which rustc does not check where it is
//! declared; this is then the one error a type without serde gets, instead
//! of one per trait and per impl, all pointing at the derive.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Type;

use super::Expansion;
use crate::attr::Reducer;
use crate::ty::{mentions_params, plainly_serde};

/// `const _: fn() = || { assert_serde::<T, _>((&Probe::<T>::new()).verdict()); .. };`
/// for each concrete field type (and `with` update type) that is not
/// plainly serde's. Types naming the state's generic parameters are
/// checked by the where-clauses, where the state is used.
pub(super) fn serde_checks(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let generics = ex.cont.generics;
    let checks: Vec<TokenStream> = ex
        .own()
        .flat_map(|f| {
            let update = match f.reducer() {
                Reducer::With {
                    update: Some(t), ..
                } => Some(&**t),
                _ => None,
            };
            std::iter::once(f.ty).chain(update).map(move |ty| (f, ty))
        })
        .filter(|(_, ty)| !plainly_serde(ty) && !mentions_params(ty, generics))
        .map(|(f, ty)| {
            let cfgs = &f.cfgs;
            let check = assert_serde(p, ty);
            quote!(#(#cfgs)* #check;)
        })
        .collect();
    if checks.is_empty() {
        return TokenStream::new();
    }
    quote! {
        const _: fn() = || {
            #[allow(unused_imports)]
            use #p::{ViaFallback as _, ViaSerde as _};
            #(#checks)*
        };
    }
}

/// The probe of one type, spanned on it so the error points there.
fn assert_serde(p: &TokenStream, ty: &Type) -> TokenStream {
    quote_spanned! {ty.span()=>
        #p::assert_serde::<#ty, _>((&#p::Probe::<#ty>::new()).verdict())
    }
}
