//! Chaining: steps whose arguments refer to earlier outputs.
//!
//! A reference is an object with the single key `"$ref"` whose value is `"<step id>#<JSON
//! pointer>"` into that step's (full, untruncated) result; `"<step id>"` or `"<step id>#"` is the
//! whole result. It is replaced by the value it points to, whatever its type:
//!
//! ```json
//! [{"id": "note", "tool": "create_note", "arguments": {"title": "Gadamer"}},
//!  {"id": "tag",  "tool": "tag_note",    "arguments": {"note_id": {"$ref": "note#/id"}, "tag": "h"}}]
//! ```
//!
//! References may only name earlier steps; that is checked before anything runs. Each step is
//! then resolved, hydrated and validated like any model call, and runs under the same policy. The
//! chain stops at the first step that does not succeed.

// ToolError is the error of every fallible path in this crate; its size is decided there.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_wire::escape;

use crate::error::{ErrorCode, ToolError, Violation};

use crate::records::Execution;

/// The key that marks a reference.
pub const REF_KEY: &str = "$ref";

/// One step of a chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainStep {
    /// The step's id, unique in the chain, used by references.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The arguments, possibly with references.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// What a chain produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainResult {
    /// One execution per step that was attempted, in order.
    pub steps: Vec<Execution>,
    /// Whether every step succeeded.
    pub completed: bool,
    /// Set when the chain could not start or a step's references could not be resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

/// The most steps one chain may have. A chain is a plan a model or a person wrote out step by
/// step; past a few dozen steps it is a batch job, and an unbounded one would let one request
/// hold the executor (and its audit trail) for as long as its sender likes.
pub const MAX_CHAIN_STEPS: usize = 64;

/// Checks the chain's length, that ids are unique and that every reference names an earlier
/// step.
pub(crate) fn check(steps: &[ChainStep]) -> Result<(), ToolError> {
    if steps.len() > MAX_CHAIN_STEPS {
        return Err(ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            format!(
                "the chain has {} steps, more than the {MAX_CHAIN_STEPS} allowed; nothing was run",
                steps.len()
            ),
        )
        .recover(format!(
            "split the work into chains of at most {MAX_CHAIN_STEPS} steps"
        ))
        .with_detail("limit", MAX_CHAIN_STEPS));
    }
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut violations = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if seen.contains(step.id.as_str()) {
            violations.push(Violation::new(
                format!("/{i}/id"),
                format!("the step id {:?} is used twice", step.id),
            ));
        }
        for (pointer, target) in references(&step.arguments, &format!("/{i}/arguments")) {
            let step_id = target.split('#').next().unwrap_or_default();
            if !seen.contains(step_id) {
                violations.push(Violation::new(
                    pointer,
                    format!("{target:?} does not name an earlier step"),
                ));
            }
        }
        seen.insert(&step.id);
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            "the chain's references are invalid; nothing was run",
        )
        .recover("reference only earlier steps, as {\"$ref\": \"<step id>#/pointer\"}")
        .with_violations(violations))
    }
}

fn as_ref(v: &Value) -> Option<&str> {
    match v {
        Value::Object(m) if m.len() == 1 => m.get(REF_KEY)?.as_str(),
        _ => None,
    }
}

fn references(v: &Value, at: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    fn go(v: &Value, at: String, out: &mut Vec<(String, String)>) {
        if let Some(r) = as_ref(v) {
            out.push((at, r.to_owned()));
            return;
        }
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    go(x, format!("{at}/{}", escape(k)), out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    go(x, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    go(v, at.to_owned(), &mut out);
    out
}

/// Replaces every reference in `args` with the value it points to in `outputs` (step id, result).
pub(crate) fn resolve(args: &Value, outputs: &[(String, Value)]) -> Result<Value, ToolError> {
    let mut violations = Vec::new();
    let resolved = resolve_at(args, outputs, String::new(), &mut violations);
    if violations.is_empty() {
        Ok(resolved)
    } else {
        Err(ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            "a reference points at nothing in the earlier step's result",
        )
        .recover("check the JSON pointer against the earlier step's result")
        .with_violations(violations))
    }
}

fn resolve_at(
    v: &Value,
    outputs: &[(String, Value)],
    at: String,
    violations: &mut Vec<Violation>,
) -> Value {
    if let Some(r) = as_ref(v) {
        let (step, pointer) = r.split_once('#').unwrap_or((r, ""));
        let found = outputs
            .iter()
            .find(|(id, _)| id == step)
            .and_then(|(_, out)| out.pointer(pointer));
        return match found {
            Some(x) => x.clone(),
            None => {
                violations.push(Violation::new(at, format!("{r:?} points at nothing")));
                Value::Null
            }
        };
    }
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let here = format!("{at}/{}", escape(k));
                    (k.clone(), resolve_at(x, outputs, here, violations))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, x)| resolve_at(x, outputs, format!("{at}/{i}"), violations))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(id: &str, args: Value) -> ChainStep {
        ChainStep {
            id: id.into(),
            tool: "t".into(),
            arguments: args,
        }
    }

    #[test]
    fn references_resolve_by_pointer_at_any_depth() {
        let outputs = vec![("a".to_owned(), json!({"id": 7, "tags": ["x", "y"]}))];
        let args = json!({"n": {"$ref": "a#/id"}, "deep": [{"t": {"$ref": "a#/tags/1"}}], "all": {"$ref": "a"}});
        assert_eq!(
            resolve(&args, &outputs).unwrap(),
            json!({"n": 7, "deep": [{"t": "y"}], "all": {"id": 7, "tags": ["x", "y"]}})
        );
        let err = resolve(&json!({"n": {"$ref": "a#/nope"}}), &outputs).unwrap_err();
        assert_eq!(err.violations[0].pointer, "/n");
    }

    #[test]
    fn forward_references_and_duplicate_ids_are_refused_before_running() {
        let err = check(&[
            step("a", json!({"x": {"$ref": "b#/id"}})),
            step("b", json!({})),
            step("b", json!({})),
        ])
        .unwrap_err();
        let pointers: Vec<_> = err.violations.iter().map(|v| v.pointer.as_str()).collect();
        assert_eq!(pointers, ["/0/arguments/x", "/2/id"]);
        assert!(
            check(&[
                step("a", json!({})),
                step("b", json!({"x": {"$ref": "a#/id"}}))
            ])
            .is_ok()
        );
    }
}
