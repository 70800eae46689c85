//! A stored value read only as far as a filter looks: its top-level
//! fields the filter names, the others skipped unparsed, so a search
//! decides on a row before building the whole item.
//! [`Filter::matches`](super::super::Filter::matches) reads nothing else,
//! so it answers on this part exactly as on the whole value.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::super::Filter;

/// Whether the value `text` holds matches `filter`; `None` when `text` is
/// not a JSON object (the caller reads it whole, to name the fault).
pub(super) fn matches(filter: &Filter, text: &str) -> Option<bool> {
    if filter.is_empty() {
        return Some(true);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let part = Wanted(filter.as_json()).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(filter.matches(&part))
}

/// Reads a JSON object keeping only the fields of the filter.
struct Wanted<'f>(&'f Map<String, Value>);

impl<'de> DeserializeSeed<'de> for Wanted<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Wanted<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = Map::new();
        while let Some(field) = map.next_key_seed(Named(self.0))? {
            match field {
                Some(name) => {
                    kept.insert(name, map.next_value::<Value>()?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(kept)
    }
}

/// A field's name, kept (owned) only when the filter names it.
struct Named<'f>(&'f Map<String, Value>);

impl<'de> DeserializeSeed<'de> for Named<'_> {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl Visitor<'_> for Named<'_> {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Self::Value, E> {
        Ok(self.0.contains_key(name).then(|| name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn both(filter: Value, value: Value) -> (Option<bool>, bool) {
        let filter = Filter::from_json(filter).unwrap();
        let text = value.to_string();
        (
            matches(&filter, &text),
            filter.matches(value.as_object().unwrap()),
        )
    }

    #[test]
    fn a_part_matches_as_the_whole_does() {
        let cases = [
            (json!({"g": 3}), json!({"g": 3.0, "t": "x"})),
            (json!({"g": 3}), json!({"t": [1, {"g": 3}]})),
            (json!({"g": null}), json!({"t": 1})),
            (json!({"a": {"b": 1}}), json!({"a": {"b": 1, "c": [2]}})),
            (json!({"a\"q": "é"}), json!({"a\"q": "é", "z": {}})),
            (json!({"n": {"$gt": 1, "$ne": 5}}), json!({"n": 5})),
            (json!({"n": {"$lte": 2}}), json!({"n": "1"})),
        ];
        for (filter, value) in cases {
            let (part, whole) = both(filter.clone(), value.clone());
            assert_eq!(part, Some(whole), "{filter} on {value}");
        }
    }

    #[test]
    fn what_is_not_an_object_is_left_to_the_whole_read() {
        let filter = Filter::new().eq("a", 1);
        assert_eq!(matches(&filter, "[1]"), None);
        assert_eq!(matches(&filter, "{not json"), None);
        assert_eq!(matches(&filter, r#"{"a": 1} x"#), None);
        assert_eq!(matches(&Filter::new(), "{not json"), Some(true));
    }
}
