//! Map keys as serde_json writes them (strings as they are, numbers and bools as text), for the
//! walk's property lookups.

use serde::ser::{self, Serialize};

use super::Reject;

/// Writes a map key as serde_json would (strings as they are, numbers and bools as text).
pub(super) struct KeyWriter<'a>(pub(super) &'a mut String);

impl KeyWriter<'_> {
    fn text(self, s: impl std::fmt::Display) -> Result<(), Reject> {
        use std::fmt::Write;
        write!(self.0, "{s}").map_err(|_| Reject)
    }
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = Reject;
    type SerializeSeq = ser::Impossible<(), Reject>;
    type SerializeTuple = ser::Impossible<(), Reject>;
    type SerializeTupleStruct = ser::Impossible<(), Reject>;
    type SerializeTupleVariant = ser::Impossible<(), Reject>;
    type SerializeMap = ser::Impossible<(), Reject>;
    type SerializeStruct = ser::Impossible<(), Reject>;
    type SerializeStructVariant = ser::Impossible<(), Reject>;

    fn serialize_bool(self, v: bool) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_i8(self, v: i8) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_f32(self, _v: f32) -> Result<(), Reject> {
        Err(Reject)
    }
    fn serialize_f64(self, _v: f64) -> Result<(), Reject> {
        Err(Reject)
    }
    fn serialize_char(self, v: char) -> Result<(), Reject> {
        self.text(v)
    }
    fn serialize_str(self, v: &str) -> Result<(), Reject> {
        self.0.push_str(v);
        Ok(())
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<(), Reject> {
        Err(Reject)
    }
    fn serialize_none(self) -> Result<(), Reject> {
        Err(Reject)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Reject> {
        Err(Reject)
    }
    fn serialize_unit(self) -> Result<(), Reject> {
        Err(Reject)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Reject> {
        Err(Reject)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Reject> {
        self.0.push_str(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Reject> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Reject> {
        Err(Reject)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Reject> {
        Err(Reject)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Reject> {
        Err(Reject)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Reject> {
        Err(Reject)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Reject> {
        Err(Reject)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Reject> {
        Err(Reject)
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Reject> {
        Err(Reject)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Reject> {
        Err(Reject)
    }
}
