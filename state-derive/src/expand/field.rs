//! What one field contributes to the generated items, by reducer: the type
//! an update carries, the staged type, and the code that stages, commits
//! and reads it.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Ident;

use crate::ast::Field;
use crate::attr::{Channel, Reducer};
use crate::ty::{collection_item, generic_arg_of};

/// One field as the expansion sees it: its own value with a reducer (and,
/// unless immutable, a write), or a flattened part.
pub(super) enum Slot {
    Own(Option<FieldGen>),
    Part,
}

impl Slot {
    /// The field's write, if it is its own and updatable.
    pub(super) fn gen(&self) -> Option<&FieldGen> {
        match self {
            Slot::Own(g) => g.as_ref(),
            Slot::Part => None,
        }
    }
}

/// Types and code for one field, by reducer.
pub(super) struct FieldGen {
    /// The update struct's field type (without the outer `Option`).
    pub write_ty: TokenStream,
    /// What a reducer write carries besides an overwrite; `None` for
    /// `replace`, whose write is the value itself.
    pub partial_ty: Option<TokenStream>,
    /// The staged struct's field type.
    pub staged_ty: TokenStream,
    /// Expression staging the writes in the field's list ([`writes_of`]),
    /// its error named after the field.
    pub stage: TokenStream,
    /// Statement committing `__staged.<field>`.
    pub commit: TokenStream,
    /// The function reading one JSON value into the field's slot of an
    /// update or input (`value_into` or `write_into`).
    pub read_into: TokenStream,
    /// Whether one update's write (`Option<T>`) is already the staged
    /// change (`replace`): the generated `apply` then does not stage it.
    pub one_is_staged: bool,
}

/// The list of a step's writes to the field, in the generated `stage`.
pub(super) fn writes_of(field: &Field) -> Ident {
    format_ident!("__w_{}", field.plain_name)
}

/// `<Ty as AgentState>` for a part, spanned on the type the user wrote so
/// a type that is not a derived state is reported there.
pub(super) fn part_as(p: &TokenStream, f: &Field) -> TokenStream {
    let ty = f.ty;
    quote_spanned!(ty.span()=> <#ty as #p::AgentState>)
}

/// Types and code of an updatable field; `None` for an immutable one,
/// which has no write, no stage and no commit.
pub(super) fn field_gen(p: &TokenStream, field: &Field) -> Option<FieldGen> {
    let ty = field.ty;
    let span = ty.span();
    Some(match field.reducer() {
        Reducer::Immutable => return None,
        Reducer::Replace => replace(p, field),
        Reducer::Merge => via_trait(
            p,
            field,
            "MergeField",
            quote_spanned!(span=> <#ty as #p::MergeField>::Partial),
            None,
        ),
        Reducer::Messages => via_trait(
            p,
            field,
            "MessagesField",
            quote_spanned!(span=> #p::MessageOps<<#ty as #p::MessagesField>::Message>),
            // In where-clauses of generic states, a spelled-out message type
            // (`Messages<M>`) makes a bound rustc can match without
            // normalizing `<Messages<M> as MessagesField>::Message`.
            generic_arg_of(ty, &["Messages", "Vec"]).map(|m| quote!(#p::MessageOps<#m>)),
        ),
        // As for messages, a spelled-out item type (`Vec<T>`) is the bound.
        Reducer::Union => via_trait(
            p,
            field,
            "UnionField",
            quote_spanned!(span=> ::std::vec::Vec<<#ty as #p::UnionField>::Item>),
            collection_item(ty).map(|t| quote!(::std::vec::Vec<#t>)),
        ),
        Reducer::Append => via_trait(
            p,
            field,
            "AppendField",
            quote_spanned!(span=> ::std::vec::Vec<<#ty as #p::AppendField>::Item>),
            collection_item(ty).map(|t| quote!(::std::vec::Vec<#t>)),
        ),
        Reducer::With { path, update } => with(p, field, path, update.as_deref()),
        Reducer::Channel(Channel::Untracked) => replace(p, field),
        Reducer::Channel(Channel::Topic { accumulate: true }) => via_trait(
            p,
            field,
            "AppendField",
            quote_spanned!(span=> ::std::vec::Vec<<#ty as #p::AppendField>::Item>),
            None,
        ),
        Reducer::Channel(channel) => channel_gen(p, field, *channel),
    })
}

/// `ephemeral`, `any_value`, `topic`: staged as set, keep, or back to the
/// field's default.
fn channel_gen(p: &TokenStream, field: &Field, channel: Channel) -> FieldGen {
    let ty = field.ty;
    let json = &field.json_name;
    let ident = field.ident;
    let w = writes_of(field);
    let default = super::defaults::default_expr(p, field);
    let commit = quote!(#p::commit_channel(&mut self.#ident, __staged.#ident, || #default));
    let staged_ty = quote!(#p::ChannelStage<#ty>);
    match channel {
        Channel::Topic { .. } => {
            let partial =
                quote_spanned!(ty.span()=> ::std::vec::Vec<<#ty as #p::AppendField>::Item>);
            FieldGen {
                write_ty: quote!(#p::FieldWrite<#ty, #partial>),
                partial_ty: Some(partial),
                staged_ty,
                stage: quote!(#p::in_field(#p::stage_topic(#w, __rule), #json)),
                commit,
                read_into: quote!(#p::write_into),
                one_is_staged: false,
            }
        }
        _ => {
            let stage = if channel == Channel::Ephemeral {
                quote!(#p::in_field(#p::stage_ephemeral(#w, __rule), #json))
            } else {
                quote!(#p::in_field(#p::stage_any_value(#w, __rule), #json))
            };
            FieldGen {
                write_ty: quote!(#ty),
                partial_ty: None,
                staged_ty,
                stage,
                commit,
                read_into: quote!(#p::value_into),
                one_is_staged: false,
            }
        }
    }
}

/// `replace`: the write is the value; a second write in a superstep is
/// refused when staged.
fn replace(p: &TokenStream, field: &Field) -> FieldGen {
    let ty = field.ty;
    let json = &field.json_name;
    let ident = field.ident;
    let w = writes_of(field);
    FieldGen {
        write_ty: quote!(#ty),
        partial_ty: None,
        staged_ty: quote!(::core::option::Option<#ty>),
        stage: quote!(#p::stage_replace_field(#w, __rule, #json)),
        commit: quote!(#p::commit_replace(&mut self.#ident, __staged.#ident)),
        read_into: quote!(#p::value_into),
        one_is_staged: true,
    }
}

/// A reducer served by a runtime trait (`MergeField`, `MessagesField`,
/// ..): the write carries `partial` or an overwrite, and the trait's
/// `stage` and `commit` do the work. `bound_partial` replaces `partial` in
/// where-clauses when it reads better there.
fn via_trait(
    p: &TokenStream,
    field: &Field,
    trait_name: &str,
    partial: TokenStream,
    bound_partial: Option<TokenStream>,
) -> FieldGen {
    let ty = field.ty;
    let ident = field.ident;
    let w = writes_of(field);
    let span = ty.span();
    let tr = Ident::new(trait_name, span);
    let tr = quote_spanned!(span=> #p::#tr);
    let json = &field.json_name;
    let reducer = trait_name.trim_end_matches("Field").to_lowercase();
    let stage_fn = format_ident!("stage_{}", reducer, span = span);
    let commit_fn = format_ident!("commit_{}", reducer, span = span);
    FieldGen {
        write_ty: quote!(#p::FieldWrite<#ty, #partial>),
        partial_ty: Some(bound_partial.unwrap_or(partial)),
        staged_ty: quote_spanned!(span=> #p::FieldStage<#ty, <#ty as #tr>::Staged>),
        stage: quote_spanned!(span=> #p::#stage_fn(&self.#ident, #w, __rule, #json)),
        commit: quote_spanned!(span=> #p::#commit_fn(&mut self.#ident, __staged.#ident)),
        read_into: quote!(#p::write_into),
        one_is_staged: false,
    }
}

/// `with = path`: the user's function folds each write into the value.
fn with(p: &TokenStream, field: &Field, path: &syn::Path, update: Option<&syn::Type>) -> FieldGen {
    let ty = field.ty;
    let json = &field.json_name;
    let ident = field.ident;
    let w = writes_of(field);
    let input = update.map_or_else(|| ty.to_token_stream(), ToTokens::to_token_stream);
    // Spanned on the path, the runtime's path included: a function of the
    // wrong signature, or whose bounds the types do not meet, is reported
    // once, on the attribute that names it, and not also on the derive.
    let pspan = path.span();
    let stage_with = respanned(quote!(#p::stage_with), pspan);
    FieldGen {
        write_ty: quote!(#p::FieldWrite<#ty, #input>),
        partial_ty: Some(input.clone()),
        staged_ty: quote!(#p::FieldStage<#ty, ::core::option::Option<#ty>>),
        stage: quote_spanned! {pspan=>
            #p::in_field(#p::stage_writes(&self.#ident, #w, __rule, |__cur: &#ty, __ws: #p::Writes<#input>| {
                #stage_with(__cur, __ws, #path)
            }), #json)
        },
        commit: quote!(#p::commit_writes(&mut self.#ident, __staged.#ident, #p::commit_replace)),
        read_into: quote!(#p::write_into),
        one_is_staged: false,
    }
}

/// `tokens` with every span set to `span`, so that rustc reports an
/// expression made of them at `span` alone.
fn respanned(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => {
                let mut inner = Group::new(group.delimiter(), respanned(group.stream(), span));
                inner.set_span(span);
                TokenTree::Group(inner)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
