//! JSON values written as Python's `repr` writes the same dict, list or
//! scalar: LangChain's default description shows a call's arguments as
//! `Args: {'to': 'alice'}`, and ours shows them the same way.

use std::fmt::Write;

use serde_json::{Map, Value};

/// `args` as Python's `repr(dict)` prints it (keys in the map's order).
pub(crate) fn dict(args: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_dict(&mut out, args);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
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
        Value::Object(map) => write_dict(out, map),
    }
}

fn write_dict(out: &mut String, map: &Map<String, Value>) {
    out.push('{');
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_str(out, key);
        out.push_str(": ");
        write_value(out, value);
    }
    out.push('}');
}

/// A string as Python quotes it: single quotes unless the text has one
/// and no double quote; backslash, the quote, `\n`, `\r`, `\t` escaped,
/// other control characters as `\xNN` (or `\uNNNN`).
fn write_str(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
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
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repr(value: Value) -> String {
        dict(value.as_object().unwrap())
    }

    #[test]
    fn writes_dicts_as_python_does() {
        assert_eq!(
            repr(json!({"a": "it's", "b": "say \"hi\"", "c": "both ' \"", "d": "x\ny\\"})),
            r#"{'a': "it's", 'b': 'say "hi"', 'c': 'both \' "', 'd': 'x\ny\\'}"#
        );
        assert_eq!(
            repr(json!({"n": 1, "f": 2.5, "t": true, "z": null, "l": [1, {"k": false}]})),
            "{'f': 2.5, 'l': [1, {'k': False}], 'n': 1, 't': True, 'z': None}"
        );
        assert_eq!(repr(json!({"bell": "\u{7}é"})), "{'bell': '\\x07é'}");
    }
}
