//! A schema compiled into direct checks: the fast path of hydration.
//!
//! Serde enforces much of a derived schema's shape (property names, required-ness, types, enum
//! variants) but not its constraints: ranges, lengths, patterns, `multipleOf`, item counts,
//! string enums on free strings. A [`Plan`] holds every check of the schema it supports, compiled
//! once at registration, and applies them to the arguments *as they were sent*: either to a
//! `serde_json::Value` by walking it with a small [`serde::Serializer`], or to JSON text while
//! serde deserializes it into the typed arguments ([`Plan::from_str`]), so that no `Value` is
//! built on the fast path and no serde attribute or hand-written `Deserialize` can make the
//! typed arguments accept what the schema refuses.
//!
//! A plan only ever *accepts* what the jsonschema validator accepts: any keyword it cannot
//! translate exactly makes [`Plan::compile`] fail, and the tool keeps the validator. When a plan
//! refuses a value, hydration re-runs the validator to produce the complete list of violations
//! with their JSON pointers; a plan never produces error messages itself.

mod compare;
mod compile;
pub(crate) mod fields;
mod guard;
mod keys;
pub(crate) mod tree;
mod walk;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

pub use compile::Unsupported;

use crate::definition::ToolDefinition;
use crate::hydrate::entry::RegistrationError;
use crate::validate::Validator;

/// The value does not satisfy the plan. Carries nothing: the validator explains.
#[derive(Debug)]
pub(crate) struct Reject;

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rejected by the plan")
    }
}

impl std::error::Error for Reject {}

impl serde::ser::Error for Reject {
    fn custom<T: std::fmt::Display>(_msg: T) -> Self {
        Reject
    }
}

type NodeId = usize;

/// A compiled set of checks equivalent to one JSON Schema, for the keywords it supports.
pub struct Plan {
    nodes: Box<[Node]>,
    root: NodeId,
    /// A `true` node: what unconstrained places are walked with when only depth is counted.
    any: NodeId,
    /// The layouts of nested types with a generated reader (`#[derive(ToolArgs)]`), by the node
    /// they are read at; made on the first call that reads one.
    layouts: std::sync::OnceLock<Box<[std::sync::OnceLock<Option<fields::Layout>>]>>,
    /// The verdicts on the variant names of unit enums with a generated reader, by the node
    /// they are read at (see `fields::variant`); made on the first call that reads one.
    variants: std::sync::OnceLock<Box<[std::sync::OnceLock<fields::Verdicts>]>>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

impl Plan {
    /// Compiles `schema`; fails when the schema uses a keyword the plan cannot check exactly.
    pub fn compile(schema: &Value) -> Result<Plan, Unsupported> {
        compile::compile(schema)
    }

    /// Compiles a schema from any [`tree::Tree`] (registration reads derived schemas onto the
    /// cheaper [`tree::Tape`]).
    pub(crate) fn compile_tree<'t, J: tree::Tree<'t>>(schema: J) -> Result<Plan, Unsupported> {
        compile::compile(schema)
    }

    /// Whether `value` satisfies every constraint of the schema.
    pub fn accepts(&self, value: &Value) -> bool {
        value
            .serialize(walk::Walker {
                plan: self,
                node: self.root,
                depth: walk::UNLIMITED,
            })
            .is_ok()
    }

    /// Deserializes `T` from the JSON text `text`, checking every value against the plan as it
    /// is read: the result is `Ok` only when the text satisfies the schema *and* is a `T`, and
    /// nests arrays and objects no deeper than `max_depth` (counted as they are read, so the
    /// text needs no separate scan; the slow path says which limit a refusal broke).
    ///
    /// The checks see the document as it was written, not the typed value: keys under their sent
    /// names (an alias is not the property it stands for), values `T` skips, arrays where the
    /// schema wants an object, strings a `deserialize_with` would convert. So for any `T`, an
    /// `Ok` here implies the validator accepts the text. An `Err` says nothing about which of the
    /// two refused, and carries no useful message: the validator explains.
    pub fn from_str<T: DeserializeOwned>(
        &self,
        text: &str,
        max_depth: usize,
    ) -> Result<T, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let root = walk::Walker {
            plan: self,
            node: self.root,
            depth: u32::try_from(max_depth).unwrap_or(walk::UNLIMITED - 1),
        };
        let value = T::deserialize(guard::Guard {
            walker: root,
            de: &mut de,
        })?;
        de.end()?;
        Ok(value)
    }
}

/// What a tool's `Tool::__GUARD` holds: what a tool without a generated reader needs compiled,
/// monomorphized for its argument type: the guard's two entry points, the registration-time
/// check that a verbatim schema agrees with the argument type, and the slow path's
/// deserialization of validated arguments. A tool whose generated reader reads every call (its
/// schema derived from the type, so agreeing by construction) sets it to `None`, so none of it,
/// nor serde's deserialization of the arguments under it, is compiled for that tool: the largest
/// share of the code a `#[tool]` costs to build. Its slow path reads with the reader too (see
/// `fields::read_validated`).
pub struct GuardOf<A> {
    /// [`Plan::from_str`] into `A`: arguments that arrived as text.
    pub text: fn(&Plan, &str, usize) -> Option<fields::Typed>,
    /// The plan's check of a parsed object, then `A` deserialized from it.
    pub object: fn(&Plan, &Value) -> Option<fields::Typed>,
    /// Whether the values a verbatim schema accepts are accepted by `A`.
    pub agree: fn(&ToolDefinition) -> Result<(), RegistrationError>,
    /// The slow path's deserialization of arguments already validated: `A`'s own `Deserialize`
    /// from the parsed object.
    pub value: fn(Value) -> Result<fields::Typed, serde_json::Error>,
    /// The argument type the functions read.
    pub _args: std::marker::PhantomData<fn() -> A>,
}

/// The guard for `A`, for `Tool::__GUARD`.
pub const fn guard<A: DeserializeOwned + Send + Sync + 'static>() -> GuardOf<A> {
    GuardOf {
        text: |plan, text, max_depth| match plan.from_str::<A>(text, max_depth) {
            Ok(args) => Some(Box::new(args)),
            Err(_) => None,
        },
        object: |plan, object| {
            if !plan.accepts(object) {
                return None;
            }
            match A::deserialize(object) {
                Ok(args) => Some(Box::new(args)),
                Err(_) => None,
            }
        },
        agree: crate::hydrate::agree::check::<A>,
        value: |value| match serde_json::from_value::<A>(value) {
            Ok(args) => Ok(Box::new(args)),
            Err(e) => Err(e),
        },
        _args: std::marker::PhantomData,
    }
}

enum Node {
    /// `true`, or a schema with annotations only.
    Any,
    /// `false`.
    Never,
    /// A `$ref` (or `allOf: [T]`): the target's checks.
    Alias(NodeId),
    /// `anyOf: [T, {"type": "null"}]`.
    Nullable(NodeId),
    /// Kept inline: a plan is one allocation of nodes, which matters when a process registers
    /// a thousand tools at start-up (each fresh heap page costs a page fault).
    Checks(Checks),
}

/// The checks of one subschema. Type-specific checks apply only to instances of that type, as in
/// JSON Schema. Laid out small (the rare ones boxed, counts as spans without `Option`), because
/// every node of every registered tool holds one.
#[derive(Default)]
struct Checks {
    types: Option<TypeSet>,
    /// How many keys are required (the bits set across `keys`).
    required_count: u32,
    /// `minLength`/`maxLength`.
    length: Span,
    /// `minItems`/`maxItems`.
    item_count: Span,
    /// `minProperties`/`maxProperties`.
    property_count: Span,
    items: Option<NodeId>,
    additional: Option<NodeId>,
    /// Every key `properties` or `required` names, in `properties` order then the required-only
    /// ones: one scan finds a key's schema and its required bit.
    keys: Vec<Key>,
    /// `enum`, `const` and constant `oneOf`s, intersected.
    allowed: Option<Box<[Value]>>,
    /// `minimum`, `maximum` and their exclusive forms.
    bounds: Option<Box<Bounds>>,
    /// `pattern` and `multipleOf`, checked by the validator itself for exact semantics.
    delegate: Option<Box<Validator>>,
    /// The scalars these checks accept outright, worked out from the fields above once they are
    /// all set.
    quick: Quick,
}

/// The scalars a node accepts whatever else its checks say, worked out once when the plan is
/// compiled: a string of a byte length in a range, a number in a range, a null or a boolean.
/// Most values of a derived schema fall in it, and then the verdict costs a few comparisons
/// instead of the walk through every keyword. It only ever admits a subset of what the full
/// checks admit: a scalar outside it is judged by them.
#[derive(Clone, Copy, Debug)]
struct Quick {
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

    /// Accepts nothing outright.
    const NONE: Quick = Quick {
        kinds: 0,
        bytes: [1, 0],
        numbers: [f64::INFINITY, f64::NEG_INFINITY],
    };

    /// Accepts every scalar: a node that checks nothing.
    const ALL: Quick = Quick {
        kinds: Quick::NULL | Quick::BOOL | Quick::FLOAT,
        bytes: [0, u32::MAX - 1],
        numbers: [f64::NEG_INFINITY, f64::INFINITY],
    };

    /// What `c`'s checks accept outright.
    fn of(c: &Checks) -> Quick {
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
        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
        let Some(b) = bounds else {
            return [f64::NEG_INFINITY, f64::INFINITY];
        };
        let small = |l: Option<Limit>| l.is_none_or(|l| l.float.abs() < EXACT);
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
    fn or_null(mut self) -> Quick {
        self.kinds |= Quick::NULL;
        self
    }

    /// Whether `s` is accepted outright.
    // inlined into each check, where the kind of the value is known and prunes the other arms
    #[inline(always)]
    fn accepts(&self, s: compare::Scalar<'_>) -> bool {
        use compare::Scalar;
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

/// The numeric bounds of a subschema.
#[derive(Default)]
struct Bounds {
    minimum: Option<Limit>,
    maximum: Option<Limit>,
    exclusive_minimum: Option<Limit>,
    exclusive_maximum: Option<Limit>,
}

/// An inclusive range of counts; `0..=u64::MAX`, which no count can leave, stands for no limit,
/// so a missing keyword needs no `Option`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    min: u64,
    max: u64,
}

impl Span {
    const ANY: Span = Span {
        min: 0,
        max: u64::MAX,
    };

    fn is_any(self) -> bool {
        self == Span::ANY
    }

    fn admits(self, n: u64) -> bool {
        self.min <= n && n <= self.max
    }
}

impl Default for Span {
    fn default() -> Span {
        Span::ANY
    }
}

/// A numeric bound, converted once from the schema's number: an integer bound is compared
/// exactly with integers, anything else as `f64` (what the validator does).
#[derive(Debug, Clone, Copy)]
struct Limit {
    /// The bound as an integer, when it is one.
    exact: Option<i128>,
    /// The bound as `f64`.
    float: f64,
}

impl Limit {
    fn of(n: &Number) -> Limit {
        Limit {
            exact: n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from)),
            float: n.as_f64().unwrap_or(f64::NAN),
        }
    }
}

/// A key an object schema names.
struct Key {
    name: Box<str>,
    /// Its `properties` schema; `None` when only `required` names it (its value then falls to
    /// `additionalProperties`).
    node: Option<NodeId>,
    /// Its bit among the required keys; 0 when it is not required.
    required: u64,
}

/// The JSON types a `type` keyword admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TypeSet(u8);

impl TypeSet {
    const NULL: TypeSet = TypeSet(1);
    const BOOLEAN: TypeSet = TypeSet(2);
    const INTEGER: TypeSet = TypeSet(4);
    const NUMBER: TypeSet = TypeSet(8);
    const STRING: TypeSet = TypeSet(16);
    const ARRAY: TypeSet = TypeSet(32);
    const OBJECT: TypeSet = TypeSet(64);

    fn has(self, t: TypeSet) -> bool {
        self.0 & t.0 != 0
    }

    fn admits_value(self, v: &Value) -> bool {
        match v {
            Value::Null => self.has(Self::NULL),
            Value::Bool(_) => self.has(Self::BOOLEAN),
            Value::Number(n) => {
                self.has(Self::NUMBER)
                    || (self.has(Self::INTEGER)
                        && (n.is_i64()
                            || n.is_u64()
                            || n.as_f64().is_some_and(|f| f.fract() == 0.0)))
            }
            Value::String(_) => self.has(Self::STRING),
            Value::Array(_) => self.has(Self::ARRAY),
            Value::Object(_) => self.has(Self::OBJECT),
        }
    }
}

impl std::ops::BitOr for TypeSet {
    type Output = TypeSet;
    fn bitor(self, rhs: TypeSet) -> TypeSet {
        TypeSet(self.0 | rhs.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_constraints_serde_does_not_enforce() {
        let plan = Plan::compile(&json!({
            "type": "object",
            "properties": {
                "q": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
                "n": {"type": "integer", "minimum": 1, "maximum": 10},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
                "opt": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]}
            },
            "required": ["q"],
            "$defs": {"Inner": {"type": "object", "properties": {"x": {"multipleOf": 3}}}}
        }))
        .unwrap();
        assert!(plan.accepts(&json!({"q": "ab", "n": 3, "tags": ["a"], "opt": null})));
        assert!(plan.accepts(&json!({"q": "ab", "opt": {"x": 9}})));
        assert!(!plan.accepts(&json!({"q": "a"})));
        assert!(!plan.accepts(&json!({"q": "AB"})));
        assert!(!plan.accepts(&json!({"q": "ab", "n": 11})));
        assert!(!plan.accepts(&json!({"q": "ab", "n": 2.5})));
        assert!(!plan.accepts(&json!({"q": "ab", "tags": ["c"]})));
        assert!(!plan.accepts(&json!({"q": "ab", "tags": ["a", "a", "b"]})));
        assert!(!plan.accepts(&json!({"q": "ab", "opt": {"x": 4}})));
        assert!(!plan.accepts(&json!({"n": 3})));
    }

    /// The verdicts taken without the full checks (see [`Quick`]) agree with the validator's
    /// at the edges of every range they work out: string lengths where bytes and characters
    /// part, numbers at bounds, beyond 2^53 and across types, nulls and booleans.
    #[test]
    fn scalars_accepted_outright_are_the_ones_the_validator_accepts() {
        let schemas = [
            json!({"type": "string", "minLength": 2, "maxLength": 4}),
            json!({"type": "string", "maxLength": 1}),
            json!({"type": ["string", "null"], "minLength": 1}),
            json!({"type": "integer", "minimum": -3, "maximum": 50}),
            json!({"type": "integer", "maximum": 9_007_199_254_740_992_u64}),
            json!({"type": "number", "minimum": 0.0, "maximum": 1.0}),
            json!({"type": "number", "exclusiveMinimum": 0, "maximum": 1.5}),
            json!({"type": "number", "minimum": 0.5}),
            json!({"type": "number"}),
            json!({"type": "boolean"}),
            json!({"enum": ["a", 1, null]}),
            json!({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]}),
            json!({"type": "string", "pattern": "^a"}),
        ];
        let values = [
            json!(null),
            json!(true),
            json!(""),
            json!("a"),
            json!("ab"),
            json!("abcd"),
            json!("abcde"),
            json!("é"),
            json!("éé"),
            json!("😀"),
            json!("😀😀"),
            json!("😀😀😀😀"),
            json!("😀😀😀😀😀"),
            json!(-4),
            json!(-3),
            json!(0),
            json!(1),
            json!(50),
            json!(51),
            json!(0.0),
            json!(0.25),
            json!(0.5),
            json!(1.0),
            json!(1.5),
            json!(2.5),
            json!(-0.1),
            json!(9_007_199_254_740_992_u64),
            json!(9_007_199_254_740_993_u64),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e300),
            json!(-1e300),
        ];
        for schema in &schemas {
            let plan = Plan::compile(schema).unwrap();
            let validator = Validator::compile(schema).unwrap();
            for value in &values {
                assert_eq!(
                    plan.accepts(value),
                    validator.is_valid(value),
                    "{value} against {schema}"
                );
                let text = value.to_string();
                assert_eq!(
                    plan.from_str::<Value>(&text, 8).is_ok(),
                    validator.is_valid(value),
                    "{text} as text against {schema}"
                );
            }
        }
    }

    #[test]
    fn references_to_the_root_and_to_properties_and_pointers_in_refusals() {
        // a tree: each node's children are nodes again, through the root
        let tree = Plan::compile(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "children": {"type": "array", "items": {"$ref": "#"}},
                "twin": {"$ref": "#/properties/name"}
            },
            "required": ["name"]
        }))
        .unwrap();
        assert!(tree.accepts(&json!({"name": "a", "children": [{"name": "b", "children": []}]})));
        assert!(!tree.accepts(&json!({"name": "a", "children": [{"name": ""}]})));
        assert!(!tree.accepts(&json!({"name": "a", "children": [{"children": []}]})));
        assert!(tree.accepts(&json!({"name": "a", "twin": "b"})));
        assert!(!tree.accepts(&json!({"name": "a", "twin": ""})));
        // the refusal names where, with the property escaped as in a JSON pointer
        let err = Plan::compile(&json!({
            "type": "object",
            "properties": {"a/b": {"type": "array", "items": [{"uniqueItems": true}]}}
        }))
        .unwrap_err();
        assert!(err.0.starts_with("/properties/a~1b/items"), "{err}");
        let err = Plan::compile(&json!({
            "$defs": {"T": {"anyOf": [{"type": "null"}, {"not": {}}]}},
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/T"}}
        }))
        .unwrap_err();
        assert!(err.0.starts_with("/$defs/T/anyOf/1: "), "{err}");
    }

    #[test]
    fn a_plan_read_from_a_tape_decides_as_one_read_from_a_value() {
        let schema = json!({
            "type": "object",
            "properties": {
                "q": {"type": "string", "minLength": 2, "pattern": "^[a-z\\\"]+$"},
                "n": {"type": ["integer", "null"], "minimum": -1, "exclusiveMaximum": 10.5},
                "kind": {"oneOf": [{"const": "a", "description": "A"}, {"enum": ["b"], "type": "string"}]},
                "tags": {"type": "array", "items": {"enum": ["a", 1, null]}, "maxItems": 2},
                "opt": {"anyOf": [{"$ref": "#/$defs/In~1ner"}, {"type": "null"}]},
                "all": {"allOf": [{"$ref": "#/properties/q"}]}
            },
            "required": ["q", "extra"],
            "additionalProperties": {"type": "integer"},
            "$defs": {"In/ner": {"type": "object", "properties": {"x": {"multipleOf": 3}}}}
        });
        let from_value = Plan::compile(&schema).unwrap();
        let text = schema.to_string();
        let tape = tree::Tape::parse(&text).unwrap();
        let from_tape = Plan::compile_tree(tape.root()).unwrap();
        let cases = [
            json!({"q": "ab", "extra": 1}),
            json!({"q": "a\"b", "extra": 1, "n": null, "kind": "b", "tags": [1, null]}),
            json!({"q": "ab", "extra": 1, "opt": {"x": 9}, "all": "cd"}),
            json!({"q": "ab", "extra": 1, "n": -2}),
            json!({"q": "ab", "extra": 1, "n": 10.5}),
            json!({"q": "ab", "extra": 1, "n": 2.5}),
            json!({"q": "ab", "extra": 1, "kind": "c"}),
            json!({"q": "ab", "extra": 1, "tags": ["a", "b"]}),
            json!({"q": "ab", "extra": 1, "tags": ["a", 1, null]}),
            json!({"q": "ab", "extra": 1, "opt": {"x": 4}}),
            json!({"q": "ab", "extra": 1, "all": "c"}),
            json!({"q": "AB", "extra": 1}),
            json!({"q": "ab"}),
            json!({"q": "ab", "extra": 1, "other": "x"}),
        ];
        let decisions: Vec<bool> = cases.iter().map(|c| from_value.accepts(c)).collect();
        assert_eq!(
            decisions,
            cases
                .iter()
                .map(|c| from_tape.accepts(c))
                .collect::<Vec<_>>()
        );
        // and the cases are not all decided alike, so the comparison can fail
        assert_eq!(
            decisions,
            [
                true, true, true, false, false, false, false, false, false, false, false, false,
                false, false
            ]
        );
        // a keyword twice is visible on a tape only, and refused there
        let twice = r#"{"type":"object","properties":{"a":{"type":"string","type":"integer"}}}"#;
        let tape = tree::Tape::parse(twice).unwrap();
        let err = Plan::compile_tree(tape.root()).unwrap_err();
        assert!(err.0.contains("appears twice"), "{err}");
    }

    #[test]
    fn keywords_it_cannot_translate_exactly_are_refused() {
        for schema in [
            json!({"type": "array", "uniqueItems": true}),
            json!({"not": {"type": "string"}}),
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            json!({"$ref": "https://example.com/x.json"}),
            json!({"type": "object", "patternProperties": {"^a": {}}}),
            json!({"if": {"type": "string"}, "then": {"minLength": 1}}),
        ] {
            assert!(Plan::compile(&schema).is_err(), "{schema}");
        }
        // annotations and unknown keywords do not constrain
        assert!(
            Plan::compile(&json!({"description": "d", "x-extra": 1, "format": "uint8"})).is_ok()
        );
    }
}
