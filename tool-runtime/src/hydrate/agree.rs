//! Whether a typed tool's verbatim schema and its argument type agree, checked at registration
//! for what the macro cannot see.
//!
//! `#[tool]` compares a verbatim schema's property types with the Rust types it can read from
//! the tokens (integers, strings, `Option`, sequences, ...). A struct or enum of the author's,
//! `serde_json::Value`, or a field read by `#[serde(with)]` is opaque to it. Here, once per tool
//! type and process, values the schema accepts for each property are deserialized through the
//! tool's own argument reader (the one every call goes through):
//!
//! - the schema's own values for the property (`const`, `enum`, `default`, `examples`): the
//!   author says they are valid, so the type must read each of them;
//! - one small instance of each JSON type the property declares (`""`, `0`, `0.5`, `false`,
//!   `[]`, `{}`, `null`), when the property's schema accepts it: a type that refuses it *as a
//!   kind* (serde's "invalid type") reads other JSON than the schema describes. A refusal of the
//!   value itself (an empty string that is not a date) says nothing about the kind and passes.
//!
//! A tool the check cannot build a readable argument object for (a required property with no
//! value the schema accepts here, a refusal serde does not place at a property) is left alone:
//! the check only refuses what it can show.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use serde_path_to_error::Segment;

use super::entry::RegistrationError;
use super::plan::Plan;
use crate::definition::ToolDefinition;

/// At most this many of a property's `enum` or `examples` values are tried, so that a long
/// enumeration costs registration no more than a short one.
const MAX_OWN: usize = 16;

/// Why a value is expected to be read.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Origin {
    /// One of the schema's own values, under this keyword.
    Own(&'static str),
    /// A small instance of a type the schema declares.
    Sample(&'static str),
}

struct Candidate {
    value: Value,
    origin: Origin,
}

/// How the argument type refused an object.
struct Refusal {
    /// The property the refusal was placed at, when serde placed it at one.
    at: Option<String>,
    /// serde's message, with the path inside the property.
    message: String,
    /// Whether the type refused the kind of a value (serde's "invalid type"), not the value.
    kind: bool,
}

/// Refuses `definition` when a value its schema accepts for a property is refused by `A`, the
/// tool's argument type, read as every call reads it (`serde_json::from_value`).
pub(crate) fn check<A: DeserializeOwned>(
    definition: &ToolDefinition,
) -> Result<(), RegistrationError> {
    check_with(definition, |v| {
        // read as a call is; only a refusal is read again, tracking where it happened
        if A::deserialize(v).is_ok() {
            return Ok(());
        }
        serde_path_to_error::deserialize::<_, A>(v)
            .map(drop)
            .map_err(|e| {
                // the property is the first key on the way to the refusal
                let at = match e.path().iter().next() {
                    Some(Segment::Map { key }) => Some(key.clone()),
                    _ => None,
                };
                let message = e.to_string();
                let kind = e.into_inner().to_string().starts_with("invalid type:");
                Refusal { at, message, kind }
            })
    })
}

/// [`check`] with the reader given.
fn check_with(
    definition: &ToolDefinition,
    read: impl Fn(&Value) -> Result<(), Refusal>,
) -> Result<(), RegistrationError> {
    let schema = definition.parameters_value();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let defs = schema.get("$defs").or_else(|| schema.get("definitions"));
    let accepts = acceptor(&schema);
    let mut candidates: Vec<(&str, &Value, Vec<Candidate>)> = Vec::new();
    for (name, property) in properties {
        let accepted = |v: &Value| match &accepts {
            Some(plan) => plan.accepts(&Value::Object(Map::from_iter([(name.clone(), v.clone())]))),
            None => true,
        };
        let list = candidates_of(property, defs, &accepted, accepts.is_some());
        if list.is_empty() && required.contains(&name.as_str()) {
            // no value to stand for it, so no object the reader could be asked about
            return Ok(());
        }
        candidates.push((name, property, list));
    }

    // Rounds: each property puts its next untried candidate in the object, or the one already
    // read; an object that is read clears every candidate in it, a refusal is placed at its
    // property by the reader's path and settles that candidate alone.
    let mut read_ok: Vec<Option<usize>> = vec![None; candidates.len()];
    let mut next: Vec<usize> = vec![0; candidates.len()];
    loop {
        let mut map = Map::new();
        let mut trying = false;
        for (i, (name, _, list)) in candidates.iter().enumerate() {
            let pick = if next[i] < list.len() {
                trying = true;
                Some(next[i])
            } else {
                read_ok[i]
            };
            if let Some(c) = pick {
                map.insert((*name).to_owned(), list[c].value.clone());
            }
        }
        if !trying {
            return Ok(());
        }
        match read(&Value::Object(map)) {
            Ok(()) => {
                for (i, (_, _, list)) in candidates.iter().enumerate() {
                    if next[i] < list.len() {
                        read_ok[i].get_or_insert(next[i]);
                        next[i] += 1;
                    }
                }
            }
            Err(refusal) => {
                let Some(slot) = (refusal.at.as_ref())
                    .and_then(|at| candidates.iter().position(|(n, ..)| n == at))
                    .filter(|&slot| next[slot] < candidates[slot].2.len())
                else {
                    // not placed at a value being tried: nothing to show
                    return Ok(());
                };
                let (name, property, list) = &candidates[slot];
                let candidate = &list[next[slot]];
                if refuses(candidate, &refusal) {
                    return Err(disagreement(
                        definition, name, property, candidate, &refusal,
                    ));
                }
                next[slot] += 1;
                if read_ok[slot].is_none() && next[slot] >= list.len() && required.contains(name) {
                    return Ok(());
                }
            }
        }
    }
}

/// The tool's schema without what ties properties together (`required`, counts, dependencies),
/// compiled once: an object holding one property then says whether the schema accepts that
/// property's value. `None` when no plan expresses it.
fn acceptor(schema: &Value) -> Option<Plan> {
    let mut loose = schema.as_object()?.clone();
    for keyword in [
        "required",
        "minProperties",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
    ] {
        loose.remove(keyword);
    }
    Plan::compile(&Value::Object(loose)).ok()
}

/// Whether `error` from reading `candidate` shows a disagreement: any refusal of the schema's
/// own values, a refusal of a sample's kind.
fn refuses(candidate: &Candidate, refusal: &Refusal) -> bool {
    match candidate.origin {
        Origin::Own(_) => true,
        Origin::Sample(_) => refusal.kind,
    }
}

fn disagreement(
    definition: &ToolDefinition,
    property: &str,
    schema: &Value,
    candidate: &Candidate,
    refusal: &Refusal,
) -> RegistrationError {
    let mut says = schema.to_string();
    if says.len() > 200 {
        says = format!("{}…", says.chars().take(200).collect::<String>());
    }
    let (allows, fix) = match candidate.origin {
        Origin::Own(keyword) => (
            format!("its `{keyword}` value {}", candidate.value),
            format!(
                "make the property's `{keyword}` values ones the Rust type reads, or change the \
                 type to read them"
            ),
        ),
        Origin::Sample(kind) => (
            format!("\"type\": \"{kind}\" (e.g. {})", candidate.value),
            format!(
                "make the property's \"type\" the JSON the Rust type reads, or change the type to \
                 read a {kind}"
            ),
        ),
    };
    RegistrationError::TypeDisagrees {
        name: definition.name.to_string(),
        property: property.to_owned(),
        schema: says,
        allows,
        refused: refusal.message.clone(),
        fix,
    }
}

/// The values to try for one property: its own, then one small instance per declared type, each
/// kept only when the schema accepts it for the property (`checked`: whether `accepted` could
/// tell; without it, samples are not tried and the schema's own values are taken at its word).
fn candidates_of(
    property: &Value,
    defs: Option<&Value>,
    accepted: &dyn Fn(&Value) -> bool,
    checked: bool,
) -> Vec<Candidate> {
    let resolved = resolve(property, defs);
    let mut out = Vec::new();
    let mut own = |keyword: &'static str, v: &Value| {
        if accepted(v) && !out.iter().any(|c: &Candidate| c.value == *v) {
            out.push(Candidate {
                value: v.clone(),
                origin: Origin::Own(keyword),
            });
        }
    };
    if let Some(v) = resolved.get("const") {
        own("const", v);
    }
    for keyword in ["enum", "examples"] {
        for v in resolved
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(MAX_OWN)
        {
            own(keyword, v);
        }
    }
    if let Some(v) = resolved.get("default") {
        own("default", v);
    }
    if !checked {
        return out;
    }
    let kinds: Vec<&str> = match resolved.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for kind in kinds {
        let Some((kind, samples)) = samples(kind, resolved, defs, 0) else {
            continue;
        };
        if let Some(value) = samples.into_iter().find(|v| accepted(v))
            && !out.iter().any(|c| c.value == value)
        {
            out.push(Candidate {
                value,
                origin: Origin::Sample(kind),
            });
        }
    }
    out
}

/// The property's schema, through a local `$ref` to the document's definitions (a few hops at
/// most), so that the keywords the samples come from are found.
fn resolve<'a>(mut property: &'a Value, defs: Option<&'a Value>) -> &'a Value {
    for _ in 0..8 {
        let Some(target) = property
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| {
                r.strip_prefix("#/$defs/")
                    .or(r.strip_prefix("#/definitions/"))
            })
            .and_then(|name| defs?.get(name))
        else {
            break;
        };
        property = target;
    }
    property
}

/// How deep [`samples`] builds objects and arrays inside a property.
const MAX_SAMPLE_DEPTH: usize = 8;

/// Small instances of `kind` for a property whose schema is `schema`, most telling first: an
/// object with its properties filled in (so that a field of a nested type is read too), then
/// with its required ones, then empty; an array with one item, then empty.
fn samples(
    kind: &str,
    schema: &Value,
    defs: Option<&Value>,
    depth: usize,
) -> Option<(&'static str, Vec<Value>)> {
    let nested = |schema: &Value| {
        let schema = resolve(schema, defs);
        if let Some(v) = schema.get("const") {
            return Some(v.clone());
        }
        if let Some(v) = schema
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return Some(v.clone());
        }
        let kind = match schema.get("type") {
            Some(Value::String(k)) => k.as_str(),
            Some(Value::Array(ks)) => ks.iter().filter_map(Value::as_str).find(|k| *k != "null")?,
            _ => return None,
        };
        samples(kind, schema, defs, depth + 1)?.1.into_iter().next()
    };
    Some(match kind {
        "string" => ("string", vec![json!(""), json!("a")]),
        "integer" => ("integer", vec![json!(0), json!(1)]),
        "number" => ("number", vec![json!(0.5), json!(1.5)]),
        "boolean" => ("boolean", vec![json!(false)]),
        "null" => ("null", vec![Value::Null]),
        "array" => {
            let mut out = Vec::new();
            if depth < MAX_SAMPLE_DEPTH
                && let Some(item) = schema.get("items").and_then(nested)
            {
                out.push(json!([item]));
            }
            out.push(json!([]));
            ("array", out)
        }
        "object" => {
            let mut out = Vec::new();
            let properties = schema.get("properties").and_then(Value::as_object);
            if let (Some(properties), true) = (properties, depth < MAX_SAMPLE_DEPTH) {
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for only_required in [false, true] {
                    let filled: Option<Map<String, Value>> = properties
                        .iter()
                        .filter(|(k, _)| !only_required || required.contains(&k.as_str()))
                        .map(|(k, v)| Some((k.clone(), nested(v)?)))
                        .collect();
                    if let Some(filled) = filled {
                        out.push(Value::Object(filled));
                    }
                }
            }
            out.push(json!({}));
            ("object", out)
        }
        _ => return None,
    })
}
