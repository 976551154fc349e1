//! Typed arguments as a JSON tree without a map: what the audit record keeps of a call's
//! arguments until someone reads them.
//!
//! `serde_json`'s object (built with `preserve_order`) hashes every key into an index as it is
//! inserted, and owns a `String` per key. [`Plain`] keeps an object's entries in a `Vec`, in the
//! order they were serialized, with the field names of a struct borrowed from the type: it is
//! made without hashing, and turned into the [`Value`] that `serde_json::to_value` makes only
//! when that `Value` is asked for ([`Plain::to_value`]). Every scalar is made by
//! `serde_json`'s own value serializer (and kept without `Value`'s size), and an object is filled the way that serializer fills it
//! (each entry inserted in turn, a repeated key keeping its first place and its last value), so
//! the two agree. What the tree cannot mirror exactly (a map key that is not a string, a raw or
//! arbitrary-precision number) fails with [`Unsupported`], and the caller serializes to a
//! `Value` with `serde_json::to_value`.

use std::borrow::Cow;
use std::fmt;

use serde::ser::{self, Serialize};
use serde_json::{Map, Number, Value};

/// A JSON tree whose objects are lists of entries (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plain {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Plain>),
    /// The entries in the order they were serialized; a key may repeat (then the last value
    /// counts, in the first key's place, as in a `serde_json` object).
    Object(Vec<(Cow<'static, str>, Plain)>),
}

impl Plain {
    /// `value` as a tree, or `None` when the tree could not stand for `serde_json::to_value`
    /// exactly (the caller then makes the `Value`).
    pub(crate) fn of<T: Serialize + ?Sized>(value: &T) -> Option<Plain> {
        value.serialize(Maker).ok()
    }

    /// The `Value` that `serde_json::to_value` makes of what this tree was made from.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Plain::Null => Value::Null,
            Plain::Bool(b) => Value::Bool(*b),
            Plain::Number(n) => Value::Number(n.clone()),
            Plain::String(s) => Value::String(s.clone()),
            Plain::Array(items) => Value::Array(items.iter().map(Plain::to_value).collect()),
            Plain::Object(entries) => {
                let mut map = Map::with_capacity(entries.len());
                for (k, v) in entries {
                    map.insert(k.as_ref().to_owned(), v.to_value());
                }
                Value::Object(map)
            }
        }
    }
}

/// What the tree does not mirror; the caller serializes to a `Value` instead.
#[derive(Debug)]
pub(crate) struct Unsupported;

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not representable as a plain tree")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Unsupported
    }
}

/// The scalar `serde_json`'s value serializer makes, or [`Unsupported`] where it fails.
fn leaf(made: Result<Value, serde_json::Error>) -> Result<Plain, Unsupported> {
    made.map(tree).map_err(|_| Unsupported)
}

/// A `Value` as a tree (the keys of an object copied, in its order).
fn tree(value: Value) -> Plain {
    match value {
        Value::Null => Plain::Null,
        Value::Bool(b) => Plain::Bool(b),
        Value::Number(n) => Plain::Number(n),
        Value::String(s) => Plain::String(s),
        Value::Array(items) => Plain::Array(items.into_iter().map(tree).collect()),
        Value::Object(map) => Plain::Object(
            map.into_iter()
                .map(|(k, v)| (Cow::Owned(k), tree(v)))
                .collect(),
        ),
    }
}

/// The names `serde_json` gives the structs that stand for a raw value and an arbitrary-precision
/// number: its value serializer reads them specially, so the tree leaves them to it.
fn special(name: &str) -> bool {
    name.starts_with("$serde_json::private::")
}

struct Maker;

macro_rules! leaves {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(fn $method(self, v: $ty) -> Result<Plain, Unsupported> {
            leaf(ser::Serializer::$method(serde_json::value::Serializer, v))
        })*
    };
}

macro_rules! signed {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(fn $method(self, v: $ty) -> Result<Plain, Unsupported> {
            Ok(Plain::Number(Number::from(v as i64)))
        })*
    };
}

macro_rules! unsigned {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(fn $method(self, v: $ty) -> Result<Plain, Unsupported> {
            Ok(Plain::Number(Number::from(v as u64)))
        })*
    };
}

impl ser::Serializer for Maker {
    type Ok = Plain;
    type Error = Unsupported;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Variant<Seq>;
    type SerializeMap = Object;
    type SerializeStruct = Object;
    type SerializeStructVariant = Variant<Object>;

    leaves! {
        serialize_i128: i128, serialize_u128: u128, serialize_f32: f32, serialize_f64: f64,
        serialize_char: char, serialize_bytes: &[u8],
    }

    // what `serde_json`'s value serializer makes of these, without a `Value` on the way: a
    // signed integer widened to `i64` and an unsigned one to `u64`, each into a `Number`
    signed! {
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
    }
    unsigned! {
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
    }

    fn serialize_bool(self, v: bool) -> Result<Plain, Unsupported> {
        Ok(Plain::Bool(v))
    }

    fn serialize_str(self, v: &str) -> Result<Plain, Unsupported> {
        Ok(Plain::String(v.to_owned()))
    }

    fn serialize_none(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Null)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Plain, Unsupported> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Null)
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<Plain, Unsupported> {
        Ok(Plain::Null)
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Plain, Unsupported> {
        Ok(Plain::String(variant.to_owned()))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Plain, Unsupported> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Plain, Unsupported> {
        Ok(Plain::Object(vec![(
            Cow::Borrowed(variant),
            value.serialize(Maker)?,
        )]))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Seq, Unsupported> {
        Ok(Seq(Vec::with_capacity(len.unwrap_or(0))))
    }

    fn serialize_tuple(self, len: usize) -> Result<Seq, Unsupported> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq, Unsupported> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Seq>, Unsupported> {
        Ok(Variant(variant, Seq(Vec::with_capacity(len))))
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Object, Unsupported> {
        Ok(Object {
            entries: Vec::with_capacity(len.unwrap_or(0)),
            key: None,
        })
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Object, Unsupported> {
        if special(name) {
            return Err(Unsupported);
        }
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Object>, Unsupported> {
        Ok(Variant(variant, self.serialize_map(Some(len))?))
    }
}

struct Seq(Vec<Plain>);

impl Seq {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.0.push(value.serialize(Maker)?);
        Ok(())
    }
}

impl ser::SerializeSeq for Seq {
    type Ok = Plain;
    type Error = Unsupported;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.push(value)
    }

    fn end(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Array(self.0))
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Plain;
    type Error = Unsupported;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.push(value)
    }

    fn end(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Array(self.0))
    }
}

impl ser::SerializeTupleStruct for Seq {
    type Ok = Plain;
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.push(value)
    }

    fn end(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Array(self.0))
    }
}

struct Object {
    entries: Vec<(Cow<'static, str>, Plain)>,
    key: Option<String>,
}

impl ser::SerializeMap for Object {
    type Ok = Plain;
    type Error = Unsupported;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Unsupported> {
        self.key = Some(key.serialize(Key)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        let key = self.key.take().ok_or(Unsupported)?;
        self.entries
            .push((Cow::Owned(key), value.serialize(Maker)?));
        Ok(())
    }

    fn end(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Object(self.entries))
    }
}

impl ser::SerializeStruct for Object {
    type Ok = Plain;
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        self.entries
            .push((Cow::Borrowed(key), value.serialize(Maker)?));
        Ok(())
    }

    fn end(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Object(self.entries))
    }
}

/// A map key that `serde_json` writes as the text it is (a string, a char, a unit variant's
/// name); any other (a number, a bool, which it turns into text its own way) is left to it.
struct Key;

macro_rules! not_keys {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(fn $method(self, _: $ty) -> Result<String, Unsupported> {
            Err(Unsupported)
        })*
    };
}

impl ser::Serializer for Key {
    type Ok = String;
    type Error = Unsupported;
    type SerializeSeq = ser::Impossible<String, Unsupported>;
    type SerializeTuple = ser::Impossible<String, Unsupported>;
    type SerializeTupleStruct = ser::Impossible<String, Unsupported>;
    type SerializeTupleVariant = ser::Impossible<String, Unsupported>;
    type SerializeMap = ser::Impossible<String, Unsupported>;
    type SerializeStruct = ser::Impossible<String, Unsupported>;
    type SerializeStructVariant = ser::Impossible<String, Unsupported>;

    not_keys! {
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_f32: f32,
        serialize_f64: f64, serialize_bytes: &[u8],
    }

    fn serialize_char(self, v: char) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }

    fn serialize_str(self, v: &str) -> Result<String, Unsupported> {
        Ok(v.to_owned())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, Unsupported> {
        Ok(variant.to_owned())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, Unsupported> {
        value.serialize(self)
    }

    fn serialize_none(self) -> Result<String, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_unit(self) -> Result<String, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}

/// An enum variant with content: an object of one entry, the variant's name.
struct Variant<T>(&'static str, T);

impl ser::SerializeTupleVariant for Variant<Seq> {
    type Ok = Plain;
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.1.push(value)
    }

    fn end(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Object(vec![(
            Cow::Borrowed(self.0),
            Plain::Array(self.1.0),
        )]))
    }
}

impl ser::SerializeStructVariant for Variant<Object> {
    type Ok = Plain;
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        ser::SerializeStruct::serialize_field(&mut self.1, key, value)
    }

    fn end(self) -> Result<Plain, Unsupported> {
        Ok(Plain::Object(vec![(
            Cow::Borrowed(self.0),
            Plain::Object(self.1.entries),
        )]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    enum Shape {
        Dot,
        Circle(f64),
        Rect(u8, u8),
        Named { name: String, sides: Option<u32> },
    }

    #[derive(Serialize)]
    struct Newtype(i128);

    #[derive(Serialize)]
    struct Args {
        a: i64,
        b: f32,
        c: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        d: Option<bool>,
        shapes: Vec<Shape>,
        tags: BTreeMap<String, u64>,
        n: Newtype,
        bytes: Vec<u8>,
        ch: char,
        unit: (),
        tuple: (u16, &'static str),
        nan: f64,
        #[serde(flatten)]
        extra: BTreeMap<String, i32>,
    }

    fn same<T: Serialize>(value: &T) {
        let plain = Plain::of(value).expect("representable");
        let made = plain.to_value();
        let expected = serde_json::to_value(value).unwrap();
        assert_eq!(made, expected);
        // and in the same key order, which `==` on objects does not compare
        assert_eq!(made.to_string(), expected.to_string());
    }

    #[test]
    fn the_tree_makes_the_value_serde_json_makes() {
        let args = Args {
            a: -3,
            b: 0.1,
            c: None,
            d: None,
            shapes: vec![
                Shape::Dot,
                Shape::Circle(2.5),
                Shape::Rect(1, 2),
                Shape::Named {
                    name: "tri".into(),
                    sides: Some(3),
                },
            ],
            tags: [("z".to_owned(), 1), ("a".to_owned(), 2)].into(),
            n: Newtype(-(1 << 40)),
            bytes: vec![0, 255],
            ch: 'é',
            unit: (),
            tuple: (7, "x"),
            nan: f64::NAN,
            // a key the struct also has: `serde_json` keeps its first place and the last value
            extra: [("a".to_owned(), 9), ("zz".to_owned(), 1)].into(),
        };
        same(&args);
        same(&vec![Some(1u32), None]);
        same(&(i8::MIN, i16::MIN, i32::MIN, i64::MIN, -1i64, 0i64, i64::MAX));
        same(&(u8::MAX, u16::MAX, u32::MAX, u64::MAX, true, false));
        same(&(
            1i128,
            -1i128,
            u128::from(u64::MAX),
            f32::MIN_POSITIVE,
            f64::MAX,
        ));
        same(&"text");
    }

    #[test]
    fn what_the_tree_cannot_mirror_is_left_to_serde_json() {
        // map keys serde_json writes as text its own way
        let numbers: BTreeMap<u32, u32> = [(1, 2)].into();
        assert!(Plain::of(&numbers).is_none());
        // a number serde_json's value serializer refuses
        assert!(Plain::of(&u128::MAX).is_none());
        // a raw value, which serde_json's value serializer parses
        let raw = serde_json::value::RawValue::from_string("{\"a\":1}".into()).unwrap();
        assert!(Plain::of(&raw).is_none());
    }
}
