//! The way to a decision on a call that needs a person: the first-time gate, the preview, the
//! confirmation handler's answer (yes, no, edited arguments, no answer in time) and deferral as
//! a pending operation.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

use crate::definition::{Safety, ToolDefinition};
use crate::error::{ErrorCode, ToolError};
use crate::hydrate::entry::Entry;
use crate::hydrate::{Arguments, ToolCall, ToolInstance};
use crate::records::{Change, Decider, Decision, Execution, FirstUse, Outcome, Preview};
use crate::store::{GateScope, PendingOperation, PendingState, new_operation_id};
use crate::tool::CallContext;

use super::Executor;
use super::audit::now_ms;
use super::confirm::{Answer, ConfirmationRequest};
use super::record::{Trail, Unfinished};

/// How many times a person may send edited arguments that do not validate before the call is
/// given up as denied.
const MAX_EDIT_ROUNDS: usize = 3;

impl Executor {
    pub(super) async fn confirm_then_run(
        &self,
        instance: ToolInstance,
        entry: &Arc<Entry>,
        cx: &CallContext,
        mut trail: Trail,
        first_use: bool,
        unfinished: &mut Unfinished<'_>,
    ) -> Execution {
        let def = entry.definition();
        let cfg = &self.inner.config;
        let preview = match self
            .preview(entry, instance.arguments(), cx, first_use)
            .await
        {
            Ok(p) => p,
            Err(error) => return self.unasked(def, cx, trail, error).await,
        };
        let mut request = ConfirmationRequest {
            preview,
            problem: None,
            timeout: cfg.confirmation_timeout(),
        };
        let mut instance = instance;
        let mut rounds = 0;
        let route = self.confirmer.route();
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
                Ok(Err(_)) => {
                    let error = panicked("the confirmation handler", &def.name);
                    return self.unasked(def, cx, trail, error).await;
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
                    (trail.by, trail.via) = (route.decider, route.via);
                    (unfinished.decision, unfinished.by) = (trail.decision, trail.by);
                    if first_use {
                        self.pass_gate(def, cx).await;
                    }
                    return self.proceed(instance, cx, trail).await;
                }
                Answer::Edit { arguments } => {
                    let call = ToolCall::new(
                        cx.call_id.clone(),
                        def.name.to_string(),
                        Arguments::Json(arguments.clone()),
                    );
                    let hydrated = self.inner.toolset.load().hydrate(&call);
                    match hydrated {
                        Ok(edited) => {
                            trail.decision = Decision::Edited;
                            (trail.by, trail.via) = (route.decider, route.via);
                            trail.note_arguments(self.keeps_arguments(), edited.arguments(), def);
                            (unfinished.decision, unfinished.by) = (trail.decision, trail.by);
                            if first_use {
                                self.pass_gate(def, cx).await;
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
                            (trail.by, trail.via) = (route.decider, route.via.clone());
                            // the rejected edit may quote a secret the person typed
                            trail.secrets.add_arguments(&arguments);
                            denied(
                                format!(
                                    "the user's edited arguments were not valid: {}",
                                    trail.secrets.scrub_error(&error).message
                                ),
                                route.decider,
                            )
                        }
                    }
                }
                Answer::No { reason } => {
                    trail.decision = Decision::Denied;
                    (trail.by, trail.via) = (route.decider, route.via.clone());
                    denied(
                        reason.unwrap_or_else(|| "the user declined this call".to_owned()),
                        route.decider,
                    )
                }
                Answer::Timeout => {
                    trail.decision = Decision::Denied;
                    trail.by = Decider::Timeout;
                    trail.via = route.via.clone();
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
                    self.defer(&instance, cx, request.preview.clone(), &mut trail)
                        .await
                }
            };
            let mut exec = Execution {
                call_id: cx.call_id.clone(),
                tool: def.name.clone(),
                outcome,
                full: None,
                audit_failure: None,
                undo: None,
            };
            self.record(cx, &def.name, def.safety, &mut exec, trail)
                .await;
            return exec;
        }
    }

    /// Ends a call that needed a person but could not be put to them (the previewer or the
    /// confirmation handler panicked): refused, nothing ran.
    async fn unasked(
        &self,
        def: &ToolDefinition,
        cx: &CallContext,
        mut trail: Trail,
        error: ToolError,
    ) -> Execution {
        trail.decision = Decision::Refused;
        trail.by = Decider::Policy;
        let mut exec = Execution::new(
            cx.call_id.clone(),
            def.name.clone(),
            Outcome::error_from(error),
        );
        self.record(cx, &def.name, def.safety, &mut exec, trail)
            .await;
        exec
    }

    /// Parks the call as a pending operation, unless the store or the call's session has too
    /// many waiting.
    async fn defer(
        &self,
        instance: &ToolInstance,
        cx: &CallContext,
        preview: Preview,
        trail: &mut Trail,
    ) -> Outcome {
        let cfg = &self.inner.config;
        let (per_session, per_credential, in_all) = (
            cfg.max_pending_per_session,
            cfg.max_pending_per_credential,
            cfg.max_pending,
        );
        let op = PendingOperation {
            id: new_operation_id(),
            call_id: cx.call_id.clone(),
            tool: instance.name().to_owned(),
            arguments: instance.arguments().clone(),
            preview: preview.clone(),
            correlation_id: cx.correlation_id.clone(),
            session: cx.session.clone(),
            initiator: cx.initiator,
            credential: cx.credential.clone(),
            created_ms: now_ms(),
            state: PendingState::Pending,
        };
        let operation_id = op.id.clone();
        // counted before parking, not atomically with it: racing calls may pass a limit
        // together, which bounds the flood without a store-wide lock
        let parked = self
            .with_store("count_pending/put_pending", move |store| {
                let waiting = store.count_pending(op.session.as_deref(), op.credential.as_ref())?;
                if waiting.total >= in_all {
                    return Ok(Err(("max_pending", in_all, waiting.total, "the store")));
                }
                if op.credential.is_some() && waiting.credential >= per_credential {
                    let limit = "max_pending_per_credential";
                    return Ok(Err((
                        limit,
                        per_credential,
                        waiting.credential,
                        "this credential",
                    )));
                }
                if waiting.session >= per_session {
                    let limit = "max_pending_per_session";
                    return Ok(Err((limit, per_session, waiting.session, "this session")));
                }
                store.put_pending(&op).map(Ok)
            })
            .await;
        match parked {
            Ok(Ok(())) => {
                trail.operation_id = Some(operation_id.clone());
                Outcome::Pending {
                    operation_id,
                    preview: Box::new(preview),
                }
            }
            Ok(Err((which, limit, waiting, whose))) => {
                trail.decision = Decision::Refused;
                trail.by = Decider::Policy;
                Outcome::error_from(
                    ToolError::new(
                        ErrorCode::of("TOO_MANY_PENDING"),
                        format!(
                            "{waiting} operations of {whose} wait for a decision, the most it may \
                             have ({which} = {limit}); this call was not parked"
                        ),
                    )
                    .retryable(true)
                    .recover("wait until the person has decided on the operations already waiting")
                    .with_detail("limit", limit)
                    .with_detail("which", which),
                )
            }
            Err(e) => Outcome::error_from(e.into()),
        }
    }

    async fn preview(
        &self,
        entry: &Entry,
        arguments: &Value,
        cx: &CallContext,
        first_use: bool,
    ) -> Result<Preview, ToolError> {
        let def = entry.definition();
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
                // a change that could not be previewed is said so, not left out: the person
                // must not read its absence as "nothing changes"
                let unavailable =
                    |why: &str| Change::new().note(format!("The change cannot be shown: {why}."));
                Some(match tokio::time::timeout(timeout, previewing).await {
                    Ok(Ok(Ok(change))) => change,
                    Ok(Ok(Err(e))) => unavailable(e.message.trim_end_matches('.')),
                    Ok(Err(_)) => {
                        return Err(panicked("the change preview", &def.name));
                    }
                    Err(_) => unavailable("the preview timed out"),
                })
            }
        };
        let shown = set_arguments(entry, arguments);
        let first_use = first_use.then(|| {
            let data_leaving: Vec<String> = shown
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
                service: match &def.service {
                    Some(who) => format!("{who}. {}", def.description),
                    None => def.description.to_string(),
                },
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
            arguments: shown,
            // what `undo` can do, not what the definition claims: the builder refuses a
            // reversible flag without a planner, and a planner makes any tool undoable
            reversible: self.inner.undo.contains_key(def.name.as_ref()),
            change,
            first_use,
        })
    }

    /// Whether the first-time gate of `def` was passed in the call's session (or everywhere,
    /// when passed gates are kept across sessions). A store that cannot say counts as "not
    /// passed": the person is asked again.
    pub(super) async fn gate_passed(&self, def: &ToolDefinition, cx: &CallContext) -> bool {
        let key = (cx.session.clone().unwrap_or_default(), def.name.to_string());
        {
            let gates = self.inner.gates.lock().unwrap_or_else(|p| p.into_inner());
            if gates.contains(&key) {
                return true;
            }
        }
        let everywhere = self.inner.config.persist_first_time_approvals;
        let (session, name) = key.clone();
        let passed = self
            .with_store("is_gate_approved", move |store| {
                let approved = |scope| store.is_gate_approved(scope, &name).unwrap_or(false);
                Ok(everywhere && approved(GateScope::Everywhere)
                    || approved(GateScope::Session(&session)))
            })
            .await
            .unwrap_or(false);
        if passed {
            // remembered here too, so later calls do not ask the store again
            self.inner
                .gates
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key);
        }
        passed
    }

    /// Remembers that the first-time gate of `def` was passed in the call's session, here and
    /// in the store (also for every session, when passed gates are kept across sessions). A
    /// store that fails costs a question in another process, not this approval.
    pub(crate) async fn pass_gate(&self, def: &ToolDefinition, cx: &CallContext) {
        let (session, name) = (cx.session.clone().unwrap_or_default(), def.name.to_string());
        self.inner
            .gates
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((session.clone(), name.clone()));
        let everywhere = self.inner.config.persist_first_time_approvals;
        let result = self
            .with_store("approve_gate", move |store| {
                let mut result = store.approve_gate(GateScope::Session(&session), &name);
                if everywhere {
                    result = result.and(store.approve_gate(GateScope::Everywhere, &name));
                }
                result
            })
            .await;
        if let Err(e) = result {
            tracing::error!(error = %e, tool = %def.name, "could not persist a first-time approval");
        }
    }
}

/// The error of a call whose previewer or confirmation handler panicked. Nothing ran, and the
/// same call would panic again, so it is not retryable.
fn panicked(what: &str, tool: &str) -> ToolError {
    // the panic's text may quote the arguments: neither the log nor the error repeats it
    tracing::error!(tool, "{what} panicked");
    ToolError::new(
        ErrorCode::INTERNAL,
        format!("{what} of {tool:?} failed unexpectedly (it panicked), so the call was not run"),
    )
    .recover("do not retry the same call; tell the user that confirming this tool is failing")
    .with_detail("panicked", what)
}

pub(super) fn needs_gate(safety: Safety) -> bool {
    matches!(safety, Safety::External | Safety::Unspecified)
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

/// The arguments a person is shown: without those a typed tool's arguments write as `null`
/// because the model left them unset (an optional argument's `None`). A null the tool's schema
/// requires, and any null of a tool that holds its arguments as the model sent them, is shown.
fn set_arguments(entry: &Entry, arguments: &Value) -> Value {
    let Value::Object(map) = arguments else {
        return arguments.clone();
    };
    if !entry.writes_unset_as_null() || !map.values().any(Value::is_null) {
        return arguments.clone();
    }
    let schema = entry
        .definition()
        .try_parameters_value()
        .unwrap_or_default();
    let required = |k: &str| {
        schema["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|n| n == k))
    };
    Value::Object(
        map.iter()
            .filter(|(k, v)| !v.is_null() || required(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}
