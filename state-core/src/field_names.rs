//! The JSON field names of a state as a tree, and the compile-time check
//! the derive emits per flattened part: no JSON name is declared twice
//! across a state and its parts. Everything here is a `const fn` over
//! `&'static str`, so the check runs while the user's crate compiles.

/// The JSON field names of a state, as a tree: its own and, per flattened
/// part, the part's. Each derived state exposes one as
/// [`AgentState::FIELD_NAMES`](crate::AgentState::FIELD_NAMES), and the derive of an outer state checks at
/// compile time that no name is declared twice across its parts.
#[doc(hidden)]
#[derive(Debug)]
pub struct FieldNames {
    /// The state's name.
    pub state: &'static str,
    /// Its own fields' JSON names; `""` stands for a field compiled out by
    /// `#[cfg]`.
    pub own: &'static [&'static str],
    /// Their Rust names, in the same order.
    pub rust: &'static [&'static str],
    /// Its parts.
    pub parts: &'static [PartNames],
}

/// One flattened part in a [`FieldNames`] tree.
#[doc(hidden)]
#[derive(Debug)]
pub struct PartNames {
    /// The Rust name of the flattened field.
    pub field: &'static str,
    /// The part's names.
    pub names: &'static FieldNames,
}

const MESSAGE_CAP: usize = 480;

/// A message built at compile time, for the panic that reports a clash.
#[doc(hidden)]
pub struct ClashMessage {
    buf: [u8; MESSAGE_CAP],
    len: usize,
}

impl ClashMessage {
    const fn new() -> Self {
        Self {
            buf: [0; MESSAGE_CAP],
            len: 0,
        }
    }

    /// Appends `s`, whole or not at all, so the text stays valid UTF-8.
    const fn push(mut self, s: &str) -> Self {
        let bytes = s.as_bytes();
        if self.len + bytes.len() > MESSAGE_CAP {
            return self;
        }
        let mut i = 0;
        while i < bytes.len() {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(text) => text,
            Err(_) => "a JSON field name is declared twice",
        }
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether `names` (own or in any part, at any depth) declares `name`.
const fn declares(names: &FieldNames, name: &str) -> bool {
    let mut i = 0;
    while i < names.own.len() {
        if str_eq(names.own[i], name) {
            return true;
        }
        i += 1;
    }
    let mut p = 0;
    while p < names.parts.len() {
        if declares(names.parts[p].names, name) {
            return true;
        }
        p += 1;
    }
    false
}

/// The first name `names` declares (at any depth) that `other` declares too,
/// or that `own` lists.
const fn first_shared(
    names: &'static FieldNames,
    other: Option<&FieldNames>,
    own: &[&str],
) -> Option<&'static str> {
    let mut i = 0;
    while i < names.own.len() {
        let name = names.own[i];
        if !name.is_empty() {
            if let Some(other) = other {
                if declares(other, name) {
                    return Some(name);
                }
            }
            let mut j = 0;
            while j < own.len() {
                if str_eq(own[j], name) {
                    return Some(name);
                }
                j += 1;
            }
        }
        i += 1;
    }
    let mut p = 0;
    while p < names.parts.len() {
        if let Some(name) = first_shared(names.parts[p].names, other, own) {
            return Some(name);
        }
        p += 1;
    }
    None
}

/// Says where inside part `part` the field `name` is declared:
/// "part `todo: TodoState`", or "`Base` (in part `planning: Planning`, its
/// part `base`)" when it is declared deeper.
const fn locate(msg: ClashMessage, part: &PartNames, name: &str) -> ClashMessage {
    let mut msg = msg
        .push("part `")
        .push(part.field)
        .push(": ")
        .push(part.names.state)
        .push("`");
    let mut names = part.names;
    let mut depth = 0;
    // Walk down to the part that declares the name itself.
    'down: while depth < 16 {
        let mut i = 0;
        while i < names.own.len() {
            if str_eq(names.own[i], name) {
                msg = rust_name(msg, names, i);
                break 'down;
            }
            i += 1;
        }
        let mut p = 0;
        while p < names.parts.len() {
            let inner = &names.parts[p];
            if declares(inner.names, name) {
                msg = msg
                    .push(" (through its part `")
                    .push(inner.field)
                    .push(": ")
                    .push(inner.names.state)
                    .push("`)");
                names = inner.names;
                break;
            }
            p += 1;
        }
        depth += 1;
    }
    msg
}

/// Appends " (field `x`)" when the Rust name of own field `i` differs from
/// its JSON name, so the user finds the declaration.
const fn rust_name(msg: ClashMessage, names: &FieldNames, i: usize) -> ClashMessage {
    if i < names.rust.len() && !str_eq(names.rust[i], names.own[i]) {
        msg.push(" (field `").push(names.rust[i]).push("`)")
    } else {
        msg
    }
}

/// The compile-time check the derive emits for the `part`-th flattened part
/// of `names`: a field of that part (at any depth) must not share its JSON
/// name with a field of the state itself or of an earlier part. Returns the
/// message naming the field and both declarations.
#[doc(hidden)]
pub const fn clash(names: &'static FieldNames, part: usize) -> Option<ClashMessage> {
    let this = &names.parts[part];
    if let Some(name) = first_shared(this.names, None, names.own) {
        let mut msg = ClashMessage::new()
            .push("JSON field `")
            .push(name)
            .push("` is declared twice in `")
            .push(names.state)
            .push("`: by `")
            .push(names.state)
            .push("` itself");
        let mut i = 0;
        while i < names.own.len() {
            if str_eq(names.own[i], name) {
                msg = rust_name(msg, names, i);
                break;
            }
            i += 1;
        }
        return Some(locate(msg.push(" and by "), this, name));
    }
    let mut p = 0;
    while p < part {
        let earlier = &names.parts[p];
        if let Some(name) = first_shared(this.names, Some(earlier.names), &[]) {
            let msg = ClashMessage::new()
                .push("JSON field `")
                .push(name)
                .push("` is declared twice in `")
                .push(names.state)
                .push("`: by ");
            let msg = locate(msg, earlier, name).push(" and by ");
            return Some(locate(msg, this, name));
        }
        p += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: FieldNames = FieldNames {
        state: "Base",
        own: &["messages"],
        rust: &["messages"],
        parts: &[],
    };
    const TODO: FieldNames = FieldNames {
        state: "TodoState",
        own: &["todos", ""],
        rust: &["todos", ""],
        parts: &[],
    };
    const PLAN: FieldNames = FieldNames {
        state: "Planning",
        own: &["plan"],
        rust: &["plan"],
        parts: &[PartNames {
            field: "base",
            names: &BASE,
        }],
    };
    const OK: FieldNames = FieldNames {
        state: "Agent",
        own: &["turns", ""],
        rust: &["turns", ""],
        parts: &[
            PartNames {
                field: "todo",
                names: &TODO,
            },
            PartNames {
                field: "planning",
                names: &PLAN,
            },
        ],
    };
    const OUTER_CLASH: FieldNames = FieldNames {
        state: "Agent",
        own: &["todos"],
        rust: &["to_dos"],
        parts: &[PartNames {
            field: "todo",
            names: &TODO,
        }],
    };
    const DEEP_CLASH: FieldNames = FieldNames {
        state: "Agent",
        own: &[],
        rust: &[],
        parts: &[
            PartNames {
                field: "base",
                names: &BASE,
            },
            PartNames {
                field: "planning",
                names: &PLAN,
            },
        ],
    };

    #[test]
    fn distinct_names_pass() {
        assert!(clash(&OK, 0).is_none());
        assert!(clash(&OK, 1).is_none());
    }

    #[test]
    fn a_clash_names_the_field_and_both_places() {
        assert_eq!(
            clash(&OUTER_CLASH, 0).unwrap().as_str(),
            "JSON field `todos` is declared twice in `Agent`: by `Agent` itself (field `to_dos`) and by part `todo: TodoState`"
        );
        assert_eq!(
            clash(&DEEP_CLASH, 1).unwrap().as_str(),
            "JSON field `messages` is declared twice in `Agent`: by part `base: Base` and by part `planning: Planning` (through its part `base: Base`)"
        );
    }

    #[test]
    fn the_check_runs_at_compile_time() {
        const CHECKED: () = assert!(clash(&OK, 1).is_none());
        let () = CHECKED;
    }
}
