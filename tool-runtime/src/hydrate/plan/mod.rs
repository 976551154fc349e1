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
mod quick;
pub(crate) mod tree;
mod walk;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

pub use compile::Unsupported;

use crate::definition::ToolDefinition;
use crate::hydrate::entry::RegistrationError;
use crate::validate::Validator;
use quick::Quick;

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
