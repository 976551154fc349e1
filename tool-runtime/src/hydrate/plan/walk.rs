//! Checking a value against a [`Plan`] by serializing it into a checker: no allocation on the
//! common path, and the first violation stops the walk (the error list comes from the validator).

use std::cmp::Ordering;

use serde::ser::{self, Serialize};
use serde_json::{Number, Value};

use super::{Checks, Limit, Node, NodeId, Plan, Span, TypeSet};

/// The value does not satisfy the plan. Carries nothing: the validator explains.
#[derive(Debug)]
pub(crate) struct Reject;

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rejected by the plan")
    }
}

impl std::error::Error for Reject {}

impl ser::Error for Reject {
    fn custom<T: std::fmt::Display>(_msg: T) -> Self {
        Reject
    }
}

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
    fn to_value(self) -> Value {
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

/// What a node resolves to once references and nullability are followed.
enum Target<'p> {
    Any,
    Never,
    Checks(&'p Checks, bool),
}

/// The depth of a walk that counts no nesting (a `Value` whose depth was checked already).
pub(crate) const UNLIMITED: u32 = u32::MAX;

#[derive(Clone, Copy)]
pub(crate) struct Walker<'p> {
    pub(crate) plan: &'p Plan,
    pub(crate) node: NodeId,
    /// How many levels of arrays and objects may still open here; [`UNLIMITED`] for none.
    pub(crate) depth: u32,
}

impl<'p> Walker<'p> {
    /// The walker for a place below this one, `None` when nothing there needs walking: no
    /// check, and no depth to count.
    #[inline]
    fn below(plan: &'p Plan, node: Option<NodeId>, depth: u32) -> Option<Walker<'p>> {
        let walker = Walker {
            plan,
            node: node.unwrap_or(plan.any),
            depth,
        };
        (depth != UNLIMITED || !walker.is_any()).then_some(walker)
    }

    /// The depth left to the children of an array or object opened here.
    #[inline]
    pub(super) fn open(&self) -> Result<u32, Reject> {
        match self.depth {
            UNLIMITED => Ok(UNLIMITED),
            d => d.checked_sub(1).ok_or(Reject),
        }
    }
}

impl<'p> Walker<'p> {
    #[inline]
    fn resolve(&self) -> Target<'p> {
        let mut id = self.node;
        let mut nullable = false;
        loop {
            match &self.plan.nodes[id] {
                Node::Any => return Target::Any,
                Node::Never => return Target::Never,
                Node::Alias(next) => id = *next,
                Node::Nullable(next) => {
                    nullable = true;
                    id = *next;
                }
                Node::Checks(c) => return Target::Checks(c, nullable),
            }
        }
    }

    /// Whether nothing below this node is checked (`true`, or annotations only): then a value
    /// needs no walk at all.
    pub(super) fn is_any(&self) -> bool {
        matches!(self.resolve(), Target::Any)
    }

    // inlined so that each caller's scalar kind, known where it reads one, prunes the checks
    // of the other kinds
    #[inline(always)]
    pub(super) fn scalar(&self, s: Scalar<'_>) -> Result<(), Reject> {
        let (c, nullable) = match self.resolve() {
            Target::Any => return Ok(()),
            Target::Never => return Err(Reject),
            Target::Checks(c, n) => (c, n),
        };
        if nullable && matches!(s, Scalar::Null) {
            return Ok(());
        }
        if let Some(t) = c.types
            && !admits(t, s)
        {
            return Err(Reject);
        }
        if let Some(allowed) = &c.allowed
            && !allowed.iter().any(|v| scalar_eq(s, v))
        {
            return Err(Reject);
        }
        match s {
            Scalar::I(_) | Scalar::U(_) | Scalar::F(_) => {
                let cmp = |limit: Option<Limit>| limit.map(|l| compare_limit(s, l));
                if let Some(b) = c.bounds.as_deref()
                    && (cmp(b.minimum).is_some_and(Ordering::is_lt)
                        || cmp(b.exclusive_minimum).is_some_and(Ordering::is_le)
                        || cmp(b.maximum).is_some_and(Ordering::is_gt)
                        || cmp(b.exclusive_maximum).is_some_and(Ordering::is_ge))
                {
                    return Err(Reject);
                }
            }
            Scalar::Str(text) if !c.length.is_any() => {
                // The length in characters lies between a quarter of the byte length and the
                // byte length (UTF-8): count only when those bounds leave a limit undecided.
                let (fewest, most) = ((text.len() as u64).div_ceil(4), text.len() as u64);
                // with only one limit, the other (`0` or `u64::MAX`) decides every length
                let Span { min, max } = c.length;
                if most < min || fewest > max {
                    return Err(Reject);
                }
                let undecided = (fewest < min && most >= min) || (most > max && fewest <= max);
                if undecided && !c.length.admits(text.chars().count() as u64) {
                    return Err(Reject);
                }
            }
            Scalar::Str(_) | Scalar::Null | Scalar::Bool(_) => {}
        }
        if let Some(d) = &c.delegate
            && !d.is_valid(&s.to_value())
        {
            return Err(Reject);
        }
        Ok(())
    }

    /// Entering an array or object: `None` when anything goes below this point.
    #[inline]
    fn compound(&self, ty: TypeSet) -> Result<Option<&'p Checks>, Reject> {
        match self.resolve() {
            Target::Any => Ok(None),
            Target::Never => Err(Reject),
            Target::Checks(c, _) => {
                if c.types.is_some_and(|t| !t.has(ty)) || c.allowed.is_some() {
                    return Err(Reject);
                }
                Ok(Some(c))
            }
        }
    }

    pub(super) fn object(self) -> Result<ObjectWalker<'p>, Reject> {
        let checks = self.compound(TypeSet::OBJECT)?;
        Ok(ObjectWalker {
            plan: self.plan,
            depth: self.open()?,
            checks,
            seen_required: 0,
            count: 0,
            next: 0,
            key: String::new(),
        })
    }

    #[inline]
    pub(super) fn seq(self) -> Result<SeqWalker<'p>, Reject> {
        let checks = self.compound(TypeSet::ARRAY)?;
        Ok(SeqWalker {
            plan: self.plan,
            depth: self.open()?,
            checks,
            count: 0,
        })
    }

    /// Shapes a derived schema never needs the plan for (externally tagged data variants, raw
    /// bytes): accepted only where anything is.
    pub(super) fn only_if_any(&self) -> Result<(), Reject> {
        match self.resolve() {
            Target::Any => Ok(()),
            _ => Err(Reject),
        }
    }
}

fn admits(t: TypeSet, s: Scalar<'_>) -> bool {
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
fn compare_limit(value: Scalar<'_>, limit: Limit) -> Ordering {
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
fn compare(value: Scalar<'_>, limit: &Number) -> Ordering {
    compare_limit(value, Limit::of(limit))
}

fn scalar_eq(s: Scalar<'_>, v: &Value) -> bool {
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
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
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

pub(crate) struct ObjectWalker<'p> {
    plan: &'p Plan,
    /// The depth left to the values.
    depth: u32,
    checks: Option<&'p Checks>,
    seen_required: u64,
    count: u64,
    /// Where the next key is looked for first.
    next: usize,
    key: String,
}

impl<'p> ObjectWalker<'p> {
    /// Records the key `key` and returns the walker for its value: `None` when nothing checks
    /// the value. `count` is false for a key already seen (text may repeat a key; the value the
    /// validator sees has it once).
    pub(super) fn child(&mut self, key: &str, count: bool) -> Option<Walker<'p>> {
        self.count += u64::from(count);
        let Some(c) = self.checks else {
            return Walker::below(self.plan, None, self.depth);
        };
        // Keys mostly come in the schema's order (serde writes fields in declaration order, and
        // so do models copying the schema): try the slot after the last match first.
        let found = match c.keys.get(self.next) {
            Some(k) if &*k.name == key => Some(self.next),
            _ => c.keys.iter().position(|k| &*k.name == key),
        };
        let node = match found {
            Some(i) => {
                self.next = i + 1;
                let k = &c.keys[i];
                self.seen_required |= k.required;
                k.node.or(c.additional)
            }
            None => c.additional,
        };
        Walker::below(self.plan, node, self.depth)
    }

    /// Whether the object counts its keys (`minProperties`/`maxProperties`).
    pub(super) fn counts_keys(&self) -> bool {
        self.checks.is_some_and(|c| !c.property_count.is_any())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Reject> {
        match self.child(key, true) {
            Some(walker) => value.serialize(walker),
            None => Ok(()),
        }
    }

    pub(super) fn finish(self) -> Result<(), Reject> {
        let Some(c) = self.checks else {
            return Ok(());
        };
        if self.seen_required.count_ones() != c.required_count
            || !c.property_count.admits(self.count)
        {
            return Err(Reject);
        }
        Ok(())
    }
}

impl ser::SerializeStruct for ObjectWalker<'_> {
    type Ok = ();
    type Error = Reject;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Reject> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Reject> {
        self.finish()
    }
}

impl ser::SerializeMap for ObjectWalker<'_> {
    type Ok = ();
    type Error = Reject;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Reject> {
        self.key.clear();
        key.serialize(KeyWriter(&mut self.key))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Reject> {
        let key = std::mem::take(&mut self.key);
        let result = self.field(&key, value);
        self.key = key;
        result
    }

    fn end(self) -> Result<(), Reject> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for ObjectWalker<'_> {
    type Ok = ();
    type Error = Reject;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Reject> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Reject> {
        self.finish()
    }
}

pub(crate) struct SeqWalker<'p> {
    plan: &'p Plan,
    /// The depth left to the elements.
    depth: u32,
    checks: Option<&'p Checks>,
    count: u64,
}

impl<'p> SeqWalker<'p> {
    /// The walker for the next element, `None` when nothing checks it; [`SeqWalker::counted`]
    /// is called once the element was there.
    #[inline]
    pub(super) fn item(&self) -> Option<Walker<'p>> {
        Walker::below(self.plan, self.checks.and_then(|c| c.items), self.depth)
    }

    #[inline]
    pub(super) fn counted(&mut self) {
        self.count += 1;
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Reject> {
        self.count += 1;
        match self.item() {
            Some(walker) => value.serialize(walker),
            None => Ok(()),
        }
    }

    #[inline]
    pub(super) fn finish(self) -> Result<(), Reject> {
        match self.checks {
            Some(c) if !c.item_count.admits(self.count) => Err(Reject),
            _ => Ok(()),
        }
    }
}

macro_rules! seq_like {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for SeqWalker<'_> {
            type Ok = ();
            type Error = Reject;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Reject> {
                self.element(value)
            }

            fn end(self) -> Result<(), Reject> {
                self.finish()
            }
        }
    )*};
}

seq_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl<'p> ser::Serializer for Walker<'p> {
    type Ok = ();
    type Error = Reject;
    type SerializeSeq = SeqWalker<'p>;
    type SerializeTuple = SeqWalker<'p>;
    type SerializeTupleStruct = SeqWalker<'p>;
    type SerializeTupleVariant = SeqWalker<'p>;
    type SerializeMap = ObjectWalker<'p>;
    type SerializeStruct = ObjectWalker<'p>;
    type SerializeStructVariant = ObjectWalker<'p>;

    fn serialize_bool(self, v: bool) -> Result<(), Reject> {
        self.scalar(Scalar::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), Reject> {
        self.scalar(Scalar::I(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<(), Reject> {
        self.scalar(Scalar::I(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<(), Reject> {
        self.scalar(Scalar::I(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<(), Reject> {
        self.scalar(Scalar::I(v))
    }
    fn serialize_i128(self, v: i128) -> Result<(), Reject> {
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(i), _) => self.scalar(Scalar::I(i)),
            (_, Ok(u)) => self.scalar(Scalar::U(u)),
            _ => Err(Reject),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), Reject> {
        self.scalar(Scalar::U(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Reject> {
        self.scalar(Scalar::U(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<(), Reject> {
        self.scalar(Scalar::U(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<(), Reject> {
        self.scalar(Scalar::U(v))
    }
    fn serialize_u128(self, v: u128) -> Result<(), Reject> {
        u64::try_from(v)
            .map_err(|_| Reject)
            .and_then(|u| self.scalar(Scalar::U(u)))
    }
    fn serialize_f32(self, v: f32) -> Result<(), Reject> {
        self.scalar(Scalar::F(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Reject> {
        // serde_json writes non-finite floats as null
        if v.is_finite() {
            self.scalar(Scalar::F(v))
        } else {
            self.scalar(Scalar::Null)
        }
    }
    fn serialize_char(self, v: char) -> Result<(), Reject> {
        let mut buf = [0u8; 4];
        self.scalar(Scalar::Str(v.encode_utf8(&mut buf)))
    }
    fn serialize_str(self, v: &str) -> Result<(), Reject> {
        self.scalar(Scalar::Str(v))
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<(), Reject> {
        self.only_if_any()
    }
    fn serialize_none(self) -> Result<(), Reject> {
        self.scalar(Scalar::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Reject> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Reject> {
        self.scalar(Scalar::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Reject> {
        self.scalar(Scalar::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Reject> {
        self.scalar(Scalar::Str(variant))
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
        self.only_if_any()
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<SeqWalker<'p>, Reject> {
        self.seq()
    }
    fn serialize_tuple(self, _len: usize) -> Result<SeqWalker<'p>, Reject> {
        self.seq()
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<SeqWalker<'p>, Reject> {
        self.seq()
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<SeqWalker<'p>, Reject> {
        self.only_if_any()?;
        Ok(SeqWalker {
            plan: self.plan,
            depth: self.open()?,
            checks: None,
            count: 0,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<ObjectWalker<'p>, Reject> {
        self.object()
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<ObjectWalker<'p>, Reject> {
        self.object()
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<ObjectWalker<'p>, Reject> {
        self.only_if_any()?;
        Ok(ObjectWalker {
            plan: self.plan,
            depth: self.open()?,
            checks: None,
            seen_required: 0,
            count: 0,
            next: 0,
            key: String::new(),
        })
    }
}

/// Writes a map key as serde_json would (strings as they are, numbers and bools as text).
struct KeyWriter<'a>(&'a mut String);

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
