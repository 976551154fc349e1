//! Numbers as sent, and numbers and values compared exactly as the validator compares them: an
//! integer with an integer limit, a float with an integer without rounding either, `1` equal to
//! `1.0`.

use std::cmp::Ordering;
use std::fmt;

use serde::de;
use serde_json::{Number, Value};

use super::{Limit, TypeSet};

#[derive(Clone, Copy)]
pub(super) enum Scalar<'a> {
    Null,
    Bool(bool),
    I(i64),
    U(u64),
    F(f64),
    Str(&'a str),
}

impl Scalar<'_> {
    pub(super) fn to_value(self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::I(i) => Value::from(i),
            Scalar::U(u) => Value::from(u),
            Scalar::F(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
            Scalar::Str(s) => Value::from(s),
        }
    }
}

pub(super) fn admits(t: TypeSet, s: Scalar<'_>) -> bool {
    match s {
        Scalar::Null => t.has(TypeSet::NULL),
        Scalar::Bool(_) => t.has(TypeSet::BOOLEAN),
        Scalar::I(_) | Scalar::U(_) => t.has(TypeSet::NUMBER) || t.has(TypeSet::INTEGER),
        Scalar::F(f) => {
            t.has(TypeSet::NUMBER) || (t.has(TypeSet::INTEGER) && f.is_finite() && f.fract() == 0.0)
        }
        Scalar::Str(_) => t.has(TypeSet::STRING),
    }
}

/// `value` compared with a limit, exactly as the validator compares: an integer with an integer
/// limit, and a float with an integer (either way round) without rounding the integer to a
/// float first (`2^64` as a float is above `u64::MAX`, which is the same float). Two floats are
/// compared as floats; an incomparable pair (NaN) counts as below.
// inlined into each check, where the kind of the value is known and prunes the other arms
#[inline(always)]
pub(super) fn compare_limit(value: Scalar<'_>, limit: Limit) -> Ordering {
    match (value, limit.exact) {
        (Scalar::I(i), Some(l)) => i128::from(i).cmp(&l),
        (Scalar::U(u), Some(l)) => i128::from(u).cmp(&l),
        (Scalar::I(i), None) => float_to_integer(limit.float, i128::from(i)).reverse(),
        (Scalar::U(u), None) => float_to_integer(limit.float, i128::from(u)).reverse(),
        (Scalar::F(f), Some(l)) => float_to_integer(f, l),
        (Scalar::F(f), None) => f.partial_cmp(&limit.float).unwrap_or(Ordering::Less),
        _ => Ordering::Equal,
    }
}

/// A float compared with an integer, exactly; NaN counts as below.
fn float_to_integer(f: f64, i: i128) -> Ordering {
    // every float in (-2^127, 2^127) has an integer part an `i128` holds exactly
    const BEYOND: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0; // 2^127
    if f.is_nan() {
        return Ordering::Less;
    }
    if f >= BEYOND {
        return Ordering::Greater;
    }
    if f <= -BEYOND {
        return Ordering::Less;
    }
    let whole = f.trunc();
    // equal integer parts: the fraction's sign decides
    (whole as i128)
        .cmp(&i)
        .then_with(|| f.partial_cmp(&whole).unwrap_or(Ordering::Equal))
}

/// `value` compared with a number of the schema.
pub(super) fn compare(value: Scalar<'_>, limit: &Number) -> Ordering {
    compare_limit(value, Limit::of(limit))
}

#[inline]
pub(super) fn scalar_eq(s: Scalar<'_>, v: &Value) -> bool {
    match (s, v) {
        (Scalar::Null, Value::Null) => true,
        (Scalar::Bool(a), Value::Bool(b)) => a == *b,
        (Scalar::Str(a), Value::String(b)) => a == b,
        (Scalar::I(_) | Scalar::U(_) | Scalar::F(_), Value::Number(n)) => {
            compare(s, n) == Ordering::Equal
        }
        _ => false,
    }
}

/// JSON equality as JSON Schema defines it: `1` equals `1.0`.
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(_)) => {
            let s = if let Some(i) = x.as_i64() {
                Scalar::I(i)
            } else if let Some(u) = x.as_u64() {
                Scalar::U(u)
            } else {
                Scalar::F(x.as_f64().unwrap_or(f64::NAN))
            };
            scalar_eq(s, b)
        }
        _ => a == b,
    }
}

/// A JSON number as sent, before any conversion to the field's float type.
#[derive(Clone, Copy)]
pub(super) enum Sent {
    U(u64),
    I(i64),
    F(f64),
}

impl Sent {
    pub(super) fn scalar(self) -> Scalar<'static> {
        match self {
            Sent::U(u) => Scalar::U(u),
            Sent::I(i) => Scalar::I(i),
            Sent::F(f) => Scalar::F(f),
        }
    }

    /// The conversion serde's own `f32` makes from each kind of number.
    pub(super) fn to_f32(self) -> f32 {
        match self {
            Sent::U(u) => u as f32,
            Sent::I(i) => i as f32,
            Sent::F(f) => f as f32,
        }
    }
}

pub(super) struct SentVisitor;

impl de::Visitor<'_> for SentVisitor {
    type Value = Sent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Sent, E> {
        Ok(Sent::U(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Sent, E> {
        Ok(Sent::I(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Sent, E> {
        Ok(Sent::F(v))
    }
}
