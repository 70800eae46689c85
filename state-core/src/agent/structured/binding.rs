//! The strategy at work in the loop, with the value type erased: what the
//! model request gets (the structured tool, or the schema), and what the
//! model's answer becomes (the typed value in the state, the tool message
//! answering the structured call, a retry, or an error). LangChain's
//! `_get_bound_model` and `_handle_model_output`.

use std::marker::PhantomData;

use serde_json::Value;

use super::error::StructuredOutputError;
use super::strategy::{
    HandleErrors, ProviderStrategy, ResponseFormat, ResponseValue, ToolStrategy,
};
use super::{StructuredResponse, StructuredResponseUpdate};
use crate::agent::model::{ModelRequest, ResponseSchema, ToolChoice, ToolDefinition};
use crate::message::{tool, Message, ToolCall, ToolStatus};
use crate::{AgentState, HasPart};

/// What the agent does with one model answer.
pub(crate) struct Outcome<U> {
    /// Tool messages answering the structured calls (the value's, or the
    /// retry's), after the AI message.
    pub(crate) answers: Vec<Message>,
    /// The write of `structured_response`: the value, or `None` (a turn
    /// without one clears the last turn's, as LangChain does).
    pub(crate) update: U,
    /// Whether the answer gave the value: the loop ends.
    pub(crate) fresh: bool,
}

/// A strategy bound to a state that holds its value.
pub(crate) trait Binding<S: AgentState>: Send + Sync {
    /// The structured tool, for a tool strategy.
    fn tool(&self) -> Option<&ToolDefinition>;

    /// Adds the structured tool (and `tool_choice: required`) or the
    /// schema to a request, innermost, as LangChain binds them.
    fn bind(&self, request: ModelRequest<S>) -> ModelRequest<S>;

    /// Whether `state` holds a value.
    fn has_response(&self, state: &S) -> bool;

    /// What the answer `ai` gives.
    fn handle(&self, ai: Option<&Message>) -> Result<Outcome<S::Update>, StructuredOutputError>;
}

/// How the value is asked for.
enum Mode {
    Tool {
        definition: ToolDefinition,
        content: Option<String>,
        errors: HandleErrors,
    },
    Provider(ResponseSchema),
}

/// A strategy for `T`, resolved.
pub(crate) struct Bound<T> {
    name: String,
    mode: Mode,
    value: PhantomData<fn() -> T>,
}

impl<T: ResponseValue> Bound<T> {
    /// `format` for a model that does (`native`) or does not support
    /// structured output itself.
    pub(crate) fn new(format: ResponseFormat<T>, native: bool) -> Self {
        match format {
            ResponseFormat::Tool(strategy) => Self::tool(strategy),
            ResponseFormat::Provider(strategy) => Self::provider(&strategy),
            ResponseFormat::Auto(_) if native => Self::provider(&ProviderStrategy::new()),
            ResponseFormat::Auto(_) => Self::tool(ToolStrategy::new()),
        }
    }

    fn tool(strategy: ToolStrategy<T>) -> Self {
        let definition = ToolDefinition {
            name: strategy.spec.name.clone(),
            description: strategy.spec.description,
            parameters: strategy.spec.schema,
        };
        Self {
            name: strategy.spec.name,
            mode: Mode::Tool {
                definition,
                content: strategy.tool_message_content,
                errors: strategy.handle_errors,
            },
            value: PhantomData,
        }
    }

    fn provider(strategy: &ProviderStrategy<T>) -> Self {
        Self {
            name: strategy.spec.name.clone(),
            mode: Mode::Provider(strategy.spec.response_schema()),
            value: PhantomData,
        }
    }

    /// `args` read as `T`, or why not (naming the type, as LangChain's
    /// `Failed to parse data to {name}: ..`).
    fn parse(&self, args: Value) -> Result<T, String> {
        serde_json::from_value(args)
            .map_err(|e| format!("Failed to parse data to {}: {e}", self.name))
    }

    fn validation(&self, source: String, ai: &Message) -> StructuredOutputError {
        StructuredOutputError::Validation {
            tool_name: self.name.clone(),
            source,
            ai_message: Box::new(ai.clone()),
        }
    }

    /// The tool strategy on an answer: one structured call parsed, or the
    /// error retried or raised.
    fn read_calls(
        &self,
        ai: &Message,
        content: Option<&str>,
        errors: &HandleErrors,
    ) -> Result<(Option<T>, Vec<Message>), StructuredOutputError> {
        let calls: Vec<&ToolCall> = ai
            .tool_calls
            .iter()
            .filter(|c| c.name == self.name)
            .collect();
        let answer = |call: &ToolCall, text: String| {
            let mut message =
                tool(text, call.id.clone().unwrap_or_default()).with_name(call.name.clone());
            message.status = Some(ToolStatus::Success);
            message
        };
        let error = match calls.as_slice() {
            [] => return Ok((None, Vec::new())),
            [call] => match self.parse(Value::Object(call.args.clone())) {
                Ok(value) => {
                    let text = content.map_or_else(|| returning(&value), str::to_owned);
                    return Ok((Some(value), vec![answer(call, text)]));
                }
                Err(source) => self.validation(source, ai),
            },
            _ => StructuredOutputError::MultipleOutputs {
                tool_names: calls.iter().map(|c| c.name.clone()).collect(),
                ai_message: Box::new(ai.clone()),
            },
        };
        let Some(message) = errors.retry_message(&error) else {
            return Err(error);
        };
        let answers = calls.iter().map(|c| answer(c, message.clone())).collect();
        Ok((None, answers))
    }

    /// The provider strategy on an answer: its text as JSON, as `T`.
    fn read_text(&self, ai: &Message) -> Result<Option<T>, StructuredOutputError> {
        if !ai.tool_calls.is_empty() {
            return Ok(None);
        }
        let json: Value = serde_json::from_str(&ai.text()).map_err(|e| {
            let source = format!(
                "Native structured output expected valid JSON for {}, but parsing failed: {e}.",
                self.name
            );
            self.validation(source, ai)
        })?;
        self.parse(json)
            .map(Some)
            .map_err(|source| self.validation(source, ai))
    }
}

/// LangChain's default answer to the structured call, the value as JSON
/// (LangChain prints the Python object; JSON reads the same in any
/// language).
fn returning<T: ResponseValue>(value: &T) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|e| format!("<{e}>"));
    format!("Returning structured response: {json}")
}

impl<S, T> Binding<S> for Bound<T>
where
    T: ResponseValue,
    S: HasPart<StructuredResponse<T>> + Send + Sync,
    S::Update: Send,
{
    fn tool(&self) -> Option<&ToolDefinition> {
        match &self.mode {
            Mode::Tool { definition, .. } => Some(definition),
            Mode::Provider(_) => None,
        }
    }

    fn bind(&self, request: ModelRequest<S>) -> ModelRequest<S> {
        let mut settings = request.settings().clone();
        match &self.mode {
            Mode::Tool { definition, .. } => {
                let mut tools = request.tools().to_vec();
                tools.push(definition.clone());
                settings.tool_choice = Some(ToolChoice::Required);
                request.with_tools(tools).with_settings(settings)
            }
            Mode::Provider(schema) => {
                settings.response_format = Some(schema.clone());
                request.with_settings(settings)
            }
        }
    }

    fn has_response(&self, state: &S) -> bool {
        state
            .part::<StructuredResponse<T>>()
            .structured_response
            .is_some()
    }

    fn handle(&self, ai: Option<&Message>) -> Result<Outcome<S::Update>, StructuredOutputError> {
        let (value, answers) = match (ai, &self.mode) {
            (None, _) => (None, Vec::new()),
            (
                Some(ai),
                Mode::Tool {
                    content, errors, ..
                },
            ) => self.read_calls(ai, content.as_deref(), errors)?,
            (Some(ai), Mode::Provider(_)) => (self.read_text(ai)?, Vec::new()),
        };
        let fresh = value.is_some();
        let part = match value {
            Some(value) => StructuredResponseUpdate::new().structured_response(value),
            None => StructuredResponseUpdate::new().clear_structured_response(),
        };
        Ok(Outcome {
            answers,
            update: S::lift(part),
            fresh,
        })
    }
}
