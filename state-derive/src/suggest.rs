//! "Did you mean": the reducer names LangGraph users type, and the nearest
//! known name for a typo.

/// LangGraph's names for what a reducer here does, with the reducer.
const LANGGRAPH_NAMES: &[(&str, &str, &str)] = &[
    ("add_messages", "messages", "LangGraph's `add_messages`"),
    (
        "messagesStateReducer",
        "messages",
        "LangGraph's `messagesStateReducer`",
    ),
    ("add", "append", "`add` (Python's `operator.add`)"),
    ("operator.add", "append", "Python's `operator.add`"),
    ("operator::add", "append", "Python's `operator.add`"),
    ("concat", "append", "a list concatenation"),
    ("extend", "append", "a list `extend`"),
    ("overwrite", "replace", "a field that takes the last write"),
    ("last_value", "replace", "LangGraph's `LastValue` channel"),
    ("LastValue", "replace", "LangGraph's `LastValue` channel"),
    ("operator.or_", "merge", "Python's `operator.or_` on dicts"),
    (
        "EphemeralValue",
        "ephemeral",
        "LangGraph's `EphemeralValue` channel",
    ),
    ("AnyValue", "any_value", "LangGraph's `AnyValue` channel"),
    ("Topic", "topic", "LangGraph's `Topic` channel"),
    (
        "UntrackedValue",
        "untracked",
        "LangGraph's `UntrackedValue` channel",
    ),
];

/// The hint for an unknown reducer name (`operator.add` comes as the path
/// `operator`): what the LangGraph name is here, or the nearest reducer.
pub fn reducer_hint(name: &str, reducers: &[&str]) -> Option<String> {
    if let Some((_, ours, theirs)) = LANGGRAPH_NAMES.iter().find(|(n, _, _)| *n == name) {
        let mut hint = format!("did you mean `{ours}`? {theirs} is `#[reducer({ours})]` here");
        if *ours == "replace" {
            hint.push_str(
                " (the default: a field without `#[reducer]`); to overwrite a reducer field in one update, call its `overwrite_<field>` setter",
            );
        }
        return Some(hint);
    }
    nearest(name, reducers).map(|n| format!("did you mean `{n}`?"))
}

/// The candidate nearest to `name` by edit distance, if near enough to be
/// a typo of it: at most one edit for short names, a third of the length
/// for longer ones.
pub fn nearest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edit_distance(name, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, with a transposition of two neighbours counted as
/// one edit (`defualt` is one edit from `default`).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const REDUCERS: &[&str] = &[
        "replace",
        "merge",
        "messages",
        "union",
        "append",
        "immutable",
    ];

    #[test]
    fn typos_find_the_nearest_name() {
        assert_eq!(nearest("mergee", REDUCERS), Some("merge"));
        assert_eq!(nearest("apend", REDUCERS), Some("append"));
        assert_eq!(nearest("defualt", &["default", "rename"]), Some("default"));
        assert_eq!(nearest("unoin", REDUCERS), Some("union"));
        assert_eq!(nearest("sum", REDUCERS), None);
    }

    #[test]
    fn langgraph_names_map_to_ours() {
        let hint = reducer_hint("add_messages", REDUCERS).unwrap();
        assert!(hint.starts_with("did you mean `messages`?"), "{hint}");
        assert!(reducer_hint("operator.add", REDUCERS)
            .unwrap()
            .contains("`append`"));
        assert!(reducer_hint("last_value", REDUCERS)
            .unwrap()
            .contains("`replace`"));
        assert_eq!(reducer_hint("frobnicate", REDUCERS), None);
    }
}
