//! Questions a tool puts to the person ([`CallContext::ask`](crate::CallContext::ask)): a type
//! with primitive fields whose JSON Schema (derived with schemars) becomes a flat form, the
//! shape MCP elicitation accepts: an object whose properties are strings (with an optional
//! `email`, `uri`, `date` or `date-time` format), numbers, integers, booleans, string enums
//! (plain, titled with `oneOf`, or with the older `enumNames`), and lists of string enums
//! (multiple choice). Doc comments become descriptions, `#[serde(default)]` values become the
//! form's defaults (schemars writes a default only for a field whose type is `Serialize`), and
//! `Option` fields are not required.
//!
//! A type that cannot be a flat form (a nested struct, a list of free values, a map) is refused
//! when it is asked, with [`ErrorCode::INVALID_FORM`](crate::ErrorCode::INVALID_FORM) naming the
//! field, before anyone is asked.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

/// How long [`CallContext::ask`](crate::CallContext::ask) waits for the person by default.
pub const DEFAULT_QUESTION_TIMEOUT: Duration = Duration::from_secs(300);

/// A question as a host puts it: the message, the flat form's schema, and how long the tool
/// waits.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// What the person is asked, in the tool's words.
    pub message: String,
    /// The form: `{"type": "object", "properties": {...}, "required": [...]}`, checked flat.
    pub schema: Value,
    /// How long the tool waits for the reply.
    pub timeout: Duration,
}

/// The person's reply to a question.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply<Q> {
    /// They filled in the form and sent it.
    Accepted(Q),
    /// They refused to answer.
    Declined,
    /// They dismissed the form without choosing.
    Cancelled,
    /// No reply came within the question's timeout.
    TimedOut,
}

impl<Q> Reply<Q> {
    /// The answer, when the person gave one.
    pub fn accepted(self) -> Option<Q> {
        match self {
            Reply::Accepted(q) => Some(q),
            _ => None,
        }
    }

    /// The name of the outcome: `accepted`, `declined`, `cancelled`, `timed_out`.
    pub fn action(&self) -> &'static str {
        match self {
            Reply::Accepted(_) => "accepted",
            Reply::Declined => "declined",
            Reply::Cancelled => "cancelled",
            Reply::TimedOut => "timed_out",
        }
    }
}

/// Why a type cannot be asked as a flat form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormError {
    /// The field at fault, empty for the type as a whole.
    pub field: String,
    /// Why.
    pub reason: String,
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "not a flat form: {}", self.reason)
        } else {
            write!(
                f,
                "field {:?} cannot be a form field: {}",
                self.field, self.reason
            )
        }
    }
}

impl std::error::Error for FormError {}

/// The flat form of `Q`: its derived schema with references resolved and only the keywords a
/// form has kept, or why it is not one.
pub fn form_schema<Q: JsonSchema>() -> Result<Value, FormError> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<Q>();
    flatten(&schema.to_value())
}

fn whole(reason: impl Into<String>) -> FormError {
    FormError {
        field: String::new(),
        reason: reason.into(),
    }
}

/// `schema` (a root with its `$defs`) as a flat form.
pub(crate) fn flatten(schema: &Value) -> Result<Value, FormError> {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    let root = resolve(schema, &defs).map_err(whole)?;
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(whole("the question must be a struct with named fields"));
    }
    let properties = root
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| whole("the question has no fields"))?;
    let mut required: Vec<Value> = root
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Map::new();
    for (name, property) in properties {
        let fail = |reason: String| FormError {
            field: name.clone(),
            reason,
        };
        let (field, optional) = field(property, &defs).map_err(fail)?;
        if optional {
            required.retain(|r| r.as_str() != Some(name));
        }
        out.insert(name.clone(), field);
    }
    let mut form = json!({ "type": "object", "properties": out });
    if !required.is_empty() {
        form["required"] = Value::Array(required);
    }
    for key in ["title", "description"] {
        if let Some(text) = root.get(key).filter(|v| v.is_string()) {
            form[key] = text.clone();
        }
    }
    Ok(form)
}

/// `schema` with a `$ref` to `$defs` replaced by its target, its own keywords (a default, a
/// description) kept over the target's.
fn resolve(schema: &Value, defs: &Value) -> Result<Value, String> {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
        return Ok(schema.clone());
    };
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
        .ok_or_else(|| format!("a reference {reference:?} outside the type's definitions"))?;
    let mut target = defs
        .get(name)
        .cloned()
        .ok_or_else(|| format!("the reference {reference:?} has no definition"))?;
    if let (Some(target), Some(own)) = (target.as_object_mut(), schema.as_object()) {
        for (key, value) in own {
            if key != "$ref" {
                target.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(target)
}

/// One field as a form field, and whether it may be left empty (an `Option`).
fn field(schema: &Value, defs: &Value) -> Result<(Value, bool), String> {
    let mut schema = resolve(schema, defs)?;
    let mut optional = false;
    // `Option<T>`: `"type": [T, "null"]`, or `anyOf: [T, {"type": "null"}]`
    if let Some(types) = schema.get("type").and_then(Value::as_array).cloned() {
        let kept: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
        if kept.len() != 1 {
            return Err("a field must have one type".into());
        }
        optional = true;
        schema["type"] = kept[0].clone();
    }
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array).cloned() {
        let kept: Vec<&Value> = options
            .iter()
            .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if kept.len() == 1 && options.len() == 2 {
            optional = true;
            let mut inner = resolve(kept[0], defs)?;
            for key in ["title", "description", "default"] {
                if let Some(v) = schema.get(key) {
                    inner[key] = v.clone();
                }
            }
            schema = inner;
        }
    }
    if schema.get("default").is_some_and(Value::is_null) {
        schema.as_object_mut().map(|o| o.remove("default"));
    }
    let mut out = Map::new();
    let copy = |out: &mut Map<String, Value>, keys: &[&str]| {
        for key in keys {
            if let Some(v) = schema.get(*key) {
                out.insert((*key).to_owned(), v.clone());
            }
        }
    };
    copy(&mut out, &["title", "description"]);
    if let Some(choices) = titled_choices(schema.get("oneOf"), defs)? {
        out.insert("type".into(), json!("string"));
        out.insert("oneOf".into(), Value::Array(choices));
        copy(&mut out, &["default"]);
        return Ok((Value::Object(out), optional));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => {
            out.insert("type".into(), json!("string"));
            if let Some(values) = schema.get("enum") {
                strings(values).ok_or("a choice must be a list of strings")?;
                out.insert("enum".into(), values.clone());
                copy(&mut out, &["enumNames"]);
            } else {
                copy(&mut out, &["minLength", "maxLength"]);
                if let Some(format) = schema.get("format").and_then(Value::as_str)
                    && ["email", "uri", "date", "date-time"].contains(&format)
                {
                    out.insert("format".into(), json!(format));
                }
            }
            copy(&mut out, &["default"]);
        }
        Some(kind @ ("number" | "integer")) => {
            out.insert("type".into(), json!(kind));
            copy(&mut out, &["minimum", "maximum", "default"]);
        }
        Some("boolean") => {
            out.insert("type".into(), json!("boolean"));
            copy(&mut out, &["default"]);
        }
        Some("array") => {
            let items = resolve(schema.get("items").unwrap_or(&Value::Null), defs)?;
            let items = if let Some(choices) = titled_choices(items.get("oneOf"), defs)?
                .or(titled_choices(items.get("anyOf"), defs)?)
            {
                json!({ "anyOf": choices })
            } else if items.get("type").and_then(Value::as_str) == Some("string")
                && items.get("enum").and_then(strings).is_some()
            {
                json!({ "type": "string", "enum": items["enum"] })
            } else {
                return Err(
                    "a list must be a multiple choice of strings (a list of a unit enum)".into(),
                );
            };
            out.insert("type".into(), json!("array"));
            out.insert("items".into(), items);
            copy(&mut out, &["minItems", "maxItems", "default"]);
        }
        Some("object") => return Err("a form cannot nest an object".into()),
        Some(other) => return Err(format!("a form has no fields of type {other:?}")),
        None => return Err("a field must be a string, number, integer, boolean or choice".into()),
    }
    Ok((Value::Object(out), optional))
}

/// Titled choices (`oneOf`/`anyOf` of string constants) as `{"const", "title"}` pairs, the title
/// being the variant's title, else its doc comment, else the value; `None` when `options` are
/// not string constants.
fn titled_choices(options: Option<&Value>, defs: &Value) -> Result<Option<Vec<Value>>, String> {
    let Some(options) = options.and_then(Value::as_array) else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(options.len());
    for option in options {
        let option = resolve(option, defs)?;
        let Some(value) = option
            .get("const")
            .or_else(|| option.get("enum").and_then(|e| e.get(0)))
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        let title = option
            .get("title")
            .or_else(|| option.get("description"))
            .and_then(Value::as_str)
            .unwrap_or(value);
        out.push(json!({ "const": value, "title": title }));
    }
    Ok(Some(out))
}

fn strings(values: &Value) -> Option<()> {
    values
        .as_array()?
        .iter()
        .all(Value::is_string)
        .then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, serde::Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Status {
        Active,
        Inactive,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Size {
        /// Small cup
        S,
        #[schemars(title = "Large cup")]
        L,
    }

    fn thirty() -> i64 {
        30
    }
    fn active() -> Status {
        Status::Active
    }

    /// Who you are.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Person {
        /// Your name.
        name: String,
        #[serde(default = "thirty")]
        age: i64,
        score: Option<f64>,
        #[serde(default)]
        verified: bool,
        #[serde(default = "active")]
        status: Status,
        size: Size,
        tags: Vec<Status>,
        sizes: Vec<Size>,
    }

    #[test]
    fn a_struct_of_primitives_is_a_flat_form_with_defaults_enums_and_descriptions() {
        let form = form_schema::<Person>().unwrap();
        let p = &form["properties"];
        assert_eq!(form["type"], "object");
        assert_eq!(form["description"], "Who you are.");
        assert_eq!(
            p["name"],
            json!({"type": "string", "description": "Your name."})
        );
        assert_eq!(p["age"], json!({"type": "integer", "default": 30}));
        assert_eq!(p["score"]["type"], "number");
        assert_eq!(p["verified"], json!({"type": "boolean", "default": false}));
        assert_eq!(
            p["status"],
            json!({"type": "string", "enum": ["active", "inactive"], "default": "active"})
        );
        assert_eq!(
            p["size"]["oneOf"],
            json!([{"const": "S", "title": "Small cup"}, {"const": "L", "title": "Large cup"}])
        );
        assert_eq!(
            p["tags"],
            json!({"type": "array", "items": {"type": "string", "enum": ["active", "inactive"]}})
        );
        assert_eq!(p["sizes"]["items"]["anyOf"][1]["title"], "Large cup");
        let required: Vec<&str> = form["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            required.contains(&"name") && !required.contains(&"score"),
            "{required:?}"
        );
        assert!(!required.contains(&"age"), "{required:?}");
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        inner: Person,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct FreeList {
        names: Vec<String>,
    }

    #[test]
    fn a_type_that_is_not_a_flat_form_is_refused_with_the_field() {
        let err = form_schema::<Nested>().unwrap_err();
        assert_eq!(err.field, "inner");
        assert!(err.reason.contains("nest"), "{err}");
        let err = form_schema::<FreeList>().unwrap_err();
        assert_eq!(err.field, "names");
        let err = form_schema::<String>().unwrap_err();
        assert!(
            err.field.is_empty() && err.reason.contains("struct"),
            "{err}"
        );
    }
}
