//! `combine`, the hidden method of `StateUpdate` and `StateInput` behind
//! `StateUpdate::with` and a part's setter: adds a later update's writes
//! field by field, as the next writes of one step would be, through the
//! runtime's `combine` module. What one update cannot hold is recorded in
//! the update's hidden conflict field, and staging it returns that error.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Expansion, Kind, Slot};
use crate::attr::{Channel, Reducer};

/// The `combine` method of the update (or input) of `kind`.
pub(super) fn combine_fn(ex: &Expansion, kind: Kind) -> TokenStream {
    let p = &ex.p;
    let conflict = &ex.conflict;
    let tr = kind.trait_path(p);
    let held = ex.slots.iter().filter(|(f, _)| kind.holds(f));
    let fields = held.filter_map(|(f, s)| {
        let (name, cfgs, json, ty) = (f.ident, &f.cfgs, &f.json_name, f.ty);
        let partials = match (s, f.reducer()) {
            (Slot::Part, _) => {
                return Some(quote!(#tr::combine(&mut self.#name, __later.#name, __rule);));
            }
            (Slot::Own(None), _) => return None,
            (_, Reducer::Replace | Reducer::Channel(Channel::Ephemeral | Channel::Untracked)) => {
                return Some(quote! {
                    #(#cfgs)*
                    #p::combine_replace(&mut self.#name, __later.#name, __rule, &mut self.#conflict, #json);
                });
            }
            // Several writes of a step are allowed: the last wins.
            (_, Reducer::Channel(Channel::AnyValue)) => {
                return Some(quote! {
                    #(#cfgs)*
                    #p::combine_replace(&mut self.#name, __later.#name, #p::StepRule::Fold, &mut self.#conflict, #json);
                });
            }
            (
                _,
                Reducer::Messages
                | Reducer::Union
                | Reducer::Append
                | Reducer::Channel(Channel::Topic { .. }),
            ) => quote!(#p::concat_partials),
            (_, Reducer::Merge) => quote!(<#ty as #p::MergeField>::combine_partials),
            (_, Reducer::With { .. } | Reducer::Immutable) => quote!(#p::keep_partials_apart),
        };
        Some(quote! {
            #(#cfgs)*
            #p::combine_write(&mut self.#name, __later.#name, __rule, &mut self.#conflict, #json, #partials);
        })
    });
    quote! {
        #[inline]
        fn combine(&mut self, __later: Self, __rule: #p::StepRule) {
            #(#fields)*
            self.#conflict.absorb(__later.#conflict);
        }
    }
}
