//! The encoder a checkpoint stores through: serde_json's writer behind a
//! serializer that refuses what would not read back as itself, counts how
//! deep each field's value nests, and knows which field it is in.

use std::cell::RefCell;
use std::io;

use serde::ser::{
    self, Serialize, SerializeMap, SerializeSeq, SerializeStruct, SerializeStructVariant,
    SerializeTuple, SerializeTupleStruct, SerializeTupleVariant, Serializer,
};
use serde_json::ser::{CompactFormatter, Formatter};

use super::text::OnStr;
use super::MAX_FIELD_DEPTH;
use crate::error::{ErrorKind, StateError};

/// Something that writes its fields into a map being serialized: an update
/// or a state, through their (hidden) `serialize_fields`.
pub(crate) trait Fields {
    /// Writes the fields, one entry each.
    fn write_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;
}

/// Appends `fields` to `out` as a JSON object, each field's value checked.
/// On a refusal `out` holds a partial object; the caller drops it.
pub(crate) fn encode_object<F: Fields + ?Sized>(
    out: &mut Vec<u8>,
    fields: &F,
) -> Result<(), StateError> {
    let ctx = Ctx::default();
    let mut writer = serde_json::Serializer::with_formatter(out, StoreFormatter);
    let result = (|| {
        let map = (&mut writer).serialize_map(None)?;
        let mut top = TopMap {
            inner: map,
            ctx: &ctx,
        };
        fields.write_fields(&mut top)?;
        SerializeMap::end(top)
    })();
    result.map_err(|error| {
        let field = ctx.field.into_inner();
        match ctx.refusal.into_inner() {
            Some(kind) => StateError::new(field, kind),
            None => StateError::new(
                field,
                ErrorKind::NotStorable {
                    reason: error.to_string(),
                },
            ),
        }
    })
}

/// Checks that `value`, a field's whole value, can be stored and read back,
/// writing nothing: what a snapshot would hold of it.
pub(crate) fn check_value<T: Serialize + ?Sized>(value: &T) -> Result<(), ErrorKind> {
    let ctx = Ctx::default();
    let mut writer = serde_json::Serializer::with_formatter(io::sink(), StoreFormatter);
    Checked::new(value, &ctx, 0)
        .serialize(&mut writer)
        .map_err(|error| {
            ctx.refusal
                .into_inner()
                .unwrap_or_else(|| ErrorKind::NotStorable {
                    reason: error.to_string(),
                })
        })
}

/// What the checks noted while serializing: serde's error type is the
/// writer's, so the reason travels beside it.
#[derive(Default)]
struct Ctx {
    /// The field being written.
    field: RefCell<String>,
    /// Why a value was refused, when the checks refused it.
    refusal: RefCell<Option<ErrorKind>>,
}

impl Ctx {
    fn refuse<E: ser::Error>(&self, kind: ErrorKind) -> E {
        let text = kind_text(&kind);
        *self.refusal.borrow_mut() = Some(kind);
        E::custom(text)
    }

    fn not_storable<E: ser::Error>(&self, reason: &str) -> E {
        self.refuse(ErrorKind::NotStorable {
            reason: reason.to_owned(),
        })
    }
}

fn kind_text(kind: &ErrorKind) -> String {
    StateError::new("", kind.clone()).to_string()
}

/// Writes floats so that every store reads them back as floats: an integral
/// float of 16 digits or more is written in full with `.0` (`1e16` would
/// become an integer in PostgreSQL's `jsonb`, and then a JSON integer in a
/// `serde_json::Value`); everything else as serde_json writes it (the
/// shortest text that reads back exactly).
struct StoreFormatter;

/// 2^64: integral floats below it would read back as 64-bit integers.
const INTEGER_RANGE: f64 = 18_446_744_073_709_551_616.0;

impl Formatter for StoreFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        if value.abs() >= 1e16 && value.abs() < INTEGER_RANGE && value.fract() == 0.0 {
            write!(writer, "{value:.1}")
        } else {
            CompactFormatter.write_f64(writer, value)
        }
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        if value.abs() >= 1e16 && f64::from(value.abs()) < INTEGER_RANGE && value.fract() == 0.0 {
            write!(writer, "{value:.1}")
        } else {
            CompactFormatter.write_f32(writer, value)
        }
    }
}

/// The object of fields: notes each key as the current field, and checks
/// each value from depth 0.
struct TopMap<'a, M> {
    inner: M,
    ctx: &'a Ctx,
}

impl<M: SerializeMap> SerializeMap for TopMap<'_, M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), M::Error> {
        let mut field = self.ctx.field.borrow_mut();
        field.clear();
        let _ = key.serialize(OnStr(|name: &str| field.push_str(name)));
        drop(field);
        self.inner.serialize_key(key)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), M::Error> {
        self.inner
            .serialize_value(&Checked::new(value, self.ctx, 0))
    }

    fn end(self) -> Result<M::Ok, M::Error> {
        self.inner.end()
    }
}

/// A value to serialize through the checks, `depth` arrays and objects
/// inside its field; `in_some` when it is the content of a `Some`.
struct Checked<'a, T: ?Sized> {
    value: &'a T,
    ctx: &'a Ctx,
    depth: usize,
    in_some: bool,
}

impl<'a, T: ?Sized> Checked<'a, T> {
    fn new(value: &'a T, ctx: &'a Ctx, depth: usize) -> Self {
        Self {
            value,
            ctx,
            depth,
            in_some: false,
        }
    }
}

impl<T: Serialize + ?Sized> Serialize for Checked<'_, T> {
    fn serialize<S: Serializer>(&self, inner: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(Check {
            inner,
            ctx: self.ctx,
            depth: self.depth,
            in_some: self.in_some,
        })
    }
}

/// The checking serializer around the writer's.
struct Check<'a, S> {
    inner: S,
    ctx: &'a Ctx,
    depth: usize,
    in_some: bool,
}

/// A compound value (list, object, ...) whose items are checked at `depth`.
struct Compound<'a, C> {
    inner: C,
    ctx: &'a Ctx,
    depth: usize,
}

impl<'a, S: Serializer> Check<'a, S> {
    /// The depth inside `levels` more containers, or the refusal.
    fn enter(&self, levels: usize) -> Result<usize, S::Error> {
        let depth = self.depth + levels;
        if depth > MAX_FIELD_DEPTH {
            return Err(self.ctx.refuse(ErrorKind::TooDeep {
                max: MAX_FIELD_DEPTH,
            }));
        }
        Ok(depth)
    }

    /// `null` inside a `Some` reads back as `None`.
    fn null(self, write: impl FnOnce(S) -> Result<S::Ok, S::Error>) -> Result<S::Ok, S::Error> {
        if self.in_some {
            return Err(self.ctx.not_storable(
                "`Some` of a value written as `null` (`Some(None)`, `Some(())`, \
                 `Some(Value::Null)`) reads back as `None`",
            ));
        }
        write(self.inner)
    }
}

/// Scalars JSON writes as they are.
macro_rules! pass {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
            self.inner.$method(v)
        }
    )*};
}

/// Floats: NaN and the infinities have no JSON (serde_json writes `null`).
macro_rules! finite {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
            if !v.is_finite() {
                return Err(self.ctx.not_storable(&format!(
                    "{v} has no JSON form (serde_json would write `null`)"
                )));
            }
            self.inner.$method(v)
        }
    )*};
}

const WIDE_INTEGER: &str = "integers beyond 64 bits read back from JSON as floats";

impl<'a, S: Serializer> Serializer for Check<'a, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Compound<'a, S::SerializeSeq>;
    type SerializeTuple = Compound<'a, S::SerializeTuple>;
    type SerializeTupleStruct = Compound<'a, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Compound<'a, S::SerializeTupleVariant>;
    type SerializeMap = Compound<'a, S::SerializeMap>;
    type SerializeStruct = Compound<'a, S::SerializeStruct>;
    type SerializeStructVariant = Compound<'a, S::SerializeStructVariant>;

    pass!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_char(char),
        serialize_str(&str),
    );

    finite!(serialize_f32(f32), serialize_f64(f64));

    fn serialize_i128(self, v: i128) -> Result<S::Ok, S::Error> {
        if i64::try_from(v).is_err() && u64::try_from(v).is_err() {
            return Err(self.ctx.not_storable(WIDE_INTEGER));
        }
        self.inner.serialize_i128(v)
    }

    fn serialize_u128(self, v: u128) -> Result<S::Ok, S::Error> {
        if u64::try_from(v).is_err() {
            return Err(self.ctx.not_storable(WIDE_INTEGER));
        }
        self.inner.serialize_u128(v)
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<S::Ok, S::Error> {
        // Written as a list of numbers.
        self.enter(1)?;
        self.inner.serialize_bytes(v)
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.null(Serializer::serialize_none)
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.null(Serializer::serialize_unit)
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<S::Ok, S::Error> {
        self.null(|inner| inner.serialize_unit_struct(name))
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit_variant(name, index, variant)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        let checked = Checked {
            value,
            ctx: self.ctx,
            depth: self.depth,
            in_some: true,
        };
        self.inner.serialize_some(&checked)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let checked = Checked {
            value,
            ctx: self.ctx,
            depth: self.depth,
            in_some: self.in_some,
        };
        self.inner.serialize_newtype_struct(name, &checked)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        let depth = self.enter(1)?;
        let checked = Checked::new(value, self.ctx, depth);
        self.inner
            .serialize_newtype_variant(name, index, variant, &checked)
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let depth = self.enter(1)?;
        let ctx = self.ctx;
        let inner = self.inner.serialize_seq(len)?;
        Ok(Compound { inner, ctx, depth })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let depth = self.enter(1)?;
        let ctx = self.ctx;
        let inner = self.inner.serialize_tuple(len)?;
        Ok(Compound { inner, ctx, depth })
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        let depth = self.enter(1)?;
        let ctx = self.ctx;
        let inner = self.inner.serialize_tuple_struct(name, len)?;
        Ok(Compound { inner, ctx, depth })
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        // `{"Variant": [..]}`: two levels.
        let depth = self.enter(2)?;
        let ctx = self.ctx;
        let inner = self
            .inner
            .serialize_tuple_variant(name, index, variant, len)?;
        Ok(Compound { inner, ctx, depth })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let depth = self.enter(1)?;
        let ctx = self.ctx;
        let inner = self.inner.serialize_map(len)?;
        Ok(Compound { inner, ctx, depth })
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        let depth = self.enter(1)?;
        let ctx = self.ctx;
        let inner = self.inner.serialize_struct(name, len)?;
        Ok(Compound { inner, ctx, depth })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        // `{"Variant": {..}}`: two levels.
        let depth = self.enter(2)?;
        let ctx = self.ctx;
        let inner = self
            .inner
            .serialize_struct_variant(name, index, variant, len)?;
        Ok(Compound { inner, ctx, depth })
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.inner.collect_str(value)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

impl<'a, C> Compound<'a, C> {
    fn item<'v, T: ?Sized>(&self, value: &'v T) -> Checked<'v, T>
    where
        'a: 'v,
    {
        Checked::new(value, self.ctx, self.depth)
    }
}

/// The list-like compounds: each item checked.
macro_rules! items {
    ($($tr:ident :: $method:ident),* $(,)?) => {$(
        impl<C: $tr> $tr for Compound<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
                let item = self.item(value);
                self.inner.$method(&item)
            }

            fn end(self) -> Result<C::Ok, C::Error> {
                self.inner.end()
            }
        }
    )*};
}

items!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

/// The object-like compounds: each field's value checked.
macro_rules! fields {
    ($($tr:ident),* $(,)?) => {$(
        impl<C: $tr> $tr for Compound<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), C::Error> {
                let item = self.item(value);
                self.inner.serialize_field(key, &item)
            }

            fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
                self.inner.skip_field(key)
            }

            fn end(self) -> Result<C::Ok, C::Error> {
                self.inner.end()
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

impl<C: SerializeMap> SerializeMap for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), C::Error> {
        self.inner.serialize_key(key)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), C::Error> {
        let item = self.item(value);
        self.inner.serialize_value(&item)
    }

    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    /// One field, `f`, holding `value`.
    struct One<T>(T);

    impl<T: Serialize> Fields for One<T> {
        fn write_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
            map.serialize_entry("ok", &1)?;
            map.serialize_entry("f", &self.0)
        }
    }

    fn encode<T: Serialize>(value: T) -> Result<String, StateError> {
        let mut out = Vec::new();
        encode_object(&mut out, &One(value))?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn refusal<T: Serialize>(value: T) -> ErrorKind {
        let err = encode(value).unwrap_err();
        assert_eq!(err.field(), "f");
        err.kind().clone()
    }

    fn nested(depth: usize) -> Value {
        (0..depth).fold(json!(1), |inner, _| json!([inner]))
    }

    #[test]
    fn values_without_a_faithful_json_form_are_refused() {
        for float in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(refusal(float), ErrorKind::NotStorable { .. }));
            assert!(matches!(
                refusal(vec![Some(float)]),
                ErrorKind::NotStorable { .. }
            ));
        }
        assert!(matches!(refusal(f32::NAN), ErrorKind::NotStorable { .. }));
        assert!(matches!(refusal(u128::MAX), ErrorKind::NotStorable { .. }));
        assert!(matches!(refusal(i128::MIN), ErrorKind::NotStorable { .. }));
        assert!(matches!(
            refusal(Some(None::<u8>)),
            ErrorKind::NotStorable { .. }
        ));
        assert!(matches!(
            refusal(Some(Value::Null)),
            ErrorKind::NotStorable { .. }
        ));
        assert!(matches!(refusal(Some(())), ErrorKind::NotStorable { .. }));
        // Non-string map keys fail in serde_json: refused with its reason.
        let keys = std::collections::BTreeMap::from([(vec![1], 2)]);
        assert!(matches!(refusal(keys), ErrorKind::NotStorable { .. }));
        // What does read back passes.
        assert_eq!(
            encode((
                u128::from(u64::MAX),
                i128::from(i64::MIN),
                Some(Some(1)),
                None::<u8>
            ))
            .unwrap(),
            format!(r#"{{"ok":1,"f":[{},{},1,null]}}"#, u64::MAX, i64::MIN)
        );
    }

    #[test]
    fn depth_is_counted_from_the_field() {
        assert!(encode(nested(MAX_FIELD_DEPTH)).is_ok());
        assert_eq!(
            refusal(nested(MAX_FIELD_DEPTH + 1)),
            ErrorKind::TooDeep {
                max: MAX_FIELD_DEPTH
            }
        );
        // An enum's struct variant, `{"S": {"x": ..}}`, is two levels.
        #[derive(serde::Serialize)]
        enum E {
            S { x: Value },
        }
        assert!(encode(E::S {
            x: nested(MAX_FIELD_DEPTH - 2)
        })
        .is_ok());
        let err = encode(E::S {
            x: nested(MAX_FIELD_DEPTH - 1),
        });
        assert!(matches!(err.unwrap_err().kind(), ErrorKind::TooDeep { .. }));
    }

    #[test]
    fn floats_read_back_as_floats_everywhere() {
        for (float, text) in [
            (1e16, "10000000000000000.0"),
            (-1e16, "-10000000000000000.0"),
            (1.5e18, "1500000000000000000.0"),
            (1e15, "1000000000000000.0"),
            (1e20, "1e+20"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ] {
            let json = encode(float).unwrap();
            assert_eq!(json, format!(r#"{{"ok":1,"f":{text}}}"#));
            let back: Value = serde_json::from_str(&json).unwrap();
            assert!(back["f"].is_f64(), "{text}");
            assert_eq!(back["f"].as_f64().unwrap().to_bits(), float.to_bits());
        }
        let json = encode(1e16_f32).unwrap();
        let back: serde_json::Map<String, Value> = serde_json::from_str(&json).unwrap();
        let f: f32 = serde_json::from_value(back["f"].clone()).unwrap();
        assert_eq!(f, 1e16_f32);
    }
}
