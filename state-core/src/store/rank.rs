//! What every backend does with the items a search found and the
//! namespaces it holds: LangGraph's ranking, paging and listing rules, in
//! one place so the backends answer alike.

use std::cmp::Ordering;

use super::embed::cosine;
use super::{Item, ListNamespacesOp};

/// What a search found: an item that matched the filter, with its
/// vectors; owned, or borrowed from a backend's memory.
pub(crate) trait Candidate {
    /// The item.
    fn item(&self) -> &Item;
    /// The vectors of its embedded texts.
    fn vectors(&self) -> &[Vec<f32>];
    /// Its similarity to the query as the database computed it (pgvector),
    /// for vectors not returned; scored with [`vectors`](Self::vectors)
    /// when both are there.
    fn known_score(&self) -> Option<f64> {
        None
    }
}

/// Newest update first, then by namespace and key, so pages are stable.
pub(crate) fn newest_first(a: &Item, b: &Item) -> Ordering {
    b.updated_at
        .cmp(&a.updated_at)
        .then_with(|| a.namespace.cmp(&b.namespace))
        .then_with(|| a.key.cmp(&b.key))
}

/// Orders and pages candidates, each with its score. With a query vector,
/// items are scored by their best vector (cosine), best first, and items
/// with nothing embedded fill what the page has left, unscored, as
/// LangGraph's stores do.
pub(crate) fn rank<C: Candidate>(
    mut candidates: Vec<C>,
    query: Option<&[f32]>,
    offset: usize,
    limit: usize,
) -> Vec<(C, Option<f64>)> {
    candidates.sort_by(|a, b| newest_first(a.item(), b.item()));
    let Some(query) = query else {
        return candidates
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|c| (c, None))
            .collect();
    };
    let (scored, scoreless): (Vec<C>, Vec<C>) = candidates
        .into_iter()
        .partition(|c| !c.vectors().is_empty() || c.known_score().is_some());
    let mut scored: Vec<(C, Option<f64>)> = scored
        .into_iter()
        .map(|c| {
            let score = best_score(query, c.vectors());
            let score = c.known_score().map_or(score, |known| known.max(score));
            (c, Some(score))
        })
        .collect();
    scored.sort_by(|a, b| b.1.unwrap_or(0.0).total_cmp(&a.1.unwrap_or(0.0)));
    let mut page: Vec<(C, Option<f64>)> = scored.into_iter().skip(offset).take(limit).collect();
    let room = limit.saturating_sub(page.len());
    page.extend(scoreless.into_iter().take(room).map(|c| (c, None)));
    page
}

fn best_score(query: &[f32], vectors: &[Vec<f32>]) -> f64 {
    vectors
        .iter()
        .map(|v| cosine(query, v))
        .fold(f64::NEG_INFINITY, f64::max)
}

/// LangGraph's `list_namespaces` over the namespaces a store holds:
/// conditions, then `max_depth` (deduplicated), sorted, paged.
pub(crate) fn list_namespaces(
    namespaces: impl IntoIterator<Item = Vec<String>>,
    op: &ListNamespacesOp,
) -> Vec<Vec<String>> {
    let mut listed: Vec<Vec<String>> = namespaces
        .into_iter()
        .filter(|ns| op.match_conditions.iter().all(|c| c.matches(ns)))
        .map(|mut ns| {
            if let Some(depth) = op.max_depth {
                ns.truncate(depth);
            }
            ns
        })
        .collect();
    listed.sort();
    listed.dedup();
    listed.into_iter().skip(op.offset).take(op.limit).collect()
}
