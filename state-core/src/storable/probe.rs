//! Whether a value's JSON would read as one of an update's markers.

use serde::ser::{
    Impossible, Serialize, SerializeMap, SerializeStruct, SerializeStructVariant,
    SerializeTupleVariant, Serializer,
};

use super::text::{NotStr, OnStr};
use super::{OVERWRITE_KEY, REDUCE_KEY};

/// Whether `value`'s JSON is an object that an update's field reads as a
/// marker rather than as a value: `{"__overwrite__": v}`, `{"__reduce__":
/// v}`, or `{"type": "__overwrite__", "value": v}` (LangGraph's `Overwrite`
/// after a JSON round trip). It serializes nothing it does not have to and
/// stops at the first sign of "no": a list costs one call, a map of more
/// than two entries one more.
pub(crate) fn reads_as_marker<T: Serialize + ?Sized>(value: &T) -> bool {
    value.serialize(Probe).unwrap_or(false)
}

/// The role a key can play in a marker.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Key {
    #[default]
    Other,
    /// `__overwrite__` or `__reduce__`: a one-key marker.
    Wrap,
    /// `type` of the two-key form.
    Type,
    /// `value` of the two-key form.
    Value,
}

fn classify(key: &str) -> Key {
    match key {
        OVERWRITE_KEY | REDUCE_KEY => Key::Wrap,
        "type" => Key::Type,
        "value" => Key::Value,
        _ => Key::Other,
    }
}

/// The entries of an object seen so far.
#[derive(Default)]
struct Object {
    entries: usize,
    wrap: bool,
    type_is_overwrite: bool,
    value: bool,
    pending: Key,
}

impl Object {
    fn key(&mut self, key: Key) -> Result<(), NotStr> {
        self.entries += 1;
        self.pending = key;
        Ok(())
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NotStr> {
        match self.pending {
            Key::Wrap => self.wrap = true,
            Key::Value => self.value = true,
            Key::Type => {
                // A `type` that is not the overwrite tag rules out both
                // marker forms: stop here.
                if !value.serialize(OnStr(|s: &str| s == OVERWRITE_KEY))? {
                    return Err(NotStr);
                }
                self.type_is_overwrite = true;
            }
            // Other keys' values are not looked at: only the keys count.
            Key::Other => {}
        }
        Ok(())
    }

    /// `{"__overwrite__": v}` / `{"__reduce__": v}` alone, or
    /// `{"type": "__overwrite__", "value": v}` whatever other keys it has
    /// (LangGraph reads that form ignoring the rest).
    fn is_marker(&self) -> bool {
        (self.entries == 1 && self.wrap) || (self.type_is_overwrite && self.value)
    }
}

impl SerializeMap for Object {
    type Ok = bool;
    type Error = NotStr;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), NotStr> {
        let key = key.serialize(OnStr(classify)).unwrap_or_default();
        self.key(key)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NotStr> {
        self.value(value)
    }

    fn end(self) -> Result<bool, NotStr> {
        Ok(self.is_marker())
    }
}

impl SerializeStruct for Object {
    type Ok = bool;
    type Error = NotStr;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NotStr> {
        self.key(classify(key))?;
        self.value(value)
    }

    fn end(self) -> Result<bool, NotStr> {
        Ok(self.is_marker())
    }
}

/// An enum variant with content, `{"Variant": ..}`: a marker when the
/// variant's name is a one-key marker's; the content is not looked at.
struct Variant(bool);

impl SerializeTupleVariant for Variant {
    type Ok = bool;
    type Error = NotStr;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &T) -> Result<(), NotStr> {
        Ok(())
    }

    fn end(self) -> Result<bool, NotStr> {
        Ok(self.0)
    }
}

impl SerializeStructVariant for Variant {
    type Ok = bool;
    type Error = NotStr;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotStr> {
        Ok(())
    }

    fn end(self) -> Result<bool, NotStr> {
        Ok(self.0)
    }
}

/// Scalars are never markers.
macro_rules! scalars {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, _: $ty) -> Result<bool, NotStr> {
            Ok(false)
        }
    )*};
}

/// The probe: `Ok(true)` for a marker's shape, `Ok(false)` or `Err` for
/// anything else.
struct Probe;

impl Serializer for Probe {
    type Ok = bool;
    type Error = NotStr;
    type SerializeSeq = Impossible<bool, NotStr>;
    type SerializeTuple = Impossible<bool, NotStr>;
    type SerializeTupleStruct = Impossible<bool, NotStr>;
    type SerializeTupleVariant = Variant;
    type SerializeMap = Object;
    type SerializeStruct = Object;
    type SerializeStructVariant = Variant;

    scalars!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_none(self) -> Result<bool, NotStr> {
        Ok(false)
    }

    fn serialize_unit(self) -> Result<bool, NotStr> {
        Ok(false)
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<bool, NotStr> {
        Ok(false)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<bool, NotStr> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<bool, NotStr> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<bool, NotStr> {
        Ok(classify(variant) == Key::Wrap)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotStr> {
        Err(NotStr)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotStr> {
        Err(NotStr)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotStr> {
        Err(NotStr)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant, NotStr> {
        Ok(Variant(classify(variant) == Key::Wrap))
    }

    // Any size: the tagged form may carry other keys. Only keys are
    // looked at, so a big map costs a string comparison per key.
    fn serialize_map(self, _: Option<usize>) -> Result<Object, NotStr> {
        Ok(Object::default())
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Object, NotStr> {
        Ok(Object::default())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Variant, NotStr> {
        Ok(Variant(classify(variant) == Key::Wrap))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use serde::Serialize;
    use serde_json::json;

    use super::*;

    #[derive(Serialize)]
    struct Tagged {
        r#type: String,
        value: u32,
    }

    #[derive(Serialize)]
    enum Wrapper {
        #[serde(rename = "__overwrite__")]
        Over(u32),
        Plain(u32),
    }

    #[test]
    fn marker_shapes_are_found_in_every_form() {
        assert!(reads_as_marker(&json!({"__overwrite__": 1})));
        assert!(reads_as_marker(&json!({"__reduce__": [1]})));
        assert!(reads_as_marker(
            &json!({"type": "__overwrite__", "value": null})
        ));
        // LangGraph reads the tagged form whatever other keys it carries.
        assert!(reads_as_marker(
            &json!({"id": 1, "type": "__overwrite__", "value": 2, "z": 3})
        ));
        assert!(reads_as_marker(&HashMap::from([("__overwrite__", 1)])));
        assert!(reads_as_marker(&Some(BTreeMap::from([(
            "__reduce__",
            "x"
        )]))));
        let tagged = Tagged {
            r#type: "__overwrite__".into(),
            value: 3,
        };
        assert!(reads_as_marker(&tagged));
        assert!(reads_as_marker(&Wrapper::Over(1)));
    }

    #[test]
    fn everything_else_is_not_a_marker() {
        for value in [
            json!(null),
            json!("__overwrite__"),
            json!(["__overwrite__"]),
            json!({}),
            json!({"__overwrite__": 1, "other": 2}),
            json!({"__overwrite__": 1, "__reduce__": 2}),
            json!({"type": "__overwrite__"}),
            json!({"type": "ai", "value": 1}),
            json!({"type": 7, "value": 1}),
            json!({"value": 1}),
            json!({"a": 1, "b": 2, "c": 3}),
        ] {
            assert!(!reads_as_marker(&value), "{value}");
        }
        let tagged = Tagged {
            r#type: "ai".into(),
            value: 3,
        };
        assert!(!reads_as_marker(&tagged));
        assert!(!reads_as_marker(&Wrapper::Plain(1)));
        assert!(!reads_as_marker(&vec![json!({"__overwrite__": 1})]));
    }
}
