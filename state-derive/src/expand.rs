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

mod json_schema;

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
    if field.is_part() {
        return names;
    }
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

/// One field as the expansion sees it: its own value with a reducer (and,
/// unless immutable, a write), or a flattened part.
enum Slot<'g> {
    Own(Option<&'g FieldGen>),
    Part,
}

/// `<Ty as AgentState>` for a part, spanned on the type the user wrote so
/// a type that is not a derived state is reported there.
fn part_as(p: &TokenStream, f: &Field) -> TokenStream {
    let ty = f.ty;
    quote_spanned!(ty.span()=> <#ty as #p::AgentState>)
}

/// The schema's `Visibility` of a field as declared on it.
fn visibility_tokens(p: &TokenStream, f: &Field) -> TokenStream {
    let v = match (f.attrs.omit_from_input, f.attrs.omit_from_output) {
        (false, false) => quote!(Public),
        (true, false) => quote!(OmitFromInput),
        (false, true) => quote!(OmitFromOutput),
        (true, true) => quote!(Private),
    };
    quote!(#p::Visibility::#v)
}

#[allow(clippy::too_many_lines)]
fn expand(cont: &Container) -> TokenStream {
    let p = match &cont.attrs.krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::agent_state::__private),
    };
    let ident = cont.ident;
    let vis = cont.vis;
    let update = format_ident!("{}Update", ident);
    let input = format_ident!("{}Input", ident);
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

    let gens: Vec<Option<FieldGen>> = cont
        .fields
        .iter()
        .map(|f| if f.is_part() { None } else { field_gen(&p, f) })
        .collect();
    let slots: Vec<(&Field, Slot)> = cont
        .fields
        .iter()
        .zip(&gens)
        .map(|(f, g)| {
            if f.is_part() {
                (f, Slot::Part)
            } else {
                (f, Slot::Own(g.as_ref()))
            }
        })
        .collect();
    let own: Vec<&Field> = cont.fields.iter().filter(|f| !f.is_part()).collect();
    let parts: Vec<&Field> = cont.fields.iter().filter(|f| f.is_part()).collect();
    // ---- the update struct -------------------------------------------------
    let update_fields = slots.iter().filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        match s {
            Slot::Own(None) => None,
            Slot::Own(Some(g)) => {
                let wty = &g.write_ty;
                let doc = field_doc(f);
                Some(quote! {
                    #(#cfgs)*
                    #[doc = #doc]
                    #vis #name: ::core::option::Option<#wty>,
                })
            }
            Slot::Part => {
                let pa = part_as(&p, f);
                let doc = part_doc(f, "update");
                Some(quote! {
                    #[doc = #doc]
                    #vis #name: #pa::Update,
                })
            }
        }
    });
    let update_doc = format!(
        "A partial update of [`{ident}`]: what a node returns.\n\n\
         Fields left `None` are not changed; the others go through the field's \
         reducer when the update is applied. Build it with the setters, \
         starting from [`{update}::new`]. Its JSON leaves unset fields out and \
         rejects unknown ones. Generated by `#[derive(AgentState)]`."
    );
    let none_init = |in_input: bool| {
        let slots = &slots;
        let p = &p;
        slots
            .iter()
            .filter(move |(f, _)| !in_input || f.in_input())
            .filter_map(move |(f, s)| {
                let name = f.ident;
                let cfgs = &f.cfgs;
                match s {
                    Slot::Own(None) => None,
                    Slot::Own(Some(_)) => {
                        Some(quote!(#(#cfgs)* #name: ::core::option::Option::None,))
                    }
                    Slot::Part => {
                        let pa = part_as(p, f);
                        let ty = if in_input {
                            quote!(#pa::Input)
                        } else {
                            quote!(#pa::Update)
                        };
                        Some(quote!(#name: <#ty as ::core::default::Default>::default(),))
                    }
                }
            })
    };
    let update_none = none_init(false);
    let input_none = none_init(true);
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
    let methods = |for_input: bool| -> Vec<TokenStream> {
        let mut emitted: HashSet<String> = HashSet::new();
        // Immutable fields' stand-ins come last so they never displace a setter.
        let (mutable, immutable): (Vec<&Field>, Vec<&Field>) =
            cont.fields.iter().partition(|f| f.is_updatable());
        mutable
            .into_iter()
            .chain(immutable)
            .filter(|f| !for_input || f.in_input())
            .flat_map(|f| {
                if f.is_part() {
                    vec![(f.plain_name.clone(), part_setter(&p, vis, f, for_input))]
                } else {
                    setter(&p, vis, f, &taken)
                }
            })
            .filter_map(|(name, tokens)| emitted.insert(name).then_some(tokens))
            .collect()
    };
    let setters = methods(false);
    let input_setters = methods(true);

    // ---- the input struct --------------------------------------------------
    let input_fields = slots
        .iter()
        .filter(|(f, _)| f.in_input())
        .filter_map(|(f, s)| {
            let name = f.ident;
            let cfgs = &f.cfgs;
            match s {
                Slot::Own(None) => None,
                Slot::Own(Some(g)) => {
                    let wty = &g.write_ty;
                    let doc = field_doc(f);
                    Some(quote! {
                        #(#cfgs)*
                        #[doc = #doc]
                        #vis #name: ::core::option::Option<#wty>,
                    })
                }
                Slot::Part => {
                    let pa = part_as(&p, f);
                    let doc = part_doc(f, "input");
                    Some(quote! {
                        #[doc = #doc]
                        #vis #name: #pa::Input,
                    })
                }
            }
        });
    let input_doc = format!(
        "What the graph's input may set in [`{ident}`]: the fields of \
         [`{update}`] less those marked `omit_from_input` or `private`.\n\n\
         Its JSON rejects a field omitted from input with an error naming it. \
         It converts into [`{update}`] with `Into`. Generated by \
         `#[derive(AgentState)]`."
    );
    let input_to_update = slots.iter().filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        match s {
            Slot::Own(None) => None,
            Slot::Own(Some(_)) if f.in_input() => Some(quote!(#(#cfgs)* #name: __i.#name,)),
            Slot::Own(Some(_)) => Some(quote!(#(#cfgs)* #name: ::core::option::Option::None,)),
            Slot::Part if f.in_input() => {
                Some(quote!(#name: ::core::convert::Into::into(__i.#name),))
            }
            Slot::Part => {
                let pa = part_as(&p, f);
                Some(quote!(#name: <#pa::Update as ::core::default::Default>::default(),))
            }
        }
    });

    // ---- staging and committing --------------------------------------------
    let staged_fields = slots.iter().filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        match s {
            Slot::Own(None) => None,
            Slot::Own(Some(g)) => {
                let sty = &g.staged_ty;
                Some(quote!(#(#cfgs)* #name: #sty,))
            }
            Slot::Part => {
                let pa = part_as(&p, f);
                Some(quote!(#name: #pa::Staged,))
            }
        }
    });
    let write_vecs = slots.iter().filter_map(|(f, s)| {
        let cfgs = &f.cfgs;
        let w = format_ident!("__w_{}", f.plain_name);
        match s {
            Slot::Own(None) => None,
            Slot::Own(Some(_)) => Some(quote!(#(#cfgs)* let mut #w = #p::Writes::new();)),
            Slot::Part => {
                let pa = part_as(&p, f);
                Some(quote!(let mut #w: #p::Writes<#pa::Update> = #p::Writes::new();))
            }
        }
    });
    let collect_writes = slots.iter().filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let w = format_ident!("__w_{}", f.plain_name);
        match s {
            Slot::Own(None) => None,
            Slot::Own(Some(_)) => Some(
                quote!(#(#cfgs)* if let ::core::option::Option::Some(__v) = __u.#name { #w.push(__v); }),
            ),
            // An empty part update is not a write: skipping it keeps a step
            // that does not touch the part free of its staging.
            Slot::Part => Some(quote! {
                if !#p::StateUpdate::is_empty(&__u.#name) { #w.push(__u.#name); }
            }),
        }
    });
    let stage_stmts = slots.iter().filter_map(|(f, s)| {
        let cfgs = &f.cfgs;
        let name = f.ident;
        let w = format_ident!("__w_{}", f.plain_name);
        let st = format_ident!("__s_{}", f.plain_name);
        match s {
            Slot::Own(None) => None,
            Slot::Own(Some(g)) => {
                let stage = &g.stage;
                let json = &f.json_name;
                Some(quote! {
                    #(#cfgs)*
                    let #st = {
                        let __w = #w;
                        #stage.map_err(|__e| __e.within(#json))?
                    };
                })
            }
            // A part's errors already name its flat field.
            Slot::Part => {
                let pa = part_as(&p, f);
                Some(quote!(let #st = #pa::stage(&self.#name, #w, __rule)?;))
            }
        }
    });
    let staged_init = slots.iter().filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let st = format_ident!("__s_{}", f.plain_name);
        match s {
            Slot::Own(None) => None,
            _ => Some(quote!(#(#cfgs)* #name: #st,)),
        }
    });
    let commits = slots.iter().filter_map(|(f, s)| {
        let cfgs = &f.cfgs;
        let name = f.ident;
        match s {
            Slot::Own(None) => None,
            Slot::Own(Some(g)) => {
                let commit = &g.commit;
                Some(quote!(#(#cfgs)* #commit;))
            }
            Slot::Part => {
                let pa = part_as(&p, f);
                Some(quote!(#pa::commit(&mut self.#name, __staged.#name);))
            }
        }
    });
    // Message ids are fixed before an update is stored, so a replay from a
    // checkpoint rebuilds the same ids.
    let assign_ids = slots.iter().filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let ty = f.ty;
        let call = match (s, f.reducer()) {
            (Slot::Part, _) => {
                return Some(
                    quote!(#(#cfgs)* #p::StateUpdate::assign_message_ids(&mut self.#name);),
                );
            }
            (Slot::Own(None), _) => return None,
            (_, Reducer::Messages) => quote!(#p::assign_message_ids::<#ty>(__w)),
            (_, Reducer::Merge) => quote!(#p::assign_nested_message_ids::<#ty>(__w)),
            _ => return None,
        };
        Some(
            quote!(#(#cfgs)* if let ::core::option::Option::Some(__w) = &mut self.#name { #call; }),
        )
    });

    // ---- update and input JSON ---------------------------------------------
    let write_ser = |for_input: bool| {
        let slots = &slots;
        let p = &p;
        slots
            .iter()
            .filter(move |(f, _)| !for_input || f.in_input())
            .filter_map(move |(f, s)| {
                let name = f.ident;
                let cfgs = &f.cfgs;
                let json = &f.json_name;
                match s {
                    Slot::Own(None) => None,
                    Slot::Own(Some(_)) => Some(quote! {
                        #(#cfgs)*
                        if let ::core::option::Option::Some(__v) = &self.#name {
                            __m.serialize_entry(#json, __v)?;
                        }
                    }),
                    Slot::Part if for_input => {
                        Some(quote!(#p::StateInput::serialize_fields(&self.#name, __m)?;))
                    }
                    Slot::Part => {
                        Some(quote!(#p::StateUpdate::serialize_fields(&self.#name, __m)?;))
                    }
                }
            })
    };
    let update_ser = write_ser(false);
    let input_ser = write_ser(true);
    // Part keys are gathered into one map per part and read by the part.
    let part_maps: Vec<TokenStream> = parts
        .iter()
        .map(|f| {
            let m = format_ident!("__p_{}", f.plain_name);
            quote!(let mut #m = #p::serde_json::Map::new();)
        })
        .collect();
    let route = |reject: &dyn Fn(&Field) -> Option<TokenStream>| -> Vec<TokenStream> {
        parts
            .iter()
            .map(|f| {
                let pa = part_as(&p, f);
                let m = format_ident!("__p_{}", f.plain_name);
                let take = reject(f).unwrap_or_else(|| quote! { #m.insert(__k, __v); continue; });
                quote! {
                    if #pa::has_field(&__k) { #take }
                }
            })
            .collect()
    };
    let update_route = route(&|_| None);
    let input_route = route(&|f| {
        (!f.in_input()).then(|| quote!(return ::core::result::Result::Err(#p::not_input(__k));))
    });
    let state_route = route(&|_| None);
    let read_parts = |what: TokenStream, in_input: bool| -> Vec<TokenStream> {
        parts
            .iter()
            .filter(|f| !in_input || f.in_input())
            .map(|f| {
                let name = f.ident;
                let pa = part_as(&p, f);
                let m = format_ident!("__p_{}", f.plain_name);
                let tr = if in_input {
                    quote!(#p::StateInput)
                } else {
                    quote!(#p::StateUpdate)
                };
                quote! {
                    if !#m.is_empty() {
                        __out.#name = <#pa::#what as #tr>::from_json(#p::serde_json::Value::Object(#m))?;
                    }
                }
            })
            .collect()
    };
    let update_read_parts = read_parts(quote!(Update), false);
    let input_read_parts = read_parts(quote!(Input), true);
    let update_from_json = slots.iter().filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        match s {
            Slot::Own(Some(g)) => {
                let read = &g.from_json;
                Some(quote!(#(#cfgs)* #json => { __out.#name = ::core::option::Option::Some(#read?); }))
            }
            Slot::Own(None) => Some(
                quote!(#(#cfgs)* #json => { return ::core::result::Result::Err(#p::immutable_field(__k)); }),
            ),
            Slot::Part => None,
        }
    });
    let input_from_json = slots.iter().filter_map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        match s {
            Slot::Own(Some(g)) if f.in_input() => {
                let read = &g.from_json;
                Some(quote!(#(#cfgs)* #json => { __out.#name = ::core::option::Option::Some(#read?); }))
            }
            Slot::Own(_) if f.attrs.omit_from_input => Some(
                quote!(#(#cfgs)* #json => { return ::core::result::Result::Err(#p::not_input(__k)); }),
            ),
            Slot::Own(_) => Some(
                quote!(#(#cfgs)* #json => { return ::core::result::Result::Err(#p::immutable_field(__k)); }),
            ),
            Slot::Part => None,
        }
    });
    let emptiness = |for_input: bool| {
        let slots = &slots;
        let p = &p;
        slots
            .iter()
            .filter(move |(f, _)| !for_input || f.in_input())
            .filter_map(move |(f, s)| {
                let name = f.ident;
                let cfgs = &f.cfgs;
                match s {
                    Slot::Own(None) => None,
                    Slot::Own(Some(_)) => {
                        Some(quote!(#(#cfgs)* if self.#name.is_some() { return false; }))
                    }
                    Slot::Part if for_input => {
                        Some(quote!(if !#p::StateInput::is_empty(&self.#name) { return false; }))
                    }
                    Slot::Part => {
                        Some(quote!(if !#p::StateUpdate::is_empty(&self.#name) { return false; }))
                    }
                }
            })
    };
    let update_is_empty = emptiness(false);
    let input_is_empty = emptiness(true);

    // ---- state JSON, defaults and schema ------------------------------------
    let state_ser = slots.iter().map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        let write = match s {
            Slot::Own(_) => quote!(__m.serialize_entry(#json, &self.#name)?;),
            Slot::Part => {
                let pa = part_as(&p, f);
                quote!(#pa::serialize_fields(&self.#name, __m, __view)?;)
            }
        };
        if f.in_output() {
            quote!(#(#cfgs)* { #write })
        } else {
            quote!(#(#cfgs)* if __view == #p::FieldView::All { #write })
        }
    });
    let state_slots = own.iter().map(|f| {
        let ty = f.ty;
        let cfgs = &f.cfgs;
        let slot = format_ident!("__f_{}", f.plain_name);
        quote!(#(#cfgs)* let mut #slot: ::core::option::Option<#ty> = ::core::option::Option::None;)
    });
    let state_from_json = own.iter().map(|f| {
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        let slot = format_ident!("__f_{}", f.plain_name);
        quote!(#(#cfgs)* #json => { #slot = ::core::option::Option::Some(#p::value_from_json(#json, __v)?); })
    });
    let state_init = slots.iter().map(|(f, s)| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        match s {
            Slot::Own(_) => {
                let slot = format_ident!("__f_{}", f.plain_name);
                let default = default_expr(f);
                quote!(#(#cfgs)* #name: match #slot { ::core::option::Option::Some(__v) => __v, ::core::option::Option::None => #default },)
            }
            Slot::Part => {
                let pa = part_as(&p, f);
                let m = format_ident!("__p_{}", f.plain_name);
                quote!(#name: #pa::from_json(#p::serde_json::Value::Object(#m))?,)
            }
        }
    });
    let default_init = cont.fields.iter().map(|f| {
        let name = f.ident;
        let cfgs = &f.cfgs;
        let default = default_expr(f);
        quote!(#(#cfgs)* #name: #default,)
    });
    let own_names = own.iter().map(|f| {
        let cfgs = &f.cfgs;
        let json = &f.json_name;
        quote!(#(#cfgs)* #json => true,)
    });
    let part_names = parts.iter().map(|f| {
        let pa = part_as(&p, f);
        quote!(if #pa::has_field(__name) { return true; })
    });
    let state_name = ident.to_string();
    let schema_fields = slots.iter().map(|(f, s)| {
        let cfgs = &f.cfgs;
        let rust_name = &f.plain_name;
        let visibility = visibility_tokens(&p, f);
        if let Slot::Part = s {
            let pa = part_as(&p, f);
            let doc = &f.doc;
            return quote! {
                {
                    let __ps = #pa::schema();
                    __fields.extend(#p::part_fields(#rust_name, #visibility, __ps));
                    __parts.push(#p::PartSchema {
                        field: #rust_name,
                        state: __ps.name,
                        doc: #p::part_doc(#doc, __ps),
                        visibility: #visibility,
                    });
                }
            };
        }
        let json = &f.json_name;
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
                visibility: #visibility,
                owner: #state_name,
                part: ::core::option::Option::None,
            });
        }
    });
    let state_doc = &cont.doc;
    let staged_doc = format!(
        "A step of updates to [`{ident}`], checked and ready to commit: see \
         `AgentState::stage`. Generated by `#[derive(AgentState)]`."
    );

    // ---- the compile-time name check across parts ---------------------------
    // A field compiled out leaves `""`, which the check skips.
    let name_list = |name: &dyn Fn(&Field) -> String| -> TokenStream {
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
    };
    let own_json_names = name_list(&|f| f.json_name.clone());
    let own_rust_names = name_list(&|f| f.plain_name.clone());
    let part_name_trees: Vec<TokenStream> = parts
        .iter()
        .map(|f| {
            let pa = part_as(&p, f);
            let rust_name = &f.plain_name;
            quote!(#p::PartNames { field: #rust_name, names: &#pa::FIELD_NAMES })
        })
        .collect();
    // One check per part, spanned on the part's field so the error points
    // at the declaration that clashes. A non-generic state is checked where
    // it is declared; a generic one when it is used (an inline const in
    // `stage` and `schema`).
    let clash_checks: Vec<TokenStream> = parts
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let span = f.ident.span();
            let names = if generic {
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
        .collect();
    let (free_checks, inline_checks) = if clash_checks.is_empty() {
        (TokenStream::new(), TokenStream::new())
    } else if generic {
        let checks = clash_checks
            .iter()
            .map(|check| quote!(let () = const { #check };));
        (TokenStream::new(), quote!(#(#checks)*))
    } else {
        // The names are spelled out here rather than read from the impl,
        // which is conditional on the parts being states: a part that is
        // not one is then reported once, on its type.
        (
            quote! {
                const _: () = {
                    const __NAMES: #p::FieldNames = #p::FieldNames {
                        state: #state_name,
                        own: #own_json_names,
                        rust: #own_rust_names,
                        parts: &[#(#part_name_trees),*],
                    };
                    #(const _: () = #clash_checks;)*
                };
            },
            TokenStream::new(),
        )
    };

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
        // Every item that names a part's types is conditional on the part
        // being a state (and its update and input, fields of the generated
        // structs, having what their derives of `Debug`, `Clone` and
        // `PartialEq` need; those derives copy these bounds). Written
        // higher-ranked, a bound is not checked where it is declared, so a
        // part that is not a state gives one error (in the name check
        // below) instead of one per item.
        let traits = quote!(::core::fmt::Debug + ::core::clone::Clone + ::core::cmp::PartialEq);
        preds.extend(parts.iter().map(|f| {
            let ty = f.ty;
            quote! {
                for<'__part> #ty: #p::AgentState,
                for<'__part> <#ty as #p::AgentState>::Update: #traits,
                for<'__part> <#ty as #p::AgentState>::Input: #traits
            }
        }));
        if preds.is_empty() {
            TokenStream::new()
        } else {
            quote!(where #(#preds,)*)
        }
    };
    // Serde bounds of generic states: on each field's type and, for reducer
    // fields, on what an update carries. A part brings its own.
    let serde_preds = |f: &Field, g: Option<&FieldGen>, tr: &TokenStream| -> Option<TokenStream> {
        let ty = f.ty;
        if f.is_part() {
            return None;
        }
        Some(match g.and_then(|g| g.partial_ty.as_ref()) {
            Some(partial) => quote!(#ty: #tr, #partial: #tr),
            None => quote!(#ty: #tr),
        })
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
    let state_where = bound(&|f, g| serde_preds(f, g, &both));
    // The generated structs name a part's associated types, which exist only
    // where the part is a state: `bound` adds the part bounds to every set.
    let parts_where = bound(&|_, _| None);
    let de_generics = {
        let mut g = cont.generics.clone();
        g.params.insert(0, syn::parse_quote!('__de));
        g
    };
    let (de_impl_generics, _, _) = de_generics.split_for_impl();
    // The update, the input and the state serialize their set fields through
    // their trait's `serialize_fields` and read JSON through its `from_json`,
    // which names the field on error.
    let serde_via = |ty: &Ident, trait_name: &str, ser_args: TokenStream| {
        let tr = format_ident!("{}", trait_name);
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
    };
    let update_serde = serde_via(&update, "StateUpdate", TokenStream::new());
    let input_serde = serde_via(&input, "StateInput", TokenStream::new());
    let state_serde = serde_via(ident, "AgentState", quote!(, #p::FieldView::All));
    // ---- parts: typed access -------------------------------------------------
    let has_part_impls = parts.iter().map(|f| {
        let name = f.ident;
        let ty = f.ty;
        let pa = part_as(&p, f);
        quote! {
            #[automatically_derived]
            impl #impl_generics #p::HasPart<#ty> for #ident #ty_generics #state_where {
                fn part_of(__whole: &Self) -> &#ty {
                    &__whole.#name
                }
                fn update_part_of(__update: &#update #ty_generics) -> &#pa::Update {
                    &__update.#name
                }
                fn update_part_of_mut(__update: &mut #update #ty_generics) -> &mut #pa::Update {
                    &mut __update.#name
                }
            }
        }
    });
    let json_schema = if cont.attrs.json_schema {
        json_schema::expand(&p, cont, &slots)
    } else {
        TokenStream::new()
    };

    quote! {
        #[doc = #update_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::cmp::PartialEq)]
        #vis struct #update #impl_generics #parts_where {
            #(#update_fields)*
            #marker_field
        }

        #[automatically_derived]
        impl #impl_generics ::core::default::Default for #update #ty_generics #parts_where {
            fn default() -> Self {
                Self { #(#update_none)* #marker_init }
            }
        }

        #[allow(clippy::return_self_not_must_use)]
        impl #impl_generics #update #ty_generics #parts_where {
            /// An update that changes nothing; add changes with the setters.
            #[must_use]
            #vis fn new() -> Self {
                ::core::default::Default::default()
            }

            #(#setters)*
        }

        #[doc = #input_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::cmp::PartialEq)]
        #vis struct #input #impl_generics #parts_where {
            #(#input_fields)*
            #marker_field
        }

        #[automatically_derived]
        impl #impl_generics ::core::default::Default for #input #ty_generics #parts_where {
            fn default() -> Self {
                Self { #(#input_none)* #marker_init }
            }
        }

        #[allow(clippy::return_self_not_must_use)]
        impl #impl_generics #input #ty_generics #parts_where {
            /// An input that sets nothing; add fields with the setters.
            #[must_use]
            #vis fn new() -> Self {
                ::core::default::Default::default()
            }

            #(#input_setters)*
        }

        #[automatically_derived]
        impl #impl_generics ::core::convert::From<#input #ty_generics> for #update #ty_generics #state_where {
            fn from(__i: #input #ty_generics) -> Self {
                Self { #(#input_to_update)* #marker_init }
            }
        }

        #[doc = #staged_doc]
        #[allow(dead_code)]
        #vis struct #staged #impl_generics #parts_where {
            #(#staged_fields)*
            #marker_field
        }

        #update_serde

        #[automatically_derived]
        impl #impl_generics #p::StateUpdate for #update #ty_generics #state_where {
            type State = #ident #ty_generics;

            fn is_empty(&self) -> bool {
                #(#update_is_empty)*
                true
            }

            fn assign_message_ids(&mut self) {
                #(#assign_ids)*
            }

            fn from_json(__value: #p::serde_json::Value) -> ::core::result::Result<Self, #p::StateError> {
                let __map = #p::expect_object(__value)?;
                let mut __out = <Self as ::core::default::Default>::default();
                #(#part_maps)*
                for (__k, __v) in __map {
                    match __k.as_str() {
                        #(#update_from_json)*
                        _ => {
                            #(#update_route)*
                            let __schema = <#ident #ty_generics as #p::AgentState>::schema();
                            return ::core::result::Result::Err(#p::unknown_update_field(__k, __schema));
                        }
                    }
                }
                #(#update_read_parts)*
                ::core::result::Result::Ok(__out)
            }

            fn to_json(&self) -> #p::serde_json::Value {
                #p::to_value(self)
            }

            fn serialize_fields<__M: #p::serde::ser::SerializeMap>(&self, __m: &mut __M) -> ::core::result::Result<(), __M::Error> {
                #(#update_ser)*
                ::core::result::Result::Ok(())
            }
        }

        #input_serde

        #[automatically_derived]
        impl #impl_generics #p::StateInput for #input #ty_generics #state_where {
            type State = #ident #ty_generics;

            fn is_empty(&self) -> bool {
                #(#input_is_empty)*
                true
            }

            fn from_json(__value: #p::serde_json::Value) -> ::core::result::Result<Self, #p::StateError> {
                let __map = #p::expect_object(__value)?;
                let mut __out = <Self as ::core::default::Default>::default();
                #(#part_maps)*
                for (__k, __v) in __map {
                    match __k.as_str() {
                        #(#input_from_json)*
                        _ => {
                            #(#input_route)*
                            let __schema = <#ident #ty_generics as #p::AgentState>::schema();
                            return ::core::result::Result::Err(#p::unknown_input_field(__k, __schema));
                        }
                    }
                }
                #(#input_read_parts)*
                ::core::result::Result::Ok(__out)
            }

            fn to_json(&self) -> #p::serde_json::Value {
                #p::to_value(self)
            }

            fn serialize_fields<__M: #p::serde::ser::SerializeMap>(&self, __m: &mut __M) -> ::core::result::Result<(), __M::Error> {
                #(#input_ser)*
                ::core::result::Result::Ok(())
            }
        }

        #[automatically_derived]
        impl #impl_generics ::core::default::Default for #ident #ty_generics #default_where {
            fn default() -> Self {
                Self { #(#default_init)* }
            }
        }

        #state_serde

        #[automatically_derived]
        impl #impl_generics #p::AgentState for #ident #ty_generics #state_where {
            type Update = #update #ty_generics;
            type Input = #input #ty_generics;
            type Staged = #staged #ty_generics;
            #version
            #migrate

            const FIELD_NAMES: #p::FieldNames = #p::FieldNames {
                state: #state_name,
                own: #own_json_names,
                rust: #own_rust_names,
                parts: &[#(#part_name_trees),*],
            };

            fn schema() -> &'static #p::StateSchema {
                #inline_checks
                static __SCHEMA: ::std::sync::OnceLock<#p::StateSchema> = ::std::sync::OnceLock::new();
                __SCHEMA.get_or_init(|| {
                    let mut __fields = ::std::vec::Vec::new();
                    let mut __parts: ::std::vec::Vec<#p::PartSchema> = ::std::vec::Vec::new();
                    #(#schema_fields)*
                    #p::StateSchema {
                        name: #state_name,
                        doc: #state_doc,
                        fields: __fields,
                        parts: __parts,
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
                #inline_checks
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
                #(#state_slots)*
                #(#part_maps)*
                for (__k, __v) in __map {
                    match __k.as_str() {
                        #(#state_from_json)*
                        _ => {
                            #(#state_route)*
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

            fn has_field(__name: &str) -> bool {
                match __name {
                    #(#own_names)*
                    _ => {
                        #(#part_names)*
                        false
                    }
                }
            }

            fn serialize_fields<__M: #p::serde::ser::SerializeMap>(
                &self,
                __m: &mut __M,
                __view: #p::FieldView,
            ) -> ::core::result::Result<(), __M::Error> {
                #(#state_ser)*
                ::core::result::Result::Ok(())
            }
        }

        #free_checks

        #(#has_part_impls)*

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

        #json_schema
    }
}

/// The doc of a part's slot in the update or input struct.
fn part_doc(f: &Field, what: &str) -> String {
    let ty = tidy(&f.ty.to_token_stream().to_string());
    let head = format!(
        "The {what} of the part `{ty}` (`#[state(flatten)]`): its fields sit at the top level of the JSON."
    );
    if f.doc.is_empty() {
        head
    } else {
        format!("{}\n\n{head}", f.doc)
    }
}

/// The setter of a part on the update (or input) type.
fn part_setter(p: &TokenStream, vis: &syn::Visibility, f: &Field, for_input: bool) -> TokenStream {
    let name = f.ident;
    let pa = part_as(p, f);
    let ty = tidy(&f.ty.to_token_stream().to_string());
    let (arg, what) = if for_input {
        (quote!(#pa::Input), "input")
    } else {
        (quote!(#pa::Update), "update")
    };
    let doc =
        format!("Sets the {what} of the part `{ty}`, replacing what this {what} held for it.");
    quote! {
        #[doc = #doc]
        #[must_use]
        #vis fn #name(mut self, #name: #arg) -> Self {
            self.#name = #name;
            self
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
