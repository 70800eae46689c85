//! Python's `repr` and `json.dumps` of JSON values: LangChain puts them in
//! texts the model reads (`write_todos`' answer, the tool selector's
//! prompt, human review notices, the summary prompt) and counts their
//! characters (the approximate token counter counts `repr(tool_calls)`),
//! and LangGraph's stores embed them (`json.dumps(sort_keys=True)`, a
//! number's `str`), so the same data must print the same here.

use serde_json::{Number, Value};

/// `repr(value)` as Python prints the value `json.loads` would make of it
/// (dicts keep the map's key order).
#[cfg_attr(not(feature = "agent"), allow(dead_code))]
pub(crate) fn repr(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(&string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&string(key));
                out.push_str(": ");
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Python's `json.dumps(value, ensure_ascii=False)`: `", "` and `": "`
/// between items, floats as Python prints them.
#[cfg_attr(not(feature = "agent"), allow(dead_code))]
pub(crate) fn json_dumps(value: &Value) -> String {
    dumps(value, false, false)
}

/// `json.dumps(value, sort_keys=True, ensure_ascii=False)`, what
/// LangGraph's stores embed of a whole value.
pub(crate) fn json_dumps_sorted(value: &Value) -> String {
    dumps(value, false, true)
}

/// Python's `json.dumps(value)`: as [`json_dumps`], with every non-ASCII
/// character escaped (`\uXXXX`, surrogate pairs beyond the BMP).
#[cfg_attr(not(feature = "agent"), allow(dead_code))]
pub(crate) fn json_dumps_ascii(value: &Value) -> String {
    dumps(value, true, false)
}

fn dumps(value: &Value, ascii: bool, sort: bool) -> String {
    match value {
        Value::Number(n) if n.is_f64() => number(n),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| dumps(v, ascii, sort)).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if sort {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            let items: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}: {}", json_string(k, ascii), dumps(v, ascii, sort)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::String(s) => json_string(s, ascii),
        other => other.to_string(),
    }
}

/// A JSON string literal, non-ASCII escaped when `ascii`.
fn json_string(s: &str, ascii: bool) -> String {
    let quoted = Value::String(s.to_owned()).to_string();
    if !ascii || quoted.is_ascii() {
        return quoted;
    }
    let mut out = String::with_capacity(quoted.len() + 8);
    for c in quoted.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Python's `repr(str)`: single quotes unless the text has a single quote
/// and no double one; backslash escapes for the quote, `\\`, `\n`, `\r`,
/// `\t` and control characters.
pub(crate) fn string(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr` (and `str`) of an int or a float (`1.0`, `1e+16`,
/// `1.5e-05`).
pub(crate) fn number(n: &Number) -> String {
    let Some(f) = n.as_f64().filter(|_| n.is_f64()) else {
        return n.to_string();
    };
    if !f.is_finite() {
        return if f.is_nan() {
            "nan"
        } else if f > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .to_owned();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f != 0.0 && !(-4..16).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let plain = f.to_string();
    if plain.contains('.') {
        plain
    } else {
        format!("{plain}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prints_as_python_does() {
        // Each expected text is what CPython 3.11 printed for the value.
        let cases = [
            (
                json!({"content": "Write the 'intro'", "status": "pending"}),
                r#"{'content': "Write the 'intro'", 'status': 'pending'}"#,
            ),
            (json!("both ' and \""), r#"'both \' and "'"#),
            (
                json!("tab\tnew\nline \\ \u{1}"),
                r"'tab\tnew\nline \\ \x01'",
            ),
            (
                json!([1, 1.0, 1.5e-5, 1e16, 123.25, null, true, false]),
                "[1, 1.0, 1.5e-05, 1e+16, 123.25, None, True, False]",
            ),
            (json!("café"), "'café'"),
        ];
        for (value, expected) in cases {
            assert_eq!(repr(&value), expected, "{value}");
        }
    }

    #[test]
    fn dumps_json_as_python_does() {
        // What CPython 3.11's json.dumps(..., ensure_ascii=False) printed.
        let value = json!({"a": [1, 2.5, 1.0], "b": {"c": "café \"q\"\n"}, "d": null});
        assert_eq!(
            json_dumps(&value),
            r#"{"a": [1, 2.5, 1.0], "b": {"c": "café \"q\"\n"}, "d": null}"#
        );
    }
}
