//! Checking a value against a [`Plan`] by serializing it into a checker: no allocation on the
//! common path, and the first violation stops the walk (the error list comes from the validator).

use std::cmp::Ordering;

use serde::ser::{self, Serialize};

use super::compare::{Scalar, admits, compare_limit, scalar_eq};
use super::keys::KeyWriter;
use super::{Checks, Limit, Node, NodeId, Plan, Quick, Reject, Span, TypeSet};

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
        (!walker.checks_nothing()).then_some(walker)
    }

    /// Whether a value here needs no walk at all: nothing is checked and no depth is counted.
    #[inline]
    pub(super) fn checks_nothing(&self) -> bool {
        self.depth == UNLIMITED && self.is_any()
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

    /// What a scalar here is accepted by outright (see [`Quick`]).
    pub(super) fn quick(&self) -> Quick {
        match self.resolve() {
            Target::Any => Quick::ALL,
            Target::Never => Quick::NONE,
            Target::Checks(c, false) => c.quick,
            Target::Checks(c, true) => c.quick.or_null(),
        }
    }

    /// The same, where the plan holds it: a nullable node's is not held (its scalars are then
    /// all judged by the full checks).
    #[inline]
    pub(super) fn quick_ref(&self) -> &'p Quick {
        match self.resolve() {
            Target::Any => &Quick::ALL,
            Target::Checks(c, false) => &c.quick,
            Target::Never | Target::Checks(_, true) => &Quick::NONE,
        }
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
        if c.quick.accepts(s) || (nullable && matches!(s, Scalar::Null)) {
            return Ok(());
        }
        checked(c, s)
    }
}

/// The full checks of `c` on a scalar the quick ones did not accept outright: out of line, since
/// most values never need them.
#[inline(never)]
fn checked(c: &Checks, s: Scalar<'_>) -> Result<(), Reject> {
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

impl<'p> Walker<'p> {
    /// An array of `len` scalars here, judged as a whole (its type, item count and depth): the
    /// walker its elements are checked at, which nothing below them needs.
    #[inline(always)]
    pub(super) fn scalars(&self, len: usize) -> Result<Walker<'p>, Reject> {
        let depth = self.open()?;
        let node = match self.compound(TypeSet::ARRAY)? {
            Some(c) if !c.item_count.admits(len as u64) => return Err(Reject),
            Some(c) => c.items.unwrap_or(self.plan.any),
            None => self.plan.any,
        };
        Ok(Walker {
            plan: self.plan,
            node,
            depth,
        })
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
