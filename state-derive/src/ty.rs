//! What a field's type is, read from how it is spelled. Macros see tokens,
//! not types: these readings serve defaults (how a setter takes its value)
//! and early, single errors; the trait bounds in generated code stay the
//! real check.

use syn::{GenericArgument, PathArguments, Type};

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

/// The item type of a std collection, written as such.
pub fn collection_item(ty: &Type) -> Option<&Type> {
    generic_arg_of(ty, &["Vec", "VecDeque", "HashSet", "BTreeSet"])
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
            "HashSet" | "BTreeSet" => Self::Set,
            "HashMap" | "BTreeMap" => Self::Map,
            "Messages" => Self::Messages,
            _ => Self::Other,
        }
    }
}
