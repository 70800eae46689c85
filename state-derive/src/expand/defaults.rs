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
        let default = default_expr(&ex.p, f);
        quote!(#(#cfgs)* #name: #default,)
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics ::core::default::Default for #ident #ty_generics #default_where {
            #[inline]
            fn default() -> Self {
                Self { #(#fields)* }
            }
        }
    }
}

/// The field's default: its `#[state(default = ..)]`, typed so a wrong type
/// is reported on the expression, or its `Default` through `FieldDefault`,
/// spanned on the type, so a type without one is told there to add a
/// `#[state(default = ..)]`.
pub(super) fn default_expr(p: &TokenStream, f: &Field) -> TokenStream {
    let ty = f.ty;
    match &f.attrs.default {
        Some(expr) => quote_spanned!(expr.span()=> { let __v: #ty = #expr; __v }),
        None => quote_spanned!(ty.span()=> <#ty as #p::FieldDefault>::field_default()),
    }
}
