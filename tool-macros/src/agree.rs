//! Whether a verbatim schema's property types agree with the Rust types of the arguments.
//!
//! A schema is the contract the model is given: every value it allows must deserialize into the
//! argument, or the model is told one thing and refused for doing it (a schema saying `"string"`
//! for an `order_no: u64` gives a tool that refuses every call: `"abc"` fails serde, `7` fails the
//! schema). The macro sees the argument's type as written, so it knows the JSON a standard type
//! reads (integers, floats, strings, booleans, sequences, maps, `Option`, smart pointers); a type
//! defined elsewhere (a struct, an enum) or one read by a custom deserializer is opaque here and
//! left to the schema's author.

use serde_json::Value;
use syn::Type;

use crate::ast::{generic_args, last_segment};

/// A kind of JSON value, as JSON Schema's `type` names them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Null,
        Kind::Boolean,
        Kind::Integer,
        Kind::Number,
        Kind::String,
        Kind::Array,
        Kind::Object,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Boolean => "boolean",
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Object => "object",
        }
    }

    fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kind of a value (a float with no fraction is an integer, as JSON Schema counts it).
    fn of(v: &Value) -> Kind {
        match v {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Boolean,
            Value::Number(n) if n.is_i64() || n.is_u64() => Kind::Integer,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }
}

/// The JSON a Rust type deserializes from, as far as the macro can tell.
enum Reads {
    /// Anything, or not known here: not checked.
    Opaque,
    Known {
        /// The kinds it accepts.
        kinds: Vec<Kind>,
        /// A sequence's element, a map's value.
        inner: Option<Box<Reads>>,
        /// How to write the type's JSON in a fix (`"integer"`, `"array"`).
        wanted: &'static str,
    },
}

fn known(kinds: &[Kind], wanted: &'static str) -> Reads {
    Reads::Known {
        kinds: kinds.to_vec(),
        inner: None,
        wanted,
    }
}

const INTEGERS: [&str; 24] = [
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "NonZeroI8",
    "NonZeroI16",
    "NonZeroI32",
    "NonZeroI64",
    "NonZeroI128",
    "NonZeroIsize",
    "NonZeroU8",
    "NonZeroU16",
    "NonZeroU32",
    "NonZeroU64",
    "NonZeroU128",
    "NonZeroUsize",
];
const SEQUENCES: [&str; 6] = [
    "Vec",
    "VecDeque",
    "HashSet",
    "BTreeSet",
    "LinkedList",
    "BinaryHeap",
];
const MAPS: [&str; 3] = ["HashMap", "BTreeMap", "IndexMap"];
const POINTERS: [&str; 4] = ["Box", "Arc", "Rc", "Cow"];

fn reads(ty: &Type) -> Reads {
    match ty {
        Type::Reference(r) => reads(&r.elem),
        Type::Group(g) => reads(&g.elem),
        Type::Paren(p) => reads(&p.elem),
        Type::Array(a) => sequence(&a.elem),
        Type::Slice(s) => sequence(&s.elem),
        Type::Tuple(t) if t.elems.is_empty() => known(&[Kind::Null], "null"),
        Type::Tuple(_) => known(&[Kind::Array], "array"),
        Type::Path(_) => {
            let Some(seg) = last_segment(ty) else {
                return Reads::Opaque;
            };
            let name = seg.ident.to_string();
            let args = generic_args(seg);
            match name.as_str() {
                "bool" => known(&[Kind::Boolean], "boolean"),
                "f32" | "f64" => known(&[Kind::Integer, Kind::Number], "number"),
                "String" | "str" | "char" | "PathBuf" | "Path" | "OsString" => {
                    known(&[Kind::String], "string")
                }
                n if INTEGERS.contains(&n) => known(&[Kind::Integer], "integer"),
                n if SEQUENCES.contains(&n) && args.len() == 1 => sequence(args[0]),
                n if MAPS.contains(&n) && args.len() >= 2 => Reads::Known {
                    kinds: vec![Kind::Object],
                    inner: Some(Box::new(reads(args[1]))),
                    wanted: "object",
                },
                n if POINTERS.contains(&n) && args.len() == 1 => reads(args[0]),
                "Option" if args.len() == 1 => match reads(args[0]) {
                    Reads::Known {
                        mut kinds,
                        inner,
                        wanted,
                    } => {
                        kinds.push(Kind::Null);
                        Reads::Known {
                            kinds,
                            inner,
                            wanted,
                        }
                    }
                    Reads::Opaque => Reads::Opaque,
                },
                // serde_json::Value and anything else (a type of the author's, a generic)
                _ => Reads::Opaque,
            }
        }
        _ => Reads::Opaque,
    }
}

fn sequence(item: &Type) -> Reads {
    Reads::Known {
        kinds: vec![Kind::Array],
        inner: Some(Box::new(reads(item))),
        wanted: "array",
    }
}

/// What a schema allows, as far as a reading of its keywords can tell.
struct Allows {
    /// `None`: any kind (no `type`, `enum` or `const` restricts it).
    kinds: Option<Vec<Kind>>,
    /// The values of an `enum` or `const`, when the schema lists them.
    values: Vec<Value>,
}

/// The kinds `schema` allows, resolving local `$ref`s and taking the union of `anyOf`/`oneOf`
/// branches; `None` when unsure (then nothing is reported).
fn allows(root: &Value, schema: &Value, depth: usize) -> Option<Allows> {
    if depth > 16 {
        return None;
    }
    let m = match schema {
        Value::Object(m) => m,
        Value::Bool(true) => {
            return Some(Allows {
                kinds: None,
                values: Vec::new(),
            });
        }
        _ => return None,
    };
    if let Some(Value::String(r)) = m.get("$ref") {
        let target = r.strip_prefix('#').and_then(|p| root.pointer(p))?;
        return allows(root, target, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get(key) {
            let mut kinds = Vec::new();
            let mut values = Vec::new();
            for b in branches {
                let a = allows(root, b, depth + 1)?;
                values.extend(a.values);
                match a.kinds {
                    Some(k) => kinds.extend(k),
                    None => {
                        return Some(Allows {
                            kinds: None,
                            values: Vec::new(),
                        });
                    }
                }
            }
            return Some(Allows {
                kinds: Some(kinds),
                values,
            });
        }
    }
    if m.contains_key("allOf") || m.contains_key("not") || m.contains_key("if") {
        return None;
    }
    let listed = match (m.get("const"), m.get("enum")) {
        (Some(c), _) => Some(vec![c.clone()]),
        (None, Some(Value::Array(values))) => Some(values.clone()),
        _ => None,
    };
    let typed = match m.get("type") {
        Some(Value::String(t)) => Some(vec![Kind::from_name(t)?]),
        Some(Value::Array(ts)) => Some(
            ts.iter()
                .map(|t| t.as_str().and_then(Kind::from_name))
                .collect::<Option<Vec<_>>>()?,
        ),
        Some(_) => return None,
        None => None,
    };
    let kinds = match (&listed, typed) {
        (Some(values), _) => Some(values.iter().map(Kind::of).collect()),
        (None, typed) => typed,
    };
    Some(Allows {
        kinds,
        values: listed.unwrap_or_default(),
    })
}

/// The child schema of a sequence (`items`) or of a map (`additionalProperties`).
fn inner_schema(schema: &Value, kind: Kind) -> Option<&Value> {
    match kind {
        Kind::Array => schema.get("items").filter(|i| i.is_object()),
        Kind::Object => schema.get("additionalProperties").filter(|i| i.is_object()),
        _ => None,
    }
}

/// `"integer" or "null"`; a type that takes any number is just `"number"`.
fn quoted(kinds: &[Kind]) -> String {
    let names: Vec<String> = kinds
        .iter()
        .filter(|k| !(**k == Kind::Integer && kinds.contains(&Kind::Number)))
        .map(|k| format!("\"{}\"", k.name()))
        .collect();
    names.join(" or ")
}

/// Why the schema at `at` (a JSON pointer, for the message) allows values the type cannot take.
fn disagreement(root: &Value, schema: &Value, ty: &Reads, at: &str) -> Option<String> {
    let Reads::Known {
        kinds,
        inner,
        wanted,
    } = ty
    else {
        return None;
    };
    let a = allows(root, schema, 0)?;
    let allowed = a.kinds?;
    // A float with no fraction (`7.0`) is an integer to JSON Schema and to serde alike.
    let takes =
        |k: Kind| kinds.contains(&k) || (k == Kind::Integer && kinds.contains(&Kind::Number));
    let refused: Vec<Kind> = {
        let mut r: Vec<Kind> = allowed.iter().copied().filter(|k| !takes(*k)).collect();
        r.dedup();
        r
    };
    if let Some(v) = a.values.iter().find(|v| !takes(Kind::of(v))) {
        return Some(format!(
            "in the schema, {at} lists the value {v}, which the Rust type cannot hold: list only {wanted} values, or change the type"
        ));
    }
    if !refused.is_empty() {
        // "number" for an integer type: whole numbers still pass, fractions do not.
        let every = allowed.iter().all(|k| refused.contains(k))
            && !(refused.contains(&Kind::Number) && kinds.contains(&Kind::Integer));
        let fix = if refused == [Kind::Null] {
            "make the argument an `Option`, or remove \"null\" from the schema".to_owned()
        } else if refused == [Kind::Number] && kinds.contains(&Kind::Integer) {
            "a fraction such as 2.5 passes the schema and fails the integer: write \"type\": \"integer\" in the schema, or make the argument a float".to_owned()
        } else if every {
            format!("write \"type\": \"{wanted}\" in the schema, or change the Rust type")
        } else {
            format!(
                "remove {} from the schema, or change the Rust type",
                quoted(&refused)
            )
        };
        let every = if every {
            ", so the tool would refuse every value the schema allows"
        } else {
            ""
        };
        return Some(format!(
            "in the schema, {at} allows {} but the Rust type reads {}{every}: {fix}",
            quoted(&refused),
            quoted(kinds),
        ));
    }
    let inner = inner.as_deref()?;
    for kind in [Kind::Array, Kind::Object] {
        if kinds.contains(&kind)
            && let Some(child) = inner_schema(schema, kind)
        {
            let child = match child.get("$ref") {
                Some(Value::String(r)) => r.strip_prefix('#').and_then(|p| root.pointer(p))?,
                _ => child,
            };
            let part = if kind == Kind::Array {
                "items"
            } else {
                "values (additionalProperties)"
            };
            let at = format!("the {part} of {at}");
            if let Some(why) = disagreement(root, child, inner, &at) {
                return Some(why);
            }
        }
    }
    None
}

/// Why the verbatim schema's property `wire` disagrees with the argument's type `ty`, if it does.
pub fn property_disagreement(schema: &Value, wire: &str, ty: &Type) -> Option<String> {
    let prop = schema.get("properties")?.get(wire)?;
    let at = format!("property \"{wire}\"");
    disagreement(schema, prop, &reads(ty), &at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(prop: Value, ty: &str) -> Option<String> {
        let schema = json!({"type": "object", "properties": {"x": prop}});
        let ty: Type = syn::parse_str(ty).unwrap();
        property_disagreement(&schema, "x", &ty)
    }

    #[test]
    fn agreeing_types_pass() {
        for (prop, ty) in [
            (json!({"type": "integer"}), "u64"),
            (json!({"type": "integer"}), "f64"),
            (json!({"type": "number"}), "f32"),
            (json!({"type": "string"}), "String"),
            (json!({"type": "string", "enum": ["a", "b"]}), "String"),
            (json!({"type": ["string", "null"]}), "Option<String>"),
            (
                json!({"type": "array", "items": {"type": "integer"}}),
                "Vec<u8>",
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
                "std::collections::HashMap<String, f64>",
            ),
            (json!({"type": "string"}), "MyEnum"),
            (json!({"type": "object"}), "serde_json::Value"),
            (
                json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
                "Option<i32>",
            ),
            (json!({}), "u8"),
            (json!({"type": "boolean"}), "Box<bool>"),
        ] {
            assert_eq!(check(prop.clone(), ty), None, "{prop} for {ty}");
        }
    }

    #[test]
    fn disagreeing_types_are_reported() {
        for (prop, ty, says) in [
            (json!({"type": "string"}), "u64", "refuse every value"),
            (json!({"type": "number"}), "u32", "a fraction such as 2.5"),
            (
                json!({"type": ["string", "integer"]}),
                "u32",
                "remove \"string\" from",
            ),
            (
                json!({"type": ["string", "null"]}),
                "String",
                "make the argument an `Option`",
            ),
            (json!({"enum": [1, 2.5]}), "i64", "the value 2.5"),
            (
                json!({"type": "array", "items": {"type": "string"}}),
                "Vec<u8>",
                "items of property \"x\"",
            ),
            (json!({"type": "integer"}), "Vec<u8>", "reads \"array\""),
            (
                json!({"type": "boolean"}),
                "Option<String>",
                "refuse every value",
            ),
        ] {
            let got = check(prop.clone(), ty);
            assert!(
                got.as_deref().is_some_and(|m| m.contains(says)),
                "{prop} for {ty}: {got:?}"
            );
        }
    }
}
