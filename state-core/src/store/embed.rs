//! Semantic search: the embeddings model a store calls, the index settings
//! saying what of a value is embedded, and LangGraph's path syntax for
//! picking that text out of a value.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::StoreError;
use crate::checkpoint::BoxFuture;

/// A model that turns texts into vectors: what a store's index calls on a
/// put (the item's texts) and on a search (the query).
///
/// A plain function `Fn(&[String]) -> Vec<Vec<f32>>` is one (a fixed
/// embedding for tests); [`OpenAiEmbeddings`](crate::store::OpenAiEmbeddings)
/// (feature `openai`) calls any OpenAI-compatible `/embeddings` endpoint.
pub trait Embeddings: Send + Sync {
    /// One vector per text, in order.
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, StoreError>>;

    /// The vector of a search's query; by default the one document.
    fn embed_query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<Vec<f32>, StoreError>> {
        Box::pin(async move {
            let texts = [text.to_owned()];
            let mut vectors = self.embed_documents(&texts).await?;
            vectors.pop().ok_or_else(|| StoreError::Embedding {
                reason: "the model answered no vector for the query".into(),
            })
        })
    }
}

impl<F> Embeddings for F
where
    F: Fn(&[String]) -> Vec<Vec<f32>> + Send + Sync,
{
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, StoreError>> {
        let vectors = self(texts);
        Box::pin(async move { Ok(vectors) })
    }
}

/// A store's index: the model, the size of its vectors, and which paths
/// of a value are embedded (LangGraph's `IndexConfig`).
#[derive(Clone)]
pub struct IndexConfig {
    /// The length of every vector the model returns; a vector of another
    /// length is refused.
    pub dims: usize,
    /// The model.
    pub embed: Arc<dyn Embeddings>,
    /// The paths embedded by default (`"$"`: the whole value as JSON).
    /// Each path's text is its own vector; a search scores an item by its
    /// best one.
    pub fields: Vec<String>,
}

impl IndexConfig {
    /// An index of `dims`-long vectors from `embed`, of the whole value.
    pub fn new(dims: usize, embed: impl Embeddings + 'static) -> Self {
        IndexConfig {
            dims,
            embed: Arc::new(embed),
            fields: vec!["$".to_owned()],
        }
    }

    /// Embeds these paths instead of the whole value (`"text"`,
    /// `"sections[*].body"`, `"{title,summary}"`).
    pub fn fields<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.fields = fields.into_iter().map(Into::into).collect();
        self
    }

    /// Embeds `texts`, checking the model gave one `dims`-long vector each.
    pub(crate) async fn embed_checked(
        &self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, StoreError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let vectors = self.embed.embed_documents(texts).await?;
        if vectors.len() != texts.len() {
            return Err(StoreError::Embedding {
                reason: format!("{} texts got {} vectors", texts.len(), vectors.len()),
            });
        }
        vectors.iter().try_for_each(|v| self.check_dims(v))?;
        Ok(vectors)
    }

    /// The query's vector, checked.
    pub(crate) async fn embed_query(&self, query: &str) -> Result<Vec<f32>, StoreError> {
        let vector = self.embed.embed_query(query).await?;
        self.check_dims(&vector)?;
        Ok(vector)
    }

    fn check_dims(&self, vector: &[f32]) -> Result<(), StoreError> {
        if vector.len() != self.dims {
            return Err(StoreError::Embedding {
                reason: format!(
                    "a vector has {} dimensions, the index {}",
                    vector.len(),
                    self.dims
                ),
            });
        }
        Ok(())
    }
}

impl fmt::Debug for IndexConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexConfig")
            .field("dims", &self.dims)
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

/// The texts of a value to embed, each with the path it came from
/// (`"a.b"`, or `"a[*].b.1"` for the second of several), as LangGraph
/// names them.
pub(crate) fn texts_to_embed(
    value: &Map<String, Value>,
    paths: &[String],
) -> Vec<(String, String)> {
    let root = Value::Object(value.clone());
    let mut out = Vec::new();
    for path in paths {
        let texts = text_at_path(&root, path);
        if texts.len() == 1 {
            out.extend(texts.into_iter().map(|t| (path.clone(), t)));
        } else {
            out.extend(
                texts
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| (format!("{path}.{i}"), t)),
            );
        }
    }
    out
}

/// LangGraph's `get_text_at_path`: the strings a path picks out of a
/// value (`$` is the whole value as sorted JSON).
pub(crate) fn text_at_path(value: &Value, path: &str) -> Vec<String> {
    if path.is_empty() || path == "$" {
        return vec![crate::pyrepr::json_dumps_sorted(value)];
    }
    let tokens = tokenize(path);
    let mut out = Vec::new();
    extract(value, &tokens, &mut out);
    out
}

fn extract(value: &Value, tokens: &[String], out: &mut Vec<String>) {
    let Some((token, rest)) = tokens.split_first() else {
        out.extend(leaf_text(value));
        return;
    };
    if let Some(index) = token.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let Value::Array(items) = value else { return };
        if index == "*" {
            items.iter().for_each(|item| extract(item, rest, out));
        } else if let Some(item) = index.parse::<i64>().ok().and_then(|i| at_index(items, i)) {
            extract(item, rest, out);
        }
    } else if let Some(fields) = token.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let Value::Object(_) = value else { return };
        for field in fields.split(',').map(str::trim) {
            let found = tokenize(field)
                .iter()
                .try_fold(value, |at, key| at.as_object().and_then(|o| o.get(key)));
            out.extend(found.and_then(leaf_text));
        }
    } else if token == "*" {
        match value {
            Value::Object(map) => map.values().for_each(|v| extract(v, rest, out)),
            Value::Array(items) => items.iter().for_each(|v| extract(v, rest, out)),
            _ => {}
        }
    } else if let Some(next) = value.as_object().and_then(|o| o.get(token)) {
        extract(next, rest, out);
    }
}

fn at_index(items: &[Value], index: i64) -> Option<&Value> {
    let len = i64::try_from(items.len()).ok()?;
    let index = if index < 0 { len + index } else { index };
    usize::try_from(index).ok().and_then(|i| items.get(i))
}

/// A leaf's text as Python's `str()` writes a scalar; containers as JSON.
fn leaf_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Bool(true) => Some("True".into()),
        Value::Bool(false) => Some("False".into()),
        Value::Number(n) => Some(crate::pyrepr::number(n)),
        Value::String(s) => Some(s.clone()),
        container => Some(crate::pyrepr::json_dumps_sorted(container)),
    }
}

/// Splits a path at dots, keeping `[..]` and `{..}` whole (LangGraph's
/// `tokenize_path`).
fn tokenize(path: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' | '{' => {
                if !current.is_empty() {
                    tokens.push(std::mem::take(&mut current));
                }
                tokens.push(bracketed(c, &mut chars));
            }
            '.' => {
                if !current.is_empty() {
                    tokens.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

fn bracketed(open: char, chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let close = if open == '[' { ']' } else { '}' };
    let (mut depth, mut token) = (1, String::from(open));
    for c in chars.by_ref() {
        token.push(c);
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                break;
            }
        }
    }
    token
}

/// Cosine similarity; 0 when either vector is all zeros.
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_pick_text_as_langgraph_does() {
        let v = json!({"a": {"b": "x"}, "l": [{"t": "one"}, {"t": "two"}], "n": 2, "f": true});
        assert_eq!(text_at_path(&v, "a.b"), ["x"]);
        assert_eq!(text_at_path(&v, "l[*].t"), ["one", "two"]);
        assert_eq!(text_at_path(&v, "l[-1].t"), ["two"]);
        assert_eq!(text_at_path(&v, "{n,f}"), ["2", "True"]);
        assert_eq!(
            text_at_path(&json!({"b": 1, "a": [1, "é"]}), "$"),
            [r#"{"a": [1, "é"], "b": 1}"#]
        );
        assert!(text_at_path(&v, "missing.path").is_empty());
    }

    #[test]
    fn numbers_are_written_as_python_writes_them() {
        // Each as Python 3.11's `str(float)` writes it.
        let cases = [
            (1.5e-7, "1.5e-07"),
            (1e20, "1e+20"),
            (1e100, "1e+100"),
            (-2.5e-10, "-2.5e-10"),
            (1e-5, "1e-05"),
            (1e-4, "0.0001"),
            (0.25, "0.25"),
            (123.456, "123.456"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (f, python) in cases {
            assert_eq!(text_at_path(&json!({"x": f}), "x"), [python], "{f:e}");
        }
        let ints = json!({"i": 7, "u": u64::MAX});
        assert_eq!(text_at_path(&ints, "{i,u}"), ["7", "18446744073709551615"]);
        assert_eq!(text_at_path(&json!({"x": 1e-5}), "$"), [r#"{"x": 1e-05}"#]);
    }

    #[test]
    fn several_texts_of_one_path_are_numbered() {
        let v = json!({"l": ["p", "q"], "s": "r"});
        let texts = texts_to_embed(v.as_object().unwrap(), &["l[*]".into(), "s".into()]);
        assert_eq!(
            texts,
            [
                ("l[*].0".into(), "p".into()),
                ("l[*].1".into(), "q".into()),
                ("s".into(), "r".into())
            ]
        );
    }
}
