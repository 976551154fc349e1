//! Checking arguments against a [`Plan`] *as they were sent*, while serde deserializes them.
//!
//! The fast path must decide exactly what the validator decides on the raw JSON. Checking the
//! typed value after deserialization is not enough: serde can accept more than the schema says
//! (`#[serde(alias)]`, `deserialize_with`, `#[serde(other)]`, a struct given as an array, a
//! hand-written `Deserialize` in a nested type, ...) and the typed value no longer shows what was
//! sent. So the deserializer itself is wrapped: every scalar, key, array and object the argument
//! type reads passes through the plan's checks first, values the type skips are read and checked
//! anyway, and keys are matched as they appear in the text. Whatever the argument type's serde
//! attributes, the plan sees the document the validator would see.
//!
//! This is used only with serde_json's text deserializer, which refuses an array or object that a
//! visitor did not read to its end; the per-container checks (required keys, counts) therefore
//! run once the visitor returns and see every entry.

use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::compare::Scalar;
use super::walk::{ObjectWalker, SeqWalker, Walker};

/// The message of a refusal; never shown (the validator explains refusals), but visible when
/// debugging the fast path.
const REFUSED: &str = "refused by the schema's compiled checks";

fn refused<E: de::Error>() -> E {
    E::custom(REFUSED)
}

/// A deserializer whose every value is checked by `walker` before the visitor sees it.
pub(super) struct Guard<'p, D> {
    pub(super) walker: Walker<'p>,
    pub(super) de: D,
}

macro_rules! forward_checked {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method(Checked { walker: self.walker, visitor })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Guard<'_, D> {
    type Error = D::Error;

    forward_checked!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
    );

    /// A value the type skips is still read, so that the plan checks it.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_any(Checked {
            walker: self.walker,
            visitor,
        })
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_unit_struct(
            name,
            Checked {
                walker: self.walker,
                visitor,
            },
        )
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        // serde_json's private tokens (`RawValue`, arbitrary-precision numbers) hand the visitor a
        // made-up map instead of the value as written; the plan cannot check that
        if name.starts_with("$serde_json::private::") {
            return Err(refused());
        }
        self.de.deserialize_newtype_struct(
            name,
            Checked {
                walker: self.walker,
                visitor,
            },
        )
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_tuple(
            len,
            Checked {
                walker: self.walker,
                visitor,
            },
        )
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_tuple_struct(
            name,
            len,
            Checked {
                walker: self.walker,
                visitor,
            },
        )
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_struct(
            name,
            fields,
            Checked {
                walker: self.walker,
                visitor,
            },
        )
    }

    /// Read as what was sent: a unit variant's string is checked like any string. The form of
    /// a data variant (`{"Variant": ..}`) goes to the slow path; derived schemas put such enums
    /// out of the plan's reach anyway.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.de.deserialize_any(Checked {
            walker: self.walker,
            visitor: UnitVariant(visitor),
        })
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// A visitor that checks what it is given, then hands it on.
struct Checked<'p, V> {
    walker: Walker<'p>,
    visitor: V,
}

macro_rules! visit_scalar {
    ($($method:ident($ty:ty) => $scalar:expr),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            #[allow(clippy::redundant_closure_call)]
            let scalar = ($scalar)(v);
            self.walker.scalar(scalar).map_err(|_| refused::<E>())?;
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Checked<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    visit_scalar!(
        visit_bool(bool) => Scalar::Bool,
        visit_i8(i8) => |v: i8| Scalar::I(v.into()),
        visit_i16(i16) => |v: i16| Scalar::I(v.into()),
        visit_i32(i32) => |v: i32| Scalar::I(v.into()),
        visit_i64(i64) => Scalar::I,
        visit_u8(u8) => |v: u8| Scalar::U(v.into()),
        visit_u16(u16) => |v: u16| Scalar::U(v.into()),
        visit_u32(u32) => |v: u32| Scalar::U(v.into()),
        visit_u64(u64) => Scalar::U,
        visit_f32(f32) => |v: f32| Scalar::F(v.into()),
        visit_f64(f64) => Scalar::F,
        visit_str(&str) => Scalar::Str,
    );

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<V::Value, E> {
        let scalar = match (i64::try_from(v), u64::try_from(v)) {
            (Ok(i), _) => Scalar::I(i),
            (_, Ok(u)) => Scalar::U(u),
            _ => return Err(refused()),
        };
        self.walker.scalar(scalar).map_err(|_| refused::<E>())?;
        self.visitor.visit_i128(v)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<V::Value, E> {
        let u = u64::try_from(v).map_err(|_| refused::<E>())?;
        self.walker
            .scalar(Scalar::U(u))
            .map_err(|_| refused::<E>())?;
        self.visitor.visit_u128(v)
    }

    fn visit_char<E: de::Error>(self, v: char) -> Result<V::Value, E> {
        let mut buf = [0u8; 4];
        self.walker
            .scalar(Scalar::Str(v.encode_utf8(&mut buf)))
            .map_err(|_| refused::<E>())?;
        self.visitor.visit_char(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.walker
            .scalar(Scalar::Str(v))
            .map_err(|_| refused::<E>())?;
        self.visitor.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.walker
            .scalar(Scalar::Str(&v))
            .map_err(|_| refused::<E>())?;
        self.visitor.visit_string(v)
    }

    // serde_json hands a string to `deserialize_bytes` as its raw, unescaped bytes: not what the
    // validator sees, so only an unchecked place takes them
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<V::Value, E> {
        self.walker.only_if_any().map_err(|_| refused::<E>())?;
        self.visitor.visit_bytes(v)
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<V::Value, E> {
        self.walker.only_if_any().map_err(|_| refused::<E>())?;
        self.visitor.visit_borrowed_bytes(v)
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<V::Value, E> {
        self.walker.only_if_any().map_err(|_| refused::<E>())?;
        self.visitor.visit_byte_buf(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.walker
            .scalar(Scalar::Null)
            .map_err(|_| refused::<E>())?;
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.walker
            .scalar(Scalar::Null)
            .map_err(|_| refused::<E>())?;
        self.visitor.visit_unit()
    }

    fn visit_some<D2: Deserializer<'de>>(self, de: D2) -> Result<V::Value, D2::Error> {
        self.visitor.visit_some(Guard {
            walker: self.walker,
            de,
        })
    }

    fn visit_newtype_struct<D2: Deserializer<'de>>(self, de: D2) -> Result<V::Value, D2::Error> {
        self.visitor.visit_newtype_struct(Guard {
            walker: self.walker,
            de,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        let mut walker = self.walker.seq().map_err(|_| refused::<A::Error>())?;
        let out = self.visitor.visit_seq(GuardSeq {
            seq,
            walker: &mut walker,
        })?;
        walker.finish().map_err(|_| refused::<A::Error>())?;
        Ok(out)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        let mut walker = self.walker.object().map_err(|_| refused::<A::Error>())?;
        let seen = walker.counts_keys().then(Vec::new);
        let out = self.visitor.visit_map(GuardMap {
            map,
            walker: &mut walker,
            value: None,
            seen,
        })?;
        walker.finish().map_err(|_| refused::<A::Error>())?;
        Ok(out)
    }

    /// Only other deserializers than serde_json's call this; whatever the variant carries is
    /// out of the plan's reach.
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.walker
            .only_if_any()
            .map_err(|_| refused::<A::Error>())?;
        self.visitor.visit_enum(data)
    }
}

/// Turns a string into a unit variant, as serde_json does for `"Variant"`; anything else is
/// refused (the slow path decides).
struct UnitVariant<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for UnitVariant<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.0.visit_enum(StrDeserializer::<E>::new(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.0.visit_enum(BorrowedStrDeserializer::<E>::new(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.0.visit_enum(StringDeserializer::<E>::new(v))
    }
}

struct GuardSeq<'w, 'p, A> {
    seq: A,
    walker: &'w mut SeqWalker<'p>,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for GuardSeq<'_, '_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let out = match self.walker.item() {
            Some(walker) => self.seq.next_element_seed(GuardSeed { walker, seed })?,
            None => self.seq.next_element_seed(seed)?,
        };
        if out.is_some() {
            self.walker.counted();
        }
        Ok(out)
    }

    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

pub(super) struct GuardSeed<'p, S> {
    pub(super) walker: Walker<'p>,
    pub(super) seed: S,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for GuardSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Guard {
            walker: self.walker,
            de,
        })
    }
}

struct GuardMap<'w, 'p, A> {
    map: A,
    walker: &'w mut ObjectWalker<'p>,
    /// The check of the value after the key just read.
    value: Option<Walker<'p>>,
    /// Keys seen so far, kept only when the object's keys are counted: text may repeat a key.
    seen: Option<Vec<String>>,
}

impl<'de, 'p, A: MapAccess<'de>> MapAccess<'de> for GuardMap<'_, 'p, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        // The key is read as text first, recorded for the object's checks, then handed to the
        // type's own key deserializer as that same text: a key the type reads any other way
        // than as a string (a number, say) fails there, and the slow path decides.
        let Some(key) = self.map.next_key::<KeyText<'de>>()? else {
            return Ok(None);
        };
        let first = match &mut self.seen {
            Some(seen) if seen.iter().any(|k| k == key.as_str()) => false,
            Some(seen) => {
                seen.push(key.as_str().to_owned());
                true
            }
            None => true,
        };
        self.value = self.walker.child(key.as_str(), first);
        match key {
            KeyText::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)).map(Some),
            KeyText::Owned(k) => seed.deserialize(StringDeserializer::new(k)).map(Some),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        match self.value.take() {
            Some(walker) => self.map.next_value_seed(GuardSeed { walker, seed }),
            None => self.map.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A map key as sent, escapes decoded: borrowed from the text when it has none.
pub enum KeyText<'de> {
    /// Borrowed from the text.
    Borrowed(&'de str),
    /// Decoded from escapes.
    Owned(String),
}

impl KeyText<'_> {
    /// The key.
    pub fn as_str(&self) -> &str {
        match self {
            KeyText::Borrowed(k) => k,
            KeyText::Owned(k) => k,
        }
    }
}

impl<'de> de::Deserialize<'de> for KeyText<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct KeyTextVisitor;

        impl<'de> Visitor<'de> for KeyTextVisitor {
            type Value = KeyText<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<KeyText<'de>, E> {
                Ok(KeyText::Borrowed(v))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyText<'de>, E> {
                Ok(KeyText::Owned(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<KeyText<'de>, E> {
                Ok(KeyText::Owned(v))
            }
        }

        de.deserialize_str(KeyTextVisitor)
    }
}
