//! The life of one call: policy, confirmation, running, journaling, recording.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;

use serde_json::{Value, json};
use tracing::Instrument;

use crate::definition::{Safety, ToolDefinition};
use crate::error::{ErrorCode, ToolError};
use crate::hydrate::entry::Entry;
use crate::hydrate::{Arguments, Repair, ToolCall, ToolInstance};
use crate::id::SharedId;
use crate::store::{
    GateScope, JournalEntry, PendingOperation, PendingState, new_operation_id, new_undo_id,
};
use crate::tool::CallContext;

use super::audit::{self, now_ms};
use super::chain::{self, ChainResult, ChainStep};
use super::config::AuditMode;
use super::confirm::{Answer, ConfirmationRequest};
use super::format::fit;
use super::policy::{self, Requirement};
use super::{Executor, run};
use crate::records::AuditRecord;
use crate::records::{Decider, Decision, Execution, FirstUse, Outcome, Preview, Undo};

/// How many times a person may send edited arguments that do not validate before the call is
/// given up as denied.
const MAX_EDIT_ROUNDS: usize = 3;

/// What happened on the way to an outcome, for the audit record.
pub(crate) struct Trail {
    pub(crate) started: Instant,
    pub(crate) decision: Decision,
    pub(crate) by: Decider,
    pub(crate) attempts: u32,
    pub(crate) cached: bool,
    pub(crate) operation_id: Option<String>,
    pub(crate) arguments: Option<Value>,
    pub(crate) repairs: Vec<Repair>,
    /// What the record's summary must not show (the raw arguments' secret values).
    pub(crate) secrets: audit::Secrets,
    /// The tool has no schema: its arguments run unvalidated, in this mode.
    pub(crate) no_schema: Option<crate::definition::NoSchemaMode>,
}

impl Trail {
    /// Keeps the audited form of arguments the call runs with, and remembers the raw ones so that
    /// their secret values can be kept out of the result summary.
    pub(crate) fn note_arguments(
        &mut self,
        audited: Option<Value>,
        raw: &Value,
        def: &ToolDefinition,
    ) {
        self.secrets.use_definition(def);
        self.secrets.add_arguments(raw);
        self.arguments = audited;
        self.no_schema = def.no_schema_mode();
    }

    pub(crate) fn new(started: Instant) -> Self {
        Trail {
            started,
            decision: Decision::Allowed,
            by: Decider::Policy,
            attempts: 0,
            cached: false,
            operation_id: None,
            arguments: None,
            repairs: Vec::new(),
            secrets: audit::Secrets::default(),
            no_schema: None,
        }
    }
}

/// What running the body produced.
struct Ran {
    result: Result<Value, ToolError>,
    attempts: u32,
    cached: bool,
}

impl Executor {
    /// Hydrates `call` against the toolset and runs it. A call that does not hydrate (unknown
    /// tool, invalid arguments) ends as an error outcome, recorded like any other.
    pub async fn call(&self, call: &ToolCall, cx: CallContext) -> Execution {
        match self.inner.toolset.hydrate(call) {
            Ok(instance) => self.run(instance, cx).await,
            Err(error) => {
                let started = Instant::now();
                let cx = self.context(&call.id, cx);
                let def = self.inner.toolset.get(&call.name);
                let mut trail = Trail::new(started);
                trail.decision = Decision::Refused;
                trail.secrets = audit::Secrets::new(def);
                let raw = match &call.arguments {
                    Arguments::Json(v) => Some(v.clone()),
                    Arguments::Text(t) => serde_json::from_str(t).ok(),
                };
                if let Some(raw) = &raw {
                    trail.secrets.add_arguments(raw);
                }
                trail.arguments = raw.map(|v| match def {
                    Some(d) => audit::redact(&v, d),
                    None => audit::redact_with_keys(&v),
                });
                let span = span(&call.name, &cx);
                let mut exec = Execution {
                    call_id: cx.call_id.clone(),
                    tool: call.name.clone(),
                    outcome: Outcome::error_from(error),
                    full: None,
                    audit_failure: None,
                    undo: None,
                };
                let category = def.map(|d| d.safety).unwrap_or_default();
                let _g = span.enter();
                self.record(&cx, &call.name, category, &mut exec, trail);
                exec
            }
        }
    }

    /// Runs a hydrated instance under the policy. The instance's call id is the call's id; the
    /// rest of the context (correlation id, session, initiator) comes from `cx`, and the tools'
    /// state from the toolset.
    pub async fn run(&self, instance: ToolInstance, cx: CallContext) -> Execution {
        let cx = self.context(instance.call_id(), cx);
        let span = span(instance.name(), &cx);
        self.run_inner(instance, cx).instrument(span).await
    }

    /// Runs the calls of one model turn concurrently (at most `max_concurrency` at a time) and
    /// returns their executions in the calls' order. A failure or panic in one is that call's
    /// outcome only.
    pub async fn run_batch(&self, calls: &[ToolCall], cx: &CallContext) -> Vec<Execution> {
        use futures::StreamExt;
        // The futures are made first (they do nothing until polled): a stream over a closure
        // returning them would make the whole batch's future fail rustc's `Send` proof when a
        // caller spawns it.
        let runs: Vec<_> = calls
            .iter()
            .map(|call| {
                let mut cx = cx.clone();
                cx.call_id = call.id.clone();
                self.call(call, cx)
            })
            .collect();
        futures::stream::iter(runs)
            .buffered(self.inner.config.max_concurrency.max(1))
            .collect()
            .await
    }

    /// Runs a chain (see the `chain` module docs for the `{"$ref": "step#/pointer"}` syntax): each
    /// step's references are resolved from earlier results, then it is hydrated, validated and
    /// run under the policy like any call. Stops at the first step that does not succeed. Step
    /// call ids are `<cx.call_id>.<step id>`.
    pub async fn chain(&self, steps: &[ChainStep], cx: CallContext) -> ChainResult {
        if let Err(error) = chain::check(steps) {
            return ChainResult {
                steps: Vec::new(),
                completed: false,
                error: Some(error),
            };
        }
        let mut outputs: Vec<(String, Value)> = Vec::new();
        let mut done = Vec::new();
        for step in steps {
            let arguments = match chain::resolve(&step.arguments, &outputs) {
                Ok(a) => a,
                Err(error) => {
                    return ChainResult {
                        steps: done,
                        completed: false,
                        error: Some(error.with_detail("step", step.id.clone())),
                    };
                }
            };
            let call_id = format!("{}.{}", cx.call_id, step.id);
            let call = ToolCall::new(
                call_id.clone(),
                step.tool.clone(),
                Arguments::Json(arguments),
            );
            let mut step_cx = cx.clone();
            step_cx.call_id = call.id.clone();
            let exec = self.call(&call, step_cx).await;
            let value = exec.value().cloned();
            done.push(exec);
            match value {
                Some(v) => outputs.push((step.id.clone(), v)),
                None => {
                    return ChainResult {
                        steps: done,
                        completed: false,
                        error: None,
                    };
                }
            }
        }
        ChainResult {
            steps: done,
            completed: true,
            error: None,
        }
    }

    /// Reverts a reversible call from its journal entry, once. The inverse call runs without a
    /// confirmation (a person asked for the undo) but under the allow and deny lists, with the
    /// timeout and audit of any call; its call id is `<call_id>:undo`.
    ///
    /// `id` is the call's [`Execution::undo_id`], or its provider call id when that names one
    /// call: providers reuse call ids, so when several journaled calls share it and more than one
    /// can still be undone, the undo is refused as `AMBIGUOUS`, listing their undo ids.
    pub async fn undo(&self, id: &str, cx: CallContext) -> Execution {
        let started = Instant::now();
        let fail = |call_id: &str, tool: &str, error: ToolError| Execution {
            call_id: SharedId::from(format!("{call_id}:undo")),
            tool: tool.to_owned(),
            outcome: Outcome::error_from(error),
            full: None,
            audit_failure: None,
            undo: None,
        };
        let entry = match self.journal_entry(id) {
            Ok(e) => e,
            Err(error) => return fail(id, "", error),
        };
        let undo_id = SharedId::from(format!("{}:undo", entry.call_id));
        let journal_id = entry.id.as_str();
        let cx = self.context(&undo_id, cx);
        let fail = |tool: &str, error: ToolError| fail(&entry.call_id, tool, error);
        let inverse = entry.inverse.clone();
        let span = span(&inverse.tool, &cx);
        async {
            let mut trail = Trail::new(started);
            trail.decision = Decision::Undo;
            trail.by = Decider::User;
            let category = self
                .inner
                .toolset
                .get(&inverse.tool)
                .map(|d| d.safety)
                .unwrap_or_default();
            if let Some(def) = self.inner.toolset.get(&inverse.tool) {
                trail.note_arguments(
                    self.audited_arguments(&inverse.arguments, def),
                    &inverse.arguments,
                    def,
                );
            }
            if let Some(err) = policy::refusal(&inverse.tool, &self.inner.config) {
                let mut exec = fail(&inverse.tool, err);
                self.record(&cx, &inverse.tool, category, &mut exec, trail);
                return exec;
            }
            match self.inner.store.claim_undo(journal_id) {
                Ok(true) => {}
                Ok(false) => {
                    let mut exec = fail(
                        &inverse.tool,
                        ToolError::new(
                            ErrorCode::of("ALREADY_UNDONE"),
                            format!("call {:?} was already undone", entry.call_id),
                        ),
                    );
                    self.record(&cx, &inverse.tool, category, &mut exec, trail);
                    return exec;
                }
                Err(e) => return fail(&inverse.tool, e.into()),
            }
            let call = ToolCall::new(
                undo_id.clone(),
                inverse.tool.clone(),
                Arguments::Json(inverse.arguments.clone()),
            );
            let instance = match self.inner.toolset.hydrate(&call) {
                Ok(i) => i,
                Err(error) => {
                    let _ = self.inner.store.release_undo(journal_id);
                    let mut exec = fail(&inverse.tool, error);
                    self.record(&cx, &inverse.tool, category, &mut exec, trail);
                    return exec;
                }
            };
            let exec = self.proceed(instance, cx.clone(), trail).await;
            if !exec.outcome.is_success() {
                // the undo did not happen: let it be tried again
                let _ = self.inner.store.release_undo(journal_id);
            }
            exec
        }
        .instrument(span)
        .await
    }

    /// The journal entry an undo names: by undo id, else the one entry of that call id that can
    /// still be undone (or, when all were, the latest, which then reports `ALREADY_UNDONE`).
    fn journal_entry(&self, id: &str) -> Result<JournalEntry, ToolError> {
        let store = &self.inner.store;
        if let Some(entry) = store.get_journal(id)? {
            return Ok(entry);
        }
        let mut of_call = store.journal_of_call(id)?;
        let open: Vec<&JournalEntry> = of_call.iter().filter(|e| !e.undone).collect();
        match open.as_slice() {
            [one] => return Ok((*one).clone()),
            [_, _, ..] => {
                let ids: Vec<&str> = open.iter().map(|e| e.id.as_str()).collect();
                return Err(ToolError::new(
                    ErrorCode::of("AMBIGUOUS"),
                    format!(
                        "{} calls with id {id:?} can be undone; undo one by its undo id: {}",
                        ids.len(),
                        ids.join(", ")
                    ),
                ));
            }
            [] => {}
        }
        of_call.pop().ok_or_else(|| {
            ToolError::new(
                ErrorCode::NOT_FOUND,
                format!(
                    "nothing to undo for {id:?}: no such undo id, or the call is unknown, failed, or its tool is not reversible"
                ),
            )
        })
    }

    /// Fills in the context: the call id, a correlation id when none was given, and the
    /// toolset's state.
    pub(crate) fn context(&self, call_id: &SharedId, mut cx: CallContext) -> CallContext {
        cx.call_id = call_id.clone();
        if cx.correlation_id.is_empty() {
            cx.correlation_id = cx.call_id.clone();
        }
        cx.state = self.inner.toolset.state().clone();
        cx
    }

    async fn run_inner(&self, instance: ToolInstance, cx: CallContext) -> Execution {
        let started = Instant::now();
        let entry = instance.entry.clone();
        let def = entry.definition();
        let cfg = &self.inner.config;
        let gate_passed = !needs_gate(def.safety) || self.gate_passed(def, &cx);
        let mut trail = Trail::new(started);
        trail.note_arguments(
            self.audited_arguments(instance.arguments(), def),
            instance.arguments(),
            def,
        );
        trail.repairs = instance.repairs().to_vec();
        let injected = (cfg.check_injection && !def.safety.is_read_only())
            .then(|| super::injection::find(instance.arguments()))
            .flatten();
        let requirement = match injected {
            Some((pointer, kind, phrase)) => {
                Requirement::Refused(super::injection::refusal(&def.name, &pointer, kind, phrase))
            }
            None => policy::requirement(def, cfg, gate_passed),
        };
        match requirement {
            Requirement::Refused(error) => {
                trail.decision = Decision::Refused;
                let mut exec = Execution {
                    call_id: cx.call_id.clone(),
                    tool: def.name.to_string(),
                    outcome: Outcome::error_from(error),
                    full: None,
                    audit_failure: None,
                    undo: None,
                };
                self.record(&cx, &def.name, def.safety, &mut exec, trail);
                exec
            }
            Requirement::RunNow => self.proceed(instance, cx, trail).await,
            Requirement::Confirm { first_use } => {
                self.confirm_then_run(instance, &entry, cx, trail, first_use)
                    .await
            }
        }
    }

    async fn confirm_then_run(
        &self,
        instance: ToolInstance,
        entry: &Arc<Entry>,
        cx: CallContext,
        mut trail: Trail,
        first_use: bool,
    ) -> Execution {
        let def = entry.definition();
        let cfg = &self.inner.config;
        let preview = match self
            .preview(def, instance.arguments(), &cx, first_use)
            .await
        {
            Ok(p) => p,
            Err(error) => return self.unasked(def, &cx, trail, error),
        };
        let mut request = ConfirmationRequest {
            preview,
            problem: None,
            timeout: cfg.confirmation_timeout(),
        };
        let mut instance = instance;
        let mut rounds = 0;
        loop {
            if cfg.log_confirmations {
                tracing::info!(
                    target: "tool_runtime::confirmation",
                    tool = %def.name,
                    call_id = %cx.call_id,
                    first_use,
                    round = rounds,
                    "confirmation asked"
                );
            }
            // the handler is application code: a panic in it must end this call only, not the
            // task that may be running the other calls of the model's turn
            let asking =
                AssertUnwindSafe(async { self.confirmer.confirm(&request).await }).catch_unwind();
            let answer = match tokio::time::timeout(request.timeout, asking).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(payload)) => {
                    let error = panicked("the confirmation handler", &def.name, &*payload);
                    return self.unasked(def, &cx, trail, error);
                }
                Err(_) => Answer::Timeout,
            };
            if cfg.log_confirmations {
                tracing::info!(
                    target: "tool_runtime::confirmation",
                    tool = %def.name,
                    call_id = %cx.call_id,
                    answer = answer_name(&answer),
                    first_use,
                    "confirmation answered"
                );
            }
            let denied = |reason: String, by: Decider| Outcome::Denied { reason, by };
            let outcome = match answer {
                Answer::Yes => {
                    trail.decision = Decision::Confirmed;
                    trail.by = Decider::User;
                    if first_use {
                        self.pass_gate(def, &cx);
                    }
                    return self.proceed(instance, cx, trail).await;
                }
                Answer::Edit { arguments } => {
                    let call = ToolCall::new(
                        cx.call_id.clone(),
                        def.name.to_string(),
                        Arguments::Json(arguments.clone()),
                    );
                    match self.inner.toolset.hydrate(&call) {
                        Ok(edited) => {
                            trail.decision = Decision::Edited;
                            trail.by = Decider::User;
                            trail.note_arguments(
                                self.audited_arguments(edited.arguments(), def),
                                edited.arguments(),
                                def,
                            );
                            if first_use {
                                self.pass_gate(def, &cx);
                            }
                            instance = edited;
                            return self.proceed(instance, cx, trail).await;
                        }
                        Err(error) => {
                            rounds += 1;
                            if rounds < MAX_EDIT_ROUNDS {
                                // the preview keeps the arguments a "yes" would run; the rejected
                                // edit is named in the problem
                                request.problem =
                                    Some(format!("{} (your edit: {arguments})", error.message));
                                continue;
                            }
                            trail.decision = Decision::Denied;
                            trail.by = Decider::User;
                            // the rejected edit may quote a secret the person typed
                            trail.secrets.add_arguments(&arguments);
                            denied(
                                format!(
                                    "the user's edited arguments were not valid: {}",
                                    trail.secrets.scrub_error(&error).message
                                ),
                                Decider::User,
                            )
                        }
                    }
                }
                Answer::No { reason } => {
                    trail.decision = Decision::Denied;
                    trail.by = Decider::User;
                    denied(
                        reason.unwrap_or_else(|| "the user declined this call".to_owned()),
                        Decider::User,
                    )
                }
                Answer::Timeout => {
                    trail.decision = Decision::Denied;
                    trail.by = Decider::Timeout;
                    denied(
                        format!(
                            "nobody confirmed this call within {} s, so it was not run",
                            request.timeout.as_secs_f64()
                        ),
                        Decider::Timeout,
                    )
                }
                Answer::Defer => {
                    trail.decision = Decision::Deferred;
                    trail.by = Decider::Policy;
                    self.defer(&instance, &cx, request.preview.clone(), &mut trail)
                }
            };
            let mut exec = Execution {
                call_id: cx.call_id.clone(),
                tool: def.name.to_string(),
                outcome,
                full: None,
                audit_failure: None,
                undo: None,
            };
            self.record(&cx, &def.name, def.safety, &mut exec, trail);
            return exec;
        }
    }

    /// Ends a call that needed a person but could not be put to them (the previewer or the
    /// confirmation handler panicked): refused, nothing ran.
    fn unasked(
        &self,
        def: &ToolDefinition,
        cx: &CallContext,
        mut trail: Trail,
        error: ToolError,
    ) -> Execution {
        trail.decision = Decision::Refused;
        trail.by = Decider::Policy;
        let mut exec = Execution {
            call_id: cx.call_id.clone(),
            tool: def.name.to_string(),
            outcome: Outcome::error_from(error),
            full: None,
            audit_failure: None,
            undo: None,
        };
        self.record(cx, &def.name, def.safety, &mut exec, trail);
        exec
    }

    fn defer(
        &self,
        instance: &ToolInstance,
        cx: &CallContext,
        preview: Preview,
        trail: &mut Trail,
    ) -> Outcome {
        let limit = self.inner.config.max_pending_per_session;
        let waiting = match self.inner.store.list_pending() {
            Ok(ops) => ops.iter().filter(|o| o.session == cx.session).count(),
            Err(e) => return Outcome::error_from(e.into()),
        };
        if waiting >= limit {
            trail.decision = Decision::Refused;
            trail.by = Decider::Policy;
            // checked before parking, not atomically with it: racing calls of one session may
            // pass it together, which bounds the flood without a store-wide lock
            return Outcome::error_from(
                ToolError::new(
                    ErrorCode::of("TOO_MANY_PENDING"),
                    format!(
                        "{waiting} operations of this session wait for a decision, the most it \
                         may have ({limit}); this call was not parked"
                    ),
                )
                .retryable(true)
                .recover("wait until the person has decided on the operations already waiting")
                .with_detail("limit", limit),
            );
        }
        let op = PendingOperation {
            id: new_operation_id(),
            call_id: cx.call_id.clone(),
            tool: instance.name().to_owned(),
            arguments: instance.arguments().clone(),
            preview: preview.clone(),
            correlation_id: cx.correlation_id.clone(),
            session: cx.session.clone(),
            initiator: cx.initiator,
            created_ms: now_ms(),
            state: PendingState::Pending,
        };
        match self.inner.store.put_pending(&op) {
            Ok(()) => {
                trail.operation_id = Some(op.id.clone());
                Outcome::Pending {
                    operation_id: op.id,
                    preview,
                }
            }
            Err(e) => Outcome::error_from(e.into()),
        }
    }

    /// After the decision: run (cache, rate limit, attempts), journal, fit, record.
    pub(crate) async fn proceed(
        &self,
        instance: ToolInstance,
        cx: CallContext,
        mut trail: Trail,
    ) -> Execution {
        let entry = instance.entry.clone();
        let def = entry.definition();
        let planner = self.inner.undo.get(def.name.as_ref());
        let arguments = planner.map(|_| instance.arguments().clone());
        let ran = self.execute(instance, &cx).await;
        trail.attempts = ran.attempts;
        trail.cached = ran.cached;
        let mut undo = None;
        let (outcome, full) = match ran.result {
            Ok(value) => {
                if let (Some(planner), Some(args)) = (planner, &arguments) {
                    // a panicking planner costs the undo, not the call that already happened
                    let journaled = match std::panic::catch_unwind(AssertUnwindSafe(|| {
                        planner(args, &value)
                    })) {
                        Ok(inverse) => self.journal(def, &cx, inverse),
                        Err(payload) => Err(format!(
                            "its undo could not be planned (the planner panicked: {})",
                            panic_text(&*payload)
                        )),
                    };
                    undo = Some(journaled.unwrap_or_else(|why| {
                        tracing::error!(
                            tool = %def.name,
                            call_id = %cx.call_id,
                            "{why}; this call cannot be undone"
                        );
                        Undo::Unavailable {
                            reason: format!("call {} cannot be undone: {why}", cx.call_id),
                        }
                    }));
                }
                let (for_model, truncated) = fit(&value, self.inner.config.max_result_chars);
                let full = truncated.then_some(value);
                (
                    Outcome::Success {
                        value: for_model,
                        truncated,
                    },
                    full,
                )
            }
            Err(error) => (Outcome::error_from(error), None),
        };
        let mut exec = Execution {
            call_id: cx.call_id.clone(),
            tool: def.name.to_string(),
            outcome,
            full,
            audit_failure: None,
            undo,
        };
        self.record(&cx, &def.name, def.safety, &mut exec, trail);
        exec
    }

    fn journal(
        &self,
        def: &ToolDefinition,
        cx: &CallContext,
        inverse: Option<crate::store::InverseCall>,
    ) -> Result<Undo, String> {
        let Some(inverse) = inverse else {
            return Ok(Undo::NotNeeded);
        };
        let entry = JournalEntry {
            id: new_undo_id(),
            call_id: cx.call_id.to_string(),
            tool: def.name.to_string(),
            inverse,
            created_ms: now_ms(),
            undone: false,
        };
        self.inner
            .store
            .put_journal(&entry)
            .map(|()| Undo::Journaled { id: entry.id })
            .map_err(|e| format!("its undo could not be journaled ({e})"))
    }

    /// Cache, rate limits, then attempts with timeout and retries.
    async fn execute(&self, instance: ToolInstance, cx: &CallContext) -> Ran {
        let cfg = &self.inner.config;
        let entry = instance.entry.clone();
        let def = entry.definition();
        if !instance.is_runnable() {
            return Ran {
                result: Err(ToolError::new(
                    ErrorCode::NOT_ALLOWED,
                    format!(
                        "the tool {:?} is declared without a body in this process and cannot be run here",
                        def.name
                    ),
                )),
                attempts: 0,
                cached: false,
            };
        }
        let cache_key = (def.safety.is_read_only() && cfg.cache.enabled)
            .then(|| super::cache::cache_key(&def.name, instance.arguments()));
        let ttl = Duration::from_millis(cfg.cache.ttl_ms);
        if let Some(v) = cache_key
            .as_ref()
            .and_then(|k| self.inner.cache.get(k, ttl))
        {
            return Ran {
                result: Ok(v),
                attempts: 0,
                cached: true,
            };
        }
        if let Err(error) = self.acquire_rate(def, &cfg.rate_limits) {
            return Ran {
                result: Err(error),
                attempts: 0,
                cached: false,
            };
        }
        let timeout = def.timeout.unwrap_or_else(|| cfg.default_timeout());
        let may_retry = cfg.retry.max_attempts > 1
            && (def.safety.is_read_only()
                || def.idempotent
                || def.retry
                || cfg.retry.opt_in.iter().any(|t| t == def.name.as_ref()));
        let retry_args = may_retry.then(|| instance.arguments().clone());
        let mut next = Some(instance);
        let mut attempts = 0;
        let result = loop {
            let instance = match next.take() {
                Some(i) => i,
                // a retry runs a fresh instance of the same validated arguments
                None => match self.inner.toolset.hydrate(&ToolCall::new(
                    cx.call_id.clone(),
                    def.name.to_string(),
                    Arguments::Json(retry_args.clone().unwrap_or_default()),
                )) {
                    Ok(i) => i,
                    Err(e) => break Err(e),
                },
            };
            attempts += 1;
            let result = run::attempt(instance, cx.clone(), timeout).await;
            match result {
                Err(e) if may_retry && e.retryable && attempts < cfg.retry.max_attempts => {
                    let delay = run::backoff(&cfg.retry, attempts);
                    tracing::warn!(
                        tool = %def.name,
                        attempt = attempts,
                        code = %e.code,
                        delay_ms = delay.as_millis() as u64,
                        "retrying a retryable failure"
                    );
                    tokio::time::sleep(delay).await;
                }
                other => break other,
            }
        };
        if let (Ok(v), Some(k)) = (&result, cache_key) {
            self.inner
                .cache
                .put(k, v.clone(), ttl, cfg.cache.max_entries);
        }
        Ran {
            result,
            attempts,
            cached: false,
        }
    }

    async fn preview(
        &self,
        def: &ToolDefinition,
        arguments: &Value,
        cx: &CallContext,
        first_use: bool,
    ) -> Result<Preview, ToolError> {
        let intent = def.render_intent(arguments).unwrap_or_else(|| {
            let what = def
                .description
                .split(['.', '\n'])
                .next()
                .unwrap_or("")
                .trim();
            if what.is_empty() {
                format!("Run the tool {}", def.name)
            } else {
                format!("Run the tool {}: {what}", def.name)
            }
        });
        let change = match self.inner.previews.get(def.name.as_ref()) {
            None => None,
            Some(p) => {
                let timeout = def
                    .timeout
                    .unwrap_or_else(|| self.inner.config.default_timeout());
                let (arguments, cx) = (arguments.clone(), cx.clone());
                // called inside the future so that a panic while building it is caught too
                let previewing =
                    AssertUnwindSafe(async move { p(arguments, cx).await }).catch_unwind();
                Some(match tokio::time::timeout(timeout, previewing).await {
                    Ok(Ok(Ok(v))) => v,
                    Ok(Ok(Err(e))) => json!({"preview_unavailable": e.message}),
                    Ok(Err(payload)) => {
                        return Err(panicked("the change preview", &def.name, &*payload));
                    }
                    Err(_) => json!({"preview_unavailable": "the preview timed out"}),
                })
            }
        };
        let first_use = first_use.then(|| {
            let data_leaving: Vec<String> = arguments
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            let sent = if data_leaving.is_empty() {
                "No arguments are sent.".to_owned()
            } else {
                format!(
                    "The values of {} will be sent to it.",
                    data_leaving.join(", ")
                )
            };
            let why = if def.safety == Safety::Unspecified {
                "declares no safety category, so it is treated as a tool that may change your work \
                 and talk to a service outside the system"
            } else {
                "talks to a service outside the system"
            };
            FirstUse {
                service: def.description.to_string(),
                message: format!(
                    "This is the first time {} is used in this session. It {why}. {sent}",
                    def.name
                ),
                data_leaving,
            }
        });
        Ok(Preview {
            call_id: cx.call_id.clone(),
            tool: def.name.to_string(),
            intent,
            category: def.safety,
            arguments: arguments.clone(),
            // what `undo` can do, not what the definition claims: the builder refuses a
            // reversible flag without a planner, and a planner makes any tool undoable
            reversible: self.inner.undo.contains_key(def.name.as_ref()),
            change,
            first_use,
        })
    }

    /// Counts a call against its rate limits: in the store when the store shares them across
    /// processes (every replica then sees one budget), else in this process's limiter. A store
    /// that cannot be asked refuses the call, retryably: a limit that cannot be checked is not
    /// skipped.
    fn acquire_rate(
        &self,
        def: &ToolDefinition,
        cfg: &super::config::RateLimitConfig,
    ) -> Result<(), ToolError> {
        let windows = super::limit::windows(def, cfg);
        if windows.is_empty() {
            return Ok(());
        }
        let decision = match self.inner.store.acquire_rate(&windows) {
            Ok(Some(decision)) => decision,
            Ok(None) => self.inner.limiter.acquire(def, cfg),
            Err(e) => {
                return Err(ToolError::from(e)
                    .retryable(true)
                    .recover("the rate limits could not be checked; try again shortly"));
            }
        };
        decision.map_err(|wait| {
            let ms = wait.as_millis() as u64;
            ToolError::new(
                ErrorCode::RATE_LIMITED,
                format!("too many calls of {:?}; try again in {ms} ms", def.name),
            )
            .retryable(true)
            .recover(format!("wait {ms} ms before calling this tool again"))
            .with_detail("retry_after_ms", ms)
        })
    }

    fn gate_passed(&self, def: &ToolDefinition, cx: &CallContext) -> bool {
        let session = cx.session.as_deref().unwrap_or("");
        let name = def.name.as_ref();
        {
            let gates = self.inner.gates.lock().unwrap_or_else(|p| p.into_inner());
            if gates.contains(&(session.to_owned(), name.to_owned())) {
                return true;
            }
        }
        let store = &self.inner.store;
        let persisted = self.inner.config.persist_first_time_approvals
            && store
                .is_gate_approved(GateScope::Everywhere, name)
                .unwrap_or(false);
        let passed = persisted
            || store
                .is_gate_approved(GateScope::Session(session), name)
                .unwrap_or(false);
        if passed {
            // remembered here too, so later calls do not ask the store again
            self.inner
                .gates
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert((session.to_owned(), name.to_owned()));
        }
        passed
    }

    pub(crate) fn pass_gate(&self, def: &ToolDefinition, cx: &CallContext) {
        let session = cx.session.as_deref().unwrap_or("");
        self.inner
            .gates
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((session.to_owned(), def.name.to_string()));
        let store = &self.inner.store;
        let mut result = store.approve_gate(GateScope::Session(session), &def.name);
        if self.inner.config.persist_first_time_approvals {
            result = result.and(store.approve_gate(GateScope::Everywhere, &def.name));
        }
        if let Err(e) = result {
            tracing::error!(error = %e, tool = %def.name, "could not persist a first-time approval");
        }
    }

    pub(crate) fn audited(&self, arguments: &Value, def: &ToolDefinition) -> Option<Value> {
        self.audited_arguments(arguments, def)
    }

    fn audited_arguments(&self, arguments: &Value, def: &ToolDefinition) -> Option<Value> {
        match self.inner.config.audit_mode {
            AuditMode::Redacted if self.inner.config.log_tool_calls => {
                Some(audit::redact(arguments, def))
            }
            _ => None,
        }
    }

    /// Writes the one audit record of a call to every sink and the store, and onto the span.
    pub(crate) fn record(
        &self,
        cx: &CallContext,
        tool: &str,
        category: Safety,
        exec: &mut Execution,
        trail: Trail,
    ) {
        // an error can quote the arguments (a validation message, a tool that prints its
        // input): secret values are hidden in what the caller gets too, not only in the record
        if let Outcome::Error { error } = &mut exec.outcome {
            *error = trail.secrets.scrub_error(error);
        }
        let cfg = &self.inner.config;
        let status = exec.outcome.status();
        let error_code = exec.outcome.error().map(|e| e.code.to_string());
        let duration_us = trail.started.elapsed().as_micros() as u64;
        let span = tracing::Span::current();
        span.record("gen_ai.tool.category", category.as_str());
        span.record("tool.decision", decision_name(trail.decision));
        span.record("tool.status", status.as_str());
        if let Some(code) = &error_code {
            span.record("error.type", code.as_str());
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
        if !cfg.log_tool_calls {
            return;
        }
        let result_summary = match cfg.audit_mode {
            AuditMode::MetadataOnly => None,
            // redacted before it is cut: results echo arguments, and validation messages quote
            // the offending value
            AuditMode::Redacted => Some(trail.secrets.summary(&exec.outcome)),
        };
        let record = AuditRecord {
            timestamp_ms: now_ms(),
            correlation_id: cx.correlation_id.clone(),
            call_id: cx.call_id.clone(),
            session: cx.session.clone(),
            tool: tool.to_owned(),
            category,
            initiator: cx.initiator,
            decision: trail.decision,
            decided_by: trail.by,
            duration_us,
            status,
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
        };
        for sink in &self.inner.sinks {
            sink.record(&record);
        }
        if !self.inner.store_audit {
            return;
        }
        if let Err(e) = self.inner.store.append_audit(&record) {
            // the call has happened (or was refused) either way: what must not happen is that
            // nobody learns its record is missing
            let failure = format!(
                "the audit record of call {} ({tool}) could not be written: {e}",
                cx.call_id
            );
            if cfg.audit_required {
                tracing::error!(call_id = %cx.call_id, tool, error = %e, "audit record lost");
            } else {
                tracing::warn!(call_id = %cx.call_id, tool, error = %e, "audit record lost");
            }
            exec.audit_failure = Some(failure);
        }
    }
}

/// The error of a call whose previewer or confirmation handler panicked. Nothing ran, and the
/// same call would panic again, so it is not retryable.
fn panicked(what: &str, tool: &str, payload: &(dyn std::any::Any + Send)) -> ToolError {
    let text = panic_text(payload);
    tracing::error!(tool, panic = %text, "{what} panicked");
    ToolError::new(
        ErrorCode::INTERNAL,
        format!("{what} of {tool:?} failed unexpectedly (it panicked), so the call was not run"),
    )
    .recover("do not retry the same call; tell the user that confirming this tool is failing")
    .with_detail("panicked", what)
}

/// A panic payload as text (`panic!` gives a `&str` or a `String`).
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

fn needs_gate(safety: Safety) -> bool {
    matches!(safety, Safety::External | Safety::Unspecified)
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

fn answer_name(a: &Answer) -> &'static str {
    match a {
        Answer::Yes => "yes",
        Answer::No { .. } => "no",
        Answer::Edit { .. } => "edit",
        Answer::Timeout => "timeout",
        Answer::Defer => "defer",
    }
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
    }
}
