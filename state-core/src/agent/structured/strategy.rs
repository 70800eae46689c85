//! How the agent asks for a typed answer: LangChain's `ToolStrategy`,
//! `ProviderStrategy` and `AutoStrategy`, and what a tool strategy does
//! with an answer that does not parse (`handle_errors`).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::error::{StructuredErrorKind, StructuredOutputError};
use crate::agent::model::ResponseSchema;
use crate::agent::tool::schema_of;
use schemars::JsonSchema;

/// A type the agent can answer with: read from the model's JSON (serde),
/// described to it by its JSON Schema (schemars), kept in the state.
pub trait ResponseValue:
    Serialize + DeserializeOwned + JsonSchema + Clone + fmt::Debug + PartialEq + Send + Sync + 'static
{
}

impl<T> ResponseValue for T where
    T: Serialize
        + DeserializeOwned
        + JsonSchema
        + Clone
        + fmt::Debug
        + PartialEq
        + Send
        + Sync
        + 'static
{
}

/// The schema of `T` as the model is offered it: LangChain's `_SchemaSpec`.
/// The name is the schema's title (schemars: the type's name), the
/// description its doc comment, either overridden.
#[derive(Debug, Clone)]
pub(crate) struct SchemaSpec {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
    pub(crate) strict: Option<bool>,
}

impl SchemaSpec {
    fn of<T: JsonSchema>() -> Self {
        let schema = schema_of::<T>();
        let text = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_owned);
        Self {
            name: text("title").unwrap_or_else(|| "response_format".to_owned()),
            description: text("description").unwrap_or_default(),
            schema,
            strict: None,
        }
    }

    /// What a provider strategy sends (`ModelSettings::response_format`).
    pub(crate) fn response_schema(&self) -> ResponseSchema {
        ResponseSchema {
            name: self.name.clone(),
            description: (!self.description.is_empty()).then(|| self.description.clone()),
            schema: self.schema.clone(),
            strict: self.strict,
        }
    }
}

/// A handler that writes the retry message for an error.
pub type ErrorHandler = Arc<dyn Fn(&StructuredOutputError) -> String + Send + Sync>;

/// What a [`ToolStrategy`] does when the model's structured answer is
/// wrong (arguments that do not parse into the type, or several
/// structured calls at once): LangChain's `handle_errors`. A retried
/// error is answered with a tool message on each structured call and the
/// model is called again; any other fails the run with the
/// [`StructuredOutputError`].
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum HandleErrors {
    /// Retry every error with LangChain's message,
    /// `Error: {error}\n Please fix your mistakes.` (`True`, the default).
    #[default]
    Retry,
    /// Fail the run (`False`).
    Raise,
    /// Retry every error with this message (a `str`).
    Message(String),
    /// Retry only these kinds of error, with LangChain's message (an
    /// exception class or a tuple of them); fail on the others.
    Only(Vec<StructuredErrorKind>),
    /// Retry every error with the message this function writes (a
    /// callable).
    With(ErrorHandler),
}

impl HandleErrors {
    /// Retries with the message `handler` writes for each error.
    pub fn with(
        handler: impl Fn(&StructuredOutputError) -> String + Send + Sync + 'static,
    ) -> Self {
        Self::With(Arc::new(handler))
    }

    /// The message to answer `error` with, or `None` to fail.
    pub(crate) fn retry_message(&self, error: &StructuredOutputError) -> Option<String> {
        let template = || format!("Error: {error}\n Please fix your mistakes.");
        match self {
            Self::Retry => Some(template()),
            Self::Raise => None,
            Self::Message(message) => Some(message.clone()),
            Self::Only(kinds) => kinds.contains(&error.kind()).then(template),
            Self::With(handler) => Some(handler(error)),
        }
    }
}

impl fmt::Debug for HandleErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Retry => f.write_str("Retry"),
            Self::Raise => f.write_str("Raise"),
            Self::Message(message) => f.debug_tuple("Message").field(message).finish(),
            Self::Only(kinds) => f.debug_tuple("Only").field(kinds).finish(),
            Self::With(_) => f.write_str("With(..)"),
        }
    }
}

impl From<bool> for HandleErrors {
    fn from(retry: bool) -> Self {
        if retry {
            Self::Retry
        } else {
            Self::Raise
        }
    }
}

impl From<&str> for HandleErrors {
    fn from(message: &str) -> Self {
        Self::Message(message.to_owned())
    }
}

impl From<String> for HandleErrors {
    fn from(message: String) -> Self {
        Self::Message(message)
    }
}

impl From<StructuredErrorKind> for HandleErrors {
    fn from(kind: StructuredErrorKind) -> Self {
        Self::Only(vec![kind])
    }
}

/// The answer as a call of a tool whose arguments are `T` (LangChain's
/// `ToolStrategy`): works with any model that calls tools. The tool is
/// named after the type (its schema title) and described by its doc
/// comment; the model is made to call a tool (`tool_choice: required`).
/// A call that parses ends the loop; one that does not, or several
/// structured calls at once, are handled as [`handle_errors`](Self::handle_errors) says.
#[derive(Debug, Clone)]
pub struct ToolStrategy<T> {
    pub(crate) spec: SchemaSpec,
    pub(crate) tool_message_content: Option<String>,
    pub(crate) handle_errors: HandleErrors,
    value: PhantomData<fn() -> T>,
}

impl<T: ResponseValue> Default for ToolStrategy<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ResponseValue> ToolStrategy<T> {
    /// The strategy for `T`, retrying every error (LangChain's defaults).
    pub fn new() -> Self {
        Self {
            spec: SchemaSpec::of::<T>(),
            tool_message_content: None,
            handle_errors: HandleErrors::Retry,
            value: PhantomData,
        }
    }

    /// Another tool name than the type's.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.spec.name = name.into();
        self
    }

    /// Another tool description than the type's doc comment.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.spec.description = description.into();
        self
    }

    /// The text of the tool message that answers the structured call
    /// (default: `Returning structured response: {the value as JSON}`).
    #[must_use]
    pub fn tool_message_content(mut self, content: impl Into<String>) -> Self {
        self.tool_message_content = Some(content.into());
        self
    }

    /// What to do with a wrong answer (`true`, `false`, a message, a
    /// [`StructuredErrorKind`], or [`HandleErrors::with`] a function).
    #[must_use]
    pub fn handle_errors(mut self, handle: impl Into<HandleErrors>) -> Self {
        self.handle_errors = handle.into();
        self
    }
}

/// The answer as JSON text in the model's own structured-output mode
/// (LangChain's `ProviderStrategy`): the request carries the schema
/// ([`ModelSettings::response_format`](crate::agent::ModelSettings::response_format)),
/// and the final AI message's text is parsed into `T`. Text that does not
/// parse fails the run with an error naming the type (as LangChain, no
/// retry).
#[derive(Debug, Clone)]
pub struct ProviderStrategy<T> {
    pub(crate) spec: SchemaSpec,
    value: PhantomData<fn() -> T>,
}

impl<T: ResponseValue> Default for ProviderStrategy<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ResponseValue> ProviderStrategy<T> {
    /// The strategy for `T`.
    pub fn new() -> Self {
        Self {
            spec: SchemaSpec::of::<T>(),
            value: PhantomData,
        }
    }

    /// Asks the provider to follow the schema exactly (OpenAI's
    /// `strict: true`).
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.spec.strict = Some(strict);
        self
    }

    /// Another schema name than the type's.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.spec.name = name.into();
        self
    }
}

/// The provider strategy when the model supports it
/// ([`ChatModel::supports_structured_output`](crate::agent::ChatModel::supports_structured_output)),
/// else the tool strategy (LangChain's `AutoStrategy`, and what a bare
/// schema means there).
#[derive(Debug, Clone)]
pub struct AutoStrategy<T> {
    value: PhantomData<fn() -> T>,
}

impl<T: ResponseValue> Default for AutoStrategy<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ResponseValue> AutoStrategy<T> {
    /// The strategy for `T`.
    pub fn new() -> Self {
        Self { value: PhantomData }
    }
}

/// One of the three strategies (LangChain's `ResponseFormat`).
#[derive(Debug, Clone)]
pub enum ResponseFormat<T> {
    /// A tool call.
    Tool(ToolStrategy<T>),
    /// The provider's structured output.
    Provider(ProviderStrategy<T>),
    /// Whichever the model supports.
    Auto(AutoStrategy<T>),
}

/// What [`AgentBuilder::response_format`](crate::agent::AgentBuilder::response_format)
/// takes: a strategy, whose value type the state must hold.
pub trait IntoResponseFormat {
    /// The type of the answer.
    type Value: ResponseValue;

    /// The strategy.
    fn into_response_format(self) -> ResponseFormat<Self::Value>;
}

impl<T: ResponseValue> IntoResponseFormat for ResponseFormat<T> {
    type Value = T;

    fn into_response_format(self) -> ResponseFormat<T> {
        self
    }
}

impl<T: ResponseValue> IntoResponseFormat for ToolStrategy<T> {
    type Value = T;

    fn into_response_format(self) -> ResponseFormat<T> {
        ResponseFormat::Tool(self)
    }
}

impl<T: ResponseValue> IntoResponseFormat for ProviderStrategy<T> {
    type Value = T;

    fn into_response_format(self) -> ResponseFormat<T> {
        ResponseFormat::Provider(self)
    }
}

impl<T: ResponseValue> IntoResponseFormat for AutoStrategy<T> {
    type Value = T;

    fn into_response_format(self) -> ResponseFormat<T> {
        ResponseFormat::Auto(self)
    }
}
