//! `Send`: one task of a node with its own input, as LangGraph's
//! `Send(node, arg)` (map-reduce). Public as [`graph::Send`](crate::graph::Send);
//! it sits below both the graph and the checkpointers, since a stored step
//! records the sends a `Command` made.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Runs `node` once more in the next superstep, with `arg` as its input
/// instead of the state: LangGraph's `Send(node, arg)`.
///
/// A router returns them ([`Next::send`](crate::graph::Next::send)), or a node in
/// its [`Command`](crate::graph::Command); the target is a node whose
/// first argument is [`Sent<T>`](crate::graph::Sent), `T` the argument's type. Every `Send` of a step becomes its own task: they run
/// concurrently, and their writes apply after the step's other nodes' (in
/// node-name order), in the order the `Send`s were made.
///
/// Import it by path (`graph::Send`) or under another name: as a plain
/// `use`, it hides the `Send` marker trait in that module.
///
/// ```
/// use agent_state::graph::Send;
///
/// let task = Send::new("summarize", "chapter one".to_owned());
/// assert_eq!(task.node(), "summarize");
/// assert_eq!(task.arg_json().unwrap(), "chapter one");
/// ```
#[derive(Clone)]
pub struct Send {
    node: String,
    arg: SendArg,
}

/// A `Send`'s argument: the value the sender made (no copy, no JSON), or
/// JSON read back from a checkpoint.
#[derive(Clone)]
pub(crate) enum SendArg {
    Typed {
        value: Arc<dyn Any + std::marker::Send + Sync>,
        type_name: &'static str,
        to_json: fn(&(dyn Any + std::marker::Send + Sync)) -> Result<Value, String>,
    },
    Json(Value),
}

fn typed_to_json<T: Serialize + 'static>(
    value: &(dyn Any + std::marker::Send + Sync),
) -> Result<Value, String> {
    let value = value
        .downcast_ref::<T>()
        .expect("a Send's value has the type it was made with");
    serde_json::to_value(value).map_err(|e| e.to_string())
}

impl Send {
    /// A task of `node` with input `arg`.
    pub fn new<T>(node: impl Into<String>, arg: T) -> Self
    where
        T: Serialize + std::marker::Send + Sync + 'static,
    {
        Self {
            node: node.into(),
            arg: SendArg::Typed {
                value: Arc::new(arg),
                type_name: std::any::type_name::<T>(),
                to_json: typed_to_json::<T>,
            },
        }
    }

    /// The target node.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The argument as JSON (what a checkpoint stores).
    pub fn arg_json(&self) -> Result<Value, String> {
        self.arg.to_json()
    }

    /// A `Send` of a stored or routed argument.
    pub(crate) fn from_arg(node: &str, arg: SendArg) -> Self {
        Self {
            node: node.to_owned(),
            arg,
        }
    }

    pub(crate) fn arg(&self) -> &SendArg {
        &self.arg
    }
}

impl SendArg {
    pub(crate) fn to_json(&self) -> Result<Value, String> {
        match self {
            SendArg::Typed { value, to_json, .. } => to_json(value.as_ref()),
            SendArg::Json(value) => Ok(value.clone()),
        }
    }

    /// The argument as the target's input type: the sender's value when it
    /// has that type, or JSON read into it.
    pub(crate) fn take<I>(
        &self,
        node: &str,
    ) -> Result<I, Box<dyn std::error::Error + core::marker::Send + Sync>>
    where
        I: DeserializeOwned + Clone + 'static,
    {
        match self {
            SendArg::Typed {
                value, type_name, ..
            } => value.downcast_ref::<I>().cloned().ok_or_else(|| {
                format!(
                    "node `{node}` takes `{}`, but a Send to it carried `{type_name}`",
                    std::any::type_name::<I>()
                )
                .into()
            }),
            SendArg::Json(value) => serde_json::from_value(value.clone()).map_err(|e| {
                format!(
                    "node `{node}` takes `{}`; the stored Send to it does not read as one: {e}",
                    std::any::type_name::<I>()
                )
                .into()
            }),
        }
    }
}

impl fmt::Debug for Send {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let arg = self.arg_json().unwrap_or_else(Value::String);
        f.debug_struct("Send")
            .field("node", &self.node)
            .field("arg", &arg)
            .finish()
    }
}

/// Equal when they target one node with equal JSON arguments.
impl PartialEq for Send {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node && self.arg_json().ok() == other.arg_json().ok()
    }
}

/// `{"node": .., "arg": ..}`, as a checkpoint stores it.
impl Serialize for Send {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        let arg = self.arg_json().map_err(serde::ser::Error::custom)?;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("node", &self.node)?;
        map.serialize_entry("arg", &arg)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Send {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Stored {
            node: String,
            arg: Value,
        }
        let stored = Stored::deserialize(deserializer)?;
        Ok(Self {
            node: stored.node,
            arg: SendArg::Json(stored.arg),
        })
    }
}
