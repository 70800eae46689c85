//! `#[derive(AgentState)]`, the proc-macro of
//! [agent-state](https://docs.rs/agent-state). Use it through the
//! `agent-state` crate, which re-exports it with the runtime it expands to.
//!
//! The pipeline follows serde's: `ast` reads the input and its attributes
//! into a borrowed intermediate form, collecting every error in a `Ctxt`;
//! `check` applies the rules across fields; `expand` generates code, one
//! module per generated item, and still does when there were errors, so a
//! mistake gives one error and not a cascade. `names` holds the names both
//! `check` and `expand` derive from a field (its setters), so neither
//! imports the other.

mod ast;
mod attr;
mod check;
mod ctxt;
mod expand;
mod names;
mod suggest;
mod ty;

use proc_macro::TokenStream;

/// Derives `AgentState`: see the `agent-state` crate for the attributes.
#[proc_macro_derive(AgentState, attributes(reducer, state))]
pub fn derive_agent_state(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}
