//! Parsing of `#[reducer(..)]` and `#[state(..)]`. Rules about one attribute
//! live here; rules across fields live in `check.rs`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, LitInt, LitStr, Path, Type};

use crate::ctxt::Ctxt;
use crate::suggest::{nearest, reducer_hint};

/// Reducer names, for messages.
pub const REDUCERS: &str =
    "`replace`, `merge`, `messages`, `union`, `append`, `immutable`, `with = path`, or a channel kind: `ephemeral`, `any_value`, `topic`, `topic(accumulate)`, `untracked`";

/// LangGraph's channel kinds other than a plain or reduced value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// Seen by the next step only.
    Ephemeral,
    /// The last write of a step; cleared by a step without one.
    AnyValue,
    /// The items of the last step (or of every step, accumulating).
    Topic { accumulate: bool },
    /// A plain field never stored in a checkpoint.
    Untracked,
}

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
    Channel(Channel),
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
            Self::Channel(Channel::Ephemeral) => "ephemeral",
            Self::Channel(Channel::AnyValue) => "any_value",
            Self::Channel(Channel::Topic { .. }) => "topic",
            Self::Channel(Channel::Untracked) => "untracked",
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
    /// `item_setter = "name"`: the one-item setter of a collection field.
    pub item_setter: Option<LitStr>,
    /// Set by `check` when it reported an error on the field's type: the
    /// expansion then adds no check of that type, which would only repeat
    /// it in other words.
    pub type_reported: bool,
    /// Set by `check` for `#[reducer(union)]` on a `Vec`: served by a scan
    /// of the list, and the expansion warns that it costs the list's length.
    pub union_scans: bool,
}

/// What `#[state]` says about the struct.
pub struct ContainerAttrs {
    pub krate: Option<Path>,
    pub rename_all: Option<RenameRule>,
    /// `version = N`: the schema version stored with checkpoints.
    pub version: Option<LitInt>,
    /// `migrate = path`: upgrades JSON stored under an older version.
    pub migrate: Option<Path>,
    /// Where `migrate` was written, for the error when it could never run.
    migrate_key: Option<Span>,
    /// `json_schema`: implement `schemars::JsonSchema` for the state, its
    /// update and its input.
    pub json_schema: bool,
}

/// The keys `#[state(..)]` takes on a field, for messages.
const FIELD_KEYS: &str = "`default = expr`, `rename = \"name\"`, `item_setter = \"name\"`, `flatten`, `omit_from_input`, `omit_from_output` or `private`";

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

/// A string value. A bare name (`item_setter = add_status`) is refused
/// with the quoted form to write, since that is what the user meant.
fn parse_lit_str(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        return value.parse();
    }
    let key = key_name(meta);
    let expr: Expr = value.parse()?;
    let message = match &expr {
        Expr::Path(path) if path.qself.is_none() => {
            let name = crate::names::text_of(&path.path);
            let name = name.strip_prefix("r#").unwrap_or(&name);
            format!(
                "{key} takes a string: write `{} = \"{name}\"`",
                key.trim_matches('`')
            )
        }
        _ => format!("{key} takes a string literal, in double quotes"),
    };
    Err(syn::Error::new_spanned(expr, message))
}

/// An error unless the key stands alone (`flatten`, not `flatten = x`).
fn no_value(meta: &ParseNestedMeta, name: &str) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
        return Err(meta.error(format!("`{name}` takes no value")));
    }
    Ok(())
}

/// The key for an "unknown .." error: `` `name` ``, or `this` for a path.
fn key_name(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map_or_else(|| "this".to_owned(), |i| format!("`{i}`"))
}

/// `item_setter = "name"`: a string holding a method name.
fn parse_method_name(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    let lit = parse_lit_str(meta)?;
    let name = lit.value();
    let plain = name.strip_prefix("r#").unwrap_or(&name);
    let valid = syn::parse_str::<syn::Ident>(plain).is_ok()
        || syn::parse_str::<syn::Ident>(&format!("r#{plain}")).is_ok();
    if !valid || plain == "_" {
        return Err(syn::Error::new_spanned(
            &lit,
            format!(
                "`item_setter` takes a method name, such as \"add_status\"; `{name}` is not one"
            ),
        ));
    }
    Ok(LitStr::new(plain, lit.span()))
}

/// A path given bare or as a string: `with = f`, `crate = "::x"`.
fn parse_path(meta: &ParseNestedMeta) -> syn::Result<Path> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        value.parse::<LitStr>()?.parse()
    } else {
        value.parse()
    }
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
        item_setter: None,
        type_reported: false,
        union_scans: false,
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
        if let Some(lit) = out.item_setter.take() {
            cx.error_spanned_by(
                lit,
                "a `#[state(flatten)]` part has no item setter: its update is set whole, and its own collection fields have theirs",
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
        if meta.path.is_ident("topic") && meta.input.peek(syn::token::Paren) {
            let mut accumulate = false;
            meta.parse_nested_meta(|inner| {
                if inner.path.is_ident("accumulate") {
                    accumulate = true;
                    Ok(())
                } else {
                    Err(inner.error("`topic` takes one option: `topic(accumulate)` keeps the items of every step"))
                }
            })?;
            set(cx, span, Reducer::Channel(Channel::Topic { accumulate }));
            return Ok(());
        }
        if meta.path.is_ident("topic") && meta.input.peek(syn::Token![=]) {
            return Err(topic_with_value(&meta));
        }
        if meta.path.is_ident("accumulate") {
            return Err(meta.error("`accumulate` goes with `topic`: `#[reducer(topic(accumulate))]`"));
        }
        if let Some(reducer) = simple_reducer(&meta.path) {
            no_value(&meta, reducer.name())?;
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
        Err(meta.error(unknown_reducer(&meta)))
    });
    if let Err(err) = result {
        cx.syn_error(err);
    }
    if conflict {
        // Expanding with either reducer would add errors about a choice the
        // user has not made yet; `replace` compiles for any type.
        out.reducer = Reducer::Replace;
    }
    attach_update_type(cx, out, with_update);
}

/// `topic = ..`: its option goes in parentheses, `topic(accumulate)`. The
/// error spans the key and its value.
fn topic_with_value(meta: &ParseNestedMeta) -> syn::Error {
    let key = &meta.path;
    let value = match meta.value().and_then(|v| v.parse::<Expr>()) {
        Ok(value) => value,
        Err(err) => return err,
    };
    let message = if matches!(&value, Expr::Path(p) if p.path.is_ident("accumulate")) {
        "`topic` takes its option in parentheses: write `topic(accumulate)`"
    } else {
        "`topic` takes no value: write `topic` (the items of the last step) or `topic(accumulate)` (the items of every step)"
    };
    syn::Error::new_spanned(quote::quote!(#key = #value), message)
}

/// `update = Type` completes `with = path`; anywhere else it is an error.
fn attach_update_type(cx: &Ctxt, out: &mut FieldAttrs, with_update: Option<(Box<Type>, Span)>) {
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

/// The error for a reducer name we do not know, with a "did you mean"
/// when it is a LangGraph name (`add_messages`, `operator.add`, which
/// comes here as the path `operator`) or a typo of ours.
fn unknown_reducer(meta: &ParseNestedMeta) -> String {
    let path = &meta.path;
    let mut shown: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    // Python's `operator.add` parses as the path `operator` then `.add`.
    let fork = meta.input.fork();
    if fork.parse::<syn::Token![.]>().is_ok() {
        if let Ok(attr) = fork.parse::<syn::Ident>() {
            shown.push(attr.to_string());
        }
    }
    let shown = shown.join(if meta.input.peek(syn::Token![.]) {
        "."
    } else {
        "::"
    });
    let names = [
        "replace",
        "merge",
        "messages",
        "union",
        "append",
        "immutable",
        "with",
        "ephemeral",
        "any_value",
        "topic",
        "untracked",
    ];
    match reducer_hint(&shown, &names) {
        Some(hint) => format!("unknown reducer `{shown}`: {hint}"),
        None => format!("unknown reducer `{shown}`; expected {REDUCERS}"),
    }
}

/// "Unknown key" with the nearest known key, when the key is a typo of one.
fn unknown_key(meta: &ParseNestedMeta, what: &str, keys: &[&str], expected: &str) -> syn::Error {
    let name = key_name(meta);
    let hint = meta
        .path
        .get_ident()
        .and_then(|i| nearest(&i.to_string(), keys))
        .map(|k| format!("did you mean `{k}`? "))
        .unwrap_or_default();
    meta.error(format!("unknown {what} {name}; {hint}{expected}"))
}

/// The reducers written as a bare name.
fn simple_reducer(path: &Path) -> Option<Reducer> {
    [
        ("replace", Reducer::Replace),
        ("merge", Reducer::Merge),
        ("messages", Reducer::Messages),
        ("union", Reducer::Union),
        ("append", Reducer::Append),
        ("immutable", Reducer::Immutable),
        ("ephemeral", Reducer::Channel(Channel::Ephemeral)),
        ("any_value", Reducer::Channel(Channel::AnyValue)),
        (
            "topic",
            Reducer::Channel(Channel::Topic { accumulate: false }),
        ),
        ("untracked", Reducer::Channel(Channel::Untracked)),
    ]
    .into_iter()
    .find_map(|(name, reducer)| path.is_ident(name).then_some(reducer))
}

fn parse_field_state(
    cx: &Ctxt,
    attr: &Attribute,
    out: &mut FieldAttrs,
    rename_span: &mut Option<Span>,
) {
    let result = attr.parse_nested_meta(|meta| {
        if flag_key(&meta, out)? {
            return Ok(());
        }
        if meta.path.is_ident("default") {
            let expr: Expr = meta.value()?.parse()?;
            set_once(&meta, &mut out.default, expr, "default")
        } else if meta.path.is_ident("item_setter") {
            let lit = parse_method_name(&meta)?;
            set_once(&meta, &mut out.item_setter, lit, "item_setter")
        } else if meta.path.is_ident("rename") {
            let name = parse_lit_str(&meta)?;
            set_once(&meta, &mut out.rename, name.value(), "rename")?;
            *rename_span = Some(meta.path.span());
            Ok(())
        } else {
            Err(unknown_key(
                &meta,
                "field attribute",
                &[
                    "default",
                    "rename",
                    "item_setter",
                    "flatten",
                    "omit_from_input",
                    "omit_from_output",
                    "private",
                ],
                &format!("`#[state(..)]` on a field takes {FIELD_KEYS}"),
            ))
        }
    });
    if let Err(err) = result {
        cx.syn_error(err);
    }
}

/// The keys that stand alone: `flatten` and the visibility ones. Whether
/// `meta` was one of them.
fn flag_key(meta: &ParseNestedMeta, out: &mut FieldAttrs) -> syn::Result<bool> {
    if meta.path.is_ident("flatten") {
        no_value(meta, "flatten")?;
        if out.flatten.is_some() {
            return Err(meta.error("duplicate `flatten`"));
        }
        out.flatten = Some(meta.path.span());
        return Ok(true);
    }
    for (name, input, output) in [
        ("omit_from_input", true, false),
        ("omit_from_output", false, true),
        ("private", true, true),
    ] {
        if meta.path.is_ident(name) {
            no_value(meta, name)?;
            out.omit_from_input |= input;
            out.omit_from_output |= output;
            return Ok(true);
        }
    }
    Ok(false)
}

/// Sets a key's value, or the error for a key given twice.
fn set_once<T>(
    meta: &ParseNestedMeta,
    slot: &mut Option<T>,
    value: T,
    key: &str,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(meta.error(format!("duplicate `{key}`")));
    }
    *slot = Some(value);
    Ok(())
}

/// Parses the struct's `#[state]` attributes.
pub fn container_attrs(cx: &Ctxt, attrs: &[Attribute]) -> ContainerAttrs {
    let mut out = ContainerAttrs {
        krate: None,
        rename_all: None,
        version: None,
        migrate: None,
        migrate_key: None,
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
        if let Err(err) = attr.parse_nested_meta(|meta| container_key(&meta, &mut out)) {
            cx.syn_error(err);
        }
    }
    check_migrate(cx, &out);
    out
}

/// A migration runs on JSON stored under a version older than `version`.
/// Without `version` (1) or with `version = 1`, nothing older exists, so
/// the function would never run: the user has forgotten to raise it.
fn check_migrate(cx: &Ctxt, out: &ContainerAttrs) {
    let (Some(path), Some(key)) = (&out.migrate, out.migrate_key) else {
        return;
    };
    let example = format!(
        "`#[state(version = 2, migrate = {})]`",
        crate::names::text_of(path)
    );
    let message = match &out.version {
        None => format!("`migrate` upgrades checkpoints stored under an older `version`, and this state declares none, so it would never run: declare the version it upgrades to, {example}"),
        Some(v) if v.base10_parse::<u32>().ok() == Some(1) => format!("`migrate` upgrades checkpoints stored under a version older than `version`, and none is older than 1, so it would never run: raise the version, {example}"),
        Some(_) => return,
    };
    let key = syn::Ident::new("migrate", key);
    cx.error_spanned_by(quote::quote!(#key = #path), message);
}

/// One key of the struct's `#[state(..)]`.
fn container_key(meta: &ParseNestedMeta, out: &mut ContainerAttrs) -> syn::Result<()> {
    if meta.path.is_ident("crate") {
        out.krate = Some(crate_path(meta)?);
    } else if meta.path.is_ident("rename_all") {
        out.rename_all = Some(rename_rule(meta)?);
    } else if meta.path.is_ident("version") {
        let lit: LitInt = meta.value()?.parse()?;
        match lit.base10_parse::<u32>() {
            Ok(v) if v >= 1 => out.version = Some(lit),
            _ => {
                return Err(syn::Error::new_spanned(
                    &lit,
                    "`version` is a `u32` of at least 1",
                ))
            }
        }
    } else if meta.path.is_ident("migrate") {
        out.migrate = Some(parse_path(meta)?);
        out.migrate_key = Some(meta.path.span());
    } else if meta.path.is_ident("json_schema") {
        no_value(meta, "json_schema")?;
        out.json_schema = true;
    } else {
        return Err(unknown_key(
            meta,
            "struct attribute",
            &["crate", "rename_all", "json_schema", "version", "migrate"],
            "`#[state(..)]` on the struct takes `crate = path`, `rename_all = \"..\"`, `json_schema`, `version = N` or `migrate = path`",
        ));
    }
    Ok(())
}

/// `crate = path`, which must be absolute so generated code finds it from
/// any module.
fn crate_path(meta: &ParseNestedMeta) -> syn::Result<Path> {
    let path = parse_path(meta)?;
    let absolute = path.leading_colon.is_some()
        || path
            .segments
            .first()
            .is_some_and(|s| s.ident == "crate" || s.ident == "$crate");
    if !absolute {
        return Err(syn::Error::new_spanned(
            &path,
            "`crate` must be an absolute path, such as `::agent_state` or `crate::reexports::agent_state`, so generated code finds it from any module",
        ));
    }
    Ok(path)
}

/// `rename_all = ".."`: one of [`RenameRule::ALL`].
fn rename_rule(meta: &ParseNestedMeta) -> syn::Result<RenameRule> {
    let lit = parse_lit_str(meta)?;
    match RenameRule::ALL
        .iter()
        .find(|(name, _)| *name == lit.value())
    {
        Some((_, rule)) => Ok(*rule),
        None => {
            let names: Vec<String> = RenameRule::ALL
                .iter()
                .map(|(n, _)| format!("\"{n}\""))
                .collect();
            Err(syn::Error::new_spanned(
                &lit,
                format!(
                    "unknown `rename_all` rule; expected one of {}",
                    names.join(", ")
                ),
            ))
        }
    }
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
