//! `Serialize` and `Deserialize` for the update, the input and the state.
//! Each goes through its trait: serializing writes a map with
//! `serialize_fields`; deserializing reads a JSON value and hands it to
//! `from_json`, whose error names the field.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::Expansion;

/// The two impls for `ty`, through the runtime trait `trait_name`;
/// `ser_args` completes the call to `serialize_fields` (the state's takes
/// a view).
pub(super) fn impls(
    ex: &Expansion,
    ty: &Ident,
    trait_name: &str,
    ser_args: TokenStream,
) -> TokenStream {
    let p = &ex.p;
    let tr = format_ident!("{}", trait_name);
    let (impl_generics, ty_generics, _) = ex.cont.generics.split_for_impl();
    let state_where = &ex.bounds.state;
    let de_generics = {
        let mut g = ex.cont.generics.clone();
        g.params.insert(0, syn::parse_quote!('__de));
        g
    };
    let (de_impl_generics, _, _) = de_generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::serde::Serialize for #ty #ty_generics #state_where {
            fn serialize<__S: #p::serde::Serializer>(&self, __s: __S) -> ::core::result::Result<__S::Ok, __S::Error> {
                use #p::serde::ser::SerializeMap as _;
                let mut __m = __s.serialize_map(::core::option::Option::None)?;
                #p::#tr::serialize_fields(self, &mut __m #ser_args)?;
                __m.end()
            }
        }

        #[automatically_derived]
        impl #de_impl_generics #p::serde::Deserialize<'__de> for #ty #ty_generics #state_where {
            fn deserialize<__D: #p::serde::Deserializer<'__de>>(__d: __D) -> ::core::result::Result<Self, __D::Error> {
                let __v = <#p::serde_json::Value as #p::serde::Deserialize>::deserialize(__d)?;
                <Self as #p::#tr>::from_json(__v).map_err(<__D::Error as #p::serde::de::Error>::custom)
            }
        }
    }
}
