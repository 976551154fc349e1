//! [`Leaf`]: the field types a reader deserializes with serde directly and checks as read.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess};

use super::{AsLeaf, KindSeed, Place, refused};
use crate::hydrate::plan::Quick;
use crate::hydrate::plan::compare::{Scalar, SentVisitor};
use crate::hydrate::plan::walk::{self, SeqWalker, Walker};

/// A type whose deserialization from JSON text is exactly known, so that reading it with serde
/// and checking what was read is the same as checking what was sent: a string reads only a
/// JSON string, an integer only a JSON integer in its range, a float any number (checked as
/// sent, before conversion), an option `null` or its inner type, a vector an array of its
/// element type.
pub trait Leaf: Sized {
    /// Reads the value, checking it against `place`.
    fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error>;

    /// Reads the next value of `map`, checked against `place`.
    #[inline(always)]
    fn value<'de, M: MapAccess<'de>>(map: &mut M, place: Place<'_>) -> Result<Self, M::Error> {
        map.next_value_seed(seed::<Self>(place))
    }

    /// Reads the next element of `seq`, checked against `place`; `None` at the end.
    #[inline(always)]
    fn element<'de, S: SeqAccess<'de>>(
        seq: &mut S,
        place: Place<'_>,
    ) -> Result<Option<Self>, S::Error> {
        seq.next_element_seed(seed::<Self>(place))
    }

    /// [`Leaf::value`] of an `Option<Self>`.
    #[inline(always)]
    fn option_value<'de, M: MapAccess<'de>>(
        map: &mut M,
        place: Place<'_>,
    ) -> Result<Option<Self>, M::Error> {
        map.next_value_seed(seed::<Option<Self>>(place))
    }

    /// [`Leaf::value`] of a `Vec<Self>`.
    #[inline(always)]
    fn vec_value<'de, M: MapAccess<'de>>(
        map: &mut M,
        place: Place<'_>,
    ) -> Result<Vec<Self>, M::Error> {
        map.next_value_seed(seed::<Vec<Self>>(place))
    }
}

#[inline(always)]
fn seed<T: Leaf>(place: Place<'_>) -> KindSeed<'_, T, AsLeaf<T>> {
    KindSeed {
        kind: AsLeaf(PhantomData),
        place,
        _value: PhantomData,
    }
}

/// The leaves serde reads without a place: `read`, `value`, `element`, `option_value` and
/// `vec_value` read them (and options and vectors of them) with serde's own seed and check what
/// was read afterwards. A map's or a sequence's read of the next value is then the one serde's
/// derive instantiates for the same type (small enough to be inlined into the reader, as it is
/// into the derive's visitor), and the check stays out of it. `$check` checks `$v`, a reference
/// to the value read, at `$place`.
macro_rules! checked_after {
    ($ty:ty, |$place:ident, $v:ident| $check:expr) => {
        impl Leaf for $ty {
            #[inline]
            fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error> {
                let value = <$ty>::deserialize(de)?;
                let ($place, $v) = (place, &value);
                $check?;
                Ok(value)
            }

            #[inline(always)]
            fn value<'de, M: MapAccess<'de>>(
                map: &mut M,
                place: Place<'_>,
            ) -> Result<Self, M::Error> {
                let value = map.next_value::<$ty>()?;
                let ($place, $v) = (place, &value);
                $check?;
                Ok(value)
            }

            #[inline(always)]
            fn element<'de, S: SeqAccess<'de>>(
                seq: &mut S,
                place: Place<'_>,
            ) -> Result<Option<Self>, S::Error> {
                let Some(value) = seq.next_element::<$ty>()? else {
                    return Ok(None);
                };
                let ($place, $v) = (place, &value);
                $check?;
                Ok(Some(value))
            }

            #[inline(always)]
            fn option_value<'de, M: MapAccess<'de>>(
                map: &mut M,
                place: Place<'_>,
            ) -> Result<Option<Self>, M::Error> {
                let value = map.next_value::<Option<$ty>>()?;
                match &value {
                    None => place.check(Scalar::Null)?,
                    Some($v) => {
                        let $place = place;
                        $check?
                    }
                }
                Ok(value)
            }

            #[inline(always)]
            fn vec_value<'de, M: MapAccess<'de>>(
                map: &mut M,
                place: Place<'_>,
            ) -> Result<Vec<Self>, M::Error> {
                let value = map.next_value::<Vec<$ty>>()?;
                let $place = place.scalars(value.len())?;
                for $v in &value {
                    $check?;
                }
                Ok(value)
            }
        }
    };
}

checked_after!(String, |place, s| place.check(Scalar::Str(s)));
checked_after!(bool, |place, b| place.check(Scalar::Bool(*b)));

macro_rules! integer_leaf {
    ($($ty:ty => $scalar:ident as $wide:ty),* $(,)?) => {$(
        // serde reads only a JSON integer that fits: the value is the number sent
        checked_after!($ty, |place, v| place.check(Scalar::$scalar(*v as $wide)));
    )*};
}

integer_leaf!(
    u8 => U as u64, u16 => U as u64, u32 => U as u64, u64 => U as u64, usize => U as u64,
    i8 => I as i64, i16 => I as i64, i32 => I as i64, i64 => I as i64, isize => I as i64,
);

// An `f64` is checked as the float serde read: the verdict on the number sent wherever the two
// are the same number, which they are below 2^53 in magnitude (every integer there is exactly a
// float). A larger float that is not accepted outright is refused here, and the slow path
// judges the number as sent.
checked_after!(f64, |place, v| place.check_float(*v));

/// An `f32` is read as the number sent and checked as sent, before its conversion: serde's
/// `f32` rounds what it reads, so the float read may not be the number sent.
impl Leaf for f32 {
    #[inline]
    fn read<'de, D: Deserializer<'de>>(de: D, place: Place<'_>) -> Result<Self, D::Error> {
        let sent = de.deserialize_f32(SentVisitor)?;
        place.check(sent.scalar())?;
        Ok(sent.to_f32())
    }
}

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

    #[inline(always)]
    fn value<'de, M: MapAccess<'de>>(map: &mut M, place: Place<'_>) -> Result<Self, M::Error> {
        T::option_value(map, place)
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
                let (mut items, place) = self.0.items()?;
                let mut out = Vec::new();
                while let Some(v) = T::element(&mut seq, place)? {
                    items.counted();
                    out.push(v);
                }
                items.finish().map_err(|_| refused::<S::Error>())?;
                Ok(out)
            }
        }

        de.deserialize_seq(VecVisitor::<T>(place, PhantomData))
    }

    #[inline(always)]
    fn value<'de, M: MapAccess<'de>>(map: &mut M, place: Place<'_>) -> Result<Self, M::Error> {
        T::vec_value(map, place)
    }
}

impl<'p> Place<'p> {
    /// Checks `value`, an `f64` serde read, as `checked_after!(f64, ..)` says.
    #[inline(always)]
    fn check_float<E: de::Error>(&self, value: f64) -> Result<(), E> {
        if self.quick.accepts(Scalar::F(value)) {
            return Ok(());
        }
        if value.abs() >= Quick::EXACT {
            return Err(refused());
        }
        self.walker.scalar(Scalar::F(value)).map_err(|_| refused())
    }

    /// The place of the elements of an array of `len` scalars here, once the array as a whole
    /// passed its checks (see `Walker::scalars`).
    #[inline(always)]
    fn scalars<E: de::Error>(self, len: usize) -> Result<Place<'p>, E> {
        self.walker
            .scalars(len)
            .map(Place::at)
            .map_err(|_| refused())
    }

    /// The walker of an array at this place, and the place of its elements: every element has
    /// the same place (its node and depth do not depend on its index). One with nothing to
    /// check and no depth to count still has its type's own checks (there are none below a
    /// leaf's element type).
    #[inline]
    fn items<E: de::Error>(self) -> Result<(SeqWalker<'p>, Place<'p>), E> {
        let items = self.walker.seq().map_err(|_| refused::<E>())?;
        let place = Place::at(items.item().unwrap_or(Walker {
            plan: self.walker.plan,
            node: self.walker.plan.any,
            depth: walk::UNLIMITED,
        }));
        Ok((items, place))
    }
}
