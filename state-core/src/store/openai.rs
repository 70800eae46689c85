//! [`Embeddings`] from any OpenAI-compatible `/embeddings` endpoint
//! (OpenAI, Azure's compatible route, Ollama, vLLM, LM Studio, ...), on
//! async-openai as the chat model is: texts sent in batches, the answer
//! checked (one vector per text, in the order of `index`, all of one
//! size), failures named by HTTP status and the provider's message. What
//! may pass (429 but for an exhausted quota, 5xx, a failed connection) is
//! retried by async-openai's client, as for the chat model: three times,
//! waiting what `Retry-After` asks or 0.1 s, 0.2 s, 0.4 s. Needs a Tokio
//! runtime.

use crate::agent::excerpt;
use std::fmt;

use async_openai::config::{Config, OpenAIConfig};
use async_openai::error::OpenAIError;
use async_openai::Client;
use serde::{Deserialize, Serialize};

use super::{Embeddings, StoreError};
use crate::checkpoint::BoxFuture;

/// The model used when neither the settings nor `OPENAI_EMBEDDINGS_MODEL`
/// name one (LangChain's `OpenAIEmbeddings` default).
pub const DEFAULT_EMBEDDINGS_MODEL: &str = "text-embedding-3-small";

/// How many texts go in one request by default (LangChain's `chunk_size`;
/// OpenAI takes up to 2,048).
pub const DEFAULT_BATCH_SIZE: usize = 1000;

/// An embeddings model served over OpenAI's `/embeddings` protocol: what
/// a store's [`IndexConfig`](super::IndexConfig) calls on puts and
/// searches.
///
/// ```no_run
/// use agent_state::store::{IndexConfig, MemoryStore, OpenAiEmbeddings};
///
/// // OPENAI_API_KEY, OPENAI_BASE_URL (default: OpenAI's),
/// // OPENAI_EMBEDDINGS_MODEL (default: text-embedding-3-small).
/// let embeddings = OpenAiEmbeddings::from_env();
/// let store = MemoryStore::new().with_index(IndexConfig::new(1536, embeddings).fields(["text"]));
///
/// // Or spelled out: a local Ollama's nomic-embed-text, 768 dimensions.
/// let local = OpenAiEmbeddings::new("nomic-embed-text")
///     .with_base_url("http://localhost:11434/v1");
/// let local_store = MemoryStore::new().with_index(IndexConfig::new(768, local));
/// # let _ = (store, local_store);
/// ```
#[derive(Clone)]
pub struct OpenAiEmbeddings {
    config: OpenAIConfig,
    client: Client<OpenAIConfig>,
    model: String,
    dimensions: Option<u32>,
    batch_size: usize,
}

impl fmt::Debug for OpenAiEmbeddings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbeddings")
            .field("model", &self.model)
            .field("base_url", &self.config.api_base())
            .field("dimensions", &self.dimensions)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl OpenAiEmbeddings {
    /// `model` at OpenAI's endpoint, with no API key (set one with
    /// [`with_api_key`](Self::with_api_key)); batches of
    /// [`DEFAULT_BATCH_SIZE`].
    pub fn new(model: impl Into<String>) -> Self {
        let config = OpenAIConfig::new()
            .with_api_base(crate::agent::openai::DEFAULT_BASE_URL)
            .with_api_key("");
        OpenAiEmbeddings {
            client: Client::with_config(config.clone()),
            config,
            model: model.into(),
            dimensions: None,
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }

    /// From the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` (default
    /// OpenAI's), `OPENAI_EMBEDDINGS_MODEL` (default
    /// [`DEFAULT_EMBEDDINGS_MODEL`]).
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// From variables looked up by `var` (the names of
    /// [`from_env`](Self::from_env)): configuration from anywhere.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let model =
            set("OPENAI_EMBEDDINGS_MODEL").unwrap_or_else(|| DEFAULT_EMBEDDINGS_MODEL.to_owned());
        let mut embeddings = Self::new(model);
        if let Some(key) = set("OPENAI_API_KEY") {
            embeddings = embeddings.with_api_key(key);
        }
        if let Some(url) = set("OPENAI_BASE_URL") {
            embeddings = embeddings.with_base_url(url);
        }
        embeddings
    }

    /// Another endpoint (`http://localhost:11434/v1` for Ollama, say).
    #[must_use]
    pub fn with_base_url(self, url: impl Into<String>) -> Self {
        let url: String = url.into();
        let config = self.config.clone().with_api_base(url.trim_end_matches('/'));
        self.with_config(config)
    }

    /// The API key, sent as a bearer token.
    #[must_use]
    pub fn with_api_key(self, key: impl Into<String>) -> Self {
        let config = self.config.clone().with_api_key(key);
        self.with_config(config)
    }

    fn with_config(self, config: OpenAIConfig) -> Self {
        OpenAiEmbeddings {
            client: Client::with_config(config.clone()),
            config,
            ..self
        }
    }

    /// Another model name.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Asks for vectors of `dimensions` (OpenAI's `text-embedding-3`
    /// models shorten theirs); an answer of another size is refused.
    #[must_use]
    pub fn with_dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// At most `size` texts per request (at least one: 0 reads as 1).
    #[must_use]
    pub fn with_batch_size(mut self, size: usize) -> Self {
        self.batch_size = size.max(1);
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The vectors of one batch, checked and in the order of `texts`.
    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, StoreError> {
        let request = Request {
            model: &self.model,
            input: texts,
            encoding_format: "float",
            dimensions: self.dimensions,
        };
        let answer: Answer = (self.client.embeddings().create_byot(&request).await)
            .map_err(|error| self.failure(error))?;
        self.vectors(answer, texts.len())
    }

    /// The answer's vectors by their `index`, each text one, all of one
    /// size (the size asked for, if one was).
    fn vectors(&self, answer: Answer, texts: usize) -> Result<Vec<Vec<f32>>, StoreError> {
        let refuse = |what: String| StoreError::Embedding {
            reason: format!(
                "the embeddings endpoint {} answered {what}",
                self.config.api_base()
            ),
        };
        if answer.data.len() != texts {
            let n = answer.data.len();
            return Err(refuse(format!("{n} vectors for {texts} texts")));
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts];
        for (at, datum) in answer.data.into_iter().enumerate() {
            let index = datum.index.unwrap_or(at);
            match vectors.get_mut(index) {
                Some(slot @ None) => *slot = Some(datum.embedding),
                _ => return Err(refuse(format!("index {index} twice or out of range"))),
            }
        }
        let vectors: Vec<Vec<f32>> = vectors.into_iter().flatten().collect();
        let first = vectors.first().map_or(0, Vec::len);
        let size = self.dimensions.map_or(first, |d| d as usize);
        if let Some(odd) = vectors.iter().find(|v| v.len() != size) {
            return Err(refuse(format!(
                "a vector of {} dimensions where {size} were expected",
                odd.len()
            )));
        }
        Ok(vectors)
    }

    /// A failed request as the store's error, naming the endpoint, the
    /// HTTP status and the provider's message.
    fn failure(&self, error: OpenAIError) -> StoreError {
        let url = format!("{}/embeddings", self.config.api_base());
        let reason = match error {
            OpenAIError::ApiError(response) => format!(
                "{url} answered HTTP {}: {}",
                response.status_code.as_u16(),
                provider_message(&response.api_error.message)
            ),
            OpenAIError::JSONDeserialize(error, body) => format!(
                "{url} answered what is not a list of embeddings ({error}); the body began: {}",
                excerpt(&body)
            ),
            OpenAIError::Reqwest(error) => format!("could not reach {url}: {error}"),
            other => format!("{url}: {other}"),
        };
        StoreError::Embedding { reason }
    }
}

impl Embeddings for OpenAiEmbeddings {
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, StoreError>> {
        Box::pin(async move {
            let mut vectors = Vec::with_capacity(texts.len());
            for batch in texts.chunks(self.batch_size) {
                vectors.extend(self.embed_batch(batch).await?);
            }
            Ok(vectors)
        })
    }
}

/// The body of `POST /embeddings`.
#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [String],
    encoding_format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<u32>,
}

/// What of the answer is read: the vectors, each with its text's index
/// (servers that leave `index` out answer in order).
#[derive(Deserialize)]
struct Answer {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// The provider's own message: async-openai keeps a 5xx answer's body
/// whole, so OpenAI's `{"error": {"message": ...}}` is read out of it.
fn provider_message(body: &str) -> String {
    #[derive(Deserialize)]
    struct Wrapped {
        error: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        message: String,
    }
    match serde_json::from_str::<Wrapped>(body) {
        Ok(wrapped) => wrapped.error.message,
        Err(_) => excerpt(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_messages_are_read_from_error_bodies() {
        assert_eq!(
            provider_message(r#"{"error": {"message": "boom"}}"#),
            "boom"
        );
        assert_eq!(provider_message("plain text"), "plain text");
        let long = "x".repeat(300);
        assert_eq!(provider_message(&long).chars().count(), 201);
    }

    #[test]
    fn settings_are_kept_and_the_key_is_not_shown() {
        let vars = |name: &str| match name {
            "OPENAI_API_KEY" => Some("sk-secret".to_owned()),
            "OPENAI_BASE_URL" => Some("http://localhost:9/v1/".to_owned()),
            _ => None,
        };
        let embeddings = OpenAiEmbeddings::from_vars(vars).with_batch_size(0);
        assert_eq!(embeddings.model(), DEFAULT_EMBEDDINGS_MODEL);
        assert_eq!(embeddings.batch_size, 1);
        let shown = format!("{embeddings:?}");
        assert!(shown.contains("http://localhost:9/v1\""), "{shown}");
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}
