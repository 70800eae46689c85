//! The derive input in a form the checks and the expansion read: one
//! `Field` per struct field with its parsed attributes, borrowing the
//! original tokens so errors point at what the user wrote.

use syn::ext::IdentExt;
use syn::{Attribute, DeriveInput, Generics, Ident, Type, Visibility};

use crate::attr::{self, ContainerAttrs, FieldAttrs, Reducer};
use crate::ctxt::Ctxt;

pub struct Container<'a> {
    pub ident: &'a Ident,
    pub vis: &'a Visibility,
    pub generics: &'a Generics,
    pub attrs: ContainerAttrs,
    pub doc: String,
    pub fields: Vec<Field<'a>>,
}

pub struct Field<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    pub attrs: FieldAttrs,
    /// The name in JSON and in the schema.
    pub json_name: String,
    /// The Rust name without `r#`, for derived names.
    pub plain_name: String,
    pub doc: String,
    /// `#[cfg(..)]` attributes, repeated on everything generated for the field.
    pub cfgs: Vec<&'a Attribute>,
}

impl Field<'_> {
    pub fn reducer(&self) -> &Reducer {
        &self.attrs.reducer
    }

    /// Whether an update can write the field (a part's update always can).
    pub fn is_updatable(&self) -> bool {
        !matches!(self.attrs.reducer, Reducer::Immutable)
    }

    /// Whether the field is `#[reducer(untracked)]`: never stored in a
    /// checkpoint, so left out of an update's JSON and of the state's
    /// stored JSON.
    pub fn is_untracked(&self) -> bool {
        matches!(
            self.attrs.reducer,
            Reducer::Channel(crate::attr::Channel::Untracked)
        )
    }

    /// Whether the field is a `#[state(flatten)]` part.
    pub fn is_part(&self) -> bool {
        self.attrs.flatten.is_some()
    }

    /// Whether the graph's input may set the field (for a part: its fields,
    /// subject to their own visibility).
    pub fn in_input(&self) -> bool {
        self.is_updatable() && !self.attrs.omit_from_input
    }

    /// Whether the graph's output shows the field.
    pub fn in_output(&self) -> bool {
        !self.attrs.omit_from_output
    }
}

impl<'a> Container<'a> {
    /// Reads the input; `None` (with the error in `cx`) for anything but a
    /// struct with named fields.
    pub fn from_ast(cx: &Ctxt, input: &'a DeriveInput) -> Option<Self> {
        let named = named_fields(cx, input)?;
        let attrs = attr::container_attrs(cx, &input.attrs);
        let rename_all = attrs.rename_all;
        let fields = named
            .named
            .iter()
            .map(|field| {
                let ident = field.ident.as_ref().expect("named field");
                let plain_name = ident.unraw().to_string();
                let attrs = attr::field_attrs(cx, &field.attrs);
                let json_name = match (&attrs.rename, rename_all) {
                    (Some(name), _) => name.clone(),
                    (None, Some(rule)) => rule.apply(&plain_name),
                    (None, None) => plain_name.clone(),
                };
                Field {
                    ident,
                    ty: &field.ty,
                    json_name,
                    plain_name,
                    doc: attr::doc_of(&field.attrs),
                    cfgs: field
                        .attrs
                        .iter()
                        .filter(|a| a.path().is_ident("cfg"))
                        .collect(),
                    attrs,
                }
            })
            .collect();
        Some(Container {
            ident: &input.ident,
            vis: &input.vis,
            generics: &input.generics,
            doc: attr::doc_of(&input.attrs),
            attrs,
            fields,
        })
    }
}

/// The named fields of a struct; `None`, with the error in `cx`, for
/// anything else.
fn named_fields<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<&'a syn::FieldsNamed> {
    match &input.data {
        syn::Data::Struct(data) => match &data.fields {
            syn::Fields::Named(named) => Some(named),
            syn::Fields::Unnamed(_) => {
                cx.error_spanned_by(
                    &input.ident,
                    "`AgentState` needs a struct with named fields: each field is a channel with a name; this is a tuple struct",
                );
                None
            }
            syn::Fields::Unit => {
                cx.error_spanned_by(
                    &input.ident,
                    "`AgentState` needs a struct with named fields: each field is a channel with a name; this is a unit struct",
                );
                None
            }
        },
        syn::Data::Enum(data) => {
            cx.syn_error(syn::Error::new(
                data.enum_token.span,
                "`AgentState` can only be derived for a struct with named fields, not an enum",
            ));
            None
        }
        syn::Data::Union(data) => {
            cx.syn_error(syn::Error::new(
                data.union_token.span,
                "`AgentState` can only be derived for a struct with named fields, not a union",
            ));
            None
        }
    }
}
