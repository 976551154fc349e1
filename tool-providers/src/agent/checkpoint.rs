//! Runs as data: a run checkpointed in the executor's store after every step, resumed by any
//! process with the same tools and store, driven by one worker at a time.
//!
//! The checkpoint ([`Checkpoint`], JSON, format version [`CHECKPOINT_VERSION`]) holds the
//! conversation so far in the provider's format, the model's turn whose calls were issued
//! (`turn`), the calls waiting for a person and the results already known (`state.pending`,
//! `state.done`), the counters (iterations, tokens, invalid-argument failures, costs) and the
//! run's correlation and session ids. It is written when the run starts, when a model turn
//! issues calls (before any of them runs), when the turn's results are in the conversation, when
//! the run suspends and when it ends. A checkpoint of another version is refused with an error
//! naming both versions, never read as this one.
//!
//! Resuming ([`Agent::resume_run`]) is a function of the checkpoint and the store: the calls of
//! an issued turn that reached the executor are not run again. A call that was parked takes the
//! outcome of its operation (approved and run once by the executor, or denied); a call the
//! audit trail records as finished takes the result recorded there (its summary). For a call
//! with neither record, the executor's start mark decides
//! ([`CallStart`](tool_runtime::store::CallStart): the agent's calls ask for one, written
//! before the body of a tool that changes something runs). Without a mark the body never ran,
//! and the call runs now. With one, the call ran, fully or partly, and its worker was killed
//! before the record was written: a read-only or idempotent call runs again, and any other is
//! given the error [`OUTCOME_UNKNOWN`] (the model is told to check before repeating it). So a
//! call that changes something runs exactly once when its process survives it, and at most
//! once when it does not.
//!
//! A worker holds the run's lease in the store while it drives it, renewed as it goes; a run
//! that waits for a person holds none. A worker that dies leaves its lease to expire, and then
//! any process may claim the run.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tool_runtime::executor::{ActivityQuery, Status};
use tool_runtime::store::{Store, StoredRun};
use tool_runtime::{ErrorCode, ToolCall, ToolError};

use super::report::{DoneCall, PendingCall, RunReport, RunState, RunStatus, SavedOutcome};
use super::{Agent, AgentError, Progress};

/// The error a resumed run gives a call that started before its worker stopped and left no
/// record of its outcome: it is not run again (see [`Agent::resume_run`]).
pub const OUTCOME_UNKNOWN: ErrorCode = ErrorCode::of("OUTCOME_UNKNOWN");

/// The checkpoint format this build writes and reads.
pub const CHECKPOINT_VERSION: u32 = 1;

/// Where a checkpointed run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// A worker drives it (or did, until its lease expired).
    Running,
    /// Calls wait for a person; nobody drives it until they are decided.
    Suspended,
    /// The model answered.
    Answered,
    /// `max_iterations` model requests were made without an answer.
    MaxIterations,
    /// It stopped on an error (`error`); resuming sends the failed request again.
    Failed,
    /// Cancelled through the API; never resumed.
    Cancelled,
}

impl CheckpointStatus {
    /// Its name, as the store indexes it.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointStatus::Running => "running",
            CheckpointStatus::Suspended => "suspended",
            CheckpointStatus::Answered => "answered",
            CheckpointStatus::MaxIterations => "max_iterations",
            CheckpointStatus::Failed => "failed",
            CheckpointStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the run is over for good (answered, out of iterations, cancelled).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            CheckpointStatus::Answered
                | CheckpointStatus::MaxIterations
                | CheckpointStatus::Cancelled
        )
    }
}

/// A model turn whose calls were issued: the conversation already holds the turn, and each call
/// gets its result from `state.done`, a pending operation, the audit trail or, having none,
/// by running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssuedTurn {
    /// The calls the turn issued, in order.
    pub calls: Vec<ToolCall>,
    /// When they were issued (ms since the epoch): audit records from before are another
    /// turn's.
    pub issued_ms: u64,
}

/// One run as data (format [`CHECKPOINT_VERSION`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The format's version.
    pub version: u32,
    /// The run's id: its correlation id.
    pub run_id: String,
    /// Where it stands.
    pub status: CheckpointStatus,
    /// The session its calls run in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The conversation, counters and ids; with the calls waiting for a person and the results
    /// of the same turn already known.
    pub state: RunState,
    /// The turn whose calls were issued and whose results are not all in `state` yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<IssuedTurn>,
    /// The final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why the run failed or was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

/// The code of a checkpoint this build cannot read.
pub const CHECKPOINT_VERSION_MISMATCH: ErrorCode = ErrorCode::of("CHECKPOINT_VERSION");

impl Checkpoint {
    /// The checkpoint as stored.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a checkpoint always serializes")
    }

    /// Reads a stored checkpoint: refused, with both versions named, when it was written in
    /// another format version, and when it is not a checkpoint.
    pub fn from_json(text: &str) -> Result<Self, ToolError> {
        #[derive(Deserialize)]
        struct Version {
            version: Option<u32>,
        }
        let unreadable = |e: serde_json::Error| {
            ToolError::new(
                ErrorCode::INTERNAL,
                format!("the stored run is not a readable checkpoint: {e}"),
            )
        };
        let v: Version = serde_json::from_str(text).map_err(unreadable)?;
        match v.version {
            Some(CHECKPOINT_VERSION) => serde_json::from_str(text).map_err(unreadable),
            other => Err(ToolError::new(
                CHECKPOINT_VERSION_MISMATCH,
                format!(
                    "the stored run is a checkpoint of format version {}, and this build reads \
                     version {CHECKPOINT_VERSION}; it was not read",
                    other.map_or_else(|| "(none)".to_owned(), |v| v.to_string())
                ),
            )
            .recover("resume it with the version of the program that wrote it")),
        }
    }
}

/// How an agent keeps its runs in the executor's store ([`Agent::with_checkpoints`]).
#[derive(Debug, Clone)]
pub struct Checkpoints {
    /// This worker's name in leases: unique per process.
    pub worker: String,
    /// How long a lease lasts without renewal (default 30 s): a dead worker's runs are
    /// claimable this long after it stopped.
    pub lease: Duration,
}

impl Checkpoints {
    /// Checkpoints under a fresh worker name and a 30 s lease.
    pub fn new() -> Self {
        Checkpoints {
            worker: format!("worker-{}-{:08x}", std::process::id(), fastrand::u32(..)),
            lease: Duration::from_secs(30),
        }
    }

    /// With this lease length.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }
}

impl Default for Checkpoints {
    fn default() -> Self {
        Self::new()
    }
}

/// Renews a run's lease while a step runs (a model request may take longer than the lease);
/// stops when dropped.
pub(super) struct LeaseKeeper(Option<tokio::task::JoinHandle<()>>);

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Runs `f` on the store, on the blocking pool when it blocks.
async fn on_store<T: Send + 'static>(
    store: &Arc<dyn Store>,
    f: impl FnOnce(&dyn Store) -> Result<T, tool_runtime::store::StoreError> + Send + 'static,
) -> Result<T, AgentError> {
    let store = store.clone();
    let result = if store.blocks() {
        tokio::task::spawn_blocking(move || f(store.as_ref()))
            .await
            .map_err(|e| AgentError::Store(ToolError::new(ErrorCode::INTERNAL, e.to_string())))?
    } else {
        f(store.as_ref())
    };
    result.map_err(|e| AgentError::Store(e.into()))
}

impl Agent {
    /// Keeps this agent's runs in the executor's store: checkpointed after every step, driven
    /// under a lease, resumable by id with [`Agent::resume_run`] from any process with the same
    /// tools and store.
    pub fn with_checkpoints(mut self, checkpoints: Checkpoints) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }

    /// The checkpoint settings, when runs are kept.
    pub fn checkpoints(&self) -> Option<&Checkpoints> {
        self.checkpoints.as_ref()
    }

    /// Writes the run's checkpoint under this worker's lease; a final or suspended one also
    /// gives the lease up. Refused ([`AgentError::LeaseLost`]) when another worker claimed the
    /// run since.
    pub(super) async fn checkpoint(
        &self,
        p: &Progress,
        status: CheckpointStatus,
        state: Option<&RunState>,
        turn: Option<IssuedTurn>,
        answer: Option<String>,
        error: Option<ToolError>,
    ) -> Result<(), AgentError> {
        let Some(cp) = &self.checkpoints else {
            return Ok(());
        };
        let state = match state {
            Some(s) => s.clone(),
            None => p.state(self.model.provider().as_str()),
        };
        let checkpoint = Checkpoint {
            version: CHECKPOINT_VERSION,
            run_id: p.correlation_id.to_string(),
            status,
            session: state
                .session
                .clone()
                .or_else(|| self.config.session.clone()),
            state,
            turn,
            answer,
            error,
        };
        let now = now_ms();
        let run = StoredRun {
            id: checkpoint.run_id.clone(),
            status: status.as_str().to_owned(),
            session: checkpoint.session.clone(),
            created_ms: now,
            updated_ms: now,
            checkpoint: checkpoint.to_json(),
            lease: None,
        };
        let (worker, ttl) = (cp.worker.clone(), cp.lease);
        let final_ = status.is_final();
        let release = final_
            || matches!(
                status,
                CheckpointStatus::Suspended | CheckpointStatus::Failed
            );
        let id = run.id.clone();
        let saved = on_store(self.executor.store(), move |s| {
            let saved = s.save_run(&run, &worker, ttl)?;
            if saved && release {
                s.release_run(&id, &worker)?;
            }
            if saved && final_ {
                // nothing resumes it now; a store that keeps no starts has none to forget
                let _ = s.forget_starts(&id);
            }
            Ok(saved)
        })
        .await?;
        if saved {
            Ok(())
        } else {
            Err(AgentError::LeaseLost(checkpoint.run_id))
        }
    }

    /// Renews the lease of run `id` every third of its length until dropped.
    pub(super) fn keep_lease(&self, id: &str) -> LeaseKeeper {
        let Some(cp) = self.checkpoints.clone() else {
            return LeaseKeeper(None);
        };
        let (store, id) = (self.executor.store().clone(), id.to_owned());
        let every = (cp.lease / 3).max(Duration::from_millis(10));
        LeaseKeeper(Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let (worker, id) = (cp.worker.clone(), id.clone());
                let kept = on_store(&store, move |s| s.claim_run(&id, &worker, cp.lease)).await;
                if !matches!(kept, Ok(Some(_))) {
                    // the next checkpoint says so: its write is refused
                    return;
                }
            }
        })))
    }

    /// Continues the stored run `run_id` in this process: claims its lease (refused while
    /// another worker holds it), reads its checkpoint and goes on from there. A suspended run
    /// whose calls are still undecided suspends again; an issued turn's calls that reached the
    /// executor are not run again (see the module docs). Needs [`Agent::with_checkpoints`].
    pub async fn resume_run(&self, run_id: &str) -> Result<RunReport, AgentError> {
        let Some(cp) = &self.checkpoints else {
            return Err(AgentError::Resume(
                "this agent keeps no runs; build it with Agent::with_checkpoints".into(),
            ));
        };
        let (worker, ttl, id) = (cp.worker.clone(), cp.lease, run_id.to_owned());
        let claimed = on_store(self.executor.store(), move |s| {
            Ok(match s.claim_run(&id, &worker, ttl)? {
                Some(run) => Ok(run),
                None => Err(s.get_run(&id)?),
            })
        })
        .await?;
        let stored = match claimed {
            Ok(run) => run,
            Err(None) => return Err(AgentError::Resume(format!("there is no run {run_id:?}"))),
            Err(Some(run)) => {
                let holder = run.lease.map(|l| l.owner).unwrap_or_default();
                return Err(AgentError::Claimed {
                    run_id: run_id.to_owned(),
                    worker: holder,
                });
            }
        };
        let checkpoint = match Checkpoint::from_json(&stored.checkpoint) {
            Ok(c) => c,
            Err(e) => {
                self.release(run_id).await;
                return Err(AgentError::Checkpoint(e));
            }
        };
        if checkpoint.status.is_final() {
            self.release(run_id).await;
            return Err(AgentError::Resume(format!(
                "run {run_id:?} has ended ({})",
                checkpoint.status.as_str()
            )));
        }
        let mut state = checkpoint.state;
        // the run's own session, where the agent's differs
        if checkpoint.session != self.config.session {
            state.session = state.session.or(checkpoint.session);
        }
        if let Some(turn) = checkpoint.turn {
            self.reconcile(&mut state, &turn).await?;
        }
        self.resume_claimed(state).await
    }

    /// Whether a call of `tool` may run again when it is unknown whether it ran: a read-only
    /// or idempotent tool.
    fn repeatable(&self, tool: &str) -> bool {
        self.executor.toolset().get(tool).is_some_and(|def| {
            def.idempotent || def.safety == tool_runtime::definition::Safety::ReadOnly
        })
    }

    async fn release(&self, run_id: &str) {
        if let Some(cp) = &self.checkpoints {
            let (worker, id) = (cp.worker.clone(), run_id.to_owned());
            let _ = on_store(self.executor.store(), move |s| s.release_run(&id, &worker)).await;
        }
    }

    /// Gives every call of an issued turn its result or its operation: from the state, from a
    /// pending operation or audit record of this run made since the turn was issued, or, with
    /// none, by running it now.
    async fn reconcile(&self, state: &mut RunState, turn: &IssuedTurn) -> Result<(), AgentError> {
        let query = ActivityQuery {
            correlation_id: Some(state.correlation_id.clone()),
            limit: Some(10_000),
            ..Default::default()
        };
        let mut audit = self
            .off_runtime(move |executor| executor.activity(&query))
            .await
            .ok_or_else(|| AgentError::Resume("the store query was cancelled".into()))?
            .map_err(AgentError::Store)?;
        audit.reverse();
        let run_id = state.correlation_id.to_string();
        let starts = on_store(self.executor.store(), move |s| s.started_calls(&run_id)).await?;
        let started = |call: &ToolCall| {
            starts
                .iter()
                .any(|s| s.call_id == call.id.as_str() && s.started_ms >= turn.issued_ms)
        };
        let mut missing: Vec<(usize, ToolCall)> = Vec::new();
        for (index, call) in turn.calls.iter().enumerate() {
            let known = state.done.iter().any(|d| d.index == index)
                || state.pending.iter().any(|p| p.index == index);
            if known {
                continue;
            }
            let records: Vec<_> = audit
                .iter()
                .filter(|r| {
                    r.call_id.as_str() == call.id.as_str() && r.timestamp_ms >= turn.issued_ms
                })
                .collect();
            // a parked call's operation holds its whole outcome once decided: it is read there
            if let Some(op) = records.iter().find_map(|r| r.operation_id.clone()) {
                state.pending.push(PendingCall {
                    call: call.clone(),
                    operation_id: op,
                    index,
                });
                continue;
            }
            match records.last() {
                Some(r) if r.status == Status::Pending => missing.push((index, call.clone())),
                Some(r) => {
                    let summary = r.result_summary.clone().unwrap_or_default();
                    let outcome = match r.status {
                        Status::Success => SavedOutcome::Success {
                            value: serde_json::from_str(&summary)
                                .unwrap_or(serde_json::Value::String(summary)),
                        },
                        Status::Denied => SavedOutcome::Denied {
                            reason: Some(summary),
                        },
                        _ => SavedOutcome::Error {
                            error: ToolError::new(
                                ErrorCode(
                                    r.error_code
                                        .clone()
                                        .unwrap_or_else(|| "ERROR".into())
                                        .into(),
                                ),
                                summary,
                            ),
                        },
                    };
                    state.done.push(DoneCall {
                        call: call.clone(),
                        index,
                        outcome,
                    });
                }
                // No record. A call whose body never started runs now; one that started (its
                // process stopped before the record was written) runs again only if that is
                // harmless, else it is in doubt and the model is told so, never run twice.
                None if !started(call) || self.repeatable(&call.name) => {
                    missing.push((index, call.clone()))
                }
                None => state.done.push(DoneCall {
                    call: call.clone(),
                    index,
                    outcome: SavedOutcome::Error {
                        error: outcome_unknown(&call.name),
                    },
                }),
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let mut p = Progress::from_state(state);
        let calls: Vec<ToolCall> = missing.iter().map(|(_, c)| c.clone()).collect();
        let (results, pending) = self.run_calls(&mut p, &calls).await?;
        state.failures = p.failures.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (i, call, outcome) in results {
            state.done.push(DoneCall {
                call,
                index: missing[i].0,
                outcome: outcome.into(),
            });
        }
        for mut pc in pending {
            pc.index = missing[pc.index].0;
            state.pending.push(pc);
        }
        Ok(())
    }

    /// Saves a checkpoint of the run's end (or failure) and gives its lease up.
    pub(super) async fn end_checkpoint(
        &self,
        p: &Progress,
        result: Result<RunReport, AgentError>,
    ) -> Result<RunReport, AgentError> {
        if self.checkpoints.is_none() {
            return result;
        }
        let saved = match &result {
            Ok(report) => match &report.status {
                RunStatus::Answered => {
                    self.checkpoint(
                        p,
                        CheckpointStatus::Answered,
                        None,
                        None,
                        report.answer.clone(),
                        None,
                    )
                    .await
                }
                RunStatus::MaxIterations => {
                    self.checkpoint(p, CheckpointStatus::MaxIterations, None, None, None, None)
                        .await
                }
                // saved when it suspended
                RunStatus::Suspended { .. } => Ok(()),
            },
            Err(AgentError::Interrupted { error, partial })
                if !matches!(**error, AgentError::LeaseLost(_)) =>
            {
                let cause = ToolError::new(ErrorCode::of("AGENT_FAILED"), error.to_string());
                self.checkpoint(
                    p,
                    CheckpointStatus::Failed,
                    Some(&partial.state),
                    None,
                    None,
                    Some(cause),
                )
                .await
            }
            Err(_) => Ok(()),
        };
        match (result, saved) {
            (Ok(report), Ok(())) => Ok(report),
            (Ok(_), Err(e)) => Err(e),
            (Err(e), _) => Err(e),
        }
    }
}

impl Agent {
    /// [`Agent::resume_run`], with this run's events also sent to `sink`.
    pub async fn resume_run_observed(
        &self,
        run_id: &str,
        sink: super::EventSink,
    ) -> Result<RunReport, AgentError> {
        super::events::RUN_EVENTS
            .scope(sink, self.resume_run(run_id))
            .await
    }

    /// Cancels the stored run `run_id`: its calls still waiting for a person are denied with
    /// `reason`, and the run is checkpointed `cancelled`, never to be resumed. Refused while
    /// another worker drives it ([`AgentError::Claimed`]) and once it has ended.
    pub async fn cancel_run(&self, run_id: &str, reason: &str) -> Result<Checkpoint, AgentError> {
        let Some(cp) = &self.checkpoints else {
            return Err(AgentError::Resume(
                "this agent keeps no runs; build it with Agent::with_checkpoints".into(),
            ));
        };
        let (worker, ttl, id) = (cp.worker.clone(), cp.lease, run_id.to_owned());
        let claimed = on_store(self.executor.store(), move |s| {
            Ok(match s.claim_run(&id, &worker, ttl)? {
                Some(run) => Ok(run),
                None => Err(s.get_run(&id)?),
            })
        })
        .await?;
        let stored = match claimed {
            Ok(run) => run,
            Err(None) => return Err(AgentError::Resume(format!("there is no run {run_id:?}"))),
            Err(Some(run)) => {
                return Err(AgentError::Claimed {
                    run_id: run_id.to_owned(),
                    worker: run.lease.map(|l| l.owner).unwrap_or_default(),
                });
            }
        };
        let mut checkpoint = match Checkpoint::from_json(&stored.checkpoint) {
            Ok(c) if !c.status.is_final() => c,
            Ok(c) => {
                self.release(run_id).await;
                return Err(AgentError::Resume(format!(
                    "run {run_id:?} has ended ({})",
                    c.status.as_str()
                )));
            }
            Err(e) => {
                self.release(run_id).await;
                return Err(AgentError::Checkpoint(e));
            }
        };
        for op in checkpoint.state.operation_ids() {
            let reason = reason.to_owned();
            // one already decided keeps its decision: the deny is refused by the store
            let _ = self
                .off_runtime(move |executor| executor.deny(&op, Some(reason)))
                .await;
        }
        let p = Progress::from_state(&checkpoint.state);
        let error = ToolError::new(ErrorCode::of("CANCELLED"), reason);
        self.checkpoint(
            &p,
            CheckpointStatus::Cancelled,
            Some(&checkpoint.state),
            None,
            None,
            Some(error.clone()),
        )
        .await?;
        checkpoint.status = CheckpointStatus::Cancelled;
        checkpoint.turn = None;
        checkpoint.error = Some(error);
        Ok(checkpoint)
    }
}

/// The in-doubt error of a call of `tool` (see [`OUTCOME_UNKNOWN`]).
fn outcome_unknown(tool: &str) -> ToolError {
    ToolError::new(
        OUTCOME_UNKNOWN,
        format!(
            "this call of {tool} may have run before the process running it stopped, and its \
             outcome was not recorded; it was not run again"
        ),
    )
    .retryable(false)
    .recover("check whether its effect happened before calling it again")
}
