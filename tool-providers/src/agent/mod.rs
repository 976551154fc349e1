//! The multi-turn agent loop over any provider (seed 002).
//!
//! ```text
//! run(question)
//!   loop (at most max_iterations model requests)
//!     declarations: every tool, or the ones `pick` selects for the question
//!     model.complete ─▶ text + calls (native, or parsed from text by the fallback)
//!     no calls ─▶ final answer
//!     each call: hydrate ─▶ invalid: back to the model with pointer + recover_action
//!                                   (a per-tool retry budget bounds this)
//!                         └▶ valid: executor (policy, confirmation, timeout, audit), concurrently
//!     any pending operation ─▶ suspend: a serializable RunState, resumed after approval
//!     results (success, error, denial) ─▶ conversation
//! ```
//!
//! The agent never approves anything: confirmations come from the executor's handler or from
//! [`tool_runtime::executor::Executor::approve`] on a person's behalf.

// `AgentError` carries the model-facing `ToolError` of the failing call by design.

mod events;
mod model;
mod report;

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::join_all;
use serde_json::Value;
use tool_runtime::executor::{Execution, Executor, Outcome, Status};
use tool_runtime::select::PickOptions;
use tool_runtime::store::PendingState;
use tool_runtime::{
    CallContext, ErrorCode, Initiator, ToolCall, ToolDefinition, ToolError, ToolInstance,
};

pub use events::{AgentEvent, ConfirmWithEvents, EventSink};
pub use model::{ChatModel, ToolMode, Turn};
pub use report::{
    CallCost, DoneCall, PendingCall, Pricing, RunReport, RunState, RunStatus, SavedOutcome,
    TranscriptEntry,
};

use crate::codec::{CodecError, ToolChoice, ToolConfig, ToolOutcome, ToolResult, hydrate_call};
use crate::http::{HttpError, Usage};

/// Why a run stopped without a report.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The provider could not be reached or refused the request.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The provider's answer could not be decoded, or the request could not be encoded.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// The model sent invalid arguments to one tool more often than its retry budget allows.
    #[error(
        "the model sent invalid arguments to {tool:?} {failures} times (retry budget {budget}); last error: {last}"
    )]
    RetriesExhausted {
        /// The tool.
        tool: String,
        /// How many invalid calls.
        failures: u32,
        /// The budget.
        budget: u32,
        /// The last error.
        last: ToolError,
    },
    /// Pre-selection failed.
    #[error("tool selection failed: {0}")]
    Selection(ToolError),
    /// A suspended state does not fit this agent.
    #[error("cannot resume: {0}")]
    Resume(String),
    /// The executor's store failed while resuming.
    #[error("the store failed: {0}")]
    Store(ToolError),
}

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The system prompt.
    pub system: Option<String>,
    /// The most model requests per run (default 8).
    pub max_iterations: u32,
    /// The tool choice on the first request (e.g. [`ToolChoice::Required`] to force a call from a
    /// small model); later requests use `choice`.
    pub first_choice: Option<ToolChoice>,
    /// The tool choice on every other request (default auto).
    pub choice: ToolChoice,
    /// Parallel calls switch, passed to providers that have one.
    pub parallel: Option<bool>,
    /// Invalid-argument calls allowed per tool before the run fails (default 1, as in Pydantic
    /// AI: one retry after the first failure).
    pub retry_budget: u32,
    /// Overrides of `retry_budget` per tool.
    pub tool_retry_budget: HashMap<String, u32>,
    /// Pre-select the declared tools for each request with `pick` (seed 004), instead of
    /// declaring every tool.
    pub selection: Option<PickOptions>,
    /// The session id passed to the executor (first-time gates, activity feed).
    pub session: Option<String>,
    /// Prices for the report.
    pub pricing: Option<Pricing>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            system: None,
            max_iterations: 8,
            first_choice: None,
            choice: ToolChoice::Auto,
            parallel: None,
            retry_budget: 1,
            tool_retry_budget: HashMap::new(),
            selection: None,
            session: None,
            pricing: None,
        }
    }
}

/// The agent: a model, an executor (with its tool set) and a configuration.
pub struct Agent {
    model: ChatModel,
    executor: Executor,
    config: AgentConfig,
    events: Option<EventSink>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The mutable state of one run.
struct Progress {
    conversation: Vec<Value>,
    query: String,
    iterations: u32,
    failures: HashMap<String, u32>,
    transcript: Vec<TranscriptEntry>,
    usage: Usage,
    call_costs: Vec<CallCost>,
    correlation_id: String,
}

impl Agent {
    /// An agent over `model` running tools through `executor`.
    pub fn new(model: ChatModel, executor: Executor, config: AgentConfig) -> Self {
        Agent {
            model,
            executor,
            config,
            events: None,
        }
    }

    /// Sends events to `sink` as the run goes.
    pub fn on_event(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// The executor.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The model.
    pub fn model(&self) -> &ChatModel {
        &self.model
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(sink) = &self.events {
            sink(&event);
        }
    }

    /// Runs one user request to its end: an answer, `max_iterations`, or a suspension.
    pub async fn run(&self, question: &str) -> Result<RunReport, AgentError> {
        self.run_with_history(Vec::new(), question).await
    }

    /// Like [`Agent::run`], continuing a conversation (in the provider's format) from earlier
    /// runs: pass the previous report's conversation via [`Agent::conversation_of`].
    pub async fn run_with_history(
        &self,
        history: Vec<Value>,
        question: &str,
    ) -> Result<RunReport, AgentError> {
        let mut conversation = history;
        conversation.push(self.model.user_message(question));
        let mut p = Progress {
            conversation,
            query: question.to_owned(),
            iterations: 0,
            failures: HashMap::new(),
            transcript: vec![TranscriptEntry::User {
                text: question.to_owned(),
            }],
            usage: Usage::default(),
            call_costs: Vec::new(),
            correlation_id: new_correlation_id(),
        };
        self.drive(&mut p).await
    }

    /// The conversation a report ended with (for a follow-up [`Agent::run_with_history`]).
    pub fn conversation_of(state: &RunState) -> Vec<Value> {
        state.conversation.clone()
    }

    /// Continues a suspended run once its pending operations are decided (approved and run, or
    /// denied) by anyone sharing the executor's store. Operations still undecided keep the run
    /// suspended (the report carries the state again).
    pub async fn resume(&self, state: RunState) -> Result<RunReport, AgentError> {
        if state.provider != self.model.provider().as_str() {
            return Err(AgentError::Resume(format!(
                "the run was encoded for {}, this agent speaks {}",
                state.provider,
                self.model.provider()
            )));
        }
        let mut results: Vec<(usize, ToolCall, ToolOutcome)> = state
            .done
            .iter()
            .map(|d| (d.index, d.call.clone(), d.outcome.clone().into()))
            .collect();
        let mut still = Vec::new();
        for pc in &state.pending {
            let op = self
                .executor
                .pending_operation(&pc.operation_id)
                .map_err(AgentError::Store)?
                .ok_or_else(|| {
                    AgentError::Resume(format!("operation {} is not in the store", pc.operation_id))
                })?;
            match op.state {
                PendingState::Completed { outcome } => {
                    let outcome = to_tool_outcome(&outcome).unwrap_or_else(|| {
                        ToolOutcome::Error(ToolError::new(
                            ErrorCode::INTERNAL,
                            "the approved operation ended pending again",
                        ))
                    });
                    results.push((pc.index, pc.call.clone(), outcome));
                }
                PendingState::Denied { reason } => {
                    results.push((
                        pc.index,
                        pc.call.clone(),
                        ToolOutcome::Denied {
                            reason: Some(reason),
                        },
                    ));
                }
                PendingState::Pending | PendingState::Approved { .. } => still.push(pc.clone()),
            }
        }
        let mut p = Progress {
            conversation: state.conversation.clone(),
            query: state.query.clone(),
            iterations: state.iterations,
            failures: state.failures.iter().cloned().collect(),
            transcript: state.transcript.clone(),
            usage: state.usage,
            call_costs: state.call_costs.clone(),
            correlation_id: state.correlation_id.clone(),
        };
        if !still.is_empty() {
            let done = results
                .into_iter()
                .map(|(index, call, outcome)| DoneCall {
                    call,
                    index,
                    outcome: outcome.into(),
                })
                .collect();
            return Ok(self.suspend(p, still, done));
        }
        results.sort_by_key(|(i, _, _)| *i);
        let results: Vec<ToolResult> = results
            .into_iter()
            .map(|(_, call, outcome)| self.finish_call(&mut p, &call, outcome))
            .collect();
        p.conversation.extend(self.model.result_entries(&results));
        self.drive(&mut p).await
    }

    fn tools_for<'a>(&'a self, chosen: &'a [Arc<ToolDefinition>]) -> Vec<&'a ToolDefinition> {
        if self.config.selection.is_some() {
            chosen.iter().map(|d| d.as_ref()).collect()
        } else {
            self.executor.toolset().definitions().collect()
        }
    }

    async fn drive(&self, p: &mut Progress) -> Result<RunReport, AgentError> {
        // Pre-selection is per request (the query is the user's request, so it is picked once
        // per run and reused).
        let chosen: Vec<Arc<ToolDefinition>> = match &self.config.selection {
            Some(opts) => tool_runtime::select::pick(self.executor.toolset(), &p.query, opts)
                .await
                .map_err(AgentError::Selection)?
                .into_iter()
                .map(|c| c.tool)
                .collect(),
            None => Vec::new(),
        };
        let tools = self.tools_for(&chosen);
        while p.iterations < self.config.max_iterations {
            let choice = match (&self.config.first_choice, p.iterations) {
                (Some(first), 0) => first.clone(),
                _ => self.config.choice.clone(),
            };
            let tool_config = ToolConfig {
                choice,
                parallel: self.config.parallel,
            };
            let body = self.model.request(
                self.config.system.as_deref(),
                &p.conversation,
                &tools,
                &tool_config,
            )?;
            let mut on_text = |t: &str| {
                self.emit(AgentEvent::TextDelta { text: t.to_owned() });
            };
            let turn = self.model.complete(&body, &mut on_text).await?;
            p.iterations += 1;
            p.usage += turn.usage;
            let decoded = turn.decoded;
            p.transcript.push(TranscriptEntry::Assistant {
                text: decoded.text.clone(),
                calls: decoded.calls.clone(),
                usage: turn.usage,
            });
            if decoded.calls.is_empty() && turn.unreadable.is_empty() {
                let answer = decoded.text.trim().to_owned();
                self.emit(AgentEvent::FinalAnswer {
                    text: answer.clone(),
                });
                return Ok(self.report(p, RunStatus::Answered, Some(answer)));
            }
            p.conversation
                .extend(self.model.assistant_entries(&decoded));
            self.attribute_costs(p, &decoded.calls, turn.usage);

            let (results, pending) = self.run_calls(p, &decoded.calls).await?;
            if !pending.is_empty() {
                let done = results
                    .into_iter()
                    .map(|(index, call, outcome)| DoneCall {
                        call,
                        index,
                        outcome: outcome.into(),
                    })
                    .collect();
                return Ok(self.suspend_from(p, pending, done));
            }
            let mut results: Vec<ToolResult> = results
                .into_iter()
                .map(|(_, call, outcome)| self.finish_call(p, &call, outcome))
                .collect();
            // Call blocks the fallback could not read go back as errors, so the model retries.
            for (i, err) in turn.unreadable.into_iter().enumerate() {
                let call = ToolCall::new(format!("unreadable-{i}"), "unreadable_call", Value::Null);
                results.push(self.finish_call(p, &call, ToolOutcome::Error(err)));
            }
            p.conversation.extend(self.model.result_entries(&results));
        }
        Ok(self.report(p, RunStatus::MaxIterations, None))
    }

    /// Hydrates and runs one turn's calls: invalid ones become errors for the model (within the
    /// retry budget), valid ones run concurrently through the executor.
    #[allow(clippy::type_complexity)]
    async fn run_calls(
        &self,
        p: &mut Progress,
        calls: &[ToolCall],
    ) -> Result<(Vec<(usize, ToolCall, ToolOutcome)>, Vec<PendingCall>), AgentError> {
        let cx = CallContext {
            correlation_id: p.correlation_id.clone(),
            session: self.config.session.clone(),
            initiator: Initiator::Model,
            ..CallContext::default()
        };
        let mut ready: Vec<(usize, ToolInstance)> = Vec::new();
        let mut invalid: Vec<usize> = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            self.emit(AgentEvent::CallStarted {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: arguments_value(call),
            });
            match hydrate_call(self.executor.toolset(), call) {
                Ok(instance) => ready.push((i, instance)),
                Err(err) => {
                    let failures = p.failures.entry(call.name.clone()).or_insert(0);
                    *failures += 1;
                    let budget = self
                        .config
                        .tool_retry_budget
                        .get(&call.name)
                        .copied()
                        .unwrap_or(self.config.retry_budget);
                    if *failures > budget {
                        return Err(AgentError::RetriesExhausted {
                            tool: call.name.clone(),
                            failures: *failures,
                            budget,
                            last: err,
                        });
                    }
                    invalid.push(i);
                }
            }
        }
        // Invalid calls go through the executor too, so the refusal is audited like any call.
        let invalid_runs = join_all(invalid.iter().map(|&i| {
            let mut cx = cx.clone();
            cx.call_id = calls[i].id.clone();
            self.executor.call(&calls[i], cx)
        }));
        let valid_runs = join_all(ready.into_iter().map(|(i, instance)| {
            let mut cx = cx.clone();
            cx.call_id = calls[i].id.clone();
            async move { (i, self.executor.run(instance, cx).await) }
        }));
        let (invalid_execs, valid_execs) = futures::join!(invalid_runs, valid_runs);
        let mut execs: Vec<(usize, Execution)> = invalid.into_iter().zip(invalid_execs).collect();
        execs.extend(valid_execs);
        execs.sort_by_key(|(i, _)| *i);
        let mut results = Vec::new();
        let mut pending = Vec::new();
        for (i, exec) in execs {
            match &exec.outcome {
                Outcome::Pending { operation_id, .. } => pending.push(PendingCall {
                    call: calls[i].clone(),
                    operation_id: operation_id.clone(),
                    index: i,
                }),
                other => {
                    let outcome = to_tool_outcome(other).expect("not pending");
                    results.push((i, calls[i].clone(), outcome));
                }
            }
        }
        Ok((results, pending))
    }

    fn finish_call(&self, p: &mut Progress, call: &ToolCall, outcome: ToolOutcome) -> ToolResult {
        let status = match &outcome {
            ToolOutcome::Success(_) => Status::Success,
            ToolOutcome::Error(_) => Status::Error,
            ToolOutcome::Denied { .. } => Status::Denied,
        };
        let result = outcome.to_value();
        self.emit(AgentEvent::CallFinished {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status,
            result: result.clone(),
        });
        p.transcript.push(TranscriptEntry::Tool {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status,
            result,
        });
        ToolResult::new(call, outcome)
    }

    fn attribute_costs(&self, p: &mut Progress, calls: &[ToolCall], usage: Usage) {
        if calls.is_empty() {
            return;
        }
        let n = calls.len() as u64;
        for (i, call) in calls.iter().enumerate() {
            // Even shares; the first calls take the remainder so the shares add up exactly.
            let share = |total: u64| total / n + u64::from((i as u64) < total % n);
            let u = Usage {
                input_tokens: share(usage.input_tokens),
                output_tokens: share(usage.output_tokens),
                cached_input_tokens: share(usage.cached_input_tokens),
            };
            p.call_costs.push(CallCost {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                usage: u,
                cost: self.config.pricing.map(|pr| pr.cost(&u)),
            });
        }
    }

    fn suspend_from(
        &self,
        p: &mut Progress,
        pending: Vec<PendingCall>,
        done: Vec<DoneCall>,
    ) -> RunReport {
        let taken = Progress {
            conversation: std::mem::take(&mut p.conversation),
            query: p.query.clone(),
            iterations: p.iterations,
            failures: std::mem::take(&mut p.failures),
            transcript: std::mem::take(&mut p.transcript),
            usage: p.usage,
            call_costs: std::mem::take(&mut p.call_costs),
            correlation_id: p.correlation_id.clone(),
        };
        self.suspend(taken, pending, done)
    }

    fn suspend(&self, p: Progress, pending: Vec<PendingCall>, done: Vec<DoneCall>) -> RunReport {
        let state = RunState {
            provider: self.model.provider().as_str().to_owned(),
            conversation: p.conversation.clone(),
            query: p.query.clone(),
            pending,
            done,
            iterations: p.iterations,
            failures: p.failures.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            transcript: p.transcript.clone(),
            usage: p.usage,
            call_costs: p.call_costs.clone(),
            correlation_id: p.correlation_id.clone(),
        };
        self.emit(AgentEvent::Suspended {
            operations: state.operation_ids(),
        });
        self.report(
            &p,
            RunStatus::Suspended {
                state: Box::new(state),
            },
            None,
        )
    }

    fn report(&self, p: &Progress, status: RunStatus, answer: Option<String>) -> RunReport {
        let mut audit = self
            .executor
            .activity(&tool_runtime::executor::ActivityQuery {
                correlation_id: Some(p.correlation_id.clone()),
                limit: Some(10_000),
                ..Default::default()
            })
            .unwrap_or_default();
        audit.reverse();
        RunReport {
            status,
            answer,
            transcript: p.transcript.clone(),
            audit,
            usage: p.usage,
            cost: self.config.pricing.map(|pr| pr.cost(&p.usage)),
            call_costs: p.call_costs.clone(),
            iterations: p.iterations,
            correlation_id: p.correlation_id.clone(),
        }
    }
}

/// The model-facing outcome of an executor outcome; `None` for a pending one.
fn to_tool_outcome(outcome: &Outcome) -> Option<ToolOutcome> {
    Some(match outcome {
        Outcome::Success { value, .. } => ToolOutcome::Success(value.clone()),
        Outcome::Error { error } => ToolOutcome::Error(error.clone()),
        Outcome::Denied { reason, .. } => ToolOutcome::Denied {
            reason: Some(reason.clone()),
        },
        Outcome::Pending { .. } => return None,
    })
}

fn arguments_value(call: &ToolCall) -> Value {
    match &call.arguments {
        tool_runtime::Arguments::Json(v) => v.clone(),
        tool_runtime::Arguments::Text(t) => {
            serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone()))
        }
    }
}

fn new_correlation_id() -> String {
    format!("run-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}
