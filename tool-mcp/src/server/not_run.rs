//! The "not run" form: what a call that did not run answers in `structuredContent`, and the
//! declared `outputSchema` that admits it beside the tool's own output.
//!
//! A tool that declares an `outputSchema` must answer every successful result with
//! `structuredContent` that conforms to it, and the official clients enforce it: a result
//! without it, or with one that does not match, is thrown away as a protocol error. A call a
//! person or the policy declined, or one that waits for a person's approval, is not a failure
//! of the tool (`isError` stays false, so the model does not take it for one and retry), so it
//! too is a successful result and must conform. The declared schema is therefore the tool's own
//! output schema *or* this form (`anyOf`), and such results carry the form as
//! `structuredContent`, beside the same text the model reads in `content`.
//!
//! The form is an object with `status` (`"denied"` or `"pending"`) and `message` (what the
//! model should do next), plus `reason` and `decided_by` (`user`, `host`, `policy`, `timeout`)
//! for a denial, and `operation_id` and `preview` for a pending call. Errors (the tool's own,
//! invalid arguments, rate limits, timeouts) are `isError: true` results, which clients do not
//! check against the schema.

use serde_json::{Map, Value, json};
use tool_runtime::executor::Outcome;

use tool_providers::codec::ToolOutcome;

/// What a pending call tells the model.
pub(crate) const WAITS: &str = "This call waits for a person's approval and has not run. Tell \
                                the user it is pending; do not retry it.";

/// The keywords that must stay at the root of a schema for its references to resolve.
const ROOT_KEYWORDS: [&str; 4] = ["$schema", "$id", "$defs", "definitions"];

/// The schema of the "not run" form.
pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "title": "Not run",
        "description": "The call did not run: it was declined (by the person, their MCP host, \
                        the policy, or nobody answering in time), or it waits for a person's \
                        approval. Not an error of the tool.",
        "properties": {
            "status": {"enum": ["denied", "pending"]},
            "message": {"type": "string"},
            "reason": {"type": "string"},
            "decided_by": {"enum": ["user", "host", "policy", "timeout"]},
            "operation_id": {"type": "string"},
            "preview": {}
        },
        "required": ["status", "message"]
    })
}

/// The `outputSchema` to declare for a tool whose own output schema is `own` (object-rooted):
/// `own` or the "not run" form. `own`'s root keywords (`$schema`, `$defs`...) stay at the root,
/// so that its `$ref`s resolve inside the combined schema.
pub(crate) fn declared(own: &Value) -> Value {
    let Value::Object(own) = own else {
        return own.clone();
    };
    let mut root = Map::new();
    let mut branch = own.clone();
    for key in ROOT_KEYWORDS {
        if let Some(v) = branch.remove(key) {
            root.insert(key.to_owned(), v);
        }
    }
    root.insert("type".into(), json!("object"));
    root.insert("anyOf".into(), json!([Value::Object(branch), schema()]));
    Value::Object(root)
}

/// The form for a call that waits for a person, as operation `operation_id`.
pub(crate) fn pending(operation_id: &str, preview: Option<Value>, message: &str) -> Value {
    let mut form = json!({
        "status": "pending",
        "operation_id": operation_id,
        "message": message,
    });
    if let Some(preview) = preview {
        form["preview"] = preview;
    }
    form
}

/// The form for `outcome` when the call did not run (denied or pending), `None` when it ran or
/// failed.
pub(crate) fn structured(outcome: &Outcome) -> Option<Value> {
    match outcome {
        Outcome::Denied { reason, by } => {
            let mut form = ToolOutcome::Denied {
                reason: Some(reason.clone()),
            }
            .to_value();
            form["decided_by"] = serde_json::to_value(by).ok()?;
            Some(form)
        }
        Outcome::Pending {
            operation_id,
            preview,
        } => Some(pending(
            operation_id,
            serde_json::to_value(preview).ok(),
            WAITS,
        )),
        Outcome::Success { .. } | Outcome::Error { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_schema_admits_the_output_and_the_not_run_forms_and_nothing_else() {
        let own = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"note": {"$ref": "#/$defs/Note"}},
            "required": ["note"],
            "additionalProperties": false,
            "$defs": {"Note": {"type": "object", "properties": {"id": {"type": "string"}},
                               "required": ["id"]}}
        });
        let declared = declared(&own);
        assert_eq!(declared["type"], "object");
        assert!(declared["$defs"]["Note"].is_object());
        let v = jsonschema::validator_for(&declared).unwrap();
        assert!(v.is_valid(&json!({"note": {"id": "n1"}})));
        assert!(
            !v.is_valid(&json!({"note": {"id": 1}})),
            "refs still resolve"
        );
        assert!(
            v.is_valid(&json!({"status": "denied", "message": "m", "reason": "no",
                                   "decided_by": "user"}))
        );
        assert!(v.is_valid(
            &json!({"status": "pending", "message": "m", "operation_id": "op",
                                   "preview": {"tool": "t"}})
        ));
        assert!(!v.is_valid(&json!({"status": "ran", "message": "m"})));
        assert!(!v.is_valid(&json!({"status": "denied"})));
    }
}
