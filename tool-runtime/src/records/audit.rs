//! One call as the audit trail keeps it, and the queries the activity feed answers.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::outcome::{Decider, Decision, Status};
use crate::definition::{NoSchemaMode, Safety};
use crate::hydrate::Repair;
use crate::hydrate::plain::Plain;
use crate::id::SharedId;
use crate::tool::Initiator;

/// One call, as the audit trail and the activity feed see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When the call finished, milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// Ties the records of one user request together.
    pub correlation_id: SharedId,
    /// The call.
    pub call_id: SharedId,
    /// The session, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The tool: its definition's name, shared rather than copied when the name is static.
    pub tool: Cow<'static, str>,
    /// Its safety category.
    pub category: Safety,
    /// Who started the call.
    pub initiator: Initiator,
    /// What was decided.
    pub decision: Decision,
    /// Who decided.
    pub decided_by: Decider,
    /// The route the decision came by, when the confirmation handler names one (e.g. `MCP host
    /// "Claude Desktop" via elicitation`), so that a record never says only "user" for an answer
    /// relayed by a client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_via: Option<String>,
    /// Wall time from the executor receiving the call to its outcome, in microseconds
    /// (confirmation time included).
    pub duration_us: u64,
    /// How the call ended.
    pub status: Status,
    /// Who stopped the call, for a [`Status::Cancelled`] one: `"the client"` when an MCP client
    /// cancelled it, `"the caller"` when whoever ran it dropped it without saying why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<String>,
    /// The error code, for failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The result (or error message, or denial reason) cut to [`SUMMARY_CHARS`](crate::executor::SUMMARY_CHARS); absent in
    /// metadata-only mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<String>,
    /// The arguments with secrets redacted; absent in metadata-only mode. Shared: every sink's
    /// copy of the record holds the same arguments, so a sink that keeps the record does not
    /// copy them. Read them as JSON with [`AuditArguments::value`] (or through `Deref`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<AuditArguments>,
    /// Repairs applied to the arguments while parsing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<Repair>,
    /// How many times the tool body ran (0 when it did not run or the result came from cache).
    pub attempts: u32,
    /// The result came from the cache.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// Whether the arguments were checked against the tool's schema. `false` only for a tool
    /// registered without one (`allow_no_schema`); written out only then.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub validated: bool,
    /// The mode a tool without a schema ran under (`no_schema_mode`), when `validated` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_schema_mode: Option<NoSchemaMode>,
    /// The pending operation this call was or became, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The id that undoes this call ([`Execution::undo_id`](crate::executor::Execution::undo_id)),
    /// if it was journaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_id: Option<String>,
    /// The record's place in the store's trail: assigned by the store when the record is
    /// written, strictly increasing in the order records are written, and filled in when the
    /// record is read back (absent on a record not yet written). A reader continues from the last
    /// one it saw with [`ActivityQuery::after`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

impl AuditRecord {
    /// Whether the call may have changed something: a tool that is not read-only whose body ran
    /// (however it ended), or was cut off when it may have been running. What a cache of
    /// read-only results must not outlive ([`Store::changes`](crate::store::Store::changes)).
    pub fn is_change(&self) -> bool {
        !self.category.is_read_only()
            && (self.attempts > 0
                || (self.status == Status::Cancelled
                    && matches!(
                        self.decision,
                        Decision::Allowed | Decision::Confirmed | Decision::Edited | Decision::Undo
                    )))
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
    /// Records of this session only.
    pub session: Option<String>,
    /// Only records at or after this time (ms since the epoch).
    pub since_ms: Option<u64>,
    /// At most this many (default 100), newest first, or oldest first with `after`.
    pub limit: Option<usize>,
    /// Skip this many matching records, in the query's order, before taking `limit` (the next
    /// page). Records added between two pages of a newest-first query shift the later page: a
    /// reader sees a record twice, never misses one. Paging with `after` has neither effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// Only records written after the one with this sequence number ([`AuditRecord::seq`]),
    /// oldest first: a reader that passes the last `seq` it was given gets every later record
    /// exactly once and in the order they were written, however many were written meanwhile.
    /// `Some(0)` reads from the first record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
}

impl ActivityQuery {
    /// The effective limit.
    pub fn limit(&self) -> usize {
        self.limit.unwrap_or(100)
    }

    /// The effective offset.
    pub fn offset(&self) -> usize {
        self.offset.unwrap_or(0)
    }

    /// Whether records come oldest first (a query `after` a sequence number) rather than newest
    /// first.
    pub fn oldest_first(&self) -> bool {
        self.after.is_some()
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

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

/// The arguments an [`AuditRecord`] keeps: a JSON value, shared by every copy of the record.
///
/// A call's typed arguments are kept in a form made without building `serde_json`'s object
/// (whose map hashes each key), and the [`Value`] is made from it the first time it is read
/// ([`AuditArguments::value`], `Deref`, comparison, serialization), then kept. The value is the
/// same either way: the arguments as `serde_json::to_value` makes them, redacted.
#[derive(Clone)]
pub struct AuditArguments(Arc<Kept>);

enum Kept {
    Value(Value),
    Plain {
        plain: Plain,
        value: OnceLock<Value>,
    },
}

impl AuditArguments {
    /// Arguments already held as JSON.
    pub fn new(value: Value) -> Self {
        AuditArguments(Arc::new(Kept::Value(value)))
    }

    /// Typed arguments in the form [`Plain`] keeps them, made into a `Value` when read.
    pub(crate) fn plain(plain: Plain) -> Self {
        AuditArguments(Arc::new(Kept::Plain {
            plain,
            value: OnceLock::new(),
        }))
    }

    /// The tree the arguments are kept as, when they were kept without their JSON.
    pub(crate) fn as_plain(&self) -> Option<&Plain> {
        match &*self.0 {
            Kept::Value(_) => None,
            Kept::Plain { plain, .. } => Some(plain),
        }
    }

    /// The arguments as JSON (made on the first read when the record was kept without it).
    pub fn value(&self) -> &Value {
        match &*self.0 {
            Kept::Value(value) => value,
            Kept::Plain { plain, value } => value.get_or_init(|| plain.to_value()),
        }
    }
}

impl From<Value> for AuditArguments {
    fn from(value: Value) -> Self {
        AuditArguments::new(value)
    }
}

impl std::ops::Deref for AuditArguments {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl AsRef<Value> for AuditArguments {
    fn as_ref(&self) -> &Value {
        self.value()
    }
}

impl std::fmt::Debug for AuditArguments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

/// The arguments as JSON text, as `Value` prints them.
impl std::fmt::Display for AuditArguments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl PartialEq for AuditArguments {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.value() == other.value()
    }
}

impl PartialEq<Value> for AuditArguments {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl Serialize for AuditArguments {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for AuditArguments {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(AuditArguments::new)
    }
}
