//! Parsing of `#[reducer(..)]` and `#[state(..)]`. Rules about one attribute
//! live here; rules across fields live in `check.rs`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, LitInt, LitStr, Path, Type};

use crate::ctxt::Ctxt;

/// Reducer names, for messages.
pub const REDUCERS: &str =
    "`replace`, `merge`, `messages`, `union`, `append`, `immutable` or `with = path`";

/// The reducer a field declares.
#[derive(Clone)]
pub enum Reducer {
    Replace,
    Merge,
    Messages,
    Union,
    Append,
    Immutable,
    With {
        path: Path,
        update: Option<Box<Type>>,
    },
}

impl Reducer {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Replace => "replace",
            Self::Merge => "merge",
            Self::Messages => "messages",
            Self::Union => "union",
            Self::Append => "append",
            Self::Immutable => "immutable",
            Self::With { .. } => "with",
        }
    }
}

/// What `#[reducer]` and `#[state]` say about one field.
pub struct FieldAttrs {
    pub reducer: Reducer,
    /// Where the reducer was written, for errors about it.
    pub reducer_span: Option<Span>,
    pub default: Option<Expr>,
    pub rename: Option<String>,
    /// `#[state(flatten)]`: the field is a part, a derived state whose
    /// fields sit at the top level.
    pub flatten: Option<Span>,
    /// `omit_from_input` or `private`.
    pub omit_from_input: bool,
    /// `omit_from_output` or `private`.
    pub omit_from_output: bool,
}

/// What `#[state]` says about the struct.
pub struct ContainerAttrs {
    pub krate: Option<Path>,
    pub rename_all: Option<RenameRule>,
    /// `version = N`: the schema version stored with checkpoints.
    pub version: Option<LitInt>,
    /// `migrate = path`: upgrades JSON stored under an older version.
    pub migrate: Option<Path>,
    /// `json_schema`: implement `schemars::JsonSchema` for the state, its
    /// update and its input.
    pub json_schema: bool,
}

/// The keys `#[state(..)]` takes on a field, for messages.
const FIELD_KEYS: &str = "`default = expr`, `rename = \"name\"`, `flatten`, `omit_from_input`, `omit_from_output` or `private`";

/// `rename_all` rules, as serde spells them.
#[derive(Clone, Copy)]
pub enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
}

impl RenameRule {
    const ALL: &'static [(&'static str, RenameRule)] = &[
        ("lowercase", Self::Lower),
        ("UPPERCASE", Self::Upper),
        ("PascalCase", Self::Pascal),
        ("camelCase", Self::Camel),
        ("snake_case", Self::Snake),
        ("SCREAMING_SNAKE_CASE", Self::ScreamingSnake),
        ("kebab-case", Self::Kebab),
    ];

    /// Renames a snake_case field name.
    pub fn apply(self, field: &str) -> String {
        match self {
            Self::Lower | Self::Snake => field.to_owned(),
            Self::Upper | Self::ScreamingSnake => field.to_ascii_uppercase(),
            Self::Kebab => field.replace('_', "-"),
            Self::Pascal | Self::Camel => {
                let mut out = String::with_capacity(field.len());
                let mut upper = matches!(self, Self::Pascal);
                for ch in field.chars() {
                    if ch == '_' {
                        upper = true;
                    } else if upper {
                        out.push(ch.to_ascii_uppercase());
                        upper = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
        }
    }
}

fn parse_lit_str(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    meta.value()?.parse::<LitStr>()
}

/// Parses the field's `#[reducer]` and `#[state]` attributes. Errors go to
/// `cx`; a field with a bad attribute still gets usable attrs (the bad part
/// ignored) so expansion can go on and the user sees only the real error.
pub fn field_attrs(cx: &Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut out = FieldAttrs {
        reducer: Reducer::Replace,
        reducer_span: None,
        default: None,
        rename: None,
        flatten: None,
        omit_from_input: false,
        omit_from_output: false,
    };
    let mut rename_span = None;
    for attr in attrs {
        if attr.path().is_ident("reducer") {
            parse_reducer(cx, attr, &mut out);
        } else if attr.path().is_ident("state") {
            parse_field_state(cx, attr, &mut out, &mut rename_span);
        }
    }
    if out.flatten.is_some() {
        // A part has no value of its own to reduce, default or name: its
        // fields do. The attribute is dropped so expansion goes on.
        if let Some(span) = out.reducer_span.take() {
            cx.syn_error(syn::Error::new(
                span,
                "a `#[state(flatten)]` part takes no reducer: each of its fields updates through its own",
            ));
            out.reducer = Reducer::Replace;
        }
        if let Some(expr) = out.default.take() {
            cx.error_spanned_by(
                expr,
                "a `#[state(flatten)]` part takes no `default`: its fields have their own defaults",
            );
        }
        if let Some(span) = rename_span {
            out.rename = None;
            cx.syn_error(syn::Error::new(
                span,
                "a `#[state(flatten)]` part has no JSON name: its fields sit at the top level under their own names",
            ));
        }
    }
    out
}

fn parse_reducer(cx: &Ctxt, attr: &Attribute, out: &mut FieldAttrs) {
    if !matches!(attr.meta, syn::Meta::List(_)) {
        cx.error_spanned_by(
            attr,
            format!("expected `#[reducer(..)]` with one of {REDUCERS}"),
        );
        return;
    }
    let mut conflict = false;
    let mut set = |cx: &Ctxt, span: Span, reducer: Reducer| {
        if let Some(_prev) = out.reducer_span {
            conflict = true;
            cx.syn_error(syn::Error::new(
                span,
                format!(
                    "a field takes one reducer, and this one already has `{}`",
                    out.reducer.name()
                ),
            ));
            return;
        }
        out.reducer = reducer;
        out.reducer_span = Some(span);
    };
    let mut with_update: Option<(Box<Type>, Span)> = None;
    let result = attr.parse_nested_meta(|meta| {
        let span = meta.path.span();
        let simple = if meta.path.is_ident("replace") {
            Some(Reducer::Replace)
        } else if meta.path.is_ident("merge") {
            Some(Reducer::Merge)
        } else if meta.path.is_ident("messages") {
            Some(Reducer::Messages)
        } else if meta.path.is_ident("union") {
            Some(Reducer::Union)
        } else if meta.path.is_ident("append") {
            Some(Reducer::Append)
        } else if meta.path.is_ident("immutable") {
            Some(Reducer::Immutable)
        } else {
            None
        };
        if let Some(reducer) = simple {
            if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
                return Err(meta.error(format!("`{}` takes no value", reducer.name())));
            }
            set(cx, span, reducer);
            return Ok(());
        }
        if meta.path.is_ident("with") {
            if !meta.input.peek(syn::Token![=]) {
                return Err(meta.error(
                    "`with` needs the path of a reducer function: `#[reducer(with = my_reducer)]`",
                ));
            }
            let path: Path = meta.value()?.parse()?;
            set(cx, span, Reducer::With { path, update: None });
            return Ok(());
        }
        if meta.path.is_ident("update") {
            let ty: Type = meta.value()?.parse()?;
            with_update = Some((Box::new(ty), span));
            return Ok(());
        }
        let name = meta
            .path
            .get_ident()
            .map_or_else(|| "this".to_owned(), |i| format!("`{i}`"));
        Err(meta.error(format!("unknown reducer {name}; expected {REDUCERS}")))
    });
    if let Err(err) = result {
        cx.syn_error(err);
    }
    if conflict {
        // Expanding with either reducer would add errors about a choice the
        // user has not made yet; `replace` compiles for any type.
        out.reducer = Reducer::Replace;
    }
    if let Some((ty, span)) = with_update {
        match &mut out.reducer {
            Reducer::With { update, .. } => *update = Some(ty),
            _ => cx.syn_error(syn::Error::new(
                span,
                "`update = Type` goes with `with = path`: it names what the reducer function takes",
            )),
        }
    }
}

fn parse_field_state(
    cx: &Ctxt,
    attr: &Attribute,
    out: &mut FieldAttrs,
    rename_span: &mut Option<Span>,
) {
    let result = attr.parse_nested_meta(|meta| {
        let flag = |meta: &ParseNestedMeta, name: &str| -> syn::Result<()> {
            if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
                return Err(meta.error(format!("`{name}` takes no value")));
            }
            Ok(())
        };
        if meta.path.is_ident("flatten") {
            flag(&meta, "flatten")?;
            if out.flatten.is_some() {
                return Err(meta.error("duplicate `flatten`"));
            }
            out.flatten = Some(meta.path.span());
            return Ok(());
        }
        for (name, input, output) in [
            ("omit_from_input", true, false),
            ("omit_from_output", false, true),
            ("private", true, true),
        ] {
            if meta.path.is_ident(name) {
                flag(&meta, name)?;
                out.omit_from_input |= input;
                out.omit_from_output |= output;
                return Ok(());
            }
        }
        if meta.path.is_ident("default") {
            let expr: Expr = meta.value()?.parse()?;
            if out.default.is_some() {
                return Err(meta.error("duplicate `default`"));
            }
            out.default = Some(expr);
            Ok(())
        } else if meta.path.is_ident("rename") {
            let name = parse_lit_str(&meta)?;
            if out.rename.is_some() {
                return Err(meta.error("duplicate `rename`"));
            }
            out.rename = Some(name.value());
            *rename_span = Some(meta.path.span());
            Ok(())
        } else {
            let name = meta
                .path
                .get_ident()
                .map_or_else(|| "this".to_owned(), |i| format!("`{i}`"));
            Err(meta.error(format!(
                "unknown field attribute {name}; `#[state(..)]` on a field takes {FIELD_KEYS}"
            )))
        }
    });
    if let Err(err) = result {
        cx.syn_error(err);
    }
}

/// Parses the struct's `#[state]` attributes.
pub fn container_attrs(cx: &Ctxt, attrs: &[Attribute]) -> ContainerAttrs {
    let mut out = ContainerAttrs {
        krate: None,
        rename_all: None,
        version: None,
        migrate: None,
        json_schema: false,
    };
    for attr in attrs {
        if attr.path().is_ident("reducer") {
            cx.error_spanned_by(attr, "`#[reducer(..)]` goes on a field, not on the struct");
            continue;
        }
        if !attr.path().is_ident("state") {
            continue;
        }
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let value = meta.value()?;
                let path: Path = if value.peek(LitStr) {
                    value.parse::<LitStr>()?.parse()?
                } else {
                    value.parse()?
                };
                let absolute = path.leading_colon.is_some()
                    || path.segments.first().is_some_and(|s| s.ident == "crate" || s.ident == "$crate");
                if !absolute {
                    return Err(syn::Error::new_spanned(
                        &path,
                        "`crate` must be an absolute path, such as `::agent_state` or `crate::reexports::agent_state`, so generated code finds it from any module",
                    ));
                }
                out.krate = Some(path);
                Ok(())
            } else if meta.path.is_ident("rename_all") {
                let lit = parse_lit_str(&meta)?;
                match RenameRule::ALL.iter().find(|(name, _)| *name == lit.value()) {
                    Some((_, rule)) => out.rename_all = Some(*rule),
                    None => {
                        let names: Vec<String> = RenameRule::ALL.iter().map(|(n, _)| format!("\"{n}\"")).collect();
                        return Err(syn::Error::new_spanned(
                            &lit,
                            format!("unknown `rename_all` rule; expected one of {}", names.join(", ")),
                        ));
                    }
                }
                Ok(())
            } else if meta.path.is_ident("version") {
                let lit: LitInt = meta.value()?.parse()?;
                match lit.base10_parse::<u32>() {
                    Ok(v) if v >= 1 => out.version = Some(lit),
                    _ => return Err(syn::Error::new_spanned(&lit, "`version` is a `u32` of at least 1")),
                }
                Ok(())
            } else if meta.path.is_ident("migrate") {
                let value = meta.value()?;
                let path: Path = if value.peek(LitStr) {
                    value.parse::<LitStr>()?.parse()?
                } else {
                    value.parse()?
                };
                out.migrate = Some(path);
                Ok(())
            } else if meta.path.is_ident("json_schema") {
                if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
                    return Err(meta.error("`json_schema` takes no value"));
                }
                out.json_schema = true;
                Ok(())
            } else {
                let name = meta.path.get_ident().map_or_else(|| "this".to_owned(), |i| format!("`{i}`"));
                Err(meta.error(format!(
                    "unknown struct attribute {name}; `#[state(..)]` on the struct takes `crate = path`, `rename_all = \"..\"`, `json_schema`, `version = N` or `migrate = path`"
                )))
            }
        });
        if let Err(err) = result {
            cx.syn_error(err);
        }
    }
    out
}

/// The doc comment of an item, one leading space per line removed.
pub fn doc_of(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                let value = s.value();
                lines.push(value.strip_prefix(' ').map(str::to_owned).unwrap_or(value));
            }
        }
    }
    lines.join("\n").trim().to_owned()
}
