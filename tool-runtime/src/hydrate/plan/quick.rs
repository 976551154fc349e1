//! [`Quick`]: the scalars a schema node accepts outright, worked out when the plan is compiled.

use super::compare::Scalar;
use super::{Bounds, Checks, Limit, Span, TypeSet};

/// The scalars a node accepts whatever else its checks say, worked out once when the plan is
/// compiled: a string of a byte length in a range, a number in a range, a null or a boolean.
/// Most values of a derived schema fall in it, and then the verdict costs a few comparisons
/// instead of the walk through every keyword. It only ever admits a subset of what the full
/// checks admit: a scalar outside it is judged by them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Quick {
    /// [`Quick::NULL`], [`Quick::BOOL`], [`Quick::FLOAT`].
    kinds: u8,
    /// The byte lengths of strings accepted outright, both ends included (`u32` keeps the
    /// node small; a longer string is judged by the full checks).
    bytes: [u32; 2],
    /// The numbers accepted outright, both ends included (floats only with [`Quick::FLOAT`]).
    numbers: [f64; 2],
}

impl Quick {
    const NULL: u8 = 1;
    const BOOL: u8 = 2;
    /// Floats are accepted in `numbers` too (integers always are): the type is not
    /// integer-only, whose floats need a look at their fraction.
    const FLOAT: u8 = 4;

    /// 2^53: below it in magnitude every integer is exactly a float.
    pub(super) const EXACT: f64 = 9_007_199_254_740_992.0;

    /// Accepts nothing outright.
    pub(super) const NONE: Quick = Quick {
        kinds: 0,
        bytes: [1, 0],
        numbers: [f64::INFINITY, f64::NEG_INFINITY],
    };

    /// Accepts every scalar: a node that checks nothing.
    pub(super) const ALL: Quick = Quick {
        kinds: Quick::NULL | Quick::BOOL | Quick::FLOAT,
        bytes: [0, u32::MAX - 1],
        numbers: [f64::NEG_INFINITY, f64::INFINITY],
    };

    /// What `c`'s checks accept outright.
    pub(super) fn of(c: &Checks) -> Quick {
        // a value list or a delegated keyword has the last word on every value
        if c.allowed.is_some() || c.delegate.is_some() {
            return Quick::NONE;
        }
        let has = |t: TypeSet| c.types.is_none_or(|types| types.has(t));
        let mut quick = Quick::NONE;
        if has(TypeSet::NULL) {
            quick.kinds |= Quick::NULL;
        }
        if has(TypeSet::BOOLEAN) {
            quick.kinds |= Quick::BOOL;
        }
        if has(TypeSet::STRING) {
            // a string of `b` bytes has between `ceil(b / 4)` and `b` characters (UTF-8): the
            // byte lengths for which both ends lie within the limits on characters
            let Span { min, max } = c.length;
            let min = if min == 0 {
                0
            } else {
                min.saturating_mul(4).saturating_sub(3)
            };
            // `u32::MAX` stands for every longer length (see `accepts`), so no range reaches it
            let top = u64::from(u32::MAX - 1);
            quick.bytes = if min > top {
                Quick::NONE.bytes
            } else {
                [min as u32, max.min(top) as u32]
            };
        }
        if has(TypeSet::NUMBER) {
            quick.kinds |= Quick::FLOAT;
        }
        if has(TypeSet::NUMBER) || has(TypeSet::INTEGER) {
            quick.numbers = Quick::range(c.bounds.as_deref());
        }
        quick
    }

    /// The numbers `bounds` admits, as a range of floats that every number converts into
    /// without changing a verdict: each limit a float of magnitude below 2^53, where integers
    /// and their floats coincide and a larger integer converts to a float beyond the limit. An
    /// exclusive limit, or a larger one, leaves the range empty (the full checks decide).
    fn range(bounds: Option<&Bounds>) -> [f64; 2] {
        let Some(b) = bounds else {
            return [f64::NEG_INFINITY, f64::INFINITY];
        };
        let small = |l: Option<Limit>| l.is_none_or(|l| l.float.abs() < Quick::EXACT);
        if b.exclusive_minimum.is_some()
            || b.exclusive_maximum.is_some()
            || !small(b.minimum)
            || !small(b.maximum)
        {
            return Quick::NONE.numbers;
        }
        [
            b.minimum.map_or(f64::NEG_INFINITY, |l| l.float),
            b.maximum.map_or(f64::INFINITY, |l| l.float),
        ]
    }

    /// The same, and `null` too: a nullable node's.
    pub(super) fn or_null(mut self) -> Quick {
        self.kinds |= Quick::NULL;
        self
    }

    /// Whether `s` is accepted outright.
    // inlined into each check, where the kind of the value is known and prunes the other arms
    #[inline(always)]
    pub(super) fn accepts(&self, s: Scalar<'_>) -> bool {
        let within = |x: f64| self.numbers[0] <= x && x <= self.numbers[1];
        match s {
            Scalar::Null => self.kinds & Quick::NULL != 0,
            Scalar::Bool(_) => self.kinds & Quick::BOOL != 0,
            Scalar::Str(text) => {
                // a length beyond `u32` compares as `u32::MAX`, which no range reaches
                let n = u32::try_from(text.len()).unwrap_or(u32::MAX);
                self.bytes[0] <= n && n <= self.bytes[1]
            }
            Scalar::I(i) => within(i as f64),
            Scalar::U(u) => within(u as f64),
            Scalar::F(f) => self.kinds & Quick::FLOAT != 0 && within(f),
        }
    }
}

impl Default for Quick {
    fn default() -> Quick {
        Quick::NONE
    }
}
