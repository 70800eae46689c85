//! What a field's type is, read from how it is spelled. Macros see tokens,
//! not types: these readings serve defaults (how a setter takes its value)
//! and early, single errors; the trait bounds in generated code stay the
//! real check.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{GenericArgument, GenericParam, Generics, PathArguments, Type};

/// Types whose setters take the value itself: `impl Into<u32>` would make
/// `.round(2)` fail, since the literal defaults to `i32`.
const PRIMITIVES: &[&str] = &[
    "bool", "char", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32",
    "u64", "u128", "usize",
];

/// Whether `ty` is a primitive written as a bare name (`u32`, not a path).
pub fn is_primitive(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .get_ident()
            .is_some_and(|ident| PRIMITIVES.iter().any(|name| ident == name)),
        _ => false,
    }
}

/// The first type argument of `ty` when its last segment is one of `names`:
/// `T` for `Vec<T>` with `names = ["Vec"]`.
pub fn generic_arg_of<'t>(ty: &'t Type, names: &[&str]) -> Option<&'t Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if !names.iter().any(|n| last.ident == n) {
        return None;
    }
    first_type_arg(&last.arguments)
}

fn first_type_arg(args: &PathArguments) -> Option<&Type> {
    let PathArguments::AngleBracketed(args) = args else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// `T` for `Option<T>`.
pub fn option_inner(ty: &Type) -> Option<&Type> {
    generic_arg_of(ty, &["Option"])
}

/// The item type of a collection, written as such.
pub fn collection_item(ty: &Type) -> Option<&Type> {
    generic_arg_of(
        ty,
        &[
            "Vec", "VecDeque", "HashSet", "BTreeSet", "UnionVec", "IndexSet",
        ],
    )
}

/// The first float type (`f32`, `f64`) in `ty`, at any depth: `f64` in
/// `Vec<(String, f64)>`.
pub fn float_in(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            if p.path.is_ident("f32") || p.path.is_ident("f64") {
                return Some(ty);
            }
            p.path.segments.iter().find_map(|seg| match &seg.arguments {
                PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                    GenericArgument::Type(t) => float_in(t),
                    _ => None,
                }),
                _ => None,
            })
        }
        Type::Tuple(t) => t.elems.iter().find_map(float_in),
        Type::Array(a) => float_in(&a.elem),
        Type::Slice(s) => float_in(&s.elem),
        Type::Paren(p) => float_in(&p.elem),
        Type::Group(g) => float_in(&g.elem),
        Type::Reference(r) => float_in(&r.elem),
        _ => None,
    }
}

/// What a type plainly is, from its spelling.
#[derive(PartialEq)]
pub enum Shape {
    Scalar,
    Option,
    List,
    ListOfScalars,
    Set,
    Map,
    Messages,
    Other,
}

impl Shape {
    pub fn of(ty: &Type) -> Self {
        let ty = match ty {
            Type::Reference(r) => return Self::of(&r.elem),
            Type::Tuple(_) | Type::Array(_) | Type::Slice(_) => return Self::Scalar,
            Type::Path(p) if p.qself.is_none() => p,
            _ => return Self::Other,
        };
        let Some(last) = ty.path.segments.last() else {
            return Self::Other;
        };
        let name = last.ident.to_string();
        match name.as_str() {
            n if PRIMITIVES.contains(&n) || n == "String" || n == "str" => Self::Scalar,
            "Option" => Self::Option,
            "Vec" | "VecDeque" => match first_type_arg(&last.arguments).map(Self::of) {
                Some(Self::Scalar) => Self::ListOfScalars,
                _ => Self::List,
            },
            "HashSet" | "BTreeSet" | "UnionVec" | "IndexSet" => Self::Set,
            "HashMap" | "BTreeMap" => Self::Map,
            "Messages" => Self::Messages,
            _ => Self::Other,
        }
    }
}

/// Whether `ty` is plainly serde's already: a primitive, `String`, or a
/// std collection, `Option`, `Box`, tuple or array of such types. Used to leave out checks and bounds that
/// would only add noise to the expansion and to rustdoc.
pub fn plainly_serde(ty: &Type) -> bool {
    match ty {
        Type::Tuple(t) => t.elems.iter().all(plainly_serde),
        Type::Array(a) => plainly_serde(&a.elem),
        Type::Paren(p) => plainly_serde(&p.elem),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            match name.as_str() {
                // Reading these needs their items `Hash + Eq` or `Ord`.
                "HashSet" | "BTreeSet" | "UnionVec" => plain_args(last, plainly_hashable),
                "HashMap" | "BTreeMap" => {
                    let mut args = type_args(last);
                    args.next().is_some_and(plainly_hashable) && args.all(plainly_serde)
                }
                "String" | "Option" | "Vec" | "VecDeque" | "Box" => plain_args(last, plainly_serde),
                n => PRIMITIVES.contains(&n) && plain_args(last, plainly_serde),
            }
        }
        _ => false,
    }
}

/// Whether the items of `ty`, a collection a `union` field holds, are
/// plainly `Hash + Eq + Ord`: integers, `bool`, `char`, `String`, or
/// `Option`, `Vec`, `Box`, tuples or arrays of such types.
pub fn plainly_hashable_items(ty: &Type) -> bool {
    collection_item(ty).is_some_and(plainly_hashable)
}

fn plainly_hashable(ty: &Type) -> bool {
    match ty {
        Type::Tuple(t) => t.elems.iter().all(plainly_hashable),
        Type::Array(a) => plainly_hashable(&a.elem),
        Type::Paren(p) => plainly_hashable(&p.elem),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            let known = (PRIMITIVES.contains(&name.as_str()) && !name.starts_with('f'))
                || matches!(name.as_str(), "String" | "Option" | "Vec" | "Box");
            known && plain_args(last, plainly_hashable)
        }
        _ => false,
    }
}

/// The type arguments of a path segment.
fn type_args(last: &syn::PathSegment) -> impl Iterator<Item = &Type> {
    let args = match &last.arguments {
        PathArguments::AngleBracketed(args) => Some(args.args.iter()),
        _ => None,
    };
    args.into_iter().flatten().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// Whether every type argument of a path segment passes `plain`.
fn plain_args(last: &syn::PathSegment, plain: fn(&Type) -> bool) -> bool {
    match &last.arguments {
        PathArguments::None => true,
        PathArguments::AngleBracketed(args) => args.args.iter().all(|a| match a {
            GenericArgument::Type(t) => plain(t),
            _ => false,
        }),
        PathArguments::Parenthesized(_) => false,
    }
}

/// Whether `ty` names one of the type's generic parameters, so a check of
/// it belongs in a where-clause rather than where the state is declared.
pub fn mentions_params(ty: &Type, generics: &Generics) -> bool {
    let names: Vec<String> = generics
        .params
        .iter()
        .map(|p| match p {
            GenericParam::Type(t) => t.ident.to_string(),
            GenericParam::Lifetime(l) => l.lifetime.ident.to_string(),
            GenericParam::Const(c) => c.ident.to_string(),
        })
        .collect();
    !names.is_empty() && mentions(ty.to_token_stream(), &names)
}

fn mentions(tokens: TokenStream, names: &[String]) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => names.iter().any(|n| i == n),
        TokenTree::Group(g) => mentions(g.stream(), names),
        _ => false,
    })
}
