//! A schema compiled into direct checks on a typed value: the fast path of hydration.
//!
//! For a tool whose schema was derived from its argument type, serde already enforces the shape
//! (property names, required-ness, types, enum variants). What serde does not enforce are the
//! schema's constraints: ranges, lengths, patterns, `multipleOf`, item counts, string enums on
//! free strings. A [`Plan`] holds those, compiled once at registration, and checks a value by
//! walking it with a small [`serde::Serializer`], so no `serde_json::Value` is built.
//!
//! A plan only ever *accepts* what the jsonschema validator accepts: any keyword it cannot
//! translate exactly makes [`Plan::compile`] fail, and the tool keeps the validator. When a plan
//! refuses a value, hydration re-runs the validator to produce the complete list of violations
//! with their JSON pointers; a plan never produces error messages itself.

mod compile;
mod walk;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

pub use compile::Unsupported;

use crate::validate::Validator;

type NodeId = usize;

/// A compiled set of checks equivalent to one JSON Schema, for the keywords it supports.
pub struct Plan {
    nodes: Vec<Node>,
    root: NodeId,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

impl Plan {
    /// Compiles `schema` for checking values that carry every key they were sent with
    /// (`serde_json::Value`, or types that refuse unknown keys).
    pub fn compile(schema: &Value) -> Result<Plan, Unsupported> {
        compile::compile(schema, None)
    }

    /// Compiles `schema` for checking values of `T` deserialized from the arguments.
    ///
    /// `schema` must be the schema derived from `T`. Where it forbids additional properties,
    /// this confirms that `T` refuses unknown keys too (a typed value no longer holds the keys
    /// serde ignored, so the plan could not see them); otherwise it fails with [`Unsupported`].
    pub fn compile_for<T: DeserializeOwned>(schema: &Value) -> Result<Plan, Unsupported> {
        let probe = |doc: &str| match serde_json::from_str::<T>(doc) {
            Ok(_) => false,
            Err(e) => e
                .to_string()
                .contains(&format!("unknown field `{}`", compile::PROBE_KEY)),
        };
        compile::compile(schema, Some(&probe))
    }

    /// Whether `value` satisfies every constraint of the schema.
    pub fn accepts<T: Serialize + ?Sized>(&self, value: &T) -> bool {
        value
            .serialize(walk::Walker {
                plan: self,
                node: self.root,
            })
            .is_ok()
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
    Checks(Box<Checks>),
}

/// The checks of one subschema. Type-specific checks apply only to instances of that type, as in
/// JSON Schema.
#[derive(Default)]
struct Checks {
    types: Option<TypeSet>,
    /// `enum`, `const` and constant `oneOf`s, intersected.
    allowed: Option<Vec<Value>>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    items: Option<NodeId>,
    properties: Vec<(Box<str>, NodeId)>,
    required: Vec<Box<str>>,
    additional: Option<NodeId>,
    /// `pattern` and `multipleOf`, checked by the validator itself for exact semantics.
    delegate: Option<Validator>,
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

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Lenient {
        a: u8,
    }

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Strict {
        a: u8,
    }

    #[test]
    fn closed_objects_need_a_type_that_refuses_unknown_keys() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "additionalProperties": false
        });
        assert!(Plan::compile_for::<Strict>(&schema).is_ok());
        assert!(Plan::compile_for::<Lenient>(&schema).is_err());
    }
}
