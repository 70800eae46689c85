//! Code generation, one module per generated item. For `struct Foo`:
//!
//! | module | generates |
//! | --- | --- |
//! | [`update`] | `FooUpdate`, its `Default`, `new` and `impl StateUpdate` |
//! | [`setters`] | the methods of `FooUpdate` and `FooInput`, per reducer |
//! | [`input`] | `FooInput`, `From<FooInput> for FooUpdate`, `impl StateInput` |
//! | [`staged`] | `FooStaged`, and the `stage` and `commit` methods |
//! | [`state`] | `impl AgentState for Foo` and `impl MergeField for Foo` |
//! | [`parts`] | `FIELD_NAMES`, the name-clash checks, `impl HasPart<P> for Foo` |
//! | [`json`] | the `from_json` and `serialize_fields` bodies of the three |
//! | [`serde`] | `Serialize` and `Deserialize` of the three, through those |
//! | [`schema`] | the `schema()` method |
//! | [`defaults`] | `impl Default for Foo` and each field's default |
//! | [`json_schema`] | `JsonSchema` impls, with `#[state(json_schema)]` |
//! | [`field_checks`] | checks of the field types: serde's traits, a `union` field's items |
//!
//! [`field`] holds what each field contributes by reducer, [`bounds`] the
//! where-clauses, [`combine`] how two updates of the state combine. Every runtime name goes through `<crate>::__private` and
//! every std name is absolute, so user items called `Option`, `Result` or
//! `Ok` cannot capture generated code.

mod bounds;
mod combine;
mod defaults;
mod field;
mod field_checks;
mod input;
mod json;
mod json_schema;
mod parts;
mod schema;
mod serde;
mod setters;
mod staged;
mod state;
mod update;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{DeriveInput, GenericParam, Ident};

use crate::ast::{Container, Field};
use crate::check;
use crate::ctxt::Ctxt;
use bounds::Bounds;
use field::{FieldGen, Slot};

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

/// Every generated item, in the order the reader of `cargo expand` meets
/// them: the three structs, then each one's impls.
fn expand(cont: &Container) -> TokenStream {
    let ex = Expansion::new(cont);
    let mut out = field_checks::type_checks(&ex);
    out.extend(field_checks::union_scan_warnings(&ex));
    out.extend(update::items(&ex));
    out.extend(input::items(&ex));
    out.extend(staged::item(&ex));
    out.extend(serde::impls(
        &ex,
        &ex.update,
        "StateUpdate",
        TokenStream::new(),
    ));
    out.extend(update::trait_impl(&ex, Kind::Update));
    out.extend(serde::impls(
        &ex,
        &ex.input,
        "StateInput",
        TokenStream::new(),
    ));
    out.extend(update::trait_impl(&ex, Kind::Input));
    out.extend(defaults::default_impl(&ex));
    let p = &ex.p;
    out.extend(serde::impls(
        &ex,
        cont.ident,
        "AgentState",
        quote!(, #p::FieldView::All),
    ));
    out.extend(state::agent_state_impl(&ex));
    out.extend(parts::free_checks(&ex));
    out.extend(parts::has_part_impls(&ex));
    out.extend(state::merge_field_impl(&ex));
    if cont.attrs.json_schema {
        out.extend(json_schema::expand(&ex));
    }
    out
}

/// `base`, or `base` with underscores added until no field has the name.
fn hidden_name(cont: &Container, base: &str) -> Ident {
    let mut name = base.to_owned();
    while cont.fields.iter().any(|f| f.plain_name == name) {
        name.push('_');
    }
    format_ident!("{}", name)
}

/// Which of the two structs of writes is generated: the update a node
/// returns, or the graph's input, which is the update less the fields
/// omitted from input.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Update,
    Input,
}

impl Kind {
    /// Whether the struct carries the field (or part).
    fn holds(self, f: &Field) -> bool {
        self == Kind::Update || f.in_input()
    }

    /// The part's associated type that fills a part's slot.
    fn part_type(self) -> TokenStream {
        match self {
            Kind::Update => quote!(Update),
            Kind::Input => quote!(Input),
        }
    }

    /// The runtime trait the struct implements.
    fn trait_path(self, p: &TokenStream) -> TokenStream {
        match self {
            Kind::Update => quote!(#p::StateUpdate),
            Kind::Input => quote!(#p::StateInput),
        }
    }

    /// The word docs use for it.
    fn word(self) -> &'static str {
        match self {
            Kind::Update => "update",
            Kind::Input => "input",
        }
    }
}

/// What every generator reads: the input, the runtime's path, the names of
/// the generated types, each field's slot and the where-clauses.
struct Expansion<'a> {
    cont: &'a Container<'a>,
    /// `::agent_state::__private`, or under `#[state(crate = ..)]`'s path.
    p: TokenStream,
    update: Ident,
    input: Ident,
    staged: Ident,
    /// The hidden field of the update and the input that records a write
    /// `combine` could not add (`__conflict`, or a name no field has).
    conflict: Ident,
    /// Every field in declaration order, with what it contributes.
    slots: Vec<(&'a Field<'a>, Slot)>,
    /// Whether the state has generic parameters.
    generic: bool,
    bounds: Bounds,
}

impl<'a> Expansion<'a> {
    fn new(cont: &'a Container<'a>) -> Self {
        let p = match &cont.attrs.krate {
            Some(path) => quote!(#path::__private),
            None => quote!(::agent_state::__private),
        };
        let ident = cont.ident;
        let slots: Vec<(&Field, Slot)> = cont
            .fields
            .iter()
            .map(|f| {
                let slot = if f.is_part() {
                    Slot::Part
                } else {
                    Slot::Own(field::field_gen(&p, f))
                };
                (f, slot)
            })
            .collect();
        let bounds = Bounds::new(cont, &p, &slots);
        Expansion {
            update: format_ident!("{}Update", ident),
            input: format_ident!("{}Input", ident),
            staged: format_ident!("{}Staged", ident),
            conflict: hidden_name(cont, "__conflict"),
            generic: !cont.generics.params.is_empty(),
            cont,
            p,
            slots,
            bounds,
        }
    }

    /// Whether the input holds exactly the update's writes: no part (whose
    /// own input may differ) and no field omitted from input. Its
    /// `from_json` and `combine` are then the update's, through a
    /// conversion ([`input::from_update`]), rather than generated again.
    fn input_mirrors_update(&self) -> bool {
        self.parts().next().is_none() && self.own().all(|f| !f.attrs.omit_from_input)
    }

    /// The fields the state holds itself, in declaration order.
    fn own(&self) -> impl Iterator<Item = &'a Field<'a>> + '_ {
        self.slots.iter().map(|(f, _)| *f).filter(|f| !f.is_part())
    }

    /// The `#[state(flatten)]` parts, in declaration order.
    fn parts(&self) -> impl Iterator<Item = &'a Field<'a>> + '_ {
        self.slots.iter().map(|(f, _)| *f).filter(|f| f.is_part())
    }

    /// `<Ty as AgentState>` for a part, spanned on the type the user wrote
    /// so a type that is not a derived state is reported there.
    fn part_as(&self, f: &Field) -> TokenStream {
        field::part_as(&self.p, f)
    }

    /// The field of a generated struct that uses generic parameters only
    /// immutable fields use; nothing for a state without generics.
    fn marker_field(&self) -> TokenStream {
        if !self.generic {
            return TokenStream::new();
        }
        let vis = self.cont.vis;
        let markers = self
            .cont
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
            });
        quote! {
            #[doc(hidden)]
            #vis __marker: ::core::marker::PhantomData<fn() -> (#(#markers,)*)>,
        }
    }

    /// The marker field's initializer, next to [`Self::marker_field`].
    fn marker_init(&self) -> TokenStream {
        if self.generic {
            quote!(__marker: ::core::marker::PhantomData,)
        } else {
            TokenStream::new()
        }
    }
}
