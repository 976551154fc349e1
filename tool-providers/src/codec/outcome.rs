//! What happened to a call, as the codecs send it back to the model.
//!
//! A denial is the user's choice, not a failure: it is rendered with `"status": "denied"` and
//! never with a provider's error flag (`is_error`, `isError`), so the model does not retry it as
//! if something broke.
//!
//! A rich result (images, audio, resources: see [`tool_runtime::content`]) goes to each provider
//! in the parts it accepts in a tool result; [`ToolOutcome::to_text`] gives its text stand-in
//! (text blocks as they are, other blocks as type, MIME type and size) for those that take only
//! text.

use serde_json::{Value, json};
use tool_runtime::content::{self, Content};
use tool_runtime::{ToolCall, ToolError, id::SharedId};

/// The outcome of one call. The executor maps its own result type onto this.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The tool ran and returned this value.
    Success(Value),
    /// Hydration, policy or the tool itself failed; the model sees the code and `recover_action`.
    Error(ToolError),
    /// The user declined the call.
    Denied {
        /// Why, if the user said.
        reason: Option<String>,
    },
}

impl ToolOutcome {
    /// Whether a provider's error flag should be set.
    pub fn is_error(&self) -> bool {
        matches!(self, ToolOutcome::Error(_))
    }

    /// The outcome as a JSON value: the result itself, `{"error": {...}}` with the structured
    /// error, or `{"status": "denied", ...}`.
    pub fn to_value(&self) -> Value {
        match self {
            ToolOutcome::Success(v) => v.clone(),
            ToolOutcome::Error(e) => json!({ "error": e.to_json() }),
            ToolOutcome::Denied { reason } => {
                let mut v = json!({
                    "status": "denied",
                    "message": "The user declined this call. It did not run. Do not retry it unless \
                                the user asks; continue without it or ask the user how to proceed."
                });
                if let Some(r) = reason {
                    v["reason"] = Value::String(r.clone());
                }
                v
            }
        }
    }

    /// The outcome as the text a model reads: a string result as is, a rich result as its text
    /// stand-in, anything else as compact JSON.
    pub fn to_text(&self) -> String {
        match self {
            ToolOutcome::Success(Value::String(s)) => s.clone(),
            ToolOutcome::Success(v) if content::is_rich(v) => match content::blocks(v) {
                Some(blocks) => content::stand_in(&blocks),
                None => v.to_string(),
            },
            other => other.to_value().to_string(),
        }
    }

    /// The blocks of a rich result; `None` for any other outcome.
    pub fn blocks(&self) -> Option<Vec<Content>> {
        match self {
            ToolOutcome::Success(v) => content::blocks(v),
            _ => None,
        }
    }
}

/// One call's outcome, with what the provider needs to match it to the call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The call id (a provider's, or a generated one; see [`super::ids`]).
    pub call_id: SharedId,
    /// The tool's name (Ollama and Gemini match results by name).
    pub name: String,
    /// What happened.
    pub outcome: ToolOutcome,
}

impl ToolResult {
    /// The result of `call`.
    pub fn new(call: &ToolCall, outcome: ToolOutcome) -> Self {
        ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_runtime::ErrorCode;

    #[test]
    fn errors_carry_code_and_recover_action_and_denials_are_not_errors() {
        let err = ToolOutcome::Error(
            ToolError::new(ErrorCode::NOT_FOUND, "no such note").recover("search first"),
        );
        assert!(err.is_error());
        let v: Value = serde_json::from_str(&err.to_text()).unwrap();
        assert_eq!(v["error"]["code"], "NOT_FOUND");
        assert_eq!(v["error"]["recover_action"], "search first");

        let denied = ToolOutcome::Denied {
            reason: Some("not now".into()),
        };
        assert!(!denied.is_error());
        assert_eq!(denied.to_value()["status"], "denied");
        assert_eq!(denied.to_value()["reason"], "not now");
        assert_eq!(ToolOutcome::Success(json!("plain")).to_text(), "plain");
        assert_eq!(
            ToolOutcome::Success(json!({"a": 1})).to_text(),
            r#"{"a":1}"#
        );
    }
}
