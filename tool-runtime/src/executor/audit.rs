//! The audit trail: one record per call, redacted, to every sink; and the activity feed (seed 001)
//! as a query over the stored records.

use std::borrow::Cow;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::definition::{Safety, ToolDefinition};
use crate::hydrate::Repair;
use crate::tool::Initiator;

use super::outcome::{Decider, Decision, Status};

/// The longest result summary kept in a record, in characters.
pub const SUMMARY_CHARS: usize = 200;

/// What replaces a redacted value.
pub const REDACTED: &str = "[REDACTED]";

/// One call, as the audit trail and the activity feed see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When the call finished, milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// Ties the records of one user request together.
    pub correlation_id: String,
    /// The call.
    pub call_id: String,
    /// The session, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The tool.
    pub tool: String,
    /// Its safety category.
    pub category: Safety,
    /// Who started the call.
    pub initiator: Initiator,
    /// What was decided.
    pub decision: Decision,
    /// Who decided.
    pub decided_by: Decider,
    /// Wall time from the executor receiving the call to its outcome, in microseconds
    /// (confirmation time included).
    pub duration_us: u64,
    /// How the call ended.
    pub status: Status,
    /// The error code, for failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The result (or error message, or denial reason) cut to [`SUMMARY_CHARS`]; absent in
    /// metadata-only mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<String>,
    /// The arguments with secrets redacted; absent in metadata-only mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Repairs applied to the arguments while parsing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<Repair>,
    /// How many times the tool body ran (0 when it did not run or the result came from cache).
    pub attempts: u32,
    /// The result came from the cache.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// The pending operation this call was or became, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
}

/// Receives every audit record. Must not block for long: it runs on the call's task.
pub trait AuditSink: Send + Sync {
    /// Takes one record.
    fn record(&self, record: &AuditRecord);
}

/// An audit sink that keeps records in memory (tests, benchmarks, short-lived tools).
#[derive(Debug, Default)]
pub struct MemoryAuditSink {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemoryAuditSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of every record so far.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.records.lock().expect("audit sink poisoned").clone()
    }

    /// How many records were received.
    pub fn len(&self) -> usize {
        self.records.lock().expect("audit sink poisoned").len()
    }

    /// Whether no record was received.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl AuditSink for MemoryAuditSink {
    fn record(&self, record: &AuditRecord) {
        self.records
            .lock()
            .expect("audit sink poisoned")
            .push(record.clone());
    }
}

/// Filters for the activity feed; every field set must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActivityQuery {
    /// Only this tool.
    pub tool: Option<String>,
    /// Only this correlation id.
    pub correlation_id: Option<String>,
    /// Only calls started by this initiator.
    pub initiator: Option<Initiator>,
    /// Only this session.
    pub session: Option<String>,
    /// Only records at or after this time (ms since the epoch).
    pub since_ms: Option<u64>,
    /// At most this many, newest first (default 100).
    pub limit: Option<usize>,
}

impl ActivityQuery {
    /// The effective limit.
    pub fn limit(&self) -> usize {
        self.limit.unwrap_or(100)
    }

    /// Whether a record passes the filters.
    pub fn matches(&self, r: &AuditRecord) -> bool {
        self.tool.as_deref().is_none_or(|t| t == r.tool)
            && self
                .correlation_id
                .as_deref()
                .is_none_or(|c| c == r.correlation_id)
            && self.initiator.is_none_or(|i| i == r.initiator)
            && self
                .session
                .as_deref()
                .is_none_or(|s| r.session.as_deref() == Some(s))
            && self.since_ms.is_none_or(|t| r.timestamp_ms >= t)
    }
}

/// Key fragments that mark a value as secret, matched case-insensitively anywhere in the key.
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "api_key",
    "apikey",
    "api-key",
    "secret",
    "token",
    "authorization",
    "credential",
    "private_key",
];

/// Whether an argument key names a secret.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    SECRET_KEYS.iter().any(|s| k.contains(s))
}

/// The arguments with every secret value replaced by [`REDACTED`], at any depth: keys that look
/// like secrets and the fields the tool marks sensitive.
pub fn redact(arguments: &Value, definition: &ToolDefinition) -> Value {
    redact_with(arguments, &definition.sensitive)
}

/// Redacts keys that look like secrets, for arguments of a call whose tool is unknown.
pub(crate) fn redact_with_keys(arguments: &Value) -> Value {
    redact_with(arguments, &[])
}

fn redact_with(value: &Value, sensitive: &[Cow<'static, str>]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let hide = is_secret_key(k) || sensitive.iter().any(|s| s == k);
                    let v = if hide {
                        Value::String(REDACTED.into())
                    } else {
                        redact_with(v, sensitive)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact_with(v, sensitive)).collect())
        }
        other => other.clone(),
    }
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn summarize(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_at_any_depth_and_sensitive_fields_too() {
        let mut def = ToolDefinition::new("t", "d", &json!({"type": "object"}));
        def.sensitive = vec!["ssn".into()];
        let args = json!({
            "query": "x",
            "password": "hunter2",
            "auth": {"API_KEY": "k", "Bearer_Token": "t", "user": "bob"},
            "items": [{"client_secret": "s"}],
            "ssn": "123"
        });
        let r = redact(&args, &def);
        assert_eq!(r["query"], "x");
        assert_eq!(r["password"], REDACTED);
        assert_eq!(r["auth"]["API_KEY"], REDACTED);
        assert_eq!(r["auth"]["Bearer_Token"], REDACTED);
        assert_eq!(r["auth"]["user"], "bob");
        assert_eq!(r["items"][0]["client_secret"], REDACTED);
        assert_eq!(r["ssn"], REDACTED);
        assert!(!r.to_string().contains("hunter2"));
    }

    #[test]
    fn summaries_are_cut_on_character_boundaries() {
        assert_eq!(summarize("short", 200), "short");
        let long = "é".repeat(300);
        let s = summarize(&long, 200);
        assert_eq!(s.chars().count(), 200);
        assert!(s.ends_with('…'));
        assert_eq!(summarize(&"a".repeat(200), 200), "a".repeat(200));
    }
}
