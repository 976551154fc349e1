//! The refusal of arguments that do not match the schema: every violation with its pointer, cut
//! to a size a model can read, with a hint where a model sent JSON encoded as a string.

use serde_json::Value;

use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError, Violation};

/// At most this many violations are returned: a model fixes the first ones and tries again, and
/// a payload that breaks a rule a million times must not become a million-line answer.
const MAX_VIOLATIONS: usize = 50;
/// Each violation's message is cut to this many characters (a list of unexpected keys can be
/// as long as the arguments).
const MAX_VIOLATION_CHARS: usize = 1_000;

pub(crate) fn invalid_arguments(
    def: &ToolDefinition,
    arguments: &Value,
    mut violations: Vec<Violation>,
) -> ToolError {
    let total = violations.len();
    violations.truncate(MAX_VIOLATIONS);
    for v in &mut violations {
        if let Some((cut, _)) = v.message.char_indices().nth(MAX_VIOLATION_CHARS) {
            let more = v.message[cut..].chars().count();
            v.message.truncate(cut);
            v.message.push_str(&format!("... ({more} more characters)"));
        }
    }
    // An object sent as a string holding JSON is refused, never decoded: only the arguments as
    // a whole are decoded twice (a known provider quirk); inside them a string is a string, and
    // guessing otherwise could change what a legitimate string argument means. Say so, though.
    for v in &mut violations {
        if let Some(Value::String(text)) = arguments.pointer(&v.pointer)
            && looks_like_encoded_json(text)
        {
            v.message.push_str(
                " (this is JSON encoded as a string; send the object or array itself, not a string)",
            );
        }
    }
    let summary = violations
        .iter()
        .map(|v| {
            if v.pointer.is_empty() {
                v.message.clone()
            } else {
                format!("{}: {}", v.pointer, v.message)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let unlisted = total - violations.len();
    let summary = if unlisted > 0 {
        format!("{summary}; and {unlisted} more violations")
    } else {
        summary
    };
    let error = ToolError::new(
        ErrorCode::INVALID_ARGUMENTS,
        format!(
            "the arguments for {:?} do not match its schema: {summary}",
            def.name
        ),
    )
    .retryable(true)
    .recover("fix each argument named in violations and call the tool again")
    .with_violations(violations)
    .with_detail("tool", def.name.as_ref());
    if unlisted > 0 {
        error.with_detail("violations_total", total)
    } else {
        error
    }
}

fn looks_like_encoded_json(text: &str) -> bool {
    let t = text.trim_start();
    (t.starts_with('{') || t.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}
