//! Response formats and fitting large results into the model's budget.
//!
//! The convention: a tool that can answer at several levels of detail takes an argument named
//! `response_format` of type [`ResponseFormat`] and shapes its output with
//! [`ResponseFormat::project`]. Independently, the executor shortens any result whose JSON is
//! longer than `max_result_chars` before it goes to the model ([`fit`]), and keeps the full value
//! for the caller in [`crate::executor::Execution::full`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How much a tool should say, so that a model spends no more tokens on a result than it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Identifiers and status only: quick overviews.
    Concise,
    /// The core fields: most questions.
    #[default]
    Standard,
    /// Every field: when the user needs everything.
    Detailed,
}

/// The fields each format keeps (detailed keeps all).
#[derive(Debug, Clone, Copy)]
pub struct FormatFields<'a> {
    /// Fields of the concise form.
    pub concise: &'a [&'a str],
    /// Fields of the standard form.
    pub standard: &'a [&'a str],
}

/// The name of the argument that carries the format, by convention.
pub const RESPONSE_FORMAT_ARG: &str = "response_format";

impl ResponseFormat {
    /// Keeps the fields of this format in an object, or in every object of an array (at the top
    /// level or one level down, e.g. `{"tasks": [...], "total": 3}`).
    pub fn project(self, value: &Value, fields: &FormatFields<'_>) -> Value {
        let keep = match self {
            ResponseFormat::Detailed => return value.clone(),
            ResponseFormat::Concise => fields.concise,
            ResponseFormat::Standard => fields.standard,
        };
        let pick = |m: &Map<String, Value>| -> Value {
            Value::Object(
                m.iter()
                    .filter(|(k, _)| keep.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        };
        let items = |items: &Vec<Value>| -> Value {
            Value::Array(
                items
                    .iter()
                    .map(|v| v.as_object().map(pick).unwrap_or_else(|| v.clone()))
                    .collect(),
            )
        };
        match value {
            Value::Array(a) => items(a),
            Value::Object(m) if m.values().any(Value::is_array) => Value::Object(
                m.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Value::Array(a) => items(a),
                            other => other.clone(),
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            Value::Object(m) => pick(m),
            other => other.clone(),
        }
    }
}

/// Shortens `value` until its JSON is at most `max_chars` long: the longest arrays keep their
/// first items and end with a note of how many were left out, the longest strings are cut with a
/// note of how much. When that cannot get under the budget, the result becomes a preview object.
/// Returns the value and whether it was shortened.
pub fn fit(value: &Value, max_chars: usize) -> (Value, bool) {
    let len = json_len(value);
    if len <= max_chars {
        return (value.clone(), false);
    }
    let mut v = value.clone();
    for _ in 0..64 {
        if json_len(&v) <= max_chars || !shrink_largest(&mut v) {
            break;
        }
    }
    if json_len(&v) <= max_chars {
        return (v, true);
    }
    let text = value.to_string();
    let keep = max_chars.saturating_sub(160);
    let preview: String = text.chars().take(keep).collect();
    let note = format!(
        "the result was {len} characters; only its beginning is shown. Ask for less \
         (a narrower query, a smaller limit, or response_format \"concise\")."
    );
    (
        serde_json::json!({"truncated": true, "note": note, "preview": preview}),
        true,
    )
}

/// [`fit`] of a value the caller gives up: the value itself when it fits (no copy), else the
/// fitted value and the full one.
pub(crate) fn fit_owned(value: Value, max_chars: usize) -> (Value, Option<Value>) {
    if json_len(&value) <= max_chars || crate::content::is_rich(&value) {
        return (value, None);
    }
    let (fitted, _) = fit(&value, max_chars);
    (fitted, Some(value))
}

/// The length of `v`'s JSON text, counted as it is written, without keeping it.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, v) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// Halves the largest shrinkable part of `v`; false when nothing can shrink.
fn shrink_largest(v: &mut Value) -> bool {
    // find the path of the biggest array (more than 1 item) or string (more than 64 chars)
    fn walk(v: &Value, path: &mut Vec<PathStep>, best: &mut Option<(usize, Vec<PathStep>)>) {
        let size = json_len(v);
        let candidate = match v {
            Value::Array(a) => a.len() > 1,
            Value::String(s) => s.chars().count() > 64,
            _ => false,
        };
        if candidate && best.as_ref().is_none_or(|(b, _)| size > *b) {
            *best = Some((size, path.clone()));
        }
        match v {
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    path.push(PathStep::Index(i));
                    walk(x, path, best);
                    path.pop();
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    path.push(PathStep::Key(k.clone()));
                    walk(x, path, best);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut best = None;
    walk(v, &mut Vec::new(), &mut best);
    let Some((_, path)) = best else {
        return false;
    };
    let mut target = v;
    for step in &path {
        target = match step {
            PathStep::Index(i) => &mut target[*i],
            PathStep::Key(k) => &mut target[k.as_str()],
        };
    }
    match target {
        Value::Array(a) => {
            // an earlier note of ours is replaced, not kept, so notes do not pile up
            let omitted_before = match a.last() {
                Some(Value::String(s)) if s.starts_with(OMITTED) => {
                    let n = s[OMITTED.len()..]
                        .split_whitespace()
                        .next()
                        .and_then(|n| n.parse::<usize>().ok())
                        .unwrap_or(0);
                    a.pop();
                    n
                }
                _ => 0,
            };
            let keep = a.len().div_ceil(2).max(1);
            let omitted = a.len() - keep + omitted_before;
            a.truncate(keep);
            a.push(Value::String(format!(
                "{OMITTED}{omitted} more items omitted]"
            )));
        }
        Value::String(s) => {
            let total = s.chars().count();
            let keep = total / 2;
            let head: String = s.chars().take(keep).collect();
            *s = format!("{head}…[{} more characters]", total - keep);
        }
        _ => return false,
    }
    true
}

const OMITTED: &str = "[… ";

#[derive(Clone)]
enum PathStep {
    Index(usize),
    Key(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_project_objects_and_lists() {
        let fields = FormatFields {
            concise: &["id", "status"],
            standard: &["id", "status", "title"],
        };
        let task = json!({"id": 1, "status": "open", "title": "x", "description": "long"});
        assert_eq!(
            ResponseFormat::Concise.project(&task, &fields),
            json!({"id": 1, "status": "open"})
        );
        let list = json!({"tasks": [task.clone()], "total": 1});
        assert_eq!(
            ResponseFormat::Standard.project(&list, &fields),
            json!({"tasks": [{"id": 1, "status": "open", "title": "x"}], "total": 1})
        );
        assert_eq!(ResponseFormat::Detailed.project(&task, &fields), task);
        let schema = crate::schema::derive::<ResponseFormat>();
        let text = schema.to_string();
        for name in ["concise", "standard", "detailed"] {
            assert!(text.contains(&format!("\"{name}\"")), "{text}");
        }
        assert_eq!(json!(ResponseFormat::default()), json!("standard"));
    }

    #[test]
    fn large_results_fit_the_budget_and_say_what_was_left_out() {
        let big: Vec<Value> = (0..1000)
            .map(|i| json!({"id": i, "text": "lorem ipsum dolor sit amet"}))
            .collect();
        let v = json!({"items": big, "total": 1000});
        let (fitted, truncated) = fit(&v, 2000);
        assert!(truncated);
        assert!(
            fitted.to_string().len() <= 2000,
            "{}",
            fitted.to_string().len()
        );
        assert_eq!(fitted["total"], 1000);
        assert_eq!(fitted["items"][0]["id"], 0);
        let note = fitted["items"].as_array().unwrap().last().unwrap();
        assert!(
            note.as_str().unwrap().contains("more items omitted"),
            "{note}"
        );
        let (same, t) = fit(&json!({"a": 1}), 2000);
        assert_eq!((same, t), (json!({"a": 1}), false));
        let (s, t) = fit(&json!("x".repeat(10_000)), 500);
        assert!(t && s.to_string().len() <= 500);
    }
}
