//! A serializer that only looks at strings: how the encoder learns a field's
//! name and the marker probe a key or a tag, without writing anything.

use std::fmt;

use serde::ser::{self, Impossible, Serialize, Serializer};

/// Serializes a value into `F(&str)` when it is a string, and into
/// `R::default()` when it is any other scalar. Compound values stop with
/// [`NotStr`].
pub(super) struct OnStr<F>(pub(super) F);

/// The error of [`OnStr`]: the value was not a scalar.
#[derive(Debug)]
pub(super) struct NotStr;

impl fmt::Display for NotStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a string")
    }
}

impl std::error::Error for NotStr {}

impl ser::Error for NotStr {
    fn custom<T: fmt::Display>(_: T) -> Self {
        NotStr
    }
}

/// Scalars other than strings: `R::default()`.
macro_rules! other_scalars {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, _: $ty) -> Result<R, NotStr> {
            Ok(R::default())
        }
    )*};
}

impl<R: Default, F: FnOnce(&str) -> R> Serializer for OnStr<F> {
    type Ok = R;
    type Error = NotStr;
    type SerializeSeq = Impossible<R, NotStr>;
    type SerializeTuple = Impossible<R, NotStr>;
    type SerializeTupleStruct = Impossible<R, NotStr>;
    type SerializeTupleVariant = Impossible<R, NotStr>;
    type SerializeMap = Impossible<R, NotStr>;
    type SerializeStruct = Impossible<R, NotStr>;
    type SerializeStructVariant = Impossible<R, NotStr>;

    fn serialize_str(self, v: &str) -> Result<R, NotStr> {
        Ok((self.0)(v))
    }

    other_scalars!(
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
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_none(self) -> Result<R, NotStr> {
        Ok(R::default())
    }

    fn serialize_unit(self) -> Result<R, NotStr> {
        Ok(R::default())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<R, NotStr> {
        Ok((self.0)(v))
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<R, NotStr> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<R, NotStr> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<R, NotStr> {
        Err(NotStr)
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
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotStr> {
        Err(NotStr)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotStr> {
        Err(NotStr)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotStr> {
        Err(NotStr)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotStr> {
        Err(NotStr)
    }
}
