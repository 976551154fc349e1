//! Hydration: parse → (repair) → validate → deserialize, turning what a model sent into a ready
//! [`ToolInstance`] or a structured [`ToolError`]. Nothing runs here.

pub(crate) mod agree;
pub(crate) mod entry;
mod numbers;
mod parse;
pub(crate) mod plain;
pub(crate) mod plan;
mod refusal;
pub(crate) mod typed;

use std::any::Any;
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use numbers::{exact_text, exact_value};
pub(crate) use parse::check_size;
pub use parse::{Arguments, Limits, Repair, check_limits, check_value_limits, repair};

use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::id::SharedId;
use crate::tool::CallContext;
use entry::Entry;

/// A call as decoded from a provider's response, before hydration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id, or a generated stable one. Shared, not copied, by every record
    /// the call leads to.
    pub id: SharedId,
    /// The tool the model asked for.
    pub name: String,
    /// The arguments as sent.
    pub arguments: Arguments,
}

impl ToolCall {
    /// A call.
    pub fn new(
        id: impl Into<SharedId>,
        name: impl Into<String>,
        arguments: impl Into<Arguments>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// A hydrated call: validated, typed arguments bound to their tool, ready for the executor.
pub struct ToolInstance {
    pub(crate) call_id: SharedId,
    pub(crate) entry: Arc<Entry>,
    /// The validated arguments as JSON, made from `typed` on first use: most calls on the fast
    /// path never need it, and when they do it costs one serialization of an already valid value.
    pub(crate) arguments: OnceLock<Value>,
    pub(crate) typed: Box<dyn Any + Send + Sync>,
    pub(crate) repairs: Vec<Repair>,
}

impl std::fmt::Debug for ToolInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolInstance")
            .field("call_id", &self.call_id)
            .field("tool", &self.entry.definition().name)
            .field("arguments", self.arguments())
            .field("repairs", &self.repairs)
            .finish()
    }
}

impl ToolInstance {
    /// The call id.
    pub fn call_id(&self) -> &SharedId {
        &self.call_id
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.entry.definition().name
    }

    /// The tool's canonical definition.
    pub fn definition(&self) -> &ToolDefinition {
        self.entry.definition()
    }

    /// The validated arguments as JSON (for intent, audit and cache keys).
    ///
    /// This is the typed arguments serialized again, so it is the same whichever path hydration
    /// took: defaults are filled in and keys the argument type does not know are absent. Computed
    /// on first use and kept.
    pub fn arguments(&self) -> &Value {
        self.arguments
            .get_or_init(|| self.entry.arguments_json(&*self.typed))
    }

    /// The typed arguments, if `T` is this tool's argument type.
    pub fn args<T: 'static>(&self) -> Option<&T> {
        self.typed.downcast_ref::<T>()
    }

    /// Repairs applied while parsing; empty when the arguments were well-formed.
    pub fn repairs(&self) -> &[Repair] {
        &self.repairs
    }

    /// Whether the arguments were validated against a schema. `false` only for tools registered
    /// with `allow_no_schema`; such instances are flagged in the audit trail.
    pub fn validated(&self) -> bool {
        self.entry.definition().no_schema_mode().is_none()
    }

    /// Whether a body is attached (dynamic tools may be declared without one).
    pub fn is_runnable(&self) -> bool {
        self.entry.is_runnable()
    }

    /// Runs the tool body. The executor calls this after its policy allowed the call; calling it
    /// directly skips every policy, which is what tests and trusted callers may want.
    pub async fn run(self, cx: CallContext) -> Result<Value, ToolError> {
        self.into_body(cx).await
    }

    /// The tool body's future, not yet polled.
    pub(crate) fn into_body(self, cx: CallContext) -> BoxFuture<'static, Result<Value, ToolError>> {
        let ToolInstance { entry, typed, .. } = self;
        entry.run(typed, cx)
    }

    /// The validated arguments as a [`plain::Plain`] tree, when they were not made as JSON yet
    /// and the tool's argument type can be kept that way (see [`entry::Handler::to_plain`]).
    pub(crate) fn plain_arguments(&self) -> Option<plain::Plain> {
        match self.arguments.get() {
            Some(_) => None,
            None => self.entry.arguments_plain(&*self.typed),
        }
    }

    /// The validated arguments as JSON, taken out if they were made, without making them.
    pub(crate) fn take_made_arguments(&mut self) -> Option<Value> {
        self.arguments.take()
    }

    /// The validated arguments as JSON, taken out (made first if they were not yet): for a caller
    /// that keeps them past the instance, without a copy.
    pub(crate) fn take_arguments(&mut self) -> Value {
        match self.arguments.take() {
            Some(v) => v,
            None => self.entry.arguments_json(&*self.typed),
        }
    }
}

/// Turns the provider's arguments into JSON: limits first, then a strict parse, then one
/// deterministic repair. Returns the value and the repairs that were applied.
pub fn parse_arguments(
    args: &Arguments,
    limits: &Limits,
) -> Result<(Value, Vec<Repair>), ToolError> {
    match args {
        Arguments::Json(Value::String(s)) => parse_text(s, limits, true),
        Arguments::Json(v) => {
            check_value_limits(v, limits)?;
            Ok((v.clone(), Vec::new()))
        }
        Arguments::Text(s) => parse_text(s, limits, false),
    }
}

fn parse_text(
    text: &str,
    limits: &Limits,
    already_decoded: bool,
) -> Result<(Value, Vec<Repair>), ToolError> {
    check_limits(text, limits)?;
    let mut repairs = Vec::new();
    if already_decoded {
        repairs.push(Repair::DoubleEncoded);
    }
    if text.trim().is_empty() {
        repairs.push(Repair::EmptyAsObject);
        return Ok((Value::Object(Default::default()), repairs));
    }
    let value = match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        Err(first) => match repair(text) {
            Some((fixed, applied)) => match serde_json::from_str::<Value>(&fixed) {
                Ok(v) => {
                    repairs.extend(applied);
                    v
                }
                Err(_) => return Err(invalid_json(&first)),
            },
            None => return Err(invalid_json(&first)),
        },
    };
    match value {
        // a JSON string holding JSON: decode once more, never recursively
        Value::String(inner) if !already_decoded && looks_like_json_container(&inner) => {
            let (v, more) = parse_text(&inner, limits, true)?;
            repairs.extend(more);
            Ok((v, repairs))
        }
        v => Ok((v, repairs)),
    }
}

fn looks_like_json_container(s: &str) -> bool {
    let t = s.trim_start();
    t.starts_with('{') || t.starts_with('[') || t.starts_with("```")
}

fn invalid_json(err: &serde_json::Error) -> ToolError {
    ToolError::new(
        ErrorCode::INVALID_JSON,
        format!(
            "the arguments are not valid JSON: {} at line {}, column {}",
            inner_message(err),
            err.line(),
            err.column()
        ),
    )
    .retryable(true)
    .recover("send the arguments again as a single JSON object that matches the tool's schema")
    .with_detail("line", err.line())
    .with_detail("column", err.column())
}

fn inner_message(err: &serde_json::Error) -> String {
    let full = err.to_string();
    match full.rfind(" at line ") {
        Some(i) => full[..i].to_owned(),
        None => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_strings_objects_empty_and_double_encoded() {
        let l = Limits::default();
        let (v, r) = parse_arguments(&Arguments::from(r#"{"a":1}"#), &l).unwrap();
        assert_eq!((v, r), (json!({"a": 1}), vec![]));
        let (v, r) = parse_arguments(&Arguments::from(""), &l).unwrap();
        assert_eq!((v, r), (json!({}), vec![Repair::EmptyAsObject]));
        let (v, r) = parse_arguments(&Arguments::from(r#""{\"a\":1}""#), &l).unwrap();
        assert_eq!((v, r), (json!({"a": 1}), vec![Repair::DoubleEncoded]));
        let (v, r) = parse_arguments(&Arguments::Json(json!("{\"a\":2}")), &l).unwrap();
        assert_eq!((v, r), (json!({"a": 2}), vec![Repair::DoubleEncoded]));
        let (v, r) = parse_arguments(&Arguments::from("{\"a\":1,}"), &l).unwrap();
        assert_eq!((v, r), (json!({"a": 1}), vec![Repair::TrailingCommas]));
    }

    #[test]
    fn malformed_json_is_a_retryable_structured_error_with_position() {
        let err = parse_arguments(&Arguments::from("{\"a\": }"), &Limits::default()).unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_JSON);
        assert!(err.retryable);
        assert_eq!(err.details["line"], 1);
        assert!(err.recover_action.is_some());
    }
}
