//! JSON Schema of a state, its update, its input and its output (the
//! `schemars` feature).
//!
//! `#[state(json_schema)]` on a derived state implements
//! [`schemars::JsonSchema`] for the state (`Foo`: the JSON of `to_json`, what
//! a checkpoint stores), its update (`FooUpdate`: what a node returns, each
//! reducer field taking its partial, `{"__overwrite__": value}` or
//! `{"__reduce__": partial}`) and its
//! input (`FooInput`: the update less the fields omitted from input); the
//! output view ([`Output`]) has one too. Every schema is one
//! flat object, flattened parts' fields included, that rejects unknown
//! fields, as the state's own JSON reading does. Field types need
//! `JsonSchema` themselves: derive it through the re-export,
//! `#[derive(agent_state::schemars::JsonSchema)]` with
//! `#[schemars(crate = "agent_state::schemars")]`.
//!
//! ```
//! use agent_state::json_schema::{schema_of, schemars};
//! use agent_state::{AgentState, Messages};
//!
//! #[derive(AgentState)]
//! #[state(json_schema)]
//! struct Chat {
//!     /// Conversation history.
//!     #[reducer(messages)]
//!     messages: Messages,
//!     /// Set by a middleware.
//!     #[state(omit_from_input)]
//!     language: Option<String>,
//! }
//!
//! let input = schema_of::<ChatInput>();
//! assert!(input["properties"].get("messages").is_some());
//! assert!(input["properties"].get("language").is_none());
//! assert_eq!(input["additionalProperties"], false);
//! ```

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::message::{Content, Message, ToolCall, ToolStatus};
use crate::messages::{MessageOp, MessageOps, Messages};
use crate::state::{AgentState, Output};
use crate::union_vec::UnionVec;

/// schemars, for generated code and `#[schemars(crate = ..)]`; a module of
/// its items rather than `pub use schemars`, so that rustdoc does not copy
/// schemars' docs into the facade's. Users reach it as
/// `agent_state::schemars`.
#[doc(hidden)]
pub mod schemars {
    pub use ::schemars::*;
}

/// Which JSON of a state a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaTarget {
    /// The whole state (`to_json`, a checkpoint): every field.
    State,
    /// An update: the fields an update may write, each as its write.
    Update,
    /// The graph's input: the update's fields less those omitted from input.
    Input,
    /// The graph's output: the fields not omitted from output.
    Output,
}

impl SchemaTarget {
    /// Whether a field with these properties is in the target's JSON.
    #[doc(hidden)]
    pub fn shows(self, updatable: bool, in_input: bool, in_output: bool) -> bool {
        match self {
            Self::State => true,
            Self::Update => updatable,
            Self::Input => updatable && in_input,
            Self::Output => in_output,
        }
    }

    /// Whether fields appear as writes (update, input) or as values.
    #[doc(hidden)]
    pub fn is_write(self) -> bool {
        matches!(self, Self::Update | Self::Input)
    }
}

/// A state whose fields can describe themselves in JSON Schema: what
/// `#[state(json_schema)]` implements. A state flattening a part needs the
/// part to implement it too.
pub trait StateJsonSchema: AgentState {
    /// Adds the state's properties for `target` (its parts' included).
    #[doc(hidden)]
    fn add_properties(
        generator: &mut SchemaGenerator,
        target: SchemaTarget,
        properties: &mut Map<String, Value>,
    );
}

/// The JSON Schema of `S` for `target`: one object of its flat fields, no
/// field required (missing fields keep their value or take their
/// default), unknown fields rejected.
pub fn object_schema<S: StateJsonSchema>(
    generator: &mut SchemaGenerator,
    target: SchemaTarget,
) -> Schema {
    let mut properties = Map::new();
    S::add_properties(generator, target, &mut properties);
    let schema = S::schema();
    let what = match target {
        SchemaTarget::State => "",
        SchemaTarget::Update => "An update of: ",
        SchemaTarget::Input => "The graph input of: ",
        SchemaTarget::Output => "The graph output of: ",
    };
    let mut out = json_schema!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !schema.doc.is_empty() {
        out.insert("description".into(), format!("{what}{}", schema.doc).into());
    }
    out
}

/// The root JSON Schema (with its `$defs`) of `T`, as a JSON value.
pub fn schema_of<T: JsonSchema>() -> Value {
    SchemaGenerator::default()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The schema of a reducer field's write: its partial, an overwrite in
/// either JSON form (`{"__overwrite__": value}` or `{"type":
/// "__overwrite__", "value": value}`), or a partial escaped as
/// `{"__reduce__": partial}` (how `to_json` writes one shaped like a marker).
#[doc(hidden)]
pub fn write_schema<T: JsonSchema, P: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let partial = generator.subschema_for::<P>();
    let value = generator.subschema_for::<T>();
    let wrapped = |key: &str, inner: &Schema| {
        json_schema!({
            "type": "object",
            "properties": { key: inner },
            "required": [key],
            "additionalProperties": false,
        })
    };
    let overwrite = wrapped(crate::write::OVERWRITE_KEY, &value);
    let escaped = wrapped(crate::write::REDUCE_KEY, &partial);
    let tagged = json_schema!({
        "type": "object",
        "properties": {
            "type": { "const": crate::write::OVERWRITE_KEY },
            "value": value,
        },
        "required": ["type", "value"],
    });
    json_schema!({ "anyOf": [partial, overwrite, tagged, escaped] })
}

/// A field's schema with the first paragraph of its doc comment as the
/// description, ready to be a property.
#[doc(hidden)]
pub fn describe(mut schema: Schema, doc: &str) -> Value {
    if let Some(first) = doc.split("\n\n").next().filter(|d| !d.is_empty()) {
        schema.insert("description".into(), first.trim().into());
    }
    schema.to_value()
}

impl<S: StateJsonSchema> JsonSchema for Output<'_, S> {
    fn schema_name() -> Cow<'static, str> {
        format!("{}Output", S::schema().name).into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("agent_state::Output<{}>", std::any::type_name::<S>()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        object_schema::<S>(generator, SchemaTarget::Output)
    }
}

/// LangChain's message types and OpenAI's roles.
const ROLES: [&str; 7] = [
    "human",
    "user",
    "ai",
    "assistant",
    "system",
    "developer",
    "tool",
];

/// LangChain's message dict (`model_dump()` shape, or an OpenAI role
/// dict), a `[role, content]` pair, a bare string, or a message object as
/// LangChain serialises it (`{"lc": 1, "type": "constructor", ..}`).
impl JsonSchema for Message {
    fn schema_name() -> Cow<'static, str> {
        "Message".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "agent_state::Message".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let content = generator.subschema_for::<Content>();
        let tool_call = generator.subschema_for::<ToolCall>();
        let status = generator.subschema_for::<ToolStatus>();
        let roles = ROLES;
        json_schema!({
            "description": "A chat message: a LangChain message dict, an OpenAI role dict, a [role, content] pair, a string (a human message), or a message object as LangChain serialises it ({\"lc\": 1, \"type\": \"constructor\", \"id\": [.., class], \"kwargs\": {..}}).",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "type": { "enum": roles },
                        "role": { "enum": roles },
                        "content": content,
                        "id": { "type": ["string", "null"] },
                        "name": { "type": ["string", "null"] },
                        "tool_calls": { "type": "array", "items": tool_call },
                        "tool_call_id": { "type": ["string", "null"] },
                        "status": status,
                    },
                    "anyOf": [ { "required": ["type"] }, { "required": ["role"] } ],
                },
                { "type": "string" },
                {
                    "type": "object",
                    "properties": {
                        "lc": { "const": 1 },
                        "type": { "const": "constructor" },
                        "id": { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                        "kwargs": { "type": "object" },
                    },
                    "required": ["lc", "type", "id", "kwargs"],
                },
                {
                    "type": "array",
                    "prefixItems": [ { "enum": roles }, content ],
                    "minItems": 2,
                    "maxItems": 2,
                }
            ]
        })
    }
}

impl JsonSchema for Content {
    fn schema_name() -> Cow<'static, str> {
        "Content".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "agent_state::Content".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Text, or a list of content blocks.",
            "anyOf": [ { "type": "string" }, { "type": "array" } ]
        })
    }
}

impl JsonSchema for ToolCall {
    fn schema_name() -> Cow<'static, str> {
        "ToolCall".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "agent_state::ToolCall".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A tool call: LangChain's {name, args, id} or OpenAI's {id, function: {name, arguments}}.",
            "type": "object",
        })
    }
}

impl JsonSchema for ToolStatus {
    fn schema_name() -> Cow<'static, str> {
        "ToolStatus".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "agent_state::ToolStatus".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "enum": ["success", "error", null] })
    }
}

impl<M: JsonSchema> JsonSchema for Messages<M> {
    fn schema_name() -> Cow<'static, str> {
        format!("Messages_of_{}", M::schema_name()).into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("agent_state::Messages<{}>", M::schema_id()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<M>();
        json_schema!({ "type": "array", "items": item })
    }
}

impl<T: JsonSchema> JsonSchema for UnionVec<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("UnionVec_of_{}", T::schema_name()).into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("agent_state::UnionVec<{}>", T::schema_id()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<T>();
        json_schema!({ "type": "array", "items": item, "uniqueItems": true })
    }
}

impl<M: JsonSchema> JsonSchema for MessageOp<M> {
    fn schema_name() -> Cow<'static, str> {
        format!("MessageOp_of_{}", M::schema_name()).into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("agent_state::MessageOp<{}>", M::schema_id()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let message = generator.subschema_for::<M>();
        json_schema!({
            "description": "A message to add or replace (by id), or a removal: {\"type\": \"remove\", \"id\": ...}.",
            "anyOf": [
                {
                    "type": "object",
                    "properties": { "type": { "const": "remove" }, "id": { "type": "string" } },
                    "required": ["type", "id"],
                },
                message
            ]
        })
    }
}

impl<M: JsonSchema> JsonSchema for MessageOps<M> {
    fn schema_name() -> Cow<'static, str> {
        format!("MessageOps_of_{}", M::schema_name()).into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("agent_state::MessageOps<{}>", M::schema_id()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let op = generator.subschema_for::<MessageOp<M>>();
        json_schema!({ "anyOf": [ { "type": "array", "items": op }, op ] })
    }
}
