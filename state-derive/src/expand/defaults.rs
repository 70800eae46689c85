//! `impl Default for Foo`, and the default of each field, which
//! `from_json` also takes for a missing key.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::Expansion;
use crate::ast::Field;

/// `Default` for the state: each field's default.
pub(super) fn default_impl(ex: &Expansion) -> TokenStream {
    let ident = ex.cont.ident;
    let (impl_generics, ty_generics, _) = ex.cont.generics.split_for_impl();
    let default_where = &ex.bounds.default;
    let fields = ex.cont.fields.iter().map(|f| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let default = default_expr(f);
        quote!(#(#cfgs)* #name: #default,)
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics ::core::default::Default for #ident #ty_generics #default_where {
            fn default() -> Self {
                Self { #(#fields)* }
            }
        }
    }
}

/// The field's default: its `#[state(default = ..)]`, typed so a wrong type
/// is reported on the expression, or `Default::default()`.
pub(super) fn default_expr(f: &Field) -> TokenStream {
    let ty = f.ty;
    match &f.attrs.default {
        Some(expr) => quote_spanned!(expr.span()=> { let __v: #ty = #expr; __v }),
        None => quote!(<#ty as ::core::default::Default>::default()),
    }
}
