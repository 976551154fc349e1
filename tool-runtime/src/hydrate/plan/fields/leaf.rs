//! [`Leaf`]: the field types a reader deserializes with serde directly and checks as read.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer};

use super::{AsLeaf, KindSeed, Place, refused};
use crate::hydrate::plan::compare::{Scalar, Sent, SentVisitor};
use crate::hydrate::plan::walk::{self, Walker};

/// A type whose deserialization from JSON text is exactly known, so that reading it with serde
/// and checking what was read is the same as checking what was sent: a string reads only a
/// JSON string, an integer only a JSON integer in its range, a float any number (checked as
/// sent, before conversion), an option `null` or its inner type, a vector an array of its
/// element type.
pub trait Leaf: Sized {
    /// Reads the value, checking it against `place`.
    fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error>;
}

impl Leaf for String {
    // inlined into the field's read (and the element loop of a vector), as serde's derive
    // inlines its fields' reads: a string is the commonest field
    #[inline(always)]
    fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error> {
        let s = String::deserialize(de)?;
        place.check(Scalar::Str(&s))?;
        Ok(s)
    }
}

impl Leaf for bool {
    #[inline]
    fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error> {
        let b = bool::deserialize(de)?;
        place.check(Scalar::Bool(b))?;
        Ok(b)
    }
}

macro_rules! integer_leaf {
    ($($ty:ty => $scalar:ident as $wide:ty),* $(,)?) => {$(
        impl Leaf for $ty {
            #[inline]
            fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error> {
                // serde reads only a JSON integer that fits: the value is the number sent
                let v = <$ty>::deserialize(de)?;
                place.check(Scalar::$scalar(v as $wide))?;
                Ok(v)
            }
        }
    )*};
}

integer_leaf!(
    u8 => U as u64, u16 => U as u64, u32 => U as u64, u64 => U as u64, usize => U as u64,
    i8 => I as i64, i16 => I as i64, i32 => I as i64, i64 => I as i64, isize => I as i64,
);

macro_rules! float_leaf {
    ($($ty:ty => $method:ident),* $(,)?) => {$(
        impl Leaf for $ty {
            #[inline]
            fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error> {
                let sent = de.$method(SentVisitor)?;
                place.check(sent.scalar())?;
                // the conversions serde's own float impls make from each kind of number
                Ok(match sent {
                    Sent::U(u) => u as $ty,
                    Sent::I(i) => i as $ty,
                    Sent::F(f) => f as $ty,
                })
            }
        }
    )*};
}

float_leaf!(f32 => deserialize_f32, f64 => deserialize_f64);

impl<T: Leaf> Leaf for Option<T> {
    #[inline]
    fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error> {
        struct OptionVisitor<'p, T>(Place<'p>, PhantomData<fn() -> T>);

        impl<'de, T: Leaf> de::Visitor<'de> for OptionVisitor<'_, T> {
            type Value = Option<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("null or a value")
            }

            fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
                self.0.check(Scalar::Null)?;
                Ok(None)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
                self.visit_none()
            }

            fn visit_some<D2: Deserializer<'de>>(self, de: D2) -> Result<Option<T>, D2::Error> {
                T::read(de, self.0).map(Some)
            }
        }

        de.deserialize_option(OptionVisitor::<T>(place, PhantomData))
    }
}

impl<T: Leaf> Leaf for Vec<T> {
    fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error> {
        struct VecVisitor<'p, T>(Place<'p>, PhantomData<fn() -> T>);

        impl<'de, T: Leaf> de::Visitor<'de> for VecVisitor<'_, T> {
            type Value = Vec<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }

            fn visit_seq<S: de::SeqAccess<'de>>(self, mut seq: S) -> Result<Vec<T>, S::Error> {
                let mut items = self.0.0.seq().map_err(|_| refused::<S::Error>())?;
                // every element has the same place (its node and depth do not depend on its
                // index); one with nothing to check and no depth to count still has its type's
                // own checks (there are none below a leaf's element type)
                let place = Place(items.item().unwrap_or(Walker {
                    plan: self.0.0.plan,
                    node: self.0.0.plan.any,
                    depth: walk::UNLIMITED,
                }));
                let mut out = Vec::new();
                loop {
                    let seed = KindSeed {
                        kind: AsLeaf::<T>(PhantomData),
                        place,
                        _value: PhantomData,
                    };
                    match seq.next_element_seed(seed)? {
                        Some(v) => {
                            items.counted();
                            out.push(v);
                        }
                        None => break,
                    }
                }
                items.finish().map_err(|_| refused::<S::Error>())?;
                Ok(out)
            }
        }

        de.deserialize_seq(VecVisitor::<T>(place, PhantomData))
    }
}
