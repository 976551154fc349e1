//! The multi-turn agent loop over any provider.
//!
//! ```text
//! run(question)
//!   loop (at most max_iterations model requests)
//!     declarations: every tool, or the ones `pick` selects before this request (from the
//!                   index built once with the agent)
//!     model.complete ─▶ text + calls (native, or parsed from text by the fallback; a server
//!                       refusing native tools switches the run to the fallback if allowed)
//!     no calls ─▶ final answer
//!     each call: hydrate ─▶ invalid: optionally one LLM-assisted repair, hydrated again;
//!                                   still invalid: back to the model with pointer +
//!                                   recover_action (a per-tool retry budget bounds this)
//!                         └▶ valid: the turn runs as one executor batch (policy,
//!                                   confirmation, timeout, audit), concurrently up to the
//!                                   executor's `max_concurrency`, results in the calls' order
//!     any pending operation ─▶ suspend: a serializable RunState, resumed after approval
//!     results (success, error, denial) ─▶ conversation
//! ```
//!
//! A [`ChatModel`] is also a [`tool_runtime::select::RelevanceClassifier`], so the LLM-classifier
//! scorer ([`tool_runtime::select::LlmScorer`]) can rank tools with any provider's model.
//!
//! A run that fails partway (the provider unreachable after its retries, an undecodable answer,
//! the retry budget spent) returns [`AgentError::Interrupted`] with what it did so far.
//!
//! The agent never approves anything: confirmations come from the executor's handler or from
//! [`tool_runtime::executor::Executor::approve`] on a person's behalf.

mod calls;
mod checkpoint;
mod classify;
mod events;
mod model;
mod repair;
mod report;
mod spans;
mod store;

use calls::to_tool_outcome;
use model::refuses_tools;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tool_runtime::executor::Executor;
use tool_runtime::host::Host;
use tool_runtime::progress::Reporter;
use tool_runtime::select::{Catalog, PickOptions};
use tool_runtime::store::PendingState;
use tool_runtime::{ErrorCode, ToolCall, ToolError, definition::ToolDefinition, id::SharedId};

pub use checkpoint::{
    CHECKPOINT_VERSION, CHECKPOINT_VERSION_MISMATCH, Checkpoint, CheckpointStatus, Checkpoints,
    IssuedTurn, OUTCOME_UNKNOWN,
};
pub use events::{AgentEvent, ConfirmWithEvents, EventSink};
pub use model::{ChatModel, ToolMode, Turn};
pub use report::{
    CallCost, DoneCall, PartialRun, PendingCall, Pricing, RepairRecord, RunReport, RunState,
    RunStatus, SavedOutcome, TranscriptEntry,
};

use crate::codec::{CodecError, ToolChoice, ToolConfig, ToolOutcome, ToolResult};
use crate::http::{HttpError, HttpErrorKind, Usage};

/// Why a run stopped without a report.
///
/// A failure once the run has started comes as [`AgentError::Interrupted`], wrapping the cause
/// (one of the other variants) with what the run did so far; [`AgentError::cause`] and
/// [`AgentError::partial`] read it.
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
    /// The executor's store failed while resuming or checkpointing.
    #[error("the store failed: {0}")]
    Store(ToolError),
    /// Another worker claimed the run while this one drove it (this one's lease expired): this
    /// one stopped, and wrote nothing more.
    #[error("the run {0:?} was claimed by another worker; this one stopped driving it")]
    LeaseLost(String),
    /// Another worker holds the run's lease: it is being driven elsewhere.
    #[error("the run {run_id:?} is being driven by {worker:?}")]
    Claimed {
        /// The run.
        run_id: String,
        /// The worker holding its lease.
        worker: String,
    },
    /// The stored checkpoint cannot be read by this build (another format version, or not a
    /// checkpoint).
    #[error("cannot resume: {0}")]
    Checkpoint(ToolError),
    /// The run failed partway: `error` is why, `partial` what it did before (transcript, audit
    /// records, usage, costs, and a state to resume from).
    #[error(
        "{error} (the run stopped after {} model requests; the partial report is kept)",
        partial.state.iterations
    )]
    Interrupted {
        /// Why the run stopped.
        error: Box<AgentError>,
        /// What it did before.
        partial: Box<PartialRun>,
    },
}

impl AgentError {
    /// The underlying failure, unwrapping [`AgentError::Interrupted`].
    pub fn cause(&self) -> &AgentError {
        match self {
            AgentError::Interrupted { error, .. } => error.cause(),
            other => other,
        }
    }

    /// What the run did before it failed, when it had started.
    pub fn partial(&self) -> Option<&PartialRun> {
        match self {
            AgentError::Interrupted { partial, .. } => Some(partial),
            _ => None,
        }
    }
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
    /// Pre-select the declared tools for each request with `pick`, instead of
    /// declaring every tool. The index is built once, with the agent; the pick runs before every
    /// model request, on the user's request plus the model's latest text, and the tools the run
    /// already called stay declared.
    pub selection: Option<PickOptions>,
    /// The session id passed to the executor (first-time gates, activity feed).
    pub session: Option<String>,
    /// Prices for the report.
    pub pricing: Option<Pricing>,
    /// Ask the model once to correct a call's invalid arguments, and validate its answer again,
    /// before the error goes back. The repair is a separate
    /// request without tools, holding the tool's schema, the arguments sent and the structured
    /// errors; its answer is hydrated again like any call. Repaired calls run and count no
    /// failure against the retry budget; a repair that is still invalid leaves the original
    /// error to go back to the model. Every attempt is on the report (`repairs`). Off by default:
    /// it costs a request per invalid call.
    pub repair: bool,
    /// Switch the run to the prompt-based fallback ([`ToolMode::Prompt`]) when the server
    /// refuses a request because of its native tool declarations (a model or server without
    /// function calling), and send that request again. Off by default.
    pub prompt_fallback: bool,
    /// The most calls of one model response that run (default [`MAX_CALLS_PER_TURN`]). The
    /// rest are not hydrated or run: each gets a [`TOO_MANY_CALLS`] error as its result, so the
    /// conversation stays valid and the model can send them again next turn.
    pub max_calls_per_turn: usize,
}

/// The default limit on calls run from one model response: 128, the most tools OpenAI accepts in
/// one request, so a well-behaved model never reaches it.
pub const MAX_CALLS_PER_TURN: usize = 128;

/// The code of a call refused because its response held more calls than
/// [`AgentConfig::max_calls_per_turn`].
pub const TOO_MANY_CALLS: ErrorCode = ErrorCode::of("TOO_MANY_CALLS");

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
            repair: false,
            prompt_fallback: false,
            max_calls_per_turn: MAX_CALLS_PER_TURN,
        }
    }
}

/// The agent: a model, an executor (with its tool set) and a configuration.
pub struct Agent {
    model: ChatModel,
    executor: Executor,
    config: AgentConfig,
    events: Option<EventSink>,
    /// The selection index when `config.selection` is set, with the generation of the executor's
    /// tools it holds ([`Executor::tools_changed`]): brought in step before a pick when the tools
    /// changed since.
    catalog: Option<Mutex<Indexed>>,
    /// Where runs are checkpointed, when they are.
    checkpoints: Option<checkpoint::Checkpoints>,
    /// The person's side of the calls: where a tool's questions go.
    host: Option<Host>,
    /// Where the calls' progress goes besides the run's events.
    progress: Option<Reporter>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// An agent's selection index and the generation of the executor's tools it was brought in
/// step with.
struct Indexed {
    generation: u64,
    catalog: Arc<Catalog>,
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
    repairs: Vec<RepairRecord>,
    mode: ToolMode,
    correlation_id: SharedId,
    /// The run's own session, when it has one (else the agent's).
    session: Option<String>,
}

impl Progress {
    /// The progress a state continues from.
    fn from_state(state: &RunState) -> Self {
        Progress {
            conversation: state.conversation.clone(),
            query: state.query.clone(),
            iterations: state.iterations,
            failures: state.failures.iter().cloned().collect(),
            transcript: state.transcript.clone(),
            usage: state.usage,
            call_costs: state.call_costs.clone(),
            repairs: state.repairs.clone(),
            mode: state.tool_mode,
            correlation_id: state.correlation_id.as_str().into(),
            session: state.session.clone(),
        }
    }

    /// The state to store or resume from (everything but the turn-specific pending and done
    /// calls, which the caller adds).
    fn state(&self, provider: &str) -> RunState {
        RunState {
            provider: provider.to_owned(),
            conversation: self.conversation.clone(),
            query: self.query.clone(),
            pending: Vec::new(),
            done: Vec::new(),
            iterations: self.iterations,
            failures: self.failures.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            transcript: self.transcript.clone(),
            usage: self.usage,
            call_costs: self.call_costs.clone(),
            repairs: self.repairs.clone(),
            tool_mode: self.mode,
            correlation_id: self.correlation_id.to_string(),
            session: self.session.clone(),
        }
    }
}

impl Agent {
    /// An agent over `model` running tools through `executor`. With `config.selection`, the
    /// executor's tools are indexed here for the pick before each request; tools added to or
    /// removed from the executor later ([`Executor::update_tools`]) are indexed or unindexed
    /// before the next pick.
    pub fn new(model: ChatModel, executor: Executor, config: AgentConfig) -> Self {
        let catalog = config.selection.as_ref().map(|_| {
            // the generation first: a change that lands meanwhile is taken in at the next pick
            let generation = *executor.tools_changed().borrow();
            Mutex::new(Indexed {
                generation,
                catalog: Arc::new(Catalog::from_toolset(&executor.toolset())),
            })
        });
        Agent {
            model,
            executor,
            config,
            events: None,
            catalog,
            checkpoints: None,
            host: None,
            progress: None,
        }
    }

    /// The selection index (present when `config.selection` is set), in step with the
    /// executor's tools as they are now. The same index is answered until the tools change.
    pub fn catalog(&self) -> Option<Arc<Catalog>> {
        let indexed = self.catalog.as_ref()?;
        let generation = *self.executor.tools_changed().borrow();
        let mut indexed = indexed.lock().unwrap_or_else(PoisonError::into_inner);
        if indexed.generation != generation {
            // a pick still running keeps the index it started with
            Arc::make_mut(&mut indexed.catalog).sync(&self.executor.toolset());
            indexed.generation = generation;
        }
        Some(indexed.catalog.clone())
    }

    /// Sends events to `sink` as the run goes.
    pub fn on_event(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// The person's side of this agent's calls: a tool's questions
    /// ([`CallContext::ask`](tool_runtime::CallContext::ask)) go to `host`, answered by the
    /// person and never by the model. Without one, a call asks its executor's confirmer's
    /// host, if any (the terminal's, say), else the tool is told that asking is not supported.
    pub fn with_host(mut self, host: Host) -> Self {
        self.host = Some(host);
        self
    }

    /// The host this agent's calls ask, when it was given one ([`Agent::with_host`]).
    pub fn host(&self) -> Option<&Host> {
        self.host.as_ref()
    }

    /// Also sends this agent's calls' progress to `reporter`, which also hears when each call
    /// starts and stops running ([`ProgressSink::call_started`]): for a page that shows the
    /// calls running now. The run's events carry the progress either way. Several reporters
    /// each get everything.
    ///
    /// [`ProgressSink::call_started`]: tool_runtime::progress::ProgressSink::call_started
    pub fn with_progress(mut self, reporter: Reporter) -> Self {
        self.progress = Some(match self.progress.take() {
            Some(before) => before.also(reporter),
            None => reporter,
        });
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
        let _ = events::RUN_EVENTS.try_with(|sink| sink(&event));
    }

    /// [`Agent::run_with_history`], with this run's events also sent to `sink` (besides the
    /// agent's own sink): for a server that streams each request's events to its own client
    /// while sharing one agent.
    pub async fn run_observed(
        &self,
        history: Vec<Value>,
        question: &str,
        sink: EventSink,
    ) -> Result<RunReport, AgentError> {
        events::RUN_EVENTS
            .scope(sink, self.run_with_history(history, question))
            .await
    }

    /// [`Agent::resume`], with this run's events also sent to `sink`.
    pub async fn resume_observed(
        &self,
        state: RunState,
        sink: EventSink,
    ) -> Result<RunReport, AgentError> {
        events::RUN_EVENTS.scope(sink, self.resume(state)).await
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
        self.start(history, question, None).await
    }

    /// Like [`Agent::run_with_history`], with the run's calls in `session` instead of the
    /// agent's (first-time gates, the activity feed, and the run as the store lists it): for a
    /// server whose one agent holds many people's conversations. The session stays the run's
    /// when it is resumed.
    pub async fn run_in_session(
        &self,
        history: Vec<Value>,
        question: &str,
        session: &str,
    ) -> Result<RunReport, AgentError> {
        self.start(history, question, Some(session.to_owned()))
            .await
    }

    /// [`Agent::run_in_session`], with this run's events also sent to `sink`.
    pub async fn run_in_session_observed(
        &self,
        history: Vec<Value>,
        question: &str,
        session: &str,
        sink: EventSink,
    ) -> Result<RunReport, AgentError> {
        events::RUN_EVENTS
            .scope(sink, self.run_in_session(history, question, session))
            .await
    }

    /// The session a run's calls run in: its own, else the agent's.
    fn session_of(&self, p: &Progress) -> Option<String> {
        p.session.clone().or_else(|| self.config.session.clone())
    }

    async fn start(
        &self,
        history: Vec<Value>,
        question: &str,
        session: Option<String>,
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
            repairs: Vec::new(),
            mode: self.model.mode(),
            correlation_id: new_correlation_id().into(),
            session,
        };
        self.checkpoint(&p, CheckpointStatus::Running, None, None, None, None)
            .await?;
        let _lease = self.keep_lease(&p.correlation_id);
        let result = self.drive_traced(&mut p).await;
        let result = self.keep_partial(&p, result).await;
        self.end_checkpoint(&p, result).await
    }

    /// Wraps a failure of a started run with what it did so far.
    async fn keep_partial(
        &self,
        p: &Progress,
        result: Result<RunReport, AgentError>,
    ) -> Result<RunReport, AgentError> {
        let error = match result {
            Ok(report) => return Ok(report),
            Err(error) => error,
        };
        Err(AgentError::Interrupted {
            partial: Box::new(PartialRun {
                state: p.state(self.model.provider().as_str()),
                audit: self.audit_of(&p.correlation_id).await,
                cost: self.config.pricing.map(|pr| pr.cost(&p.usage)),
            }),
            error: Box::new(error),
        })
    }

    /// The conversation a report ended with (for a follow-up [`Agent::run_with_history`]).
    pub fn conversation_of(state: &RunState) -> Vec<Value> {
        state.conversation.clone()
    }

    /// Continues a suspended run once its pending operations are decided (approved and run, or
    /// denied) by anyone sharing the executor's store. Operations still undecided keep the run
    /// suspended (the report carries the state again). With checkpoints, the run's lease is
    /// claimed first (refused while another worker holds it).
    pub async fn resume(&self, state: RunState) -> Result<RunReport, AgentError> {
        if let Some(cp) = &self.checkpoints {
            let (worker, ttl, id) = (cp.worker.clone(), cp.lease, state.correlation_id.clone());
            let held = self
                .off_runtime(move |executor| {
                    let store = executor.store();
                    match store.claim_run(&id, &worker, ttl)? {
                        Some(_) => Ok(None),
                        None => Ok(store.get_run(&id)?.and_then(|r| r.lease)),
                    }
                })
                .await
                .ok_or_else(|| AgentError::Resume("the store query was cancelled".into()))?
                .map_err(|e: tool_runtime::store::StoreError| AgentError::Store(e.into()))?;
            if let Some(lease) = held {
                return Err(AgentError::Claimed {
                    run_id: state.correlation_id.clone(),
                    worker: lease.owner,
                });
            }
        }
        self.resume_claimed(state).await
    }

    /// [`Agent::resume`] of a run whose lease this worker holds (or that has none).
    async fn resume_claimed(&self, state: RunState) -> Result<RunReport, AgentError> {
        let _lease = self.keep_lease(&state.correlation_id);
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
            let id = pc.operation_id.clone();
            let op = self
                .off_runtime(move |executor| executor.pending_operation(&id))
                .await
                .ok_or_else(|| AgentError::Resume("the store query was cancelled".into()))?
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
        let mut p = Progress::from_state(&state);
        if !still.is_empty() {
            let done = results
                .into_iter()
                .map(|(index, call, outcome)| DoneCall {
                    call,
                    index,
                    outcome: outcome.into(),
                })
                .collect();
            return self.suspend(&p, still, done).await;
        }
        results.sort_by_key(|(i, _, _)| *i);
        let results: Vec<ToolResult> = results
            .into_iter()
            .map(|(_, call, outcome)| self.finish_call(&mut p, &call, outcome))
            .collect();
        // Empty after an interruption: the failed request is simply sent again.
        p.conversation
            .extend(self.model.result_entries_in(p.mode, &results));
        self.checkpoint(&p, CheckpointStatus::Running, None, None, None, None)
            .await?;
        let result = self.drive_traced(&mut p).await;
        let result = self.keep_partial(&p, result).await;
        self.end_checkpoint(&p, result).await
    }

    /// The tools to declare on the next request: every tool, or with pre-selection the ones the
    /// catalog picks for the request as it now stands, plus the tools the run already called
    /// (the conversation refers to them) and the ones the tool choice names.
    async fn declarations(
        &self,
        p: &Progress,
        choice: &ToolChoice,
    ) -> Result<Vec<Arc<ToolDefinition>>, AgentError> {
        let (Some(opts), Some(catalog)) = (&self.config.selection, self.catalog()) else {
            return Ok(Vec::new());
        };
        let query = selection_query(p);
        let mut chosen: Vec<Arc<ToolDefinition>> = catalog
            .pick(&query, opts)
            .await
            .map_err(AgentError::Selection)?
            .into_iter()
            .map(|c| c.tool)
            .collect();
        let mut keep: Vec<&str> = Vec::new();
        for entry in &p.transcript {
            if let TranscriptEntry::Assistant { calls, .. } = entry {
                keep.extend(calls.iter().map(|c| c.name.as_str()));
            }
        }
        match choice {
            ToolChoice::Named(n) => keep.push(n),
            ToolChoice::Allowed { tools, .. } => keep.extend(tools.iter().map(String::as_str)),
            _ => {}
        }
        for name in keep {
            if !chosen.iter().any(|d| d.name == name)
                && let Some(def) = catalog.get(name)
            {
                chosen.push(def.clone());
            }
        }
        self.emit(AgentEvent::ToolsSelected {
            query,
            tools: chosen.iter().map(|d| d.name.to_string()).collect(),
        });
        Ok(chosen)
    }

    async fn drive(&self, p: &mut Progress) -> Result<RunReport, AgentError> {
        while p.iterations < self.config.max_iterations {
            let choice = match (&self.config.first_choice, p.iterations) {
                (Some(first), 0) => first.clone(),
                _ => self.config.choice.clone(),
            };
            // Picked again before every request, from the agent's index of the tools as they are.
            let chosen = self.declarations(p, &choice).await?;
            // the set as it is for this turn: tools added meanwhile are offered from the next
            let toolset = self.executor.toolset();
            let tools: Vec<&ToolDefinition> = if self.catalog.is_some() {
                chosen.iter().map(|d| d.as_ref()).collect()
            } else {
                toolset.definitions().collect()
            };
            let tool_config = ToolConfig {
                choice,
                parallel: self.config.parallel,
            };
            let turn = self.ask(p, &tools, &tool_config).await?;
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
                return Ok(self.report(p, RunStatus::Answered, Some(answer)).await);
            }
            let before = p.conversation.len();
            p.conversation
                .extend(self.model.assistant_entries_in(p.mode, &decoded));
            self.attribute_costs(p, &decoded.calls, turn.usage);
            // before any call runs: a resume finds each one's fate in the store, never runs one twice
            let issued = IssuedTurn {
                calls: decoded.calls.clone(),
                issued_ms: checkpoint_clock(),
            };
            self.checkpoint(p, CheckpointStatus::Running, None, Some(issued), None, None)
                .await?;

            let (results, pending) = match self.run_calls(p, &decoded.calls).await {
                Ok(r) => r,
                Err(e) => {
                    // The turn's calls get no results: the conversation (kept for a resume)
                    // ends before it, so a provider never sees calls without their results.
                    p.conversation.truncate(before);
                    return Err(e);
                }
            };
            if !pending.is_empty() {
                let done = results
                    .into_iter()
                    .map(|(index, call, outcome)| DoneCall {
                        call,
                        index,
                        outcome: outcome.into(),
                    })
                    .collect();
                return self.suspend(p, pending, done).await;
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
            p.conversation
                .extend(self.model.result_entries_in(p.mode, &results));
            self.checkpoint(p, CheckpointStatus::Running, None, None, None, None)
                .await?;
        }
        Ok(self.report(p, RunStatus::MaxIterations, None).await)
    }

    /// One model request in the run's tool mode. With `prompt_fallback`, a server that refuses
    /// the native declarations switches the run to the prompt-based fallback and is asked again.
    async fn ask(
        &self,
        p: &mut Progress,
        tools: &[&ToolDefinition],
        tool_config: &ToolConfig,
    ) -> Result<Turn, AgentError> {
        let mut restarts = 0u32;
        loop {
            let body = self.model.request_in(
                p.mode,
                self.config.system.as_deref(),
                &p.conversation,
                tools,
                tool_config,
            )?;
            let mut on_text = |t: &str| {
                self.emit(AgentEvent::TextDelta { text: t.to_owned() });
            };
            match self.model.complete_in(p.mode, &body, &mut on_text).await {
                Err(AgentError::Http(e))
                    if self.config.prompt_fallback
                        && p.mode == ToolMode::Native
                        && !tools.is_empty()
                        && refuses_tools(&e) =>
                {
                    tracing::warn!(error = %e, "native tools refused; using the prompt-based fallback");
                    self.emit(AgentEvent::ToolModeChanged {
                        mode: ToolMode::Prompt,
                        reason: e.to_string(),
                    });
                    p.mode = ToolMode::Prompt;
                }
                // A stream cut off mid-answer: the client only resends before the first byte,
                // but a model request changes nothing, so the turn is asked again (within the
                // client's retry count) and a UI is told to drop the text it showed.
                Err(AgentError::Http(e))
                    if e.kind == HttpErrorKind::Disconnected
                        && restarts < self.model.retry_policy().max_retries =>
                {
                    restarts += 1;
                    tracing::warn!(error = %e, restarts, "the answer broke off; asking again");
                    self.emit(AgentEvent::AnswerRestarted {
                        reason: e.to_string(),
                    });
                }
                other => return other,
            }
        }
    }

    /// Ends the run's current part: its state, with the turn's pending and finished calls, in a
    /// suspended report.
    async fn suspend(
        &self,
        p: &Progress,
        pending: Vec<PendingCall>,
        done: Vec<DoneCall>,
    ) -> Result<RunReport, AgentError> {
        let mut state = p.state(self.model.provider().as_str());
        state.pending = pending;
        state.done = done;
        self.checkpoint(
            p,
            CheckpointStatus::Suspended,
            Some(&state),
            None,
            None,
            None,
        )
        .await?;
        self.emit(AgentEvent::Suspended {
            operations: state.operation_ids(),
        });
        Ok(self
            .report(
                p,
                RunStatus::Suspended {
                    state: Box::new(state),
                },
                None,
            )
            .await)
    }
}

/// What the pick before a request looks for: the user's request, and the model's latest text
/// (what it said it would do next), when there is one.
fn selection_query(p: &Progress) -> String {
    let latest = p.transcript.iter().rev().find_map(|e| match e {
        TranscriptEntry::Assistant { text, .. } => Some(text.trim()),
        TranscriptEntry::User { .. } => Some(""),
        TranscriptEntry::Tool { .. } => None,
    });
    match latest {
        Some(text) if !text.is_empty() => format!("{}\n{text}", p.query),
        _ => p.query.clone(),
    }
}

/// Milliseconds since the epoch, for an issued turn: audit records of the turn's calls are
/// stamped on this clock at or after it.
fn checkpoint_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn new_correlation_id() -> String {
    format!("run-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}
