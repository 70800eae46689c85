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

/// Derives `AgentState` for a struct with named fields: the partial update a
/// node returns, the input, the apply logic, the defaults, serde and the
/// schema. Use it through the `agent-state` crate, which re-exports it with
/// the runtime its code calls; examples are in that crate's documentation.
///
/// # Reducers
///
/// One `#[reducer(..)]` per field says how a step's writes combine with the
/// current value:
///
/// | attribute | field types | one write | several writes in one step |
/// | --- | --- | --- | --- |
/// | none / `replace` | any | overwrite | error naming the field (LangGraph's `INVALID_CONCURRENT_GRAPH_UPDATE`) |
/// | `merge` | `HashMap`, `BTreeMap`, `serde_json::{Map, Value}`, derived states | keys/fields present override, the rest kept | folded in order |
/// | `messages` | `Messages`, `Vec<M: MessageLike>` | LangGraph's `add_messages`: new id appends, same id replaces in place, removal by id (error if absent), remove-all | folded in order |
/// | `union` | `UnionVec<T>` (a list in first-seen order, indexed), `HashSet`, `BTreeSet`, `IndexSet` (feature `indexmap`); `Vec<T>` (scanned, with a warning) | add missing, never remove; one lookup per item at any size | folded |
/// | `append` | `Vec<T>`, `VecDeque<T>` | extend (`operator.add`) | folded |
/// | `immutable` | any | no setter exists; JSON naming it is rejected | — |
/// | `with = path` | any | `path(&current, value) -> Result<T, E>`; an `Err` rejects the step | folded |
///
/// LangGraph's other channel kinds are reducers too: `ephemeral`,
/// `any_value`, `topic`, `topic(accumulate)` and `untracked` (the core's
/// `reducer::channel` module says how each behaves across steps).
///
/// * Every reducer field also has `overwrite_<field>(value)` (JSON
///   `{"__overwrite__": value}`, or `{"type": "__overwrite__", "value": value}`
///   as an `Overwrite` reads after a JSON round trip), LangGraph's
///   `Overwrite`. A write through the reducer whose own JSON would read as a
///   marker (a `merge` map whose only key is `__overwrite__`, say) is written
///   `{"__reduce__": value}`, so an update's JSON always reads back as the
///   update.
/// * `apply(update)` applies one update; `apply_all([..])` applies the
///   updates of one superstep together. Both are atomic: an error leaves the
///   state exactly as it was. `stage` and `commit` split the two phases for
///   callers that persist a step in between.
/// * `union` keeps each item once, found through an index, so items need
///   `Hash + Eq` (`Ord` for a `BTreeSet`); `UnionVec<T>` reads like a slice
///   and keeps first-seen order. With the `indexmap` feature,
///   `agent_state::indexmap::IndexSet<T>` works too. A plain `Vec<T>` works
///   but is scanned for every item, so the derive warns on its type and
///   points to `UnionVec<T>`. Float items are refused (NaN is not equal to
///   itself, so it would be added again by every write).
/// * `#[reducer(with = path, update = Type)]` names the type of the
///   function's second argument when it is not the field's type.
///
/// # Attributes
///
/// * `#[state(default = expr)]` on a field: its initial value; `Default` is
///   generated. A field type without `Default` needs one, and the compile
///   error says so.
/// * `#[state(rename = "..")]` on a field, `#[state(rename_all = "camelCase")]`
///   on the struct: JSON names, as serde spells them.
/// * `#[state(crate = path)]` on the struct: where generated code finds a
///   re-exported `agent_state`.
/// * `#[state(flatten)]` on a field whose type derives `AgentState`: the
///   field is a *part* (a middleware's schema). JSON stays flat (the part's
///   fields at the top level, as LangGraph merges middleware schemas), a
///   part's updates go through its own reducers, and two parts (or a part
///   and the state) that declare the same JSON name do not compile: the error
///   names the field and both declarations.
/// * `#[state(omit_from_input)]`, `#[state(omit_from_output)]` and
///   `#[state(private)]` (both), on a field or on a part: LangChain's
///   `OmitFromInput`, `OmitFromOutput` and `PrivateStateAttr`.
///   `<State>Input` is what the graph's input may carry: the update's fields
///   less the omitted ones. A JSON input naming an omitted field is an error
///   that names it (`ErrorKind::NotInput`); `apply_input` / `apply_input_json`
///   apply an input; `Into` turns it into an update. A graph run given an
///   update is held to the same rule: one writing an omitted field is refused
///   before anything is stored. `state.output()` serializes without the
///   fields omitted from output (`to_output_json()` is its JSON); `to_json` /
///   `from_json` (what a checkpoint stores) keep every field, and nodes may
///   update every field.
/// * `#[state(json_schema)]` on the struct (the `schemars` feature):
///   `schemars::JsonSchema` for the state, its update and its input (and the
///   output view): one flat object per schema, parts included, visibility
///   honoured, unknown fields rejected. Field types derive `JsonSchema`
///   through the re-export (`#[schemars(crate = "agent_state::schemars")]`).
/// * `#[state(version = 2, migrate = path)]` on the struct: a schema version
///   and the function that upgrades older checkpoints
///   (`fn(u32, Stored, Value) -> Result<Value, MigrationError>`); a `migrate`
///   without a `version` of 2 or more, which could never run, does not
///   compile.
/// * `#[state(item_setter = "..")]` on a field: the name of its one-item
///   setter (below).
///
/// `State::schema()` lists every field, parts' included, with its JSON name,
/// Rust type, reducer, default, doc comment, visibility and owner (the struct
/// that declares it); `State::reference_table()` renders it as the Markdown
/// table LangGraph projects keep by hand (`Field | Type | Default | Reducer |
/// Owner | Description`, with the JSON of each default).
///
/// # The update and its setters
///
/// The update type `<State>Update` has serde that leaves unset fields out and
/// rejects unknown ones, `Debug`, `Clone`, `PartialEq`, `Default`, and
/// setters named after the fields:
///
/// | field | setters |
/// | --- | --- |
/// | any (not immutable) | `field(value)`; a part: `field(part_update)`, which adds the part's writes |
/// | `Option<T>` without a reducer | also `clear_field()`, which sets `None` (JSON `null`), unlike leaving it unset |
/// | with a reducer | also `overwrite_field(value)` |
/// | `messages`, `union`, `append` | `field([items])` adds several; one item: the field name less its final `s` when that is a plain plural (`messages` → `message(m)`, `loaded_plugins` → `loaded_plugin(p)`), else `add_field(item)` (`status` → `add_status`, `entries` → `add_entries`, `trace` → `add_trace`) |
///
/// A plain plural ends in `s` but not in `ss`, `us` or `is` (singular nouns:
/// `class`, `status`, `analysis`) nor in `ies`, `sses`, `shes`, `ches`, `xes`
/// or `zzes` (plurals whose singular is not the name less its `s`).
/// `#[state(item_setter = "add_headline")]` on the field names the one-item
/// setter otherwise. Each setter's rustdoc says where its name comes from.
/// Names that would clash (`news` → `new`, the constructor; a `message` field
/// next to `messages`; a field named `with`, `is_empty`, `clone`, `default`,
/// `to_json`, `from_json` or `overwrite_<other field>`) are a compile error on
/// the field saying how to fix it.
///
/// Adding an update of a part the update already writes (`update.with(..)`,
/// or the part's setter) keeps both: its writes come after the earlier ones,
/// as the next writes of one step would (messages and list items
/// concatenate, merges fold, an overwrite discards what came before it).
/// What one update cannot hold (two writes of a plain field, two overwrites,
/// two writes through a `with` function) makes applying it the error such a
/// step gives, naming the field.
#[proc_macro_derive(AgentState, attributes(reducer, state))]
pub fn derive_agent_state(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}
