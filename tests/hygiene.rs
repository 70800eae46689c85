//! Tests that try to break the expansion: shadowed prelude names, raw
//! identifiers, `#[cfg]` fields, generics with bounds and where-clauses,
//! fields named like generated items, a re-exported crate path. Clippy runs
//! on this file with `pedantic` on (CI denies warnings).
#![warn(clippy::pedantic)]
#![allow(dead_code, non_camel_case_types)]

use agent_state::{AgentState, StateUpdate};
use serde_json::json;

mod shadowed {
    //! Every prelude name generated code could use, shadowed.
    use agent_state::{AgentState, Messages};

    pub struct Option;
    pub struct Some;
    pub struct None;
    pub struct Result;
    pub struct Ok;
    pub struct Err;
    pub struct Vec;
    pub struct Box;
    pub struct Default;
    pub struct Clone;
    pub struct Debug;
    pub struct PartialEq;
    pub struct Into;
    pub struct From;
    pub struct Iterator;
    pub struct IntoIterator;
    pub struct serde;
    pub struct serde_json;
    pub struct core;

    /// A state declared among hostile names.
    #[derive(AgentState, ::core::fmt::Debug)]
    pub struct Hostile {
        /// History.
        #[reducer(messages)]
        pub messages: Messages,
        /// A count.
        pub count: u32,
        /// Items.
        #[reducer(union)]
        pub items: agent_state::UnionVec<::std::string::String>,
        /// Maybe a room.
        pub room: ::core::option::Option<::std::string::String>,
    }

    /// A state with a part and every visibility, among the same names.
    #[derive(AgentState, ::core::fmt::Debug)]
    pub struct HostileWhole {
        /// The part.
        #[state(flatten)]
        pub inner: Hostile,
        /// Not an input.
        #[state(omit_from_input)]
        pub done: bool,
        /// Not an output.
        #[state(omit_from_output)]
        pub hint: ::core::option::Option<::std::string::String>,
        /// Neither.
        #[state(private)]
        #[reducer(append)]
        pub notes: ::std::vec::Vec<u8>,
    }
}

#[test]
fn shadowed_prelude_names_do_not_capture_generated_code() {
    let mut s = shadowed::Hostile::default();
    s.apply(
        shadowed::HostileUpdate::new()
            .count(2)
            .item("a")
            .room("r")
            .message("hi"),
    )
    .unwrap();
    assert_eq!(s.count, 2);
    assert_eq!(s.items, ["a"]);
    assert_eq!(s.messages.len(), 1);
}

#[test]
fn shadowed_names_do_not_capture_parts_inputs_or_outputs() {
    let mut s = shadowed::HostileWhole::default();
    s.apply_input(
        shadowed::HostileWholeInput::new()
            .inner(shadowed::HostileInput::new().count(1))
            .hint("h"),
    )
    .unwrap();
    s.apply(shadowed::HostileWhole::lift(shadowed::HostileUpdate::new().item("x")).notes([7]))
        .unwrap();
    assert_eq!(s.part::<shadowed::Hostile>().count, 1);
    assert_eq!(
        s.to_output_json(),
        json!({"messages": [], "count": 1, "items": ["x"], "room": null, "done": false})
    );
}

/// A part under a keyword name, with a keyword field of its own.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct RawWhole {
    /// The part, as `r#type`.
    #[state(flatten)]
    pub r#type: Raw,
    /// Own.
    pub r#loop: u8,
}

#[test]
fn raw_identifiers_name_parts() {
    let mut s = RawWhole::default();
    s.apply(
        RawWholeUpdate::new()
            .r#type(RawUpdate::new().r#type("t"))
            .r#loop(2),
    )
    .unwrap();
    assert_eq!(s.to_json(), json!({"type": "t", "match": [], "loop": 2}));
    assert_eq!(RawWhole::schema().parts[0].field, "type");
}

/// Keywords as field names.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Raw {
    /// A field called `type`.
    pub r#type: String,
    /// A field called `match`, appended.
    #[reducer(append)]
    pub r#match: Vec<u32>,
}

#[test]
fn raw_identifiers_keep_their_names_in_json() {
    let mut s = Raw::default();
    s.apply(RawUpdate::new().r#type("kind").r#match([1, 2]))
        .unwrap();
    s.apply(RawUpdate::new().overwrite_match(vec![7])).unwrap();
    s.apply(RawUpdate::new().add_match(8)).unwrap();
    assert_eq!(s.to_json(), json!({"type": "kind", "match": [7, 8]}));
    s.apply_json(json!({"type": "other", "match": [9]}))
        .unwrap();
    assert_eq!(s.r#type, "other");
    assert_eq!(s.r#match, [7, 8, 9]);
    assert_eq!(Raw::schema().fields[0].name, "type");
    assert_eq!(Raw::schema().fields[0].rust_name, "type");
}

/// Fields that exist only under some configurations.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Configured {
    /// Always here.
    pub kept: u32,
    /// Compiled out.
    #[cfg(any())]
    pub gone: u32,
    /// Compiled in.
    #[cfg(not(any()))]
    #[reducer(append)]
    pub present: Vec<u32>,
}

#[test]
fn cfg_fields_follow_their_cfg() {
    let mut s = Configured::default();
    s.apply(ConfiguredUpdate::new().kept(1).present([2]))
        .unwrap();
    assert_eq!(s.to_json(), json!({"kept": 1, "present": [2]}));
    let err = s.apply_json(json!({"gone": 1})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown field `gone`, expected one of `kept`, `present`"
    );
    assert_eq!(Configured::schema().fields.len(), 2);
}

/// A generic state with bounds in both places.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Generic<T: Clone + std::fmt::Debug, M>
where
    T: PartialEq,
    M: agent_state::MessageLike,
{
    /// Items, with a one-item setter named by the attribute.
    #[reducer(append)]
    #[state(item_setter = "push_item")]
    pub items: Vec<T>,
    /// Messages of any message type.
    #[reducer(messages)]
    pub messages: agent_state::Messages<M>,
    /// Set once.
    #[reducer(immutable)]
    pub label: String,
}

/// A field of a bare type parameter: the state is one for every `T` with
/// serde's traits and `Default`.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Holder<T: Clone + std::fmt::Debug + PartialEq> {
    /// The value.
    pub value: T,
    /// Its part, generic too.
    #[state(flatten)]
    pub inner: Generic<T, Line>,
}

#[test]
fn generic_fields_take_their_default_when_missing() {
    let mut h: Holder<String> = Holder::default();
    h.apply(HolderUpdate::new().value("x")).unwrap();
    assert_eq!(h.value, "x");
    let h = Holder::<u8>::from_json(json!({"items": [1]})).unwrap();
    assert_eq!((h.value, h.inner.items), (0, vec![1]));
}

/// Another crate's message type.
#[derive(
    Debug, Clone, PartialEq, agent_state::serde::Serialize, agent_state::serde::Deserialize,
)]
#[serde(crate = "agent_state::serde")]
pub struct Line {
    id: Option<String>,
    text: String,
}

impl agent_state::MessageLike for Line {
    fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    fn set_id(&mut self, id: String) {
        self.id = Some(id);
    }
}

#[test]
fn generic_states_with_foreign_message_types() {
    let mut s: Generic<u8, Line> = Generic::default();
    s.apply(GenericUpdate::new().items([1u8, 2]).message(Line {
        id: None,
        text: "hi".into(),
    }))
    .unwrap();
    assert_eq!(s.items, [1, 2]);
    assert!(s.messages[0].id.is_some(), "id assigned");
    s.apply_json(json!({"messages": [{"id": "x", "text": "yo"}], "items": [3]}))
        .unwrap();
    assert_eq!(s.messages.len(), 2);
    assert_eq!(s.items, [1, 2, 3]);
    s.apply(GenericUpdate::new().push_item(4)).unwrap();
    assert_eq!(s.items, [1, 2, 3, 4]);
}

/// Fields named like the trait's and the update's items.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Named {
    /// Named like the update type's role.
    pub update: u32,
    /// Named like `AgentState::apply`.
    pub apply: u32,
    /// Named like `AgentState::stage`.
    #[reducer(append)]
    pub stage: Vec<u32>,
    /// Named like `AgentState::commit`.
    pub commit: bool,
    /// Named like `AgentState::schema`.
    pub schema: String,
    /// Named like the generated staged type's role.
    pub staged: u8,
    /// Named like the update's hidden `combine`.
    #[reducer(append)]
    pub combine: Vec<u8>,
}

/// A field named like the update's hidden record of a conflict, in a part.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[allow(clippy::pub_underscore_fields)]
pub struct HiddenNames {
    /// Named like the hidden field.
    pub __conflict: u32,
    /// Appended.
    #[reducer(append)]
    pub notes: Vec<u32>,
}

/// The state that combines updates of it.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct HiddenWhole {
    /// The part.
    #[state(flatten)]
    pub part: HiddenNames,
}

#[test]
fn a_field_named_like_a_hidden_one_keeps_its_name() {
    let mut s = HiddenWhole::default();
    let update = HiddenWhole::lift(HiddenNamesUpdate::new().__conflict(3).note(1))
        .with(HiddenNamesUpdate::new().note(2));
    s.apply(update).unwrap();
    assert_eq!(
        (s.part.__conflict, s.part.notes.as_slice()),
        (3, &[1, 2][..])
    );
    assert_eq!(s.to_json(), json!({"__conflict": 3, "notes": [1, 2]}));
}

#[test]
fn fields_named_like_generated_items() {
    let mut s = Named::default();
    AgentState::apply(
        &mut s,
        NamedUpdate::new()
            .update(1)
            .apply(2)
            .stage([3])
            .commit(true)
            .schema("x")
            .staged(4)
            .combine([5])
            .add_combine(6),
    )
    .unwrap();
    assert_eq!(s.combine, [5, 6]);
    assert_eq!((s.update, s.apply, s.commit, s.staged), (1, 2, true, 4));
    assert_eq!(s.stage, [3]);
    assert!(!NamedUpdate::new().apply(1).is_empty());
}

/// One-item setters: the plural rule, `add_<field>` for names that are
/// not plain plurals, and `#[state(item_setter = "..")]`, a keyword
/// included.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct ItemSetters {
    /// A plain plural: `loaded_plugin`.
    #[reducer(append)]
    pub loaded_plugins: Vec<String>,
    /// Not a plural: `add_status`.
    #[reducer(append)]
    pub status: Vec<String>,
    /// A plural whose singular is not the name less its `s`: `add_entries`.
    #[reducer(append)]
    pub entries: Vec<u32>,
    /// No final `s`: `add_trace`.
    #[reducer(append)]
    pub trace: Vec<String>,
    /// `new` by the rule, the constructor's name: named by the attribute.
    #[reducer(append)]
    #[state(item_setter = "headline")]
    pub news: Vec<String>,
    /// A keyword as the item setter's name: `r#type`.
    #[reducer(append)]
    #[state(item_setter = "type")]
    pub kinds: Vec<String>,
    /// A raw field with an item setter from the rule: `add_match`.
    #[reducer(append)]
    pub r#match: Vec<u8>,
}

#[test]
fn item_setters_follow_the_documented_rule_and_the_attribute() {
    let mut s = ItemSetters::default();
    s.apply(
        ItemSettersUpdate::new()
            .loaded_plugin("editor")
            .add_status("ok")
            .add_entries(1)
            .add_trace("t")
            .headline("h")
            .r#type("k")
            .add_match(7),
    )
    .unwrap();
    s.apply(ItemSettersUpdate::new().news(["n".to_owned()]).kinds(["j"]))
        .unwrap();
    assert_eq!(s.loaded_plugins, ["editor"]);
    assert_eq!((s.status.len(), s.entries.len(), s.trace.len()), (1, 1, 1));
    assert_eq!(s.news, ["h", "n"]);
    assert_eq!(s.kinds, ["k", "j"]);
    assert_eq!(s.r#match, [7]);
}

mod reexport {
    //! A crate that re-exports agent-state under its own path.
    pub mod deep {
        pub use agent_state as runtime;
    }
}

/// Found through `#[state(crate = ..)]`.
#[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate::reexport::deep::runtime)]
pub struct ThroughReexport {
    /// A value.
    pub value: i64,
}

/// Parts found through `#[state(crate = ..)]` too.
#[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate::reexport::deep::runtime)]
pub struct WholeThroughReexport {
    /// The part.
    #[state(flatten)]
    pub part: ThroughReexport,
    /// Private.
    #[state(private)]
    pub secret: u8,
}

#[test]
fn crate_path_override() {
    let mut s = ThroughReexport::default();
    s.apply(ThroughReexportUpdate::new().value(-3)).unwrap();
    assert_eq!(s.value, -3);
    let mut w = WholeThroughReexport::default();
    w.apply_json(json!({"value": 4, "secret": 1})).unwrap();
    assert_eq!((w.part.value, w.secret), (4, 1));
    assert_eq!(w.to_output_json(), json!({"value": 4}));
}

/// Visibility of the generated items follows the state's.
mod private_state {
    use agent_state::AgentState;

    #[derive(AgentState, Debug)]
    pub(crate) struct Inner {
        pub(crate) n: u32,
    }

    pub(crate) fn make() -> InnerUpdate {
        InnerUpdate::new().n(1)
    }
}

#[test]
fn generated_items_share_the_states_visibility() {
    let update: private_state::InnerUpdate = private_state::make();
    assert_eq!(update.n, Some(1));
}

/// The `crate` path may also be given as a string, as serde spells it.
#[derive(agent_state::AgentState, Debug, Clone, PartialEq)]
#[state(crate = "::agent_state")]
pub struct ThroughString {
    /// A value.
    pub value: u8,
}

#[test]
fn crate_path_as_a_string() {
    let mut s = ThroughString::default();
    s.apply(ThroughStringUpdate::new().value(3)).unwrap();
    assert_eq!(s.value, 3);
}
