//! Whether a schema, as written, already meets OpenAI's strict-mode rules.
//!
//! [`crate::strict`] builds a strict view of any schema it can; this module checks a schema its
//! author declared strict (`#[tool(strict)]`, a dynamic tool's `strict` flag), where changing the
//! schema behind the author's back would be wrong and every departure must be reported instead.
//! `#[tool]` runs it at compile time on verbatim schemas, `tool-runtime` at registration on the
//! others: one walk, so both report the same places. Each caller phrases the fix for its author
//! (JSON for a verbatim schema, `Option<T>` for a derived one) from the [`StrictRule`].

use serde_json::Value;

use crate::escape;

/// The rule a place breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrictRule {
    /// An object schema without `additionalProperties: false`.
    NotClosed,
    /// An open object (`additionalProperties` `true` or a schema): a map, which strict mode has
    /// no form for.
    OpenMap,
    /// The property of that name is not listed in `required`.
    NotRequired(String),
}

/// One place in a schema that breaks strict mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrictProblem {
    /// JSON pointer into the schema (`/` for the root).
    pub pointer: String,
    /// The root property the place belongs to, if any (to point at the Rust field).
    pub property: Option<String>,
    /// What is wrong there.
    pub rule: StrictRule,
}

impl StrictProblem {
    /// The problem and its fix in terms of the JSON Schema.
    pub fn message(&self) -> String {
        match &self.rule {
            StrictRule::NotClosed => {
                "strict mode needs \"additionalProperties\": false on every object".into()
            }
            StrictRule::OpenMap => "an open object (a map): strict mode allows only fixed \
                                    properties; use an array of key/value objects"
                .into(),
            StrictRule::NotRequired(k) => format!(
                "property {k:?} is not in \"required\": strict mode needs every property \
                 required; make an optional one a union with null (\"type\": [\"string\", \"null\"])"
            ),
        }
    }
}

/// Every place where `schema` breaks strict mode: each object needs `additionalProperties: false`
/// and every property in `required` (optional ones as a union with null); open maps are not
/// allowed. Values (`enum`, `const`, `default`, `examples`) are not schemas and are not walked.
pub fn problems(schema: &Value) -> Vec<StrictProblem> {
    let mut out = Vec::new();
    walk(schema, "", None, &mut out);
    out
}

fn walk(v: &Value, at: &str, root_prop: Option<&str>, out: &mut Vec<StrictProblem>) {
    let Value::Object(m) = v else {
        if let Value::Array(a) = v {
            for (i, x) in a.iter().enumerate() {
                walk(x, &format!("{at}/{i}"), root_prop, out);
            }
        }
        return;
    };
    if is_object_schema(m) {
        check_object(m, at, root_prop, out);
    }
    for (k, child) in m {
        let here = format!("{at}/{}", escape(k));
        if k == "properties" && at.is_empty() {
            if let Value::Object(props) = child {
                for (name, s) in props {
                    walk(s, &format!("{here}/{}", escape(name)), Some(name), out);
                }
            }
        } else if matches!(child, Value::Object(_) | Value::Array(_))
            && !matches!(k.as_str(), "enum" | "const" | "examples" | "default")
        {
            walk(child, &here, root_prop, out);
        }
    }
}

fn is_object_schema(m: &serde_json::Map<String, Value>) -> bool {
    m.contains_key("properties")
        || match m.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
            _ => false,
        }
}

fn check_object(
    m: &serde_json::Map<String, Value>,
    at: &str,
    root_prop: Option<&str>,
    out: &mut Vec<StrictProblem>,
) {
    let closing = match m.get("additionalProperties") {
        Some(Value::Bool(false)) => None,
        Some(Value::Bool(true)) | Some(Value::Object(_)) => Some(StrictRule::OpenMap),
        _ => Some(StrictRule::NotClosed),
    };
    if let Some(rule) = closing {
        out.push(StrictProblem {
            pointer: if at.is_empty() { "/".into() } else { at.into() },
            property: root_prop.map(str::to_owned),
            rule,
        });
    }
    let required: Vec<&str> = m
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = m.get("properties") {
        for k in props.keys().filter(|k| !required.contains(&k.as_str())) {
            out.push(StrictProblem {
                pointer: format!("{at}/properties/{}", escape(k)),
                property: root_prop
                    .map(str::to_owned)
                    .or_else(|| at.is_empty().then(|| k.clone())),
                rule: StrictRule::NotRequired(k.clone()),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_strict_schema_has_no_problems() {
        let s = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "a": {"type": "string", "enum": [{"type": "object"}]},
                "b": {"type": ["integer", "null"]}
            },
            "required": ["a", "b"]
        });
        assert!(problems(&s).is_empty());
    }

    #[test]
    fn each_place_is_named_with_its_rule_and_root_property() {
        let s = json!({
            "type": "object",
            "properties": {
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "a/b": {"type": "integer"},
                "inner": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {"x": {"type": "string"}}
                }
            },
            "required": ["tags", "inner"]
        });
        let mut found: Vec<(String, Option<String>, StrictRule)> = problems(&s)
            .into_iter()
            .map(|p| (p.pointer, p.property, p.rule))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let own = |s: &str| Some(s.to_owned());
        assert_eq!(
            found,
            [
                ("/".into(), None, StrictRule::NotClosed),
                (
                    "/properties/a~1b".into(),
                    own("a/b"),
                    StrictRule::NotRequired("a/b".into())
                ),
                (
                    "/properties/inner/properties/x".into(),
                    own("inner"),
                    StrictRule::NotRequired("x".into())
                ),
                ("/properties/tags".into(), own("tags"), StrictRule::OpenMap),
            ]
        );
    }
}
