//! One LLM-assisted repair of invalid arguments: the model is asked once to correct them, the
//! answer is validated again, and a call still invalid is left out with its errors surfaced.
//!
//! The model is asked, in a separate request without tools, to correct the arguments against the
//! tool's canonical schema given the structured errors. The answer is hydrated again exactly like
//! a call from the model: nothing it says runs unvalidated.

use serde_json::{Value, json};
use tool_runtime::{ErrorCode, ToolCall, ToolError, definition::ToolDefinition};

use super::calls::arguments_value;
use super::events::AgentEvent;
use super::model::ToolMode;
use super::report::RepairRecord;
use super::{Agent, Progress};
use crate::codec::{ToolConfig, hydrate_call};
use crate::http::Usage;

/// The system prompt of a repair request.
pub(crate) const SYSTEM: &str = "You correct the arguments of tool calls so that they match the \
     tool's JSON Schema. Answer with only the corrected arguments as one JSON object: no prose, no \
     code fence. Keep every value the caller gave unless an error names it.";

/// Whether an error is about the arguments' content, which a model can correct (not an unknown
/// tool, or arguments over the size limits).
pub(crate) fn repairable(error: &ToolError) -> bool {
    error.code == ErrorCode::INVALID_ARGUMENTS || error.code == ErrorCode::INVALID_JSON
}

/// The user message of a repair request: the tool, its schema, the arguments as sent and the
/// structured errors (pointers, messages, `recover_action`).
pub(crate) fn prompt(def: &ToolDefinition, sent: &str, error: &ToolError) -> String {
    format!(
        "A call to the tool `{name}` was refused because its arguments are invalid.\n\n\
         Tool: {name}: {description}\n\
         Parameters (JSON Schema): {schema}\n\n\
         Arguments sent: {sent}\n\n\
         Errors: {errors}\n\n\
         Answer with the corrected arguments: one JSON object, nothing else.",
        name = def.name,
        description = def.description,
        schema = def.parameters.get(),
        errors = json!({ "error": error.to_json() }),
    )
}

/// The JSON object in a repair answer, as text for hydration (which may still repair small
/// syntax slips deterministically): from the first `{` to the last `}`, so a code fence or a
/// sentence around it does not matter.
// ToolError is the error every layer hands back to a model; its size is the project's choice.
#[allow(clippy::result_large_err)]
pub(crate) fn arguments_in(answer: &str) -> Result<String, ToolError> {
    let start = answer.find('{');
    let end = answer.rfind('}');
    match (start, end) {
        (Some(s), Some(e)) if s < e => Ok(answer[s..=e].to_owned()),
        _ => Err(ToolError::new(
            ErrorCode::INVALID_JSON,
            format!(
                "the repair answer holds no JSON object: {}",
                answer.chars().take(200).collect::<String>()
            ),
        )),
    }
}

/// The arguments as JSON for the record (text that does not parse is kept as a string).
pub(crate) fn as_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

impl Agent {
    /// One LLM-assisted repair of `call`'s invalid arguments: the corrected call when its new
    /// arguments hydrate, else `None` (the attempt is recorded either way).
    pub(super) async fn repair(
        &self,
        p: &mut Progress,
        call: &ToolCall,
        error: &ToolError,
    ) -> Option<ToolCall> {
        let tools = self.executor.toolset();
        let def = tools.get(&call.name)?;
        let sent = match &call.arguments {
            tool_runtime::hydrate::Arguments::Text(t) => t.clone(),
            tool_runtime::hydrate::Arguments::Json(Value::String(t)) => t.clone(),
            tool_runtime::hydrate::Arguments::Json(v) => v.to_string(),
        };
        let conversation = [self.model.user_message(&prompt(def, &sent, error))];
        let mut record = RepairRecord {
            call_id: call.id.to_string(),
            tool: call.name.clone(),
            sent: arguments_value(call),
            error: error.clone(),
            repaired: None,
            fixed: false,
            repair_error: None,
            usage: Usage::default(),
        };
        // The repair request declares no tools, so it is the same in either tool mode.
        let answer =
            match self
                .model
                .request(Some(SYSTEM), &conversation, &[], &ToolConfig::default())
            {
                Ok(body) => {
                    self.model
                        .complete_in(ToolMode::Native, &body, &mut |_| {})
                        .await
                }
                Err(e) => Err(e),
            };
        let fixed = match answer {
            Err(e) => {
                record.repair_error = Some(ToolError::new(
                    ErrorCode::EXECUTION_FAILED,
                    format!("the repair request failed: {e}"),
                ));
                None
            }
            Ok(turn) => {
                record.usage = turn.usage;
                p.usage += turn.usage;
                match arguments_in(&turn.decoded.text) {
                    Err(e) => {
                        record.repair_error = Some(e);
                        None
                    }
                    Ok(text) => {
                        record.repaired = Some(as_value(&text));
                        let fixed = ToolCall::new(call.id.clone(), call.name.clone(), text);
                        match hydrate_call(&self.executor.toolset(), &fixed) {
                            Ok(_) => {
                                record.fixed = true;
                                Some(fixed)
                            }
                            Err(e) => {
                                record.repair_error = Some(e);
                                None
                            }
                        }
                    }
                }
            }
        };
        self.emit(AgentEvent::ArgumentsRepaired {
            call_id: call.id.to_string(),
            tool: call.name.clone(),
            fixed: record.fixed,
            arguments: record.repaired.clone(),
        });
        p.repairs.push(record);
        fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_is_taken_out_of_fences_and_prose() {
        assert_eq!(
            arguments_in("Sure:\n```json\n{\"a\": 1, \"b\": {\"c\": 2}}\n```").unwrap(),
            "{\"a\": 1, \"b\": {\"c\": 2}}"
        );
        assert_eq!(
            arguments_in("no object here").unwrap_err().code,
            ErrorCode::INVALID_JSON
        );
        assert_eq!(
            arguments_in("} backwards {").unwrap_err().code,
            ErrorCode::INVALID_JSON
        );
    }

    #[test]
    fn the_prompt_carries_the_schema_the_arguments_and_the_pointers() {
        let def = ToolDefinition::new(
            "add",
            "Adds two integers",
            &json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
        );
        let err = ToolError::new(ErrorCode::INVALID_ARGUMENTS, "bad").with_violations([
            tool_runtime::error::Violation::new("/a", "must be an integer"),
        ]);
        let p = prompt(&def, r#"{"a":"one"}"#, &err);
        assert!(p.contains("`add`"));
        assert!(p.contains(r#""a":{"type":"integer"}"#), "{p}");
        assert!(p.contains(r#"Arguments sent: {"a":"one"}"#));
        assert!(p.contains("/a"));
        assert!(repairable(&err));
        assert!(!repairable(&ToolError::new(ErrorCode::UNKNOWN_TOOL, "x")));
    }
}
