//! What `#[state(flatten)]` parts need beyond their slots: the tree of
//! JSON names (`FIELD_NAMES`), the compile-time check that no name is
//! declared twice across the state and its parts, and the typed access
//! `impl HasPart<P> for Foo`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::Expansion;
use crate::ast::Field;

/// The `FieldNames` tree: own JSON names with their Rust names, then per
/// part the part's tree.
pub(super) fn field_names(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let state_name = ex.cont.ident.to_string();
    let own_json_names = name_list(ex, &|f| f.json_name.clone());
    let own_rust_names = name_list(ex, &|f| f.plain_name.clone());
    let part_trees = ex.parts().map(|f| {
        let pa = ex.part_as(f);
        let rust_name = &f.plain_name;
        quote!(#p::PartNames { field: #rust_name, names: &#pa::FIELD_NAMES })
    });
    quote! {
        #p::FieldNames {
            state: #state_name,
            own: #own_json_names,
            rust: #own_rust_names,
            parts: &[#(#part_trees),*],
        }
    }
}

/// A `&[&str]` of one name per own field. With `#[cfg]` fields it is built
/// by a `const fn`, and a field compiled out leaves `""`, which the check
/// skips.
fn name_list(ex: &Expansion, name: &dyn Fn(&Field) -> String) -> TokenStream {
    let own: Vec<&Field> = ex.own().collect();
    if own.iter().any(|f| !f.cfgs.is_empty()) {
        let n = own.len();
        let sets = own.iter().enumerate().map(|(i, f)| {
            let cfgs = &f.cfgs;
            let name = name(f);
            quote!(#(#cfgs)* { __a[#i] = #name; })
        });
        quote!({
            const fn __names() -> [&'static str; #n] {
                let mut __a = [""; #n];
                #(#sets)*
                __a
            }
            &__names()
        })
    } else {
        let names = own.iter().map(|f| name(f));
        quote!(&[#(#names),*])
    }
}

/// One check per part, spanned on the part's field so the error points at
/// the declaration that clashes. A generic state reads the names from its
/// impl; a plain one from the `__NAMES` of [`free_checks`].
fn clash_checks(ex: &Expansion) -> Vec<TokenStream> {
    let p = &ex.p;
    let ident = ex.cont.ident;
    let (_, ty_generics, _) = ex.cont.generics.split_for_impl();
    ex.parts()
        .enumerate()
        .map(|(i, f)| {
            let span = f.ident.span();
            let names = if ex.generic {
                quote!(<#ident #ty_generics as #p::AgentState>::FIELD_NAMES)
            } else {
                quote!(__NAMES)
            };
            quote_spanned! {span=>
                if let ::core::option::Option::Some(__m) = #p::clash(&#names, #i) {
                    ::core::panic!("{}", __m.as_str())
                }
            }
        })
        .collect()
}

/// A non-generic state is checked where it is declared, in a free
/// `const _`. The names are spelled out here rather than read from the
/// impl, which is conditional on the parts being states: a part that is
/// not one is then reported once, on its type.
pub(super) fn free_checks(ex: &Expansion) -> TokenStream {
    let checks = clash_checks(ex);
    if checks.is_empty() || ex.generic {
        return TokenStream::new();
    }
    let p = &ex.p;
    let names = field_names(ex);
    quote! {
        const _: () = {
            const __NAMES: #p::FieldNames = #names;
            #(const _: () = #checks;)*
        };
    }
}

/// A generic state is checked when it is used: inline consts in `stage`
/// and `schema`, evaluated when the state is instantiated.
pub(super) fn inline_checks(ex: &Expansion) -> TokenStream {
    if !ex.generic {
        return TokenStream::new();
    }
    let checks = clash_checks(ex);
    quote!(#(let () = const { #checks };)*)
}

/// `impl HasPart<P> for Foo` per part: the part, and its slot in an update.
pub(super) fn has_part_impls(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let ident = ex.cont.ident;
    let update = &ex.update;
    let (impl_generics, ty_generics, _) = ex.cont.generics.split_for_impl();
    let state_where = &ex.bounds.state;
    let impls = ex.parts().map(|f| {
        let name = f.ident;
        let ty = f.ty;
        let pa = ex.part_as(f);
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::HasPart<#ty> for #ident #ty_generics #state_where {
                #[inline]
                fn part_of(__whole: &Self) -> &#ty {
                    &__whole.#name
                }
                #[inline]
                fn update_part_of(__update: &#update #ty_generics) -> &#pa::Update {
                    &__update.#name
                }
                #[inline]
                fn update_part_of_mut(__update: &mut #update #ty_generics) -> &mut #pa::Update {
                    &mut __update.#name
                }
            }
        }
    });
    quote!(#(#impls)*)
}
