//! `impl AgentState for Foo`, assembled from the other modules' bodies,
//! and `impl MergeField for Foo`, so a state can be a `#[reducer(merge)]`
//! field of another.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::{json, parts, schema, staged, Expansion};

/// `impl AgentState for Foo`: its types, `FIELD_NAMES`, `schema`, `stage`,
/// `commit`, the JSON methods and `has_field`.
pub(super) fn agent_state_impl(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let ident = ex.cont.ident;
    let (update, input, staged) = (&ex.update, &ex.input, &ex.staged);
    let (impl_generics, ty_generics, _) = ex.cont.generics.split_for_impl();
    let state_where = &ex.bounds.state;
    let (version, migrate) = versioning(ex);
    let field_names = parts::field_names(ex);
    let inline_checks = parts::inline_checks(ex);
    let schema = schema::schema_fn(ex, &inline_checks);
    let stage = staged::stage_fn(ex, &inline_checks);
    let commit = staged::commit_fn(ex);
    let apply = staged::apply_fn(ex, &inline_checks);
    let from_json = json::state_from_json(ex);
    let has_field = has_field(ex);
    let ser = json::state_serialize_fields(ex);
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::AgentState for #ident #ty_generics #state_where {
            type Update = #update #ty_generics;
            type Input = #input #ty_generics;
            type Staged = #staged #ty_generics;
            #version
            #migrate

            const FIELD_NAMES: #p::FieldNames = #field_names;

            #schema

            #stage

            #commit

            #apply

            #[inline]
            fn from_json(__value: #p::serde_json::Value) -> ::core::result::Result<Self, #p::StateError> {
                #from_json
            }

            #[inline]
            fn to_json(&self) -> #p::serde_json::Value {
                #p::to_value(self)
            }

            #[inline]
            fn has_field(__name: &str) -> bool {
                #has_field
            }

            #[inline]
            fn serialize_fields<__M: #p::serde::ser::SerializeMap>(
                &self,
                __m: &mut __M,
                __view: #p::FieldView,
            ) -> ::core::result::Result<(), __M::Error> {
                #ser
                ::core::result::Result::Ok(())
            }
        }
    }
}

/// Checkpoint versioning: `VERSION` and `migrate`, only emitted when
/// declared, so the trait's defaults (version 1, no migration) apply
/// otherwise.
fn versioning(ex: &Expansion) -> (Option<TokenStream>, Option<TokenStream>) {
    let p = &ex.p;
    let attrs = &ex.cont.attrs;
    let version = attrs
        .version
        .as_ref()
        .map(|v| quote!(const VERSION: ::core::primitive::u32 = #v;));
    let migrate = attrs.migrate.as_ref().map(|path| {
        quote_spanned! {path.span()=>
            #[inline]
            fn migrate(
                __from: ::core::primitive::u32,
                __kind: #p::Stored,
                __value: #p::serde_json::Value,
            ) -> ::core::result::Result<#p::serde_json::Value, #p::MigrationError> {
                // Through a fn pointer, so a wrong signature is one type
                // error on the user's path.
                let __migrate: fn(
                    ::core::primitive::u32,
                    #p::Stored,
                    #p::serde_json::Value,
                ) -> ::core::result::Result<#p::serde_json::Value, #p::MigrationError> = #path;
                __migrate(__from, __kind, __value)
            }
        }
    });
    (version, migrate)
}

/// The body of `has_field`: the own JSON names, then each part's.
fn has_field(ex: &Expansion) -> TokenStream {
    let own = ex.own().map(|f| {
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        quote!(#(#cfgs)* #json => true,)
    });
    let parts = ex.parts().map(|f| {
        let pa = ex.part_as(f);
        quote!(if #pa::has_field(__name) { return true; })
    });
    quote! {
        match __name {
            #(#own)*
            _ => {
                #(#parts)*
                false
            }
        }
    }
}

/// `impl MergeField for Foo`: a nested state's writes fold in order
/// (`StepRule::Fold`), field by field through its own reducers.
pub(super) fn merge_field_impl(ex: &Expansion) -> TokenStream {
    let p = &ex.p;
    let ident = ex.cont.ident;
    let (update, staged) = (&ex.update, &ex.staged);
    let (impl_generics, ty_generics, _) = ex.cont.generics.split_for_impl();
    let state_where = &ex.bounds.state;
    quote! {
        /// A nested state merges field by field, through its own reducers.
        #[automatically_derived]
        impl #impl_generics #p::MergeField for #ident #ty_generics #state_where {
            type Partial = #update #ty_generics;
            type Staged = #staged #ty_generics;

            #[inline]
            fn stage(&self, __partials: #p::Writes<Self::Partial>) -> ::core::result::Result<Self::Staged, #p::StateError> {
                <Self as #p::AgentState>::stage(self, __partials, #p::StepRule::Fold)
            }

            #[inline]
            fn combine_partials(__first: &mut Self::Partial, __later: Self::Partial) -> ::core::result::Result<(), Self::Partial> {
                <Self::Partial as #p::StateUpdate>::combine(__first, __later, #p::StepRule::Fold);
                ::core::result::Result::Ok(())
            }

            #[inline]
            fn assign_message_ids(__partial: &mut Self::Partial) {
                <Self::Partial as #p::StateUpdate>::assign_message_ids(__partial);
            }

            #[inline]
            fn commit(&mut self, __staged: Self::Staged) {
                <Self as #p::AgentState>::commit(self, __staged);
            }
        }
    }
}
