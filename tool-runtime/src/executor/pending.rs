//! Deferred confirmation: pending operations approved or denied by id, from any task
//! or process sharing the store, and the activity feed.
//!
//! [`Executor::approve`] is async and keeps the runtime free while the store works; the other
//! methods here are synchronous and call the store on the calling thread (see [`Executor`]).

// ToolError is the error of every fallible path in this crate; its size is decided there.

use std::time::Instant;

use serde_json::Value;
use tracing::Instrument;

use crate::definition::Safety;
use crate::error::{ErrorCode, ToolError};
use crate::hydrate::{Arguments, ToolCall};
use crate::id::SharedId;
use crate::store::{
    PendingOperation, PendingState, Resolve, Scrubbed, StoreError, UnreadableOperation,
};
use crate::tool::{CallContext, Initiator};

use super::audit::{self, now_ms};
use super::confirm::ConfirmationRoute;
use super::record::{Trail, span};
use super::{Executor, policy};
use crate::records::{ActivityQuery, AuditRecord};
use crate::records::{Decider, Decision, Execution, Outcome};

impl Executor {
    /// Operations waiting for a decision, oldest first.
    pub fn pending(&self) -> Result<Vec<PendingOperation>, ToolError> {
        Ok(self.store_now("list_pending", |store| store.list_pending())?)
    }

    /// A page of [`Executor::pending`] (at most `limit` after the first `offset`, oldest
    /// first) and how many wait in all: what a listing for a person reads, without reading
    /// every waiting operation's arguments.
    pub fn pending_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<PendingOperation>, usize), ToolError> {
        Ok(self.store_now("list_pending_page", |store| {
            let total = store.count_pending(None, None)?.total;
            Ok((store.list_pending_page(offset, limit)?, total))
        })?)
    }

    /// Operations approved but not completed: running now in some process, or interrupted by a
    /// crash between approval and completion (in doubt: the tool may or may not have taken
    /// effect). They are never run again; see [`Executor::abandon`]. Oldest first.
    pub fn in_doubt(&self) -> Result<Vec<PendingOperation>, ToolError> {
        Ok(self.store_now("list_approved", |store| store.list_approved())?)
    }

    /// Stored operations, waiting or approved, that cannot be read (a corrupt row, or one written
    /// by an incompatible version). [`Executor::pending`] and [`Executor::in_doubt`] leave them
    /// out, so one bad row hides nothing else; [`Executor::abandon`] closes one.
    pub fn unreadable(&self) -> Result<Vec<UnreadableOperation>, ToolError> {
        Ok(self.store_now("list_unreadable", |store| store.list_unreadable())?)
    }

    /// Closes an approved operation that never completed (its process stopped while running
    /// it), once a person has checked what happened: it is recorded as completed with an
    /// `INTERRUPTED` error, with the person's note, and an audit record is written for it.
    /// Nothing runs; to have the effect after all, make the call again.
    ///
    /// An operation that cannot be read ([`Executor::unreadable`]) is closed too, waiting or
    /// approved: nothing runs, its data stays in the store for inspection, and the execution is
    /// an `UNREADABLE` error.
    ///
    /// Refused with `ALREADY_RESOLVED` when the operation is not `approved` (still pending, denied,
    /// or completed, possibly by its process finishing meanwhile).
    pub fn abandon(&self, id: &str, note: Option<String>) -> Result<Execution, ToolError> {
        let started = Instant::now();
        if self.store_now("close_unreadable", |store| store.close_unreadable(id))? {
            return Ok(self.closed_unreadable(id, note, started));
        }
        let mut message = "the operation was approved, but the process running it stopped before \
                           it finished; whether it took effect is unknown, and it was not run again"
            .to_owned();
        if let Some(note) = note.filter(|n| !n.trim().is_empty()) {
            message.push_str(&format!(" (note: {})", note.trim()));
        }
        let error = ToolError::new(ErrorCode::of("INTERRUPTED"), message)
            .recover("check whether the change happened before asking for it again")
            .with_detail("operation_id", id);
        let outcome = Outcome::error_from(error);
        let settled = self.store_now("settle_approved", |store| {
            store.settle_approved(id, &outcome)
        })?;
        let op = match settled {
            Resolve::Won(op) => *op,
            Resolve::AlreadyResolved(state) => return Err(already_resolved(id, &state)),
            Resolve::NotFound => return Err(not_found(id)),
        };
        self.scrub_now(&op, Some(&outcome));
        let cx = self.context(&op.call_id, operation_context(&op));
        let mut exec = Execution {
            call_id: op.call_id.clone(),
            tool: op.tool.clone().into(),
            outcome,
            full: None,
            audit_failure: None,
            undo: None,
        };
        let tools = self.toolset();
        let def = tools.get(&op.tool);
        let category = def.map(|d| d.safety).unwrap_or(op.preview.category);
        let mut trail = Trail::new_for(started, &op);
        trail.decision = match &op.state {
            PendingState::Approved {
                edited: Some(_), ..
            } => Decision::Edited,
            _ => Decision::Confirmed,
        };
        if let Some(def) = def {
            let arguments = match &op.state {
                PendingState::Approved {
                    edited: Some(e), ..
                } => e,
                _ => &op.arguments,
            };
            trail.note_arguments(self.keeps_arguments(), arguments, def);
        }
        let span = span(&op.tool, &cx);
        let _g = span.enter();
        self.record_now(&cx, &op.tool, category, &mut exec, trail);
        Ok(exec)
    }

    fn closed_unreadable(&self, id: &str, note: Option<String>, started: Instant) -> Execution {
        let mut message =
            "the stored operation could not be read; it was closed and nothing ran".to_owned();
        if let Some(note) = note.filter(|n| !n.trim().is_empty()) {
            message.push_str(&format!(" (note: {})", note.trim()));
        }
        let error = ToolError::new(ErrorCode::of("UNREADABLE"), message)
            .recover("make the call again if it is still wanted")
            .with_detail("operation_id", id);
        let call_id = SharedId::from(id);
        let cx = self.context(
            &call_id,
            CallContext {
                initiator: Initiator::User,
                ..Default::default()
            },
        );
        let mut exec = Execution::new(call_id.clone(), String::new(), Outcome::error_from(error));
        let mut trail = Trail::new(started);
        trail.by = Decider::User;
        trail.decision = Decision::Refused;
        trail.operation_id = Some(id.to_owned());
        self.record_now(&cx, "", Safety::default(), &mut exec, trail);
        exec
    }

    /// One pending operation in any state (a completed one carries its outcome).
    pub fn pending_operation(&self, id: &str) -> Result<Option<PendingOperation>, ToolError> {
        Ok(self.store_now("get_pending", |store| store.get_pending(id))?)
    }

    /// Approves a pending operation and runs it, at most once: if several approvers race (tasks
    /// or processes sharing the store), one runs it and the others get `ALREADY_RESOLVED`. The
    /// approval is stored before the tool runs; if the process stops before the outcome is
    /// stored, the operation stays approved and in doubt ([`Executor::in_doubt`]), never run
    /// again (see the `store` module docs).
    pub async fn approve(&self, id: &str) -> Result<Execution, ToolError> {
        self.approve_with(id, None).await
    }

    /// Approves with arguments a person edited. They are validated first; an invalid edit is an
    /// error to the approver and leaves the operation pending.
    pub async fn approve_with(
        &self,
        id: &str,
        edited: Option<Value>,
    ) -> Result<Execution, ToolError> {
        self.approve_via(id, edited, &ConfirmationRoute::default())
            .await
    }

    /// [`Executor::approve_with`] for a decision that reached the server by another route than
    /// a person at the approvals page or the command line: the audit record names `route`'s
    /// decider and way (an MCP host relaying its person's answer, say). Whether that route may
    /// decide at all is for the caller to settle before calling.
    pub async fn approve_via(
        &self,
        id: &str,
        edited: Option<Value>,
        route: &ConfirmationRoute,
    ) -> Result<Execution, ToolError> {
        self.approve_inner(id, edited, route, None).await
    }

    /// [`Executor::approve_via`] for a decision made while the caller that made the call still
    /// waits for its result (an MCP client whose person answered in-band): the tool runs with
    /// `waiting`'s progress reporter and host, so what it reports, logs or asks reaches that
    /// caller. Everything else about the run (its ids, session, initiator) is the operation's.
    pub async fn approve_for(
        &self,
        id: &str,
        edited: Option<Value>,
        route: &ConfirmationRoute,
        waiting: &CallContext,
    ) -> Result<Execution, ToolError> {
        self.approve_inner(id, edited, route, Some(waiting)).await
    }

    async fn approve_inner(
        &self,
        id: &str,
        edited: Option<Value>,
        route: &ConfirmationRoute,
        waiting: Option<&CallContext>,
    ) -> Result<Execution, ToolError> {
        let started = Instant::now();
        let key = id.to_owned();
        let op = self
            .with_store("get_pending", move |store| store.get_pending(&key))
            .await?
            .ok_or_else(|| not_found(id))?;
        if op.state != PendingState::Pending {
            return Err(already_resolved(id, &op.state));
        }
        if let Some(err) = policy::refusal(&op.tool, &self.inner.config) {
            return Err(err);
        }
        let arguments = edited.clone().unwrap_or_else(|| op.arguments.clone());
        let instance = self.inner.toolset.load().hydrate(&ToolCall::new(
            op.call_id.clone(),
            op.tool.clone(),
            Arguments::Json(arguments),
        ))?;
        let (key, approved) = (
            id.to_owned(),
            PendingState::Approved {
                edited: edited.clone(),
                approved_ms: now_ms(),
            },
        );
        // stored before the tool runs: after a crash the operation is in doubt, never run twice
        let resolved = self
            .with_store("resolve_pending", move |store| {
                store.resolve_pending(&key, &approved)
            })
            .await?;
        let op = match resolved {
            Resolve::Won(op) => *op,
            Resolve::AlreadyResolved(state) => return Err(already_resolved(id, &state)),
            Resolve::NotFound => return Err(not_found(id)),
        };
        let mut cx = self.context(&op.call_id, operation_context(&op));
        if let Some(waiting) = waiting {
            cx.progress = waiting.progress.clone();
            cx.host = waiting.host.clone();
        }
        let span = span(&op.tool, &cx);
        let exec = async {
            if op.preview.first_use.is_some() {
                self.pass_gate(instance.definition(), &cx).await;
            }
            let mut trail = Trail::new_for(started, &op);
            (trail.by, trail.via) = (route.decider, route.via.clone());
            trail.decision = if edited.is_some() {
                Decision::Edited
            } else {
                Decision::Confirmed
            };
            trail.note_arguments(
                self.keeps_arguments(),
                instance.arguments(),
                instance.definition(),
            );
            self.proceed(instance, &cx, trail).await
        }
        .instrument(span)
        .await;
        let (key, outcome) = (id.to_owned(), exec.outcome.clone());
        let completed = self
            .with_store("complete_pending", move |store| {
                store.complete_pending(&key, &outcome)
            })
            .await;
        if let Err(e) = completed {
            // the tool ran: its outcome is the truth for the approver. The operation stays
            // `approved` in the store, listed as in doubt, and is not run again.
            tracing::error!(
                error = %e,
                operation_id = id,
                "could not record the outcome of an approved operation; it stays in doubt"
            );
        } else {
            self.scrub(&op, edited.as_ref(), Some(&exec.outcome)).await;
        }
        Ok(exec)
    }

    /// Denies a pending operation. The outcome for the model is a denial with the person's
    /// reason, not an error.
    pub fn deny(&self, id: &str, reason: Option<String>) -> Result<Execution, ToolError> {
        self.deny_via(id, reason, &ConfirmationRoute::default())
    }

    /// [`Executor::deny`] for a decision that came by `route` (see [`Executor::approve_via`]).
    pub fn deny_via(
        &self,
        id: &str,
        reason: Option<String>,
        route: &ConfirmationRoute,
    ) -> Result<Execution, ToolError> {
        let started = Instant::now();
        let reason = reason
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| "the user declined this call".to_owned());
        let denied = PendingState::Denied {
            reason: reason.clone(),
        };
        let resolved = self.store_now("resolve_pending", |store| {
            store.resolve_pending(id, &denied)
        })?;
        let op = match resolved {
            Resolve::Won(op) => *op,
            Resolve::AlreadyResolved(state) => return Err(already_resolved(id, &state)),
            Resolve::NotFound => return Err(not_found(id)),
        };
        self.scrub_now(&op, None);
        let cx = self.context(&op.call_id, operation_context(&op));
        let mut exec = Execution::new(
            op.call_id.clone(),
            op.tool.clone(),
            Outcome::Denied {
                reason,
                by: route.decider,
            },
        );
        let tools = self.toolset();
        let category = tools
            .get(&op.tool)
            .map(|d| d.safety)
            .unwrap_or(op.preview.category);
        let mut trail = Trail::new_for(started, &op);
        (trail.by, trail.via) = (route.decider, route.via.clone());
        trail.decision = Decision::Denied;
        if let Some(def) = tools.get(&op.tool) {
            trail.note_arguments(self.keeps_arguments(), &op.arguments, def);
        }
        let span = span(&op.tool, &cx);
        let _g = span.enter();
        self.record_now(&cx, &op.tool, category, &mut exec, trail);
        Ok(exec)
    }

    /// Once `op` is decided, the store keeps what it holds of the call redacted (arguments,
    /// preview, and the `outcome` it recorded), unless `keep_decided_arguments`: the approval
    /// needed them, nothing after it does. A failure is logged, not returned: the decision
    /// itself stands.
    async fn scrub(
        &self,
        op: &PendingOperation,
        edited: Option<&Value>,
        outcome: Option<&Outcome>,
    ) {
        if let Some(redacted) = self.redacted(op, edited, outcome) {
            let id = op.id.clone();
            let scrubbed = self
                .with_store("scrub_decided", move |store| {
                    store.scrub_decided(&id, &redacted)
                })
                .await;
            scrub_failed(op, scrubbed);
        }
    }

    /// [`Executor::scrub`] on this thread, for the synchronous methods.
    fn scrub_now(&self, op: &PendingOperation, outcome: Option<&Outcome>) {
        if let Some(redacted) = self.redacted(op, None, outcome) {
            let scrubbed = self.store_now("scrub_decided", |store| {
                store.scrub_decided(&op.id, &redacted)
            });
            scrub_failed(op, scrubbed);
        }
    }

    /// What a decided `op` keeps in the store, if it is to be replaced: its arguments redacted,
    /// its preview's intent written again from them (or, for a tool this executor does not
    /// know, cleared of the secrets found in them), its preview's change and the recorded
    /// outcome without the secrets of the arguments (`op`'s, and a person's `edited` ones).
    fn redacted(
        &self,
        op: &PendingOperation,
        edited: Option<&Value>,
        outcome: Option<&Outcome>,
    ) -> Option<Scrubbed> {
        if self.inner.config.keep_decided_arguments {
            return None;
        }
        let tools = self.toolset();
        let def = tools.get(&op.tool);
        let mut secrets = audit::Secrets::new(def);
        secrets.add_arguments(&op.arguments);
        if let PendingState::Approved {
            edited: Some(e), ..
        } = &op.state
        {
            secrets.add_arguments(e);
        }
        if let Some(e) = edited {
            secrets.add_arguments(e);
        }
        let arguments = match def {
            Some(def) => audit::redact(&op.arguments, def),
            None => audit::redact_with_keys(&op.arguments),
        };
        let mut preview = op.preview.clone();
        let intent = def.and_then(|d| d.render_intent(&arguments));
        preview.intent = secrets.redact_text(intent.as_deref().unwrap_or(&preview.intent));
        preview.arguments = secrets.redact_value(&preview.arguments);
        preview.change = preview.change.map(|c| secrets.redact_change(c));
        Some(Scrubbed {
            arguments,
            preview,
            outcome: outcome.map(|o| secrets.redact_outcome(o)),
        })
    }

    /// The activity feed: audit records from the store, newest first.
    pub fn activity(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, ToolError> {
        Ok(self.store_now("query_audit", |store| store.query_audit(query))?)
    }
}

impl Trail {
    fn new_for(started: Instant, op: &PendingOperation) -> Self {
        let mut t = Trail::new(started);
        t.by = Decider::User;
        t.operation_id = Some(op.id.clone());
        t
    }
}

fn scrub_failed(op: &PendingOperation, scrubbed: Result<bool, StoreError>) {
    if let Err(e) = scrubbed {
        tracing::error!(
            operation_id = %op.id,
            error = %e,
            "could not redact the arguments of a decided operation in the store"
        );
    }
}

fn operation_context(op: &PendingOperation) -> CallContext {
    CallContext {
        call_id: op.call_id.clone(),
        correlation_id: op.correlation_id.clone(),
        session: op.session.clone(),
        initiator: op.initiator,
        ..Default::default()
    }
}

fn not_found(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::NOT_FOUND,
        format!("there is no pending operation {id:?}"),
    )
    .recover("list the pending operations and use one of their ids")
}

fn already_resolved(id: &str, state: &PendingState) -> ToolError {
    ToolError::new(
        ErrorCode::of("ALREADY_RESOLVED"),
        format!("the pending operation {id:?} was already {}", state.name()),
    )
    .with_detail("state", state.name())
}
