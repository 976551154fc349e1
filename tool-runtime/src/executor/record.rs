//! The audit trail of one call: what happened on the way to its outcome ([`Trail`]), and the one
//! record written from it to every sink, to the store and onto the call's span.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::definition::{Safety, ToolDefinition};
use crate::hydrate::Repair;
use crate::records::{AuditArguments, AuditRecord, Decider, Decision, Execution, Outcome, Status};
use crate::store::StoreError;
use crate::tool::CallContext;

use super::Executor;
use super::audit::{self, now_ms};
use super::config::AuditMode;

/// What happened on the way to an outcome, for the audit record.
pub(crate) struct Trail {
    pub(crate) started: Instant,
    pub(crate) decision: Decision,
    pub(crate) by: Decider,
    /// The confirmation route's name, when a handler relayed the decision.
    pub(crate) via: Option<String>,
    pub(crate) attempts: u32,
    pub(crate) cached: bool,
    pub(crate) operation_id: Option<String>,
    pub(crate) arguments: Option<AuditArguments>,
    /// The record keeps the arguments the call runs with, unchanged (nothing in them to hide):
    /// they are moved into the record once the call is done with them ([`Trail::settle`]), not
    /// copied before it runs.
    pub(crate) arguments_of_call: bool,
    pub(crate) repairs: Vec<Repair>,
    /// What the record's summary must not show (the raw arguments' secret values).
    pub(crate) secrets: audit::Secrets,
    /// The tool has no schema: its arguments run unvalidated, in this mode.
    pub(crate) no_schema: Option<crate::definition::NoSchemaMode>,
}

impl Trail {
    /// Keeps the redacted form of the arguments the call runs with (when `keep`: the
    /// configuration keeps arguments in the record), and remembers the raw ones when they hold
    /// something to hide, so that their secret values can be kept out of the result summary and
    /// of errors. Arguments the redaction leaves unchanged have no secret value to find again
    /// (no secret or sensitive key, no value shaped like a credential), so they are not kept.
    pub(crate) fn note_arguments(&mut self, keep: bool, raw: &Value, def: &ToolDefinition) {
        self.secrets.use_definition(def);
        let redacted = audit::redact_if_needed(raw, def, &audit::KeyPlan::default());
        if redacted.is_some() {
            self.secrets.add_arguments(raw);
        }
        self.arguments = keep.then(|| AuditArguments::new(redacted.unwrap_or_else(|| raw.clone())));
        self.no_schema = def.no_schema_mode();
    }

    /// [`Trail::note_arguments`] for a call about to run: arguments with nothing to hide are
    /// not copied yet, but taken from the call when it is done with them ([`Trail::settle`]).
    /// `plan` is the tool's plan of keys that are not secret.
    pub(crate) fn note_call_arguments(
        &mut self,
        keep: bool,
        raw: &Value,
        def: &ToolDefinition,
        plan: &audit::KeyPlan,
    ) {
        self.secrets.use_definition(def);
        self.no_schema = def.no_schema_mode();
        match audit::redact_if_needed(raw, def, plan) {
            Some(redacted) => {
                self.secrets.add_arguments(raw);
                self.arguments = keep.then(|| AuditArguments::new(redacted));
            }
            None => self.arguments_of_call = keep,
        }
    }

    /// [`Trail::note_call_arguments`] of typed arguments kept as a [`Plain`] tree
    /// ([`AuditArguments`] whose JSON is made only when it is read): the record keeps them when
    /// they have nothing to hide. Returns `false`, noting nothing, when they may hide something
    /// (or are not a tree): the caller then notes them as JSON, which
    /// [`audit::redact_if_needed`] redacts.
    pub(crate) fn note_plain_arguments(
        &mut self,
        keep: bool,
        call: &AuditArguments,
        def: &ToolDefinition,
        plan: &audit::KeyPlan,
    ) -> bool {
        match call.as_plain() {
            Some(plain) if !audit::plain_may_hide(plain, def, plan) => {}
            _ => return false,
        }
        self.secrets.use_definition(def);
        self.no_schema = def.no_schema_mode();
        self.arguments = keep.then(|| call.clone());
        true
    }

    /// Gives the record the call's arguments, when it keeps them as they are
    /// ([`Trail::note_call_arguments`]); `call` is `None` when the call's arguments were never
    /// made as JSON, which a kept record has made already.
    pub(crate) fn settle(&mut self, call: Option<Value>) {
        if std::mem::take(&mut self.arguments_of_call) {
            debug_assert!(call.is_some(), "the record's arguments were not kept");
            self.arguments = call.map(AuditArguments::new);
        }
    }

    pub(crate) fn new(started: Instant) -> Self {
        Trail {
            started,
            decision: Decision::Allowed,
            by: Decider::Policy,
            via: None,
            attempts: 0,
            cached: false,
            operation_id: None,
            arguments: None,
            arguments_of_call: false,
            repairs: Vec::new(),
            secrets: audit::Secrets::default(),
            no_schema: None,
        }
    }
}

impl Executor {
    /// Whether the audit record keeps the (redacted) arguments.
    pub(crate) fn keeps_arguments(&self) -> bool {
        self.inner.config.audit_mode == AuditMode::Redacted && self.inner.config.log_tool_calls
    }

    /// Writes the one audit record of a call to every sink and the store, and onto the span.
    /// Returns once the store has it, or has failed to take it, which `exec.audit_failure`
    /// then reports: the record is written before the execution reaches the caller.
    pub(crate) async fn record(
        &self,
        cx: &CallContext,
        tool: &str,
        category: Safety,
        exec: &mut Execution,
        trail: Trail,
    ) {
        if let Some(record) = self.record_in_place(cx, tool, category, exec, trail) {
            let writing = self.with_store("append_audit", move |store| store.append_audit(&record));
            let written = Box::pin(writing).await;
            self.note_written(cx, tool, exec, written);
        }
    }

    /// [`Executor::record`] of an execution it returns: a future that owns what it records.
    pub(crate) async fn record_owned(
        &self,
        cx: &CallContext,
        tool: &str,
        category: Safety,
        mut exec: Execution,
        trail: Trail,
    ) -> Execution {
        self.record(cx, tool, category, &mut exec, trail).await;
        exec
    }

    /// [`Executor::record`] as far as it goes without waiting: the record made, handed to the
    /// sinks and written to a store that does not block, or to one that blocks when it can take
    /// the record at once ([`Store::try_append_audit`](crate::store::Store::try_append_audit):
    /// SQLite with nobody else writing), which saves the hop to the blocking pool and back.
    /// Returns the record when it still goes to the store the way that may wait
    /// ([`Executor::write_record`]).
    pub(crate) fn record_in_place(
        &self,
        cx: &CallContext,
        tool: &str,
        category: Safety,
        exec: &mut Execution,
        trail: Trail,
    ) -> Option<Arc<AuditRecord>> {
        let record = self.audit(cx, tool, category, exec, trail, None)?;
        let written = if self.inner.store.blocks() {
            // a panic in the attempt is the store's failure, as on the full path
            let attempt =
                self.store_now("append_audit", |store| Ok(store.try_append_audit(&record)));
            match attempt {
                Ok(Some(written)) => written,
                Ok(None) => return Some(record),
                Err(panicked) => Err(panicked),
            }
        } else {
            self.store_now("append_audit", |store| store.append_audit(&record))
        };
        self.note_written(cx, tool, exec, written);
        None
    }

    /// Writes the record [`Executor::record_in_place`] left for a store that blocks, and
    /// returns the execution once it is written (or reports that it was not).
    pub(crate) async fn write_record(
        &self,
        cx: &CallContext,
        mut exec: Execution,
        record: Arc<AuditRecord>,
    ) -> Execution {
        let tool = record.tool.clone();
        let written = self
            .with_store("append_audit", move |store| store.append_audit(&record))
            .await;
        self.note_written(cx, &tool, &mut exec, written);
        exec
    }

    /// [`Executor::record`] on this thread, for the executor's synchronous methods.
    pub(crate) fn record_now(
        &self,
        cx: &CallContext,
        tool: &str,
        category: Safety,
        exec: &mut Execution,
        trail: Trail,
    ) {
        if let Some(record) = self.audit(cx, tool, category, exec, trail, None) {
            let written = self.store_now("append_audit", |store| store.append_audit(&record));
            self.note_written(cx, tool, exec, written);
        }
    }

    /// Makes the record of a call, writes it onto the span and to every sink, and returns it
    /// when it goes to the store too. `cancelled_by` names who stopped a call that did not
    /// finish: its record is then [`Status::Cancelled`].
    fn audit(
        &self,
        cx: &CallContext,
        tool: &str,
        category: Safety,
        exec: &mut Execution,
        trail: Trail,
        cancelled_by: Option<String>,
    ) -> Option<Arc<AuditRecord>> {
        debug_assert!(
            !trail.arguments_of_call,
            "the record's arguments were not settled"
        );
        // an error can quote the arguments (a validation message, a tool that prints its
        // input): secret values are hidden in what the caller gets too, not only in the record
        if let Outcome::Error { error } = &mut exec.outcome {
            **error = trail.secrets.scrub_error(error);
        }
        let cfg = &self.inner.config;
        let status = match cancelled_by {
            Some(_) => Status::Cancelled,
            None => exec.outcome.status(),
        };
        let error_code = match cancelled_by {
            Some(_) => None,
            None => exec.outcome.error().map(|e| e.code.to_string()),
        };
        let duration_us = trail.started.elapsed().as_micros() as u64;
        // the fields belong to the call's `execute_tool` span, an INFO span: below that level
        // there is none to record them on, and finding the current span is not free
        if tracing::level_enabled!(tracing::Level::INFO) {
            let span = tracing::Span::current();
            span.record("gen_ai.tool.category", category.as_str());
            span.record("tool.decision", decision_name(trail.decision));
            span.record("tool.status", status.as_str());
            if let Some(code) = &error_code {
                span.record("error.type", code.as_str());
            }
        }
        tracing::info!(
            target: "tool_runtime::audit",
            tool,
            call_id = %cx.call_id,
            correlation_id = %cx.correlation_id,
            status = status.as_str(),
            decision = decision_name(trail.decision),
            error_code = error_code.as_deref().unwrap_or(""),
            duration_us,
            attempts = trail.attempts,
            cached = trail.cached,
            "tool call finished"
        );
        // nobody takes a record: none is made
        if !cfg.log_tool_calls || (self.inner.sinks.is_empty() && !self.inner.store_audit) {
            return None;
        }
        let result_summary = match cfg.audit_mode {
            AuditMode::MetadataOnly => None,
            // redacted before it is cut: results echo arguments, and validation messages quote
            // the offending value
            AuditMode::Redacted => Some(match &cancelled_by {
                Some(who) => format!("cancelled by {who} before it finished"),
                None => trail.secrets.summary(&exec.outcome),
            }),
        };
        let record = AuditRecord {
            timestamp_ms: now_ms(),
            correlation_id: cx.correlation_id.clone(),
            call_id: cx.call_id.clone(),
            session: cx.session.clone(),
            tool: exec.tool.clone(),
            category,
            initiator: cx.initiator,
            decision: trail.decision,
            decided_by: trail.by,
            decided_via: trail.via,
            duration_us,
            status,
            cancelled_by,
            error_code,
            result_summary,
            arguments: trail.arguments,
            repairs: trail.repairs,
            attempts: trail.attempts,
            cached: trail.cached,
            validated: trail.no_schema.is_none(),
            no_schema_mode: trail.no_schema,
            operation_id: trail.operation_id,
            undo_id: exec.undo_id().map(str::to_owned),
            seq: None,
        };
        // one record shared by every sink and the store: a sink that keeps it keeps a reference
        let record = Arc::new(record);
        for sink in &self.inner.sinks {
            sink.record_shared(&record);
        }
        self.inner.store_audit.then_some(record)
    }

    /// Reports a record the store did not take on the execution.
    fn note_written(
        &self,
        cx: &CallContext,
        tool: &str,
        exec: &mut Execution,
        written: Result<(), StoreError>,
    ) {
        if let Err(e) = written {
            // the call has happened (or was refused) either way: what must not happen is that
            // nobody learns its record is missing
            let failure = format!(
                "the audit record of call {} ({tool}) could not be written: {e}",
                cx.call_id
            );
            if self.inner.config.audit_required {
                tracing::error!(call_id = %cx.call_id, tool, error = %e, "audit record lost");
            } else {
                tracing::warn!(call_id = %cx.call_id, tool, error = %e, "audit record lost");
            }
            exec.audit_failure = Some(failure);
        }
    }
}

/// The one record of a started call whose future is dropped before it finished (its caller
/// stopped waiting): armed when the call starts, disarmed with one store when it finishes, so a
/// call that finishes pays nothing else for it.
pub(crate) struct Unfinished<'a> {
    executor: &'a Executor,
    cx: &'a CallContext,
    tool: &'a str,
    category: Safety,
    started: Instant,
    /// What was decided so far, for the record.
    pub(crate) decision: Decision,
    pub(crate) by: Decider,
    armed: bool,
}

impl<'a> Unfinished<'a> {
    pub(crate) fn arm(
        executor: &'a Executor,
        cx: &'a CallContext,
        tool: &'a str,
        category: Safety,
        started: Instant,
    ) -> Self {
        Unfinished {
            executor,
            cx,
            tool,
            category,
            started,
            decision: Decision::Allowed,
            by: Decider::Policy,
            armed: true,
        }
    }

    /// The call finished: its own record is written.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }

    #[cold]
    fn write(&self) {
        let cx = self.cx;
        let who = cx
            .host
            .as_ref()
            .and_then(|h| h.get().cancelled_by())
            .unwrap_or_else(|| "the caller".to_owned());
        let mut trail = Trail::new(self.started);
        (trail.decision, trail.by) = (self.decision, self.by);
        let mut exec = Execution::new(
            cx.call_id.clone(),
            self.tool.to_owned(),
            Outcome::error_from(crate::error::ToolError::new(
                crate::error::ErrorCode::INTERNAL,
                format!("cancelled by {who}"),
            )),
        );
        let executor = self.executor;
        let Some(record) =
            executor.audit(cx, self.tool, self.category, &mut exec, trail, Some(who))
        else {
            return;
        };
        let store = executor.inner.store.clone();
        let write = move || {
            let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store.append_audit(&record)
            }));
            if !matches!(written, Ok(Ok(()))) {
                tracing::error!(
                    call_id = %record.call_id,
                    tool = %record.tool,
                    "audit record of a cancelled call lost"
                );
            }
        };
        // a drop cannot wait: a store that blocks is written on the blocking pool, which the
        // runtime finishes before it shuts down
        match tokio::runtime::Handle::try_current() {
            Ok(pool) if executor.inner.store.blocks() => {
                pool.spawn_blocking(write);
            }
            _ => write(),
        }
    }
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.write();
        }
    }
}

/// The `execute_tool {name}` span of OpenTelemetry's GenAI semantic conventions.
pub(crate) fn span(tool: &str, cx: &CallContext) -> tracing::Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        gen_ai.tool.call.id = %cx.call_id,
        gen_ai.tool.type = "function",
        gen_ai.tool.category = tracing::field::Empty,
        gen_ai.conversation.id = cx.session.as_deref().unwrap_or(""),
        correlation_id = %cx.correlation_id,
        tool.decision = tracing::field::Empty,
        tool.status = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

pub(crate) fn decision_name(d: Decision) -> &'static str {
    match d {
        Decision::Allowed => "allowed",
        Decision::Confirmed => "confirmed",
        Decision::Edited => "edited",
        Decision::Denied => "denied",
        Decision::Deferred => "deferred",
        Decision::Refused => "refused",
        Decision::Undo => "undo",
        Decision::Unanswered => "unanswered",
    }
}
