//! Errors a model can recover from: a stable code, a message, whether a retry can help,
//! what to do instead, and JSON pointers to the offending arguments.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A stable, machine-readable error code. Codes are part of the contract with models and with
/// callers: they never change meaning once published.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub Cow<'static, str>);

impl ErrorCode {
    /// The model named a tool that is not registered.
    pub const UNKNOWN_TOOL: ErrorCode = ErrorCode::of("UNKNOWN_TOOL");
    /// The arguments are not JSON, even after the deterministic repair.
    pub const INVALID_JSON: ErrorCode = ErrorCode::of("INVALID_JSON");
    /// The arguments are JSON but do not satisfy the tool's schema.
    pub const INVALID_ARGUMENTS: ErrorCode = ErrorCode::of("INVALID_ARGUMENTS");
    /// The arguments exceed the configured size limit.
    pub const PAYLOAD_TOO_LARGE: ErrorCode = ErrorCode::of("PAYLOAD_TOO_LARGE");
    /// The arguments nest deeper than the configured limit.
    pub const NESTING_TOO_DEEP: ErrorCode = ErrorCode::of("NESTING_TOO_DEEP");
    /// The tool has no schema and its `no_schema_mode` forbids this use.
    pub const SCHEMA_REQUIRED: ErrorCode = ErrorCode::of("SCHEMA_REQUIRED");
    /// Policy refused the call (deny list, not on the allow list).
    pub const NOT_ALLOWED: ErrorCode = ErrorCode::of("NOT_ALLOWED");
    /// The tool ran longer than its timeout and was cancelled.
    pub const TIMEOUT: ErrorCode = ErrorCode::of("TIMEOUT");
    /// Too many calls in the window; see `retry_after_ms` in the details.
    pub const RATE_LIMITED: ErrorCode = ErrorCode::of("RATE_LIMITED");
    /// The tool panicked.
    pub const TOOL_PANICKED: ErrorCode = ErrorCode::of("TOOL_PANICKED");
    /// The tool itself reported a failure.
    pub const EXECUTION_FAILED: ErrorCode = ErrorCode::of("EXECUTION_FAILED");
    /// A required piece of injected state was not provided to the `ToolSet`.
    pub const MISSING_STATE: ErrorCode = ErrorCode::of("MISSING_STATE");
    /// A resource the arguments named does not exist.
    pub const NOT_FOUND: ErrorCode = ErrorCode::of("NOT_FOUND");
    /// A tool definition (a catalog entry, a dynamic tool) was refused at registration.
    pub const INVALID_DEFINITION: ErrorCode = ErrorCode::of("INVALID_DEFINITION");
    /// An internal error in the framework; not the model's fault.
    pub const INTERNAL: ErrorCode = ErrorCode::of("INTERNAL");

    /// A code from a static string (use SCREAMING_SNAKE_CASE).
    pub const fn of(code: &'static str) -> Self {
        ErrorCode(Cow::Borrowed(code))
    }

    /// The code as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One problem with one argument, located by a JSON pointer (RFC 6901) into the arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer into the arguments; `""` is the whole object.
    pub pointer: String,
    /// What is wrong, for the model.
    pub message: String,
}

impl Violation {
    /// A violation at `pointer`.
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Violation {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// The error every failure in the tool-calling path becomes: hydration, policy, execution and the
/// tool body's own failures alike. Serializes to the shape that is sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// Stable code.
    pub code: ErrorCode,
    /// What happened, written for the model.
    pub message: String,
    /// Whether the same call may succeed if retried unchanged.
    pub retryable: bool,
    /// What to do instead, written for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recover_action: Option<String>,
    /// Each offending argument.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// Anything else: suggestions, `retry_after_ms`, the tool name.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

impl ToolError {
    /// An error with a code and a message; not retryable, no recovery hint.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            retryable: false,
            recover_action: None,
            violations: Vec::new(),
            details: Value::Null,
        }
    }

    /// The tool's own failure, for errors a tool body returns.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::EXECUTION_FAILED, message)
    }

    /// Wraps any error as an [`ErrorCode::EXECUTION_FAILED`] failure.
    pub fn from_error(err: impl std::error::Error) -> Self {
        Self::execution(err.to_string())
    }

    /// Marks the error as retryable (or not).
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Tells the model what to do instead.
    pub fn recover(mut self, action: impl Into<String>) -> Self {
        self.recover_action = Some(action.into());
        self
    }

    /// Adds violations.
    pub fn with_violations(mut self, violations: impl IntoIterator<Item = Violation>) -> Self {
        self.violations.extend(violations);
        self
    }

    /// Sets a detail field (the details become an object if they were not one).
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        if !self.details.is_object() {
            self.details = Value::Object(Default::default());
        }
        self.details
            .as_object_mut()
            .expect("just made an object")
            .insert(key.to_owned(), value.into());
        self
    }

    /// The error as the JSON sent to the model.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("ToolError always serializes")
    }
}

impl From<std::convert::Infallible> for ToolError {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::execution(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::execution(message)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> Self {
        let retryable = matches!(
            err.kind(),
            std::io::ErrorKind::TimedOut
                | std::io::ErrorKind::Interrupted
                | std::io::ErrorKind::WouldBlock
                | std::io::ErrorKind::ConnectionReset
        );
        ToolError::execution(err.to_string()).retryable(retryable)
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(err: serde_json::Error) -> Self {
        ToolError::new(ErrorCode::INTERNAL, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_to_the_model_facing_shape() {
        let err = ToolError::new(ErrorCode::INVALID_ARGUMENTS, "bad")
            .recover("send an integer")
            .with_violations([Violation::new("/limit", "must be >= 1")])
            .with_detail("tool", "search");
        let json = err.to_json();
        assert_eq!(json["code"], "INVALID_ARGUMENTS");
        assert_eq!(json["retryable"], false);
        assert_eq!(json["recover_action"], "send an integer");
        assert_eq!(json["violations"][0]["pointer"], "/limit");
        assert_eq!(json["details"]["tool"], "search");
        let back: ToolError = serde_json::from_value(json).unwrap();
        assert_eq!(back, err);
    }
}
