//! The life of one call: hydrated, put through the policy (and the person, see `decision`),
//! run (see `run`), journaled for undo, fitted for the model and recorded (see `record`); and the
//! ways in: one call, a model turn's batch, a chain.

use std::panic::AssertUnwindSafe;
use std::task::Poll;
use std::time::Instant;

use serde_json::Value;
use tracing::Instrument;

use crate::hydrate::{Arguments, ToolCall, ToolInstance};
use crate::id::SharedId;
use crate::records::{AuditArguments, Decision, Execution, Outcome, Undo};
use crate::tool::CallContext;

use super::chain::{self, ChainResult, ChainStep};
use super::decision::needs_gate;
use super::format::fit_owned;
use super::in_place::InPlace;
use super::policy::{self, Requirement};
use super::record::{Trail, Unfinished, span};
use super::{Executor, audit};

impl Executor {
    /// Hydrates `call` against the toolset and runs it. A call that does not hydrate (unknown
    /// tool, invalid arguments) ends as an error outcome, recorded like any other.
    pub async fn call(&self, call: &ToolCall, cx: CallContext) -> Execution {
        let hydrated = self.inner.toolset.load().hydrate(call);
        match hydrated {
            Ok(instance) => self.run(instance, cx).await,
            Err(error) => {
                let started = Instant::now();
                let cx = self.context(&call.id, cx);
                let tools = self.toolset();
                let def = tools.get(&call.name);
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
                trail.arguments = raw.map(|v| {
                    AuditArguments::new(match def {
                        Some(d) => audit::redact(&v, d),
                        None => audit::redact_with_keys(&v),
                    })
                });
                let span = span(&call.name, &cx);
                let mut exec = Execution::new(
                    cx.call_id.clone(),
                    call.name.clone(),
                    Outcome::error_from(error),
                );
                let category = def.map(|d| d.safety).unwrap_or_default();
                self.record(&cx, &call.name, category, &mut exec, trail)
                    .instrument(span)
                    .await;
                exec
            }
        }
    }

    /// Runs a hydrated instance under the policy. The instance's call id is the call's id; the
    /// rest of the context (correlation id, session, initiator) comes from `cx`, and the tools'
    /// state from the toolset.
    ///
    /// Like an `async fn`, the future does nothing until it is polled. The common path runs
    /// within its first poll and holds no nested future (see `in_place`): until then the future
    /// is the instance, the context and the call's span, and after it a boxed future that owns
    /// the context, so that moving it (which a runtime's `block_on` or `spawn` does) costs little.
    pub fn run(
        &self,
        instance: ToolInstance,
        cx: CallContext,
    ) -> impl Future<Output = Execution> + Send + '_ {
        Run {
            executor: self,
            span: tracing::Span::none(),
            state: RunState::Start(Some((instance, cx))),
        }
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

    /// Fills in the context: the call id, a correlation id when none was given, and the
    /// toolset's state.
    pub(crate) fn context(&self, call_id: &SharedId, mut cx: CallContext) -> CallContext {
        cx.call_id = call_id.clone();
        if cx.correlation_id.is_empty() {
            cx.correlation_id = cx.call_id.clone();
        }
        cx.state = self.inner.toolset.load().state().clone();
        if cx.host.is_none() {
            cx.host = self.confirmer.host();
        }
        cx
    }

    /// A tool's value as the outcome the model gets (fitted to `max_result_chars`), and the
    /// whole value when fitting cut it.
    pub(super) fn success(&self, value: Value) -> (Outcome, Option<Box<Value>>) {
        let (for_model, full) = fit_owned(value, self.inner.config.max_result_chars);
        let truncated = full.is_some();
        (
            Outcome::Success {
                value: for_model,
                truncated,
            },
            full.map(Box::new),
        )
    }

    /// A call the policy lets run at once, with nothing to wait for before its body, run in
    /// place within the poll that `task` belongs to; any other call, or the rest of one whose
    /// body waits, is returned as a future.
    fn start_in_place<'a>(
        &'a self,
        instance: ToolInstance,
        cx: CallContext,
        task: &mut std::task::Context<'_>,
    ) -> Started<'a> {
        let def = instance.definition();
        let cfg = &self.inner.config;
        // a first-time gate, an injection check, a refusal or a check of the tool's own
        // (`ToolSet::set_check`) takes the general path
        let in_place = !needs_gate(def.safety)
            && (def.safety.is_read_only() || !cfg.check_injection)
            && matches!(policy::requirement(def, cfg, true), Requirement::RunNow)
            && self.inner.toolset.load().check_of(&def.name).is_none()
            && self.runs_in_place(&instance, &cx);
        if !in_place {
            return Started::Rest(Box::pin(
                async move { self.run_general(instance, &cx).await },
            ));
        }
        let started = Instant::now();
        let entry = instance.entry.clone();
        let def = entry.definition();
        let mut unfinished = Unfinished::arm(self, &cx, &def.name, def.safety, started);
        let mut trail = Trail::new(started);
        // a call whose arguments are not made as JSON for the cache keeps its typed arguments
        // in the record as a tree, whose JSON is made only when someone reads the record
        // (and a retry makes its arguments from that tree)
        let plain = match self.caches(def) {
            true => None,
            false => instance.plain_arguments().map(AuditArguments::plain),
        };
        let keep = self.keeps_arguments();
        let plain = plain.filter(|p| trail.note_plain_arguments(keep, p, def, entry.key_plan()));
        if plain.is_none() {
            trail.note_call_arguments(keep, instance.arguments(), def, entry.key_plan());
        }
        trail.repairs = instance.repairs().to_vec();
        let ran = self.run_in_place(instance, &cx, trail, plain, task);
        // what goes on later arms its own record of a call cut off: it is polled at once, in
        // this same poll, so no cancellation falls between the two
        unfinished.disarm();
        drop(unfinished);
        match ran {
            InPlace::Done(exec, None) => Started::Done(exec),
            // the record is made and handed to the sinks: only the store's copy is left, and a
            // store call runs to its end even if its caller stops waiting
            InPlace::Done(exec, Some(record)) => Started::Rest(Box::pin(async move {
                self.write_record(&cx, exec, record).await
            })),
            InPlace::Later(later) => {
                Started::Rest(Box::pin(async move { self.resume(later, &cx).await }))
            }
        }
    }

    /// [`Executor::run`] for every call: the first-time gate, the injection check, the
    /// policy and a person's answer, then the run.
    async fn run_general(&self, instance: ToolInstance, cx: &CallContext) -> Execution {
        let started = Instant::now();
        let entry = instance.entry.clone();
        let def = entry.definition();
        let cfg = &self.inner.config;
        let mut unfinished = Unfinished::arm(self, cx, &def.name, def.safety, started);
        // the paths most calls do not take are boxed: every call's future stays small, and it is
        // moved (copied) a few times on its way to being polled
        // a tool's own check (`ToolSet::set_check`) refuses before anyone is asked or gated
        let check = self.inner.toolset.load().check_of(&def.name).cloned();
        let refused = match check {
            Some(check) => check().await.err(),
            None => None,
        };
        let gate_passed = refused.is_some()
            || !needs_gate(def.safety)
            || Box::pin(self.gate_passed(def, cx)).await;
        let mut trail = Trail::new(started);
        trail.note_call_arguments(
            self.keeps_arguments(),
            instance.arguments(),
            def,
            entry.key_plan(),
        );
        trail.repairs = instance.repairs().to_vec();
        let injected = (cfg.check_injection && !def.safety.is_read_only())
            .then(|| super::injection::find(instance.arguments()))
            .flatten();
        let requirement = match (refused, injected) {
            (Some(error), _) => Requirement::Refused(error),
            (None, Some((pointer, kind, phrase))) => {
                Requirement::Refused(super::injection::refusal(&def.name, &pointer, kind, phrase))
            }
            (None, None) => policy::requirement(def, cfg, gate_passed),
        };
        if trail.arguments_of_call && !matches!(requirement, Requirement::RunNow) {
            // the rare paths keep a copy, as they may record before (or without) running
            trail.settle(Some(instance.arguments().clone()));
        }
        let exec = match requirement {
            Requirement::Refused(error) => {
                trail.decision = Decision::Refused;
                unfinished.decision = Decision::Refused;
                let exec = Execution::new(
                    cx.call_id.clone(),
                    def.name.clone(),
                    Outcome::error_from(error),
                );
                Box::pin(self.record_owned(cx, &def.name, def.safety, exec, trail)).await
            }
            Requirement::RunNow => Box::pin(self.proceed(instance, cx, trail)).await,
            Requirement::Confirm { first_use } => {
                unfinished.decision = Decision::Unanswered;
                let confirming =
                    self.confirm_then_run(instance, &entry, cx, trail, first_use, &mut unfinished);
                Box::pin(confirming).await
            }
        };
        unfinished.disarm();
        exec
    }

    /// After the decision: run (cache, rate limit, attempts), journal, fit, record.
    pub(crate) async fn proceed(
        &self,
        instance: ToolInstance,
        cx: &CallContext,
        mut trail: Trail,
    ) -> Execution {
        let entry = instance.entry.clone();
        let def = entry.definition();
        let planner = if self.inner.undo.is_empty() {
            None
        } else {
            self.inner.undo.get(def.name.as_ref())
        };
        let arguments = planner.map(|_| instance.arguments().clone());
        let ran = self.execute(instance, cx).await;
        trail.attempts = ran.attempts;
        trail.cached = ran.cached;
        trail.settle(ran.arguments);
        let mut undo = None;
        let (outcome, full) = match ran.result {
            Ok(value) => {
                if let (Some(planner), Some(args)) = (planner, &arguments) {
                    // a panicking planner costs the undo, not the call that already happened
                    let journaled = match std::panic::catch_unwind(AssertUnwindSafe(|| {
                        planner(args, &value)
                    })) {
                        Ok(inverse) => Box::pin(self.journal(def, cx, inverse)).await,
                        Err(payload) => Err(format!(
                            "its undo could not be planned (the planner panicked: {})",
                            panic_text(&*payload)
                        )),
                    };
                    undo = Some(Box::new(journaled.unwrap_or_else(|why| {
                        tracing::error!(
                            tool = %def.name,
                            call_id = %cx.call_id,
                            "{why}; this call cannot be undone"
                        );
                        Undo::Unavailable {
                            reason: format!("call {} cannot be undone: {why}", cx.call_id),
                        }
                    })));
                }
                self.success(value)
            }
            Err(error) => (Outcome::error_from(error), None),
        };
        let mut exec = Execution {
            call_id: cx.call_id.clone(),
            tool: def.name.clone(),
            outcome,
            full,
            audit_failure: None,
            undo,
        };
        self.record(cx, &def.name, def.safety, &mut exec, trail)
            .await;
        exec
    }
}

/// The future of [`Executor::run`]: what `Instrumented` does for an `async fn` (the call's span
/// entered on every poll and while what is left of the call is dropped), written by hand so
/// that the future holds no more than the call's instance and context before its first poll.
struct Run<'a> {
    executor: &'a Executor,
    /// The call's `execute_tool` span, made at the first poll (as an `async fn` would, so that
    /// its parent is the span current where the call is polled).
    span: tracing::Span,
    state: RunState<'a>,
}

// `Start` is every call's: boxing it would cost every call an allocation
#[allow(clippy::large_enum_variant)]
enum RunState<'a> {
    /// Not polled yet (`None` once the call finished in its first poll).
    Start(Option<(ToolInstance, CallContext)>),
    /// What is left after the first poll: a future that owns the call's context.
    Rest(futures::future::BoxFuture<'a, Execution>),
}

impl std::future::Future for Run<'_> {
    type Output = Execution;

    fn poll(self: std::pin::Pin<&mut Self>, task: &mut std::task::Context<'_>) -> Poll<Execution> {
        let this = self.get_mut();
        if let RunState::Start(start) = &mut this.state {
            let (instance, cx) = start.take().expect("polled after it finished");
            let cx = this.executor.context(instance.call_id(), cx);
            this.span = span(instance.name(), &cx);
            let in_span = this.span.enter();
            match this.executor.start_in_place(instance, cx, task) {
                Started::Done(exec) => return Poll::Ready(exec),
                // polled at once, in this same poll (see `start_in_place`)
                Started::Rest(rest) => this.state = RunState::Rest(rest),
            }
            drop(in_span);
        }
        let RunState::Rest(rest) = &mut this.state else {
            unreachable!("polled after it finished")
        };
        let _in_span = this.span.enter();
        rest.as_mut().poll(task)
    }
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        if matches!(self.state, RunState::Rest(_)) {
            // what a call cut off records (see `Unfinished`) belongs to its span
            let _in_span = self.span.enter();
            self.state = RunState::Start(None);
        }
    }
}

/// How far [`Executor::start_in_place`] took a call.
// `Done` is the common case: boxing it would cost every call an allocation
#[allow(clippy::large_enum_variant)]
enum Started<'a> {
    Done(Execution),
    Rest(futures::future::BoxFuture<'a, Execution>),
}

/// A panic payload as text (`panic!` gives a `&str` or a `String`).
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}
