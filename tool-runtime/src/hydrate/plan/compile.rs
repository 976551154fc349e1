//! Compiling a canonical schema into a [`Plan`]: once, at registration.
//!
//! The compiler is deliberately conservative. Every keyword of draft 2020-12 that constrains an
//! instance is either translated exactly or makes the whole compilation fail with
//! [`Unsupported`], so that the tool falls back to the jsonschema validator. Keywords that only
//! annotate (`description`, `default`, `format` with format validation off, unknown keywords) are
//! ignored, exactly as the validator ignores them.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use tool_wire::escape;

use super::tree::Tree;
use super::{Bounds, Checks, Key, Limit, Node, NodeId, Plan, TypeSet};
use crate::validate::Validator;

/// Why a schema cannot be checked by a [`Plan`]; the tool then uses the jsonschema validator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `key` is a draft 2020-12 (or older) keyword that constrains instances. A keyword for
/// which this holds must be handled by the compiler or the compilation fails; anything else is an
/// annotation. A `match`, because it runs on every key of every schema at registration.
fn is_validation_keyword(key: &str) -> bool {
    matches!(
        key,
        "type"
            | "enum"
            | "const"
            | "multipleOf"
            | "maximum"
            | "exclusiveMaximum"
            | "minimum"
            | "exclusiveMinimum"
            | "maxLength"
            | "minLength"
            | "pattern"
            | "maxItems"
            | "minItems"
            | "uniqueItems"
            | "maxContains"
            | "minContains"
            | "contains"
            | "maxProperties"
            | "minProperties"
            | "required"
            | "dependentRequired"
            | "dependentSchemas"
            | "dependencies"
            | "allOf"
            | "anyOf"
            | "oneOf"
            | "not"
            | "if"
            | "then"
            | "else"
            | "prefixItems"
            | "items"
            | "additionalItems"
            | "properties"
            | "patternProperties"
            | "additionalProperties"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "$ref"
            | "$dynamicRef"
            | "$recursiveRef"
            | "$id"
            | "$anchor"
            | "$dynamicAnchor"
            | "$recursiveAnchor"
            | "$vocabulary"
            | "discriminator"
    )
}

struct Compiler<'a, J> {
    root: J,
    nodes: Vec<Node>,
    /// Pointer of each `$ref` target compiled (the root as `""`) → its node, so that references,
    /// even recursive ones, compile once. Subschemas reached structurally are not recorded: a
    /// reference to one compiles it again, which checks the same.
    by_pointer: HashMap<&'a str, NodeId, foldhash::fast::FixedState>,
}

/// Where a subschema is, for messages: built into a JSON pointer only when one is printed, so
/// that compiling allocates no pointer strings.
#[derive(Clone, Copy)]
enum Path<'a> {
    /// The root (`""`) or a `$ref` target, by its pointer.
    At(&'a str),
    /// A keyword or property name below a subschema.
    Key(&'a Path<'a>, &'a str),
    /// An array index below a subschema.
    Index(&'a Path<'a>, usize),
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::At(pointer) => f.write_str(pointer),
            Path::Key(parent, key) => write!(f, "{parent}/{}", escape(key)),
            Path::Index(parent, i) => write!(f, "{parent}/{i}"),
        }
    }
}

/// Compiles `schema` (the canonical argument schema) into a plan. The plan checks arguments as
/// they were sent (a `Value`, or text while it is deserialized), so every key is visible to it.
pub(crate) fn compile<'a, J: Tree<'a>>(schema: J) -> Result<Plan, Unsupported> {
    // Nodes are built in a buffer kept per thread and copied out at their exact number: growing
    // a fresh vector for every tool would leave its discarded smaller copies, and its slack, on
    // the heap of a process that registers a thousand tools at once.
    thread_local! {
        static SCRATCH: std::cell::Cell<Vec<Node>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut c = Compiler {
        root: schema,
        nodes: SCRATCH.take(),
        by_pointer: HashMap::default(),
    };
    let result = c.compile_root(schema);
    let mut nodes = c.nodes;
    let plan = result.map(|(root, any)| Plan {
        nodes: nodes.drain(..).collect(),
        root,
        any,
        layouts: std::sync::OnceLock::new(),
        variants: std::sync::OnceLock::new(),
    });
    nodes.clear();
    SCRATCH.set(nodes);
    plan
}

impl<'a, J: Tree<'a>> Compiler<'a, J> {
    /// Compiles the whole schema into `self.nodes`: the root's node and the `true` node.
    fn compile_root(&mut self, schema: J) -> Result<(NodeId, NodeId), Unsupported> {
        let root = self.node_at("", schema)?;
        // a chain of references that never reaches a schema (`A: {$ref: B}, B: {$ref: A}`)
        for start in 0..self.nodes.len() {
            let mut id = start;
            for _ in 0..=self.nodes.len() {
                match self.nodes[id] {
                    Node::Alias(next) | Node::Nullable(next) => id = next,
                    _ => break,
                }
            }
            if matches!(self.nodes[id], Node::Alias(_) | Node::Nullable(_)) {
                return Err(Unsupported("a cycle of $ref without any schema".into()));
            }
        }
        let any = self.push(Node::Any);
        Ok((root, any))
    }

    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// The node of the `$ref` target (or root) at `pointer`, compiled on first use.
    fn node_at(&mut self, pointer: &'a str, schema: J) -> Result<NodeId, Unsupported> {
        if let Some(&id) = self.by_pointer.get(pointer) {
            return Ok(id);
        }
        // reserve the slot first so that a recursive $ref back to this schema finds it
        let id = self.push(Node::Any);
        self.by_pointer.insert(pointer, id);
        let node = self.build(schema, &Path::At(pointer))?;
        self.nodes[id] = node;
        Ok(id)
    }

    /// The node of a subschema reached structurally (properties, items, ...).
    fn node(&mut self, schema: J, pointer: &Path<'_>) -> Result<NodeId, Unsupported> {
        let id = self.push(Node::Any);
        let node = self.build(schema, pointer)?;
        self.nodes[id] = node;
        Ok(id)
    }

    fn build(&mut self, schema: J, pointer: &Path<'_>) -> Result<Node, Unsupported> {
        if let Some(b) = schema.as_bool() {
            return Ok(if b { Node::Any } else { Node::Never });
        }
        let Some(entries) = schema.entries() else {
            return Err(Unsupported(format!(
                "{pointer}: a schema must be an object"
            )));
        };
        if schema.has_duplicate_keys() {
            return Err(Unsupported(format!("{pointer}: a keyword appears twice")));
        }
        // the keywords with their values, in one pass: later lookups scan this short list
        // instead of looking into the schema's map
        let validation: Vec<(&str, J)> =
            entries.filter(|(k, _)| is_validation_keyword(k)).collect();
        let get = |key: &str| validation.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        if validation.is_empty() {
            return Ok(Node::Any);
        }

        // `{"$ref": "#/..."}` with only annotations beside it
        if let Some(r) = get("$ref") {
            if validation.len() != 1 {
                return Err(Unsupported(format!(
                    "{pointer}: $ref beside other validation keywords"
                )));
            }
            let target = r
                .as_str()
                .and_then(|r| r.strip_prefix('#'))
                .ok_or_else(|| {
                    Unsupported(format!("{pointer}: $ref {} is not local", r.to_value()))
                })?;
            let resolved = self.root.pointer(target).ok_or_else(|| {
                Unsupported(format!("{pointer}: $ref {} does not resolve", r.to_value()))
            })?;
            let target = self.node_at(target, resolved)?;
            return Ok(Node::Alias(target));
        }

        // `Option<T>` as schemars writes it: `anyOf: [T, {"type": "null"}]`
        if let Some(any_of) = get("anyOf") {
            if validation.len() != 1 {
                return Err(Unsupported(format!(
                    "{pointer}: anyOf beside other validation keywords"
                )));
            }
            let branches: Vec<J> = any_of
                .items()
                .ok_or_else(|| Unsupported(format!("{pointer}: anyOf is not an array")))?
                .collect();
            let is_null = |v: J| {
                v.get("type").and_then(J::as_str) == Some("null")
                    && v.entries()
                        .is_some_and(|e| e.filter(|(k, _)| is_validation_keyword(k)).count() == 1)
            };
            return match branches[..] {
                [a, b] if is_null(b) || is_null(a) => {
                    let (i, other) = if is_null(b) { (0, a) } else { (1, b) };
                    let inner = self.node(other, &Path::Index(&Path::Key(pointer, "anyOf"), i))?;
                    Ok(Node::Nullable(inner))
                }
                _ => Err(Unsupported(format!(
                    "{pointer}: anyOf other than T-or-null"
                ))),
            };
        }

        // `allOf: [T]` with nothing else
        if let Some(all_of) = get("allOf") {
            let mut branches = all_of.items();
            let only = branches
                .as_mut()
                .and_then(|b| if b.len() == 1 { b.next() } else { None });
            return match only {
                Some(only) if validation.len() == 1 => {
                    let inner = self.node(only, &Path::Index(&Path::Key(pointer, "allOf"), 0))?;
                    Ok(Node::Alias(inner))
                }
                _ => Err(Unsupported(format!("{pointer}: allOf other than [T]"))),
            };
        }

        let mut checks = Checks::default();
        let mut allowed: Option<Vec<Value>> = None;
        let mut bounds = Bounds::default();
        let mut properties: Vec<(Box<str>, NodeId)> = Vec::new();
        let mut required: Vec<Box<str>> = Vec::new();
        for &(keyword, value) in &validation {
            match keyword {
                "type" => checks.types = Some(types(value, pointer)?),
                "enum" => {
                    let values = value
                        .items()
                        .ok_or_else(|| Unsupported(format!("{pointer}: enum is not an array")))?;
                    intersect(&mut allowed, scalars(values, pointer)?);
                }
                "const" => intersect(&mut allowed, scalars(std::iter::once(value), pointer)?),
                "oneOf" => intersect(&mut allowed, one_of_consts(value, pointer)?),
                "minimum" => bounds.minimum = Some(Limit::of(&number(value, pointer, keyword)?)),
                "maximum" => bounds.maximum = Some(Limit::of(&number(value, pointer, keyword)?)),
                "exclusiveMinimum" => {
                    bounds.exclusive_minimum = Some(Limit::of(&number(value, pointer, keyword)?))
                }
                "exclusiveMaximum" => {
                    bounds.exclusive_maximum = Some(Limit::of(&number(value, pointer, keyword)?))
                }
                "minLength" => checks.length.min = count(value, pointer, keyword)?,
                "maxLength" => checks.length.max = count(value, pointer, keyword)?,
                "minItems" => checks.item_count.min = count(value, pointer, keyword)?,
                "maxItems" => checks.item_count.max = count(value, pointer, keyword)?,
                "minProperties" => checks.property_count.min = count(value, pointer, keyword)?,
                "maxProperties" => checks.property_count.max = count(value, pointer, keyword)?,
                "uniqueItems" => {
                    // the plan has no uniqueness check; `false` asks for none
                    if value.as_bool() != Some(false) {
                        return Err(Unsupported(format!("{pointer}: uniqueItems")));
                    }
                }
                "pattern" | "multipleOf" => {} // delegated below, with exact semantics
                "items" => {
                    checks.items = Some(self.node(value, &Path::Key(pointer, "items"))?);
                }
                "properties" => {
                    let props = value.entries().ok_or_else(|| {
                        Unsupported(format!("{pointer}: properties is not an object"))
                    })?;
                    if value.has_duplicate_keys() {
                        return Err(Unsupported(format!("{pointer}: a property appears twice")));
                    }
                    for (key, sub) in props {
                        let node =
                            self.node(sub, &Path::Key(&Path::Key(pointer, "properties"), key))?;
                        properties.push((key.into(), node));
                    }
                }
                "required" => {
                    let names = value.items().ok_or_else(|| {
                        Unsupported(format!("{pointer}: required is not an array"))
                    })?;
                    for n in names {
                        let n = n.as_str().ok_or_else(|| {
                            Unsupported(format!("{pointer}: required holds a non-string"))
                        })?;
                        if !required.iter().any(|r| &**r == n) {
                            required.push(n.into());
                        }
                    }
                    if required.len() > 64 {
                        return Err(Unsupported(format!(
                            "{pointer}: more than 64 required properties"
                        )));
                    }
                }
                "additionalProperties" => {
                    let node = self.node(value, &Path::Key(pointer, "additionalProperties"))?;
                    checks.additional = Some(node);
                }
                other => {
                    return Err(Unsupported(format!(
                        "{pointer}: keyword {other} is not supported by the fast path"
                    )));
                }
            }
        }
        if get("pattern").is_some() || get("multipleOf").is_some() {
            checks.delegate = Some(Box::new(delegate(schema, pointer)?));
        }
        checks.allowed = allowed.map(Vec::into_boxed_slice);
        if bounds.minimum.is_some()
            || bounds.maximum.is_some()
            || bounds.exclusive_minimum.is_some()
            || bounds.exclusive_maximum.is_some()
        {
            checks.bounds = Some(Box::new(bounds));
        }
        let bit = |name: &str| {
            required
                .iter()
                .position(|r| &**r == name)
                .map_or(0, |i| 1u64 << i)
        };
        checks.required_count = required.len() as u32;
        let required_only = required
            .iter()
            .filter(|name| !properties.iter().any(|(p, _)| p == *name))
            .count();
        // `properties` order, then the keys only `required` names; the names are moved, not copied
        let mut keys = Vec::with_capacity(properties.len() + required_only);
        keys.extend(properties.into_iter().map(|(name, node)| Key {
            required: bit(&name),
            name,
            node: Some(node),
        }));
        let listed = keys.len();
        for (i, name) in required.into_iter().enumerate() {
            if !keys[..listed].iter().any(|k: &Key| k.name == name) {
                keys.push(Key {
                    required: 1 << i,
                    name,
                    node: None,
                });
            }
        }
        checks.keys = keys;
        checks.quick = super::Quick::of(&checks);
        // JSON Schema: an object instance needs every required key whether or not `type` says
        // object; the plan sees objects only through their serialized keys, which is that.
        Ok(Node::Checks(checks))
    }
}

fn types<'a, J: Tree<'a>>(value: J, pointer: &Path<'_>) -> Result<TypeSet, Unsupported> {
    let one = |v: J| -> Result<TypeSet, Unsupported> {
        Ok(match v.as_str() {
            Some("null") => TypeSet::NULL,
            Some("boolean") => TypeSet::BOOLEAN,
            Some("integer") => TypeSet::INTEGER,
            Some("number") => TypeSet::NUMBER,
            Some("string") => TypeSet::STRING,
            Some("array") => TypeSet::ARRAY,
            Some("object") => TypeSet::OBJECT,
            _ => {
                return Err(Unsupported(format!(
                    "{pointer}: unknown type {}",
                    v.to_value()
                )));
            }
        })
    };
    match value.items() {
        Some(mut items) => items.try_fold(TypeSet(0), |acc, v| Ok(acc | one(v)?)),
        None => one(value),
    }
}

/// Enum and const values the plan compares: scalars only (objects and arrays would need the
/// whole sub-value).
fn scalars<'a, J: Tree<'a>>(
    values: impl Iterator<Item = J>,
    pointer: &Path<'_>,
) -> Result<Vec<Value>, Unsupported> {
    values
        .map(|v| {
            if v.is_compound() {
                Err(Unsupported(format!(
                    "{pointer}: enum or const with an object or array"
                )))
            } else {
                Ok(v.to_value())
            }
        })
        .collect()
}

fn intersect(allowed: &mut Option<Vec<Value>>, values: Vec<Value>) {
    *allowed = Some(match allowed.take() {
        None => values,
        Some(prev) => prev
            .into_iter()
            .filter(|p| values.iter().any(|v| super::compare::json_eq(p, v)))
            .collect(),
    });
}

/// `oneOf` whose branches each accept distinct constants (schemars' documented unit enums).
fn one_of_consts<'a, J: Tree<'a>>(value: J, pointer: &Path<'_>) -> Result<Vec<Value>, Unsupported> {
    let branches = value
        .items()
        .ok_or_else(|| Unsupported(format!("{pointer}: oneOf is not an array")))?;
    let mut out: Vec<Value> = Vec::new();
    for b in branches {
        let m = b
            .entries()
            .ok_or_else(|| Unsupported(format!("{pointer}: oneOf branch is not an object")))?;
        if b.has_duplicate_keys() {
            return Err(Unsupported(format!("{pointer}: a keyword appears twice")));
        }
        let mut accepted: Option<Vec<Value>> = None;
        let mut ty: Option<TypeSet> = None;
        for (k, v) in m {
            match k {
                "const" => intersect(&mut accepted, scalars(std::iter::once(v), pointer)?),
                "enum" => intersect(
                    &mut accepted,
                    scalars(v.items().into_iter().flatten(), pointer)?,
                ),
                "type" => ty = Some(types(v, pointer)?),
                k if is_validation_keyword(k) => {
                    return Err(Unsupported(format!(
                        "{pointer}: oneOf branch other than constants"
                    )));
                }
                _ => {}
            }
        }
        let accepted = accepted
            .ok_or_else(|| Unsupported(format!("{pointer}: oneOf branch other than constants")))?;
        for v in accepted {
            if ty.is_some_and(|t| !t.admits_value(&v)) {
                continue;
            }
            // oneOf: a value two branches accept is valid for neither
            if out.iter().any(|o| super::compare::json_eq(o, &v)) {
                return Err(Unsupported(format!("{pointer}: oneOf branches overlap")));
            }
            out.push(v);
        }
    }
    Ok(out)
}

fn number<'a, J: Tree<'a>>(
    value: J,
    pointer: &Path<'_>,
    keyword: &str,
) -> Result<Number, Unsupported> {
    value
        .as_number()
        .ok_or_else(|| Unsupported(format!("{pointer}: {keyword} is not a number")))
}

fn count<'a, J: Tree<'a>>(value: J, pointer: &Path<'_>, keyword: &str) -> Result<u64, Unsupported> {
    // jsonschema accepts 2.0 where a count is expected
    match value.as_number() {
        Some(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| Unsupported(format!("{pointer}: {keyword} is not a count"))),
        _ => Err(Unsupported(format!("{pointer}: {keyword} is not a count"))),
    }
}

/// `pattern` and `multipleOf` are checked by a validator compiled from just those keywords, so
/// that regular-expression dialect and decimal arithmetic are exactly the validator's.
fn delegate<'a, J: Tree<'a>>(schema: J, pointer: &Path<'_>) -> Result<Validator, Unsupported> {
    let mut sub = Map::new();
    for k in ["pattern", "multipleOf"] {
        if let Some(v) = schema.get(k) {
            sub.insert(k.to_owned(), v.to_value());
        }
    }
    Validator::compile(&Value::Object(sub)).map_err(|e| Unsupported(format!("{pointer}: {e}")))
}
