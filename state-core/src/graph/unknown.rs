//! The wording of every error about a name that is not a node (an edge's
//! end, a router's or a `Command`'s target, `update_state`'s `as_node`, a
//! breakpoint): the nearest node by edit distance, when one is near enough
//! to be a typo, and the graph's nodes, so the fix is in the message.

use std::fmt;

/// Writes "; did you mean `review`? The graph's nodes: `a`, `review`"
/// after a sentence that named `name` as not a node of `nodes`.
pub(super) fn write_not_a_node(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    nodes: &[String],
) -> fmt::Result {
    match (nearest(name, nodes), nodes.is_empty()) {
        (_, true) => return f.write_str("; the graph has no nodes"),
        (Some(near), false) => write!(f, "; did you mean `{near}`? The graph's nodes: ")?,
        (None, false) => f.write_str("; the graph's nodes: ")?,
    }
    for (i, node) in nodes.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "`{node}`")?;
    }
    Ok(())
}

/// The node nearest to `name`, if near enough to be a typo of it: at most
/// one edit for short names, a third of the length for longer ones; a
/// name differing only in case is always near.
pub(crate) fn nearest<'a>(name: &str, nodes: &'a [String]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    nodes
        .iter()
        .map(|node| {
            let d = if node.eq_ignore_ascii_case(name) {
                0
            } else {
                edit_distance(name, node)
            };
            (d, node.as_str())
        })
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, node)| node)
}

/// Levenshtein distance, a swap of two neighbours counting as one edit
/// (`reveiw` is one edit from `review`). Two rows of the table at a time.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            row[j] = best;
        }
        before = std::mem::replace(&mut prev, row);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|&n| n.to_owned()).collect()
    }

    #[test]
    fn typos_find_the_node_and_strangers_do_not() {
        let nodes = names(&["agent", "review", "publish"]);
        assert_eq!(nearest("reveiw", &nodes), Some("review"));
        assert_eq!(nearest("reviews", &nodes), Some("review"));
        assert_eq!(nearest("Publish", &nodes), Some("publish"));
        assert_eq!(nearest("agnet", &nodes), Some("agent"));
        assert_eq!(nearest("summarize", &nodes), None);
        assert_eq!(nearest("x", &[]), None);
    }

    #[test]
    fn distances_count_swaps_as_one_edit() {
        assert_eq!(edit_distance("review", "review"), 0);
        assert_eq!(edit_distance("reveiw", "review"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
