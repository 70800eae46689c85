//! Code generation: the update type, the staged type, the `AgentState`,
//! `Default`, serde and `MergeField` impls, and the schema.
//!
//! Every runtime name goes through `<crate>::__private` and every std name
//! is absolute, so user items called `Option`, `Result` or `Ok` cannot
//! capture generated code.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{DeriveInput, GenericParam, Ident, Type};

use crate::ast::{Container, Field};
use crate::attr::Reducer;
use crate::check;
use crate::ctxt::Ctxt;
use crate::ty::{collection_item, generic_arg_of, is_primitive, option_inner};

/// Entry point: the whole expansion, or the errors plus a fallback that
/// keeps the user's other code compiling.
pub fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let Some(mut cont) = Container::from_ast(&cx, input) else {
        let errors = cx.check().expect_err("from_ast reports why it gave up");
        return fallback(input, errors);
    };
    check::check(&cx, &mut cont);
    match cx.check() {
        // Bad attributes were parsed as "no attribute": expanding anyway
        // gives the user their errors and no knock-on "cannot find type
        // `FooUpdate`" ones.
        Err(errors) => {
            let mut out = errors.to_compile_error();
            out.extend(expand(&cont));
            out
        }
        Ok(()) => expand(&cont),
    }
}

/// For inputs we cannot expand at all (enums, tuple structs): the errors and
/// an empty update type of the expected name.
fn fallback(input: &DeriveInput, errors: syn::Error) -> TokenStream {
    let vis = &input.vis;
    let update = format_ident!("{}Update", input.ident);
    let mut out = errors.to_compile_error();
    out.extend(quote! {
        #[doc(hidden)]
        #vis struct #update {}
    });
    out
}

/// The one-item setter's name for a collection field: `messages` →
/// `message`, else `add_<name>`.
fn singular(plain: &str) -> String {
    match plain.strip_suffix('s') {
        Some(stem) if !stem.is_empty() && !stem.ends_with('s') && !stem.ends_with('_') => {
            stem.to_owned()
        }
        _ => format!("add_{plain}"),
    }
}

/// The methods the update type gets for `field`, each with whether it is
/// optional (a convenience skipped when its name is taken).
pub fn setter_names(field: &Field) -> Vec<(String, bool)> {
    let plain = &field.plain_name;
    let mut names = vec![(plain.clone(), false)];
    match field.reducer() {
        Reducer::Replace => {
            if option_inner(field.ty).is_some() {
                names.push((format!("clear_{plain}"), false));
            }
        }
        Reducer::Immutable => names.clear(),
        Reducer::Messages | Reducer::Union | Reducer::Append => {
            names.push((singular(plain), true));
            names.push((format!("overwrite_{plain}"), false));
        }
        Reducer::Merge | Reducer::With { .. } => names.push((format!("overwrite_{plain}"), false)),
    }
    names
}

/// A Rust identifier for a derived name, raw when it is a keyword.
fn method_ident(name: &str, span: Span) -> Ident {
    syn::parse_str::<Ident>(name).unwrap_or_else(|_| Ident::new_raw(name, span))
}

/// Types and code for one field, by reducer.
struct FieldGen {
    /// The update struct's field type (without the outer `Option`).
    write_ty: TokenStream,
    /// What a reducer write carries besides an overwrite; `None` for
    /// `replace`, whose write is the value itself.
    partial_ty: Option<TokenStream>,
    /// The staged struct's field type.
    staged_ty: TokenStream,
    /// Expression staging the writes in `__w`.
    stage: TokenStream,
    /// Statement committing `__staged.<field>`.
    commit: TokenStream,
    /// Reads one JSON value `__v` into the write type.
    from_json: TokenStream,
}

/// Types and code of an updatable field; `None` for an immutable one,
/// which has no write, no stage and no commit.
fn field_gen(p: &TokenStream, field: &Field) -> Option<FieldGen> {
    let ty = field.ty;
    let ident = field.ident;
    let json = &field.json_name;
    let span = ty.span();
    let via_trait = |trait_name: &str, partial: TokenStream, bound_partial: Option<TokenStream>| {
        let tr = Ident::new(trait_name, span);
        let tr = quote_spanned!(span=> #p::#tr);
        FieldGen {
            write_ty: quote!(#p::FieldWrite<#ty, #partial>),
            partial_ty: Some(bound_partial.unwrap_or(partial)),
            staged_ty: quote_spanned!(span=> #p::FieldStage<#ty, <#ty as #tr>::Staged>),
            stage: quote_spanned!(span=> #p::stage_writes(&self.#ident, __w, __rule, <#ty as #tr>::stage)),
            commit: quote_spanned!(span=> #p::commit_writes(&mut self.#ident, __staged.#ident, <#ty as #tr>::commit)),
            from_json: quote!(#p::write_from_json(#json, __v)),
        }
    };
    Some(match field.reducer() {
        Reducer::Immutable => return None,
        Reducer::Replace => FieldGen {
            write_ty: quote!(#ty),
            partial_ty: None,
            staged_ty: quote!(::core::option::Option<#ty>),
            stage: quote!(#p::stage_replace(__w, __rule)),
            commit: quote!(#p::commit_replace(&mut self.#ident, __staged.#ident)),
            from_json: quote!(#p::value_from_json(#json, __v)),
        },
        Reducer::Merge => via_trait(
            "MergeField",
            quote_spanned!(span=> <#ty as #p::MergeField>::Partial),
            None,
        ),
        Reducer::Messages => via_trait(
            "MessagesField",
            quote_spanned!(span=> #p::MessageOps<<#ty as #p::MessagesField>::Message>),
            // In where-clauses of generic states, a spelled-out message type
            // (`Messages<M>`) makes a bound rustc can match without
            // normalizing `<Messages<M> as MessagesField>::Message`.
            generic_arg_of(ty, &["Messages", "Vec"]).map(|m| quote!(#p::MessageOps<#m>)),
        ),
        Reducer::Union => via_trait(
            "UnionField",
            quote_spanned!(span=> ::std::vec::Vec<<#ty as #p::UnionField>::Item>),
            None,
        ),
        Reducer::Append => via_trait(
            "AppendField",
            quote_spanned!(span=> ::std::vec::Vec<<#ty as #p::AppendField>::Item>),
            None,
        ),
        Reducer::With { path, update } => {
            let input = update
                .as_ref()
                .map_or_else(|| ty.to_token_stream(), ToTokens::to_token_stream);
            // Spanned on the path: a function of the wrong signature is
            // reported on the attribute that names it.
            let pspan = path.span();
            FieldGen {
                write_ty: quote!(#p::FieldWrite<#ty, #input>),
                partial_ty: Some(input.clone()),
                staged_ty: quote!(#p::FieldStage<#ty, ::core::option::Option<#ty>>),
                stage: quote_spanned! {pspan=>
                    #p::stage_writes(&self.#ident, __w, __rule, |__cur: &#ty, __ws: #p::Writes<#input>| {
                        #p::stage_with(__cur, __ws, #path)
                    })
                },
                commit: quote!(#p::commit_writes(&mut self.#ident, __staged.#ident, #p::commit_replace)),
                from_json: quote!(#p::write_from_json(#json, __v)),
            }
        }
    })
}

/// The schema's `ReducerKind` of a field.
fn schema_kind(p: &TokenStream, field: &Field) -> TokenStream {
    let kind = match field.reducer() {
        Reducer::Replace => quote!(Replace),
        Reducer::Immutable => quote!(Immutable),
        Reducer::Merge => quote!(Merge),
        Reducer::Messages => quote!(Messages),
        Reducer::Union => quote!(Union),
        Reducer::Append => quote!(Append),
        Reducer::With { path, .. } => {
            let path_str = tidy(&path.to_token_stream().to_string());
            quote!(With(#path_str))
        }
    };
    quote!(#p::ReducerKind::#kind)
}

/// Token text made readable: `Option < String >` → `Option<String>`.
pub fn tidy(tokens: &str) -> String {
    let mut out = String::with_capacity(tokens.len());
    let chars: Vec<char> = tokens.chars().collect();
    for (i, &ch) in chars.iter().enumerate() {
        if ch == ' ' {
            let prev = out.chars().last().unwrap_or(' ');
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let glue_after = matches!(prev, '<' | '(' | '[' | '&' | ':' | '!' | '#');
            let glue_before = matches!(
                next,
                '<' | '>' | ',' | ')' | ']' | ':' | '(' | '!' | '?' | ';' | '.'
            );
            let keep = (prev == ','
                || prev == '='
                || prev == '>' && next != '>' && next != ',' && next != ')')
                && !glue_before
                || !(glue_after || glue_before);
            if keep {
                out.push(' ');
            }
        } else {
            out.push(ch);
        }
    }
    out
}

fn expand(cont: &Container) -> TokenStream {
    let p = match &cont.attrs.krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::agent_state::__private),
    };
    let ident = cont.ident;
    let vis = cont.vis;
    let update = format_ident!("{}Update", ident);
    let staged = format_ident!("{}Staged", ident);
    let (impl_generics, ty_generics, where_clause) = cont.generics.split_for_impl();
    let generic = !cont.generics.params.is_empty();
    // Checkpoint versioning: only emitted when declared, so the trait's
    // defaults (version 1, no migration) apply otherwise.
    let version = cont
        .attrs
        .version
        .as_ref()
        .map(|v| quote!(const VERSION: ::core::primitive::u32 = #v;));
    let migrate = cont.attrs.migrate.as_ref().map(|path| {
        quote_spanned! {path.span()=>
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

    // A marker for generic parameters that only immutable fields use.
    let markers: Vec<TokenStream> = cont
        .generics
        .params
        .iter()
        .filter_map(|param| match param {
            GenericParam::Type(t) => {
                let t = &t.ident;
                Some(quote!(#t))
            }
            GenericParam::Lifetime(l) => {
                let l = &l.lifetime;
                Some(quote!(&#l ()))
            }
            GenericParam::Const(_) => None,
        })
        .collect();
    let marker_field = if generic {
        quote! {
            #[doc(hidden)]
            #vis __marker: ::core::marker::PhantomData<fn() -> (#(#markers,)*)>,
        }
    } else {
        TokenStream::new()
    };
    let marker_init = if generic {
        quote!(__marker: ::core::marker::PhantomData,)
    } else {
        TokenStream::new()
    };

    let gens: Vec<Option<FieldGen>> = cont.fields.iter().map(|f| field_gen(&p, f)).collect();
    let updatable: Vec<(&Field, &FieldGen)> = cont
        .fields
        .iter()
        .zip(&gens)
        .filter_map(|(f, g)| Some((f, g.as_ref()?)))
        .collect();

    // ---- the update struct -------------------------------------------------
    let update_fields = updatable.iter().map(|(f, g)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let wty = &g.write_ty;
        let doc = field_doc(f);
        quote! {
            #(#cfgs)*
            #[doc = #doc]
            #vis #name: ::core::option::Option<#wty>,
        }
    });
    let update_doc = format!(
        "A partial update of [`{ident}`]: what a node returns.\n\n\
         Fields left `None` are not changed; the others go through the field's \
         reducer when the update is applied. Build it with the setters, \
         starting from [`{update}::new`]. Its JSON leaves unset fields out and \
         rejects unknown ones. Generated by `#[derive(AgentState)]`."
    );
    let update_none = updatable.iter().map(|(f, _)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        quote!(#(#cfgs)* #name: ::core::option::Option::None,)
    });
    // Names a one-item setter may not take: fields and required setters.
    let taken: HashSet<String> = cont
        .fields
        .iter()
        .flat_map(|f| {
            let mut names: Vec<String> = setter_names(f)
                .into_iter()
                .filter(|(_, opt)| !opt)
                .map(|(n, _)| n)
                .collect();
            names.push(f.plain_name.clone());
            names
        })
        .collect();
    // A method name is generated once: `check` has already reported any
    // clash, and a second definition would only add a knock-on error.
    let mut emitted: HashSet<String> = HashSet::new();
    // Immutable fields' stand-ins come last so they never displace a setter.
    let (mutable, immutable): (Vec<&Field>, Vec<&Field>) =
        cont.fields.iter().partition(|f| f.is_updatable());
    let setters: Vec<TokenStream> = mutable
        .into_iter()
        .chain(immutable)
        .flat_map(|f| setter(&p, vis, f, &taken))
        .filter_map(|(name, tokens)| emitted.insert(name).then_some(tokens))
        .collect();

    // ---- staging and committing --------------------------------------------
    let staged_fields = updatable.iter().map(|(f, g)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let sty = &g.staged_ty;
        quote!(#(#cfgs)* #name: #sty,)
    });
    let stage_stmts = updatable.iter().map(|(f, g)| {
        let cfgs = &f.cfgs;
        let w = format_ident!("__w_{}", f.plain_name);
        let s = format_ident!("__s_{}", f.plain_name);
        let stage = &g.stage;
        let json = &f.json_name;
        quote! {
            #(#cfgs)*
            let #s = {
                let __w = #w;
                #stage.map_err(|__e| __e.within(#json))?
            };
        }
    });
    let write_vecs = updatable.iter().map(|(f, _)| {
        let cfgs = &f.cfgs;
        let w = format_ident!("__w_{}", f.plain_name);
        quote!(#(#cfgs)* let mut #w = #p::Writes::new();)
    });
    let collect_writes = updatable.iter().map(|(f, _)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let w = format_ident!("__w_{}", f.plain_name);
        quote!(#(#cfgs)* if let ::core::option::Option::Some(__v) = __u.#name { #w.push(__v); })
    });
    let staged_init = updatable.iter().map(|(f, _)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let s = format_ident!("__s_{}", f.plain_name);
        quote!(#(#cfgs)* #name: #s,)
    });
    let commits = updatable.iter().map(|(f, g)| {
        let cfgs = &f.cfgs;
        let commit = &g.commit;
        quote!(#(#cfgs)* #commit;)
    });

    // ---- update JSON -------------------------------------------------------
    let update_ser = updatable.iter().map(|(f, _)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        quote! {
            #(#cfgs)*
            if let ::core::option::Option::Some(__v) = &self.#name {
                __m.serialize_entry(#json, __v)?;
            }
        }
    });
    let update_from_json = cont.fields.iter().zip(&gens).map(|(f, g)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        if let Some(g) = g {
            let read = &g.from_json;
            quote!(#(#cfgs)* #json => { __out.#name = ::core::option::Option::Some(#read?); })
        } else {
            quote!(#(#cfgs)* #json => { return ::core::result::Result::Err(#p::immutable_field(__k)); })
        }
    });
    let is_empty = updatable.iter().map(|(f, _)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        quote!(#(#cfgs)* if self.#name.is_some() { return false; })
    });
    // Message ids are fixed before an update is stored, so a replay from a
    // checkpoint rebuilds the same ids.
    let assign_ids = updatable.iter().filter_map(|(f, _)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let ty = f.ty;
        let call = match f.reducer() {
            Reducer::Messages => quote!(#p::assign_message_ids::<#ty>(__w)),
            Reducer::Merge => quote!(#p::assign_nested_message_ids::<#ty>(__w)),
            _ => return None,
        };
        Some(
            quote!(#(#cfgs)* if let ::core::option::Option::Some(__w) = &mut self.#name { #call; }),
        )
    });

    // ---- state JSON, defaults and schema ------------------------------------
    let state_ser = cont.fields.iter().map(|f| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        quote!(#(#cfgs)* __m.serialize_entry(#json, &self.#name)?;)
    });
    let slots = cont.fields.iter().map(|f| {
        let ty = f.ty;
        let cfgs = &f.cfgs;
        let slot = format_ident!("__f_{}", f.plain_name);
        quote!(#(#cfgs)* let mut #slot: ::core::option::Option<#ty> = ::core::option::Option::None;)
    });
    let state_from_json = cont.fields.iter().map(|f| {
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        let slot = format_ident!("__f_{}", f.plain_name);
        quote!(#(#cfgs)* #json => { #slot = ::core::option::Option::Some(#p::value_from_json(#json, __v)?); })
    });
    let state_init = cont.fields.iter().map(|f| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let slot = format_ident!("__f_{}", f.plain_name);
        let default = default_expr(f);
        quote!(#(#cfgs)* #name: match #slot { ::core::option::Option::Some(__v) => __v, ::core::option::Option::None => #default },)
    });
    let default_init = cont.fields.iter().map(|f| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let default = default_expr(f);
        quote!(#(#cfgs)* #name: #default,)
    });
    let schema_fields = cont.fields.iter().map(|f| {
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        let rust_name = &f.plain_name;
        let ty = tidy(&f.ty.to_token_stream().to_string());
        let kind = schema_kind(&p, f);
        let doc = &f.doc;
        let default = match &f.attrs.default {
            Some(expr) => {
                let text = tidy(&expr.to_token_stream().to_string());
                quote!(::core::option::Option::Some(#text))
            }
            None => quote!(::core::option::Option::None),
        };
        quote! {
            #(#cfgs)*
            __fields.push(#p::FieldSchema {
                name: #json,
                rust_name: #rust_name,
                ty: #ty,
                reducer: #kind,
                default: #default,
                doc: #doc,
            });
        }
    });
    let state_name = ident.to_string();
    let state_doc = &cont.doc;
    let staged_doc = format!(
        "A step of updates to [`{ident}`], checked and ready to commit: see \
         `AgentState::stage`. Generated by `#[derive(AgentState)]`."
    );

    // Generic states need serde and `Default` bounds on their fields.
    let bound = |extra: &dyn Fn(&Field, Option<&FieldGen>) -> Option<TokenStream>| -> TokenStream {
        let mut preds: Vec<TokenStream> = where_clause
            .map(|w| w.predicates.iter().map(ToTokens::to_token_stream).collect())
            .unwrap_or_default();
        if generic {
            preds.extend(
                cont.fields
                    .iter()
                    .zip(&gens)
                    .filter_map(|(f, g)| extra(f, g.as_ref())),
            );
        }
        if preds.is_empty() {
            TokenStream::new()
        } else {
            quote!(where #(#preds,)*)
        }
    };
    // Serde bounds of generic states: on each field's type and, for reducer
    // fields, on what an update carries.
    let serde_preds = |f: &Field, g: Option<&FieldGen>, tr: &TokenStream| -> TokenStream {
        let ty = f.ty;
        match g.and_then(|g| g.partial_ty.as_ref()) {
            Some(partial) => quote!(#ty: #tr, #partial: #tr),
            None => quote!(#ty: #tr),
        }
    };
    // One bound set for every serde-facing impl: they call each other.
    let both = quote!(#p::serde::Serialize + #p::serde::de::DeserializeOwned);
    let default_where = bound(&|f, _| {
        let ty = f.ty;
        f.attrs
            .default
            .is_none()
            .then(|| quote!(#ty: ::core::default::Default))
    });
    let state_where = bound(&|f, g| Some(serde_preds(f, g, &both)));
    let de_generics = {
        let mut g = cont.generics.clone();
        g.params.insert(0, syn::parse_quote!('__de));
        g
    };
    let (de_impl_generics, _, _) = de_generics.split_for_impl();

    quote! {
        #[doc = #update_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::cmp::PartialEq)]
        #vis struct #update #impl_generics #where_clause {
            #(#update_fields)*
            #marker_field
        }

        #[automatically_derived]
        impl #impl_generics ::core::default::Default for #update #ty_generics #where_clause {
            fn default() -> Self {
                Self { #(#update_none)* #marker_init }
            }
        }

        #[allow(clippy::return_self_not_must_use)]
        impl #impl_generics #update #ty_generics #where_clause {
            /// An update that changes nothing; add changes with the setters.
            #[must_use]
            #vis fn new() -> Self {
                ::core::default::Default::default()
            }

            #(#setters)*
        }

        #[doc = #staged_doc]
        #[allow(dead_code)]
        #vis struct #staged #impl_generics #where_clause {
            #(#staged_fields)*
            #marker_field
        }

        #[automatically_derived]
        impl #impl_generics #p::serde::Serialize for #update #ty_generics #state_where {
            fn serialize<__S: #p::serde::Serializer>(&self, __s: __S) -> ::core::result::Result<__S::Ok, __S::Error> {
                use #p::serde::ser::SerializeMap as _;
                let mut __m = __s.serialize_map(::core::option::Option::None)?;
                #(#update_ser)*
                __m.end()
            }
        }

        #[automatically_derived]
        impl #de_impl_generics #p::serde::Deserialize<'__de> for #update #ty_generics #state_where {
            fn deserialize<__D: #p::serde::Deserializer<'__de>>(__d: __D) -> ::core::result::Result<Self, __D::Error> {
                let __v = <#p::serde_json::Value as #p::serde::Deserialize>::deserialize(__d)?;
                <Self as #p::StateUpdate>::from_json(__v).map_err(<__D::Error as #p::serde::de::Error>::custom)
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::StateUpdate for #update #ty_generics #state_where {
            fn is_empty(&self) -> bool {
                #(#is_empty)*
                true
            }

            fn assign_message_ids(&mut self) {
                #(#assign_ids)*
            }

            fn from_json(__value: #p::serde_json::Value) -> ::core::result::Result<Self, #p::StateError> {
                let __map = #p::expect_object(__value)?;
                let mut __out = <Self as ::core::default::Default>::default();
                for (__k, __v) in __map {
                    match __k.as_str() {
                        #(#update_from_json)*
                        _ => {
                            let __schema = <#ident #ty_generics as #p::AgentState>::schema();
                            return ::core::result::Result::Err(#p::unknown_update_field(__k, __schema));
                        }
                    }
                }
                ::core::result::Result::Ok(__out)
            }

            fn to_json(&self) -> #p::serde_json::Value {
                #p::to_value(self)
            }
        }

        #[automatically_derived]
        impl #impl_generics ::core::default::Default for #ident #ty_generics #default_where {
            fn default() -> Self {
                Self { #(#default_init)* }
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::serde::Serialize for #ident #ty_generics #state_where {
            fn serialize<__S: #p::serde::Serializer>(&self, __s: __S) -> ::core::result::Result<__S::Ok, __S::Error> {
                use #p::serde::ser::SerializeMap as _;
                let mut __m = __s.serialize_map(::core::option::Option::None)?;
                #(#state_ser)*
                __m.end()
            }
        }

        #[automatically_derived]
        impl #de_impl_generics #p::serde::Deserialize<'__de> for #ident #ty_generics #state_where {
            fn deserialize<__D: #p::serde::Deserializer<'__de>>(__d: __D) -> ::core::result::Result<Self, __D::Error> {
                let __v = <#p::serde_json::Value as #p::serde::Deserialize>::deserialize(__d)?;
                <Self as #p::AgentState>::from_json(__v).map_err(<__D::Error as #p::serde::de::Error>::custom)
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::AgentState for #ident #ty_generics #state_where {
            type Update = #update #ty_generics;
            type Staged = #staged #ty_generics;
            #version
            #migrate

            fn schema() -> &'static #p::StateSchema {
                static __SCHEMA: ::std::sync::OnceLock<#p::StateSchema> = ::std::sync::OnceLock::new();
                __SCHEMA.get_or_init(|| {
                    let mut __fields = ::std::vec::Vec::new();
                    #(#schema_fields)*
                    #p::StateSchema {
                        name: #state_name,
                        doc: #state_doc,
                        fields: __fields,
                    }
                })
            }

            fn stage<__I>(
                &self,
                __updates: __I,
                __rule: #p::StepRule,
            ) -> ::core::result::Result<Self::Staged, #p::StateError>
            where
                __I: ::core::iter::IntoIterator<Item = Self::Update>,
            {
                #(#write_vecs)*
                for __u in __updates {
                    #(#collect_writes)*
                }
                #(#stage_stmts)*
                ::core::result::Result::Ok(#staged { #(#staged_init)* #marker_init })
            }

            fn commit(&mut self, __staged: Self::Staged) {
                #(#commits)*
            }

            fn from_json(__value: #p::serde_json::Value) -> ::core::result::Result<Self, #p::StateError> {
                let __map = #p::expect_object(__value)?;
                #(#slots)*
                for (__k, __v) in __map {
                    match __k.as_str() {
                        #(#state_from_json)*
                        _ => {
                            let __schema = <Self as #p::AgentState>::schema();
                            return ::core::result::Result::Err(#p::unknown_state_field(__k, __schema));
                        }
                    }
                }
                ::core::result::Result::Ok(Self { #(#state_init)* })
            }

            fn to_json(&self) -> #p::serde_json::Value {
                #p::to_value(self)
            }
        }

        /// A nested state merges field by field, through its own reducers.
        #[automatically_derived]
        impl #impl_generics #p::MergeField for #ident #ty_generics #state_where {
            type Partial = #update #ty_generics;
            type Staged = #staged #ty_generics;

            fn stage(&self, __partials: #p::Writes<Self::Partial>) -> ::core::result::Result<Self::Staged, #p::StateError> {
                <Self as #p::AgentState>::stage(self, __partials, #p::StepRule::Fold)
            }

            fn assign_message_ids(__partial: &mut Self::Partial) {
                <Self::Partial as #p::StateUpdate>::assign_message_ids(__partial);
            }

            fn commit(&mut self, __staged: Self::Staged) {
                <Self as #p::AgentState>::commit(self, __staged);
            }
        }
    }
}

/// A field's doc comment followed by a line naming its reducer.
fn field_doc(f: &Field) -> String {
    let reducer = match f.reducer() {
        Reducer::With { path, .. } => {
            format!("`with = {}`", tidy(&path.to_token_stream().to_string()))
        }
        other => format!("`{}`", other.name()),
    };
    if f.doc.is_empty() {
        format!("Reducer: {reducer}.")
    } else {
        format!("{}\n\nReducer: {reducer}.", f.doc)
    }
}

/// The field's default: its `#[state(default = ..)]`, typed so a wrong type
/// is reported on the expression, or `Default::default()`.
fn default_expr(f: &Field) -> TokenStream {
    let ty = f.ty;
    match &f.attrs.default {
        Some(expr) => quote_spanned!(expr.span()=> { let __v: #ty = #expr; __v }),
        None => quote!(<#ty as ::core::default::Default>::default()),
    }
}

/// The methods of one field on the update type, each with its name.
fn setter(
    p: &TokenStream,
    vis: &syn::Visibility,
    f: &Field,
    taken: &HashSet<String>,
) -> Vec<(String, TokenStream)> {
    let name = f.ident;
    let ty = f.ty;
    let plain = &f.plain_name;
    let span = name.span();
    let cfgs = &f.cfgs;
    let field_line = if f.doc.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", f.doc)
    };
    let mut out = Vec::new();
    let overwrite_name = format!("overwrite_{plain}");
    let overwrite = {
        let method = method_ident(&overwrite_name, span);
        let doc = format!(
            "Sets `{plain}` outright, bypassing its reducer (LangGraph's `Overwrite`). \
             Within one update, the last of this and the other setters of the field decides.{field_line}"
        );
        quote! {
            #(#cfgs)*
            #[doc = #doc]
            #[must_use]
            #vis fn #method(mut self, value: impl ::core::convert::Into<#ty>) -> Self {
                self.#name = ::core::option::Option::Some(#p::FieldWrite::Overwrite(value.into()));
                self
            }
        }
    };
    let arg = |ty: &Type| -> (TokenStream, TokenStream) {
        if is_primitive(ty) {
            (quote!(#ty), quote!(value))
        } else {
            (
                quote!(impl ::core::convert::Into<#ty>),
                quote!(value.into()),
            )
        }
    };
    match f.reducer() {
        Reducer::Immutable => {
            // No setter exists. This stand-in turns a call into an error that
            // says why, instead of "no method named `topic`".
            let msg = format!(
                "`{plain}` is immutable: it is set when the state is built and no update may change it"
            );
            let method = name;
            out.push((
                plain.clone(),
                quote! {
                    #(#cfgs)*
                    #[doc(hidden)]
                    #[doc = #msg]
                    #[allow(clippy::unused_self, clippy::needless_pass_by_value)]
                    #vis fn #method<__T: #p::ImmutableField>(self, _value: __T) -> Self {
                        self
                    }
                },
            ));
        }
        Reducer::Replace => {
            if let Some(inner) = option_inner(ty) {
                let (arg_ty, conv) = arg(inner);
                let clear_name = format!("clear_{plain}");
                let clear = method_ident(&clear_name, span);
                let doc = format!("Sets `{plain}` to `Some(value)`.{field_line}");
                let clear_doc = format!(
                    "Sets `{plain}` to `None` (JSON `null`), which is not the same as leaving it unchanged."
                );
                out.push((
                    plain.clone(),
                    quote! {
                        #(#cfgs)*
                        #[doc = #doc]
                        #[must_use]
                        #vis fn #name(mut self, value: #arg_ty) -> Self {
                            self.#name = ::core::option::Option::Some(::core::option::Option::Some(#conv));
                            self
                        }
                    },
                ));
                out.push((
                    clear_name,
                    quote! {
                        #(#cfgs)*
                        #[doc = #clear_doc]
                        #[must_use]
                        #vis fn #clear(mut self) -> Self {
                            self.#name = ::core::option::Option::Some(::core::option::Option::None);
                            self
                        }
                    },
                ));
            } else {
                let (arg_ty, conv) = arg(ty);
                let doc = format!("Sets `{plain}`.{field_line}");
                out.push((
                    plain.clone(),
                    quote! {
                        #(#cfgs)*
                        #[doc = #doc]
                        #[must_use]
                        #vis fn #name(mut self, value: #arg_ty) -> Self {
                            self.#name = ::core::option::Option::Some(#conv);
                            self
                        }
                    },
                ));
            }
        }
        Reducer::Merge => {
            let partial = quote_spanned!(ty.span()=> <#ty as #p::MergeField>::Partial);
            let doc = format!(
                "Merges into `{plain}`: the keys or fields given override, the others are kept.{field_line}"
            );
            out.push((
                plain.clone(),
                quote! {
                    #(#cfgs)*
                    #[doc = #doc]
                    #[must_use]
                    #vis fn #name(mut self, partial: impl ::core::convert::Into<#partial>) -> Self {
                        self.#name = ::core::option::Option::Some(#p::FieldWrite::Reduce(partial.into()));
                        self
                    }
                },
            ));
            out.push((overwrite_name, overwrite));
        }
        Reducer::With { update, .. } => {
            let input: &Type = update.as_deref().unwrap_or(ty);
            let (arg_ty, conv) = arg(input);
            let doc = format!("Writes `{plain}` through its reducer function.{field_line}");
            out.push((
                plain.clone(),
                quote! {
                    #(#cfgs)*
                    #[doc = #doc]
                    #[must_use]
                    #vis fn #name(mut self, value: #arg_ty) -> Self {
                        self.#name = ::core::option::Option::Some(#p::FieldWrite::Reduce(#conv));
                        self
                    }
                },
            ));
            out.push((overwrite_name, overwrite));
        }
        Reducer::Messages | Reducer::Union | Reducer::Append => {
            let tspan = ty.span();
            let (item, what) = match f.reducer() {
                Reducer::Messages => (
                    quote_spanned!(tspan=> #p::MessageOp<<#ty as #p::MessagesField>::Message>),
                    "Adds messages to `{plain}`: a new id appends, a known id replaces in place, a removal removes",
                ),
                Reducer::Union => (
                    quote_spanned!(tspan=> <#ty as #p::UnionField>::Item),
                    "Adds items to `{plain}` that it does not hold yet",
                ),
                _ => (quote_spanned!(tspan=> <#ty as #p::AppendField>::Item), "Appends items to `{plain}`"),
            };
            let what = what.replace("{plain}", plain);
            let primitive_items = !matches!(f.reducer(), Reducer::Messages)
                && collection_item(ty).is_some_and(is_primitive);
            let (many_bound, many_conv, one_arg, one_conv) = if primitive_items {
                (
                    quote!(I: ::core::iter::IntoIterator<Item = #item>),
                    quote!(items),
                    quote!(#item),
                    quote!(item),
                )
            } else {
                (
                    quote!(I: ::core::iter::IntoIterator, I::Item: ::core::convert::Into<#item>),
                    quote!(::core::iter::Iterator::map(
                        ::core::iter::IntoIterator::into_iter(items),
                        ::core::convert::Into::into
                    )),
                    quote!(impl ::core::convert::Into<#item>),
                    quote!(::core::convert::Into::into(item)),
                )
            };
            let many_doc = format!(
                "{what}. Calls accumulate; after an `overwrite_{plain}` in the same update, they start over.{field_line}"
            );
            let one_doc = format!("{what}: one item.");
            out.push((
                plain.clone(),
                quote! {
                    #(#cfgs)*
                    #[doc = #many_doc]
                    #[must_use]
                    #vis fn #name<I>(mut self, items: I) -> Self
                    where
                        #many_bound
                    {
                        #p::extend_write(&mut self.#name, #many_conv);
                        self
                    }
                },
            ));
            // The one-item setter is a convenience, skipped when its name is
            // another field's or another required method's.
            let one = singular(plain);
            if !taken.contains(&one) {
                let one_method = method_ident(&one, span);
                out.push((
                    one,
                    quote! {
                        #(#cfgs)*
                        #[doc = #one_doc]
                        #[must_use]
                        #vis fn #one_method(mut self, item: #one_arg) -> Self {
                            let __item: #item = #one_conv;
                            #p::extend_write(&mut self.#name, [__item]);
                            self
                        }
                    },
                ));
            }
            out.push((overwrite_name, overwrite));
        }
    }
    out
}
