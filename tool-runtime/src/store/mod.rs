//! One store interface for what outlives a call: pending operations, first-time approvals, the
//! undo journal and the audit records (whose query is the activity feed).
//!
//! Pending operations are run **at most once**. Approving one is a compare-and-set from
//! `pending` to `approved`, made before the tool runs; completing it records the outcome after.
//! If the process stops in between (a crash, a kill), the operation stays `approved`: the tool
//! may have run, partly or fully, or not at all, and nothing runs it again, because running a
//! modification twice is worse than not knowing. Such operations are listed as in doubt
//! ([`Store::list_approved`], `Executor::in_doubt`, `tools pending`) and closed by a person who
//! has checked what happened (`Executor::abandon`, `tools abandon ID`), which records them as
//! `INTERRUPTED`; to have the effect after all, the person makes the call again.
//!
//! `SqliteStore` (embedded, nothing to start; the `sqlite` feature) is the default; [`MemoryStore`]
//! is for tests and short-lived processes; `RedisStore` (the `redis` feature) is for several
//! processes or machines sharing state. All are safe to share between tasks; `SqliteStore` handles on the same
//! file are also safe to share between processes, and every state change that must happen once
//! (resolving a pending operation, claiming an undo) is a compare-and-set in the store, so two
//! approvers racing each other cannot both win.
//!
//! When the store itself fails, the caller gets a [`StoreError`], as a `ToolError`: a fault that
//! passes by itself (a SQLite lock held past the busy timeout, a Redis server down, paused or too
//! slow for the command timeout) is `STORE_UNAVAILABLE` and retryable; one that needs a person (a
//! read-only, full, corrupt, deleted or replaced file) is `INTERNAL`, not retryable, and says what
//! happened to the file. Either way nothing is half done: an approval that failed leaves the
//! operation pending, a call that could not be parked is refused, and an outcome that could not
//! be recorded leaves the operation in doubt, as after a crash. Audit records that could not be
//! written are kept in the process and written once the store takes writes again
//! (`tests/it/faults_sqlite.rs` and `tests/it/faults_redis.rs` inject each of these faults).
//!
//! # Agent runs
//!
//! The built-in stores also keep agent runs ([`StoredRun`]): a checkpoint per run, written after
//! every step, and a lease with an expiry so that one worker at a time drives a run. A worker
//! that dies leaves its lease to expire; another claims the run ([`Store::claim_run`]) and goes
//! on from the last checkpoint. Writes are fenced by the lease ([`Store::save_run`]), so a worker
//! that was only slow cannot overwrite a run another has claimed since. A store of your own that
//! does not implement these methods refuses them with an error saying so.

mod mcp_sessions;
mod memory;
#[cfg(any(feature = "sqlite", feature = "redis"))]
mod persisted;
mod pins;
#[cfg(feature = "redis")]
pub(crate) mod redis_store;
mod runs;
#[cfg(feature = "sqlite")]
mod sqlite;
mod starts;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use memory::MemoryStore;
pub use pins::ToolPin;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis_store::RedisStore;
pub use runs::{MAX_RUNS_LISTED, RunLease, RunQuery, StoredRun};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::SqliteStore;
pub use starts::CallStart;

use std::time::Duration;

use crate::id::SharedId;
use crate::records::{ActivityQuery, AuditRecord, Outcome, Preview, Window};
use crate::tool::{Credential, Initiator};

/// A call parked until a person approves or denies it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingOperation {
    /// The operation's id (`op-` and 32 hex digits).
    pub id: String,
    /// The call it stands for.
    pub call_id: SharedId,
    /// The tool.
    pub tool: String,
    /// The validated arguments, as the tool will receive them (not redacted: they are needed to
    /// run the call; the audit trail redacts).
    pub arguments: Value,
    /// What the person is shown.
    pub preview: Preview,
    /// The call's correlation id.
    pub correlation_id: SharedId,
    /// The call's session.
    pub session: Option<String>,
    /// Who started the call.
    pub initiator: Initiator,
    /// The credential it came with, if any (absent in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<Credential>,
    /// When it was parked (ms since the epoch).
    pub created_ms: u64,
    /// Where it stands.
    pub state: PendingState,
}

/// The life of a pending operation. Moves only forward: `Pending` → `Approved` → `Completed`, or
/// `Pending` → `Denied`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PendingState {
    /// Waiting for a decision.
    Pending,
    /// Approved and not completed: running, or it was running when its process stopped (in
    /// doubt: see the module docs). Never run again.
    Approved {
        /// Arguments a person edited, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edited: Option<Value>,
        /// When it was approved (ms since the epoch; 0 in records written before this was kept).
        #[serde(default)]
        approved_ms: u64,
    },
    /// Denied.
    Denied {
        /// The person's reason.
        reason: String,
    },
    /// Approved and run.
    Completed {
        /// What it ended as.
        outcome: Box<Outcome>,
    },
}

impl PendingState {
    /// Whether the operation is decided for good: denied, or approved and run.
    pub fn is_decided(&self) -> bool {
        matches!(
            self,
            PendingState::Denied { .. } | PendingState::Completed { .. }
        )
    }

    /// The state's name.
    pub fn name(&self) -> &'static str {
        match self {
            PendingState::Pending => "pending",
            PendingState::Approved { .. } => "approved",
            PendingState::Denied { .. } => "denied",
            PendingState::Completed { .. } => "completed",
        }
    }
}

/// A stored operation, not yet decided or completed, that cannot be read: its row is corrupt, or
/// was written by an incompatible version. Listings leave it out, so that one bad row does not
/// hide the others; [`Store::list_unreadable`] names it, and [`Store::close_unreadable`] (the
/// `abandon` of a person who has looked at it) takes it off the lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadableOperation {
    /// The operation's id.
    pub id: String,
    /// The state it was stored in (`pending` or `approved`).
    pub state: String,
    /// Why it cannot be read.
    pub error: String,
}

/// How an undo is performed: a call of a tool with arguments, planned when the original call
/// succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InverseCall {
    /// The tool that reverts the effect (often a sibling: `create_note` → `delete_note`).
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
}

/// What the journal keeps about a reversible call.
///
/// Entries are keyed by [`JournalEntry::id`], which the executor generates for each execution:
/// providers reuse call ids across turns and generated ids repeat for identical calls, so a call
/// id alone cannot name one undo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// The entry's id (`un-` and 32 hex digits), unique per execution: what
    /// [`Executor::undo`](crate::executor::Executor::undo) takes, reported as
    /// [`Execution::undo_id`](crate::executor::Execution::undo_id).
    #[serde(default)]
    pub id: String,
    /// The original call's id, as the provider gave it.
    pub call_id: String,
    /// The original tool.
    pub tool: String,
    /// How to revert it.
    pub inverse: InverseCall,
    /// When the original call finished (ms since the epoch).
    pub created_ms: u64,
    /// Whether it has been undone.
    pub undone: bool,
}

/// How many operations wait for a decision ([`Store::count_pending`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingCount {
    /// In the whole store.
    pub total: usize,
    /// Of the session asked about.
    pub session: usize,
    /// Of the credential asked about (0 when asked about none).
    pub credential: usize,
}

/// What a decided operation keeps of its call once the decision no longer needs the real
/// arguments ([`Store::scrub_decided`]): the same parts, with secrets redacted.
#[derive(Debug, Clone, PartialEq)]
pub struct Scrubbed {
    /// The arguments.
    pub arguments: Value,
    /// The preview: its intent, arguments and change.
    pub preview: Preview,
    /// The outcome a completed operation records; `None` leaves the recorded one as it is.
    pub outcome: Option<Outcome>,
}

/// Where the first-time gate of a tool was passed: in one session, or for every session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GateScope<'a> {
    /// This session only.
    Session(&'a str),
    /// Every session (`persist_first_time_approvals`).
    Everywhere,
}

impl GateScope<'_> {
    pub(crate) fn key(&self) -> &str {
        match self {
            GateScope::Session(s) => s,
            GateScope::Everywhere => "*",
        }
    }
}

/// A store failed. A failure that can pass by itself (a lock held by another process beyond the
/// busy timeout, a server that is down or does not answer in time) is *retryable* and reported
/// as [`STORE_UNAVAILABLE`]; one that needs a person (a read-only, full, corrupt or deleted file,
/// a corrupt row) is reported as `INTERNAL`, not retryable. Either way nothing is half done: an
/// operation whose approval failed is still pending, and one whose outcome could not be recorded
/// stays approved (in doubt) and is not run again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("store: {message}")]
pub struct StoreError {
    /// What failed, and what to do about it.
    pub message: String,
    /// Whether the same request may succeed if made again unchanged, later.
    pub retryable: bool,
}

impl StoreError {
    /// A failure that needs a person (not retryable).
    pub fn new(message: impl Into<String>) -> Self {
        StoreError {
            message: message.into(),
            retryable: false,
        }
    }

    /// A failure that can pass by itself (retryable): busy, unreachable, too slow.
    pub fn unavailable(message: impl Into<String>) -> Self {
        StoreError {
            message: message.into(),
            retryable: true,
        }
    }
}

/// The code of a store that cannot be used for now (retryable): its lock is held by someone else
/// beyond the busy timeout, or its server is down or does not answer in time.
pub const STORE_UNAVAILABLE: crate::error::ErrorCode =
    crate::error::ErrorCode::of("STORE_UNAVAILABLE");

impl From<StoreError> for crate::error::ToolError {
    fn from(e: StoreError) -> Self {
        use crate::error::{ErrorCode, ToolError};
        if e.retryable {
            ToolError::new(STORE_UNAVAILABLE, e.to_string())
                .retryable(true)
                .recover("the store is unavailable for now; try the same request again shortly")
        } else {
            ToolError::new(ErrorCode::INTERNAL, e.to_string())
                .recover("do not retry; tell the user that the tool store needs attention")
        }
    }
}

/// What a caller got when it tried to resolve a pending operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolve {
    /// This caller resolved it; the operation as it was before.
    Won(Box<PendingOperation>),
    /// Someone else resolved it first; its current state.
    AlreadyResolved(PendingState),
    /// No operation has this id.
    NotFound,
}

/// The store interface. Methods are synchronous, which keeps implementations simple and
/// object-safe; a store that may block the thread says so with [`Store::blocks`], and the
/// executor then makes its calls on tokio's blocking pool, so that a store waiting for a lock, a
/// disk or a server never holds up the runtime's workers (or the one thread of a current-thread
/// runtime) meanwhile. The audit record, written on every call, is first offered to
/// [`Store::try_append_audit`] on the call's own thread, which a store answers only when it can
/// write without waiting.
pub trait Store: Send + Sync + 'static {
    /// Whether a call may block the calling thread: file or network I/O, or waiting for a lock
    /// another connection or process holds. `true` unless overridden, which is right for any
    /// store that does I/O and for stores that wrap another; [`MemoryStore`] answers from memory
    /// and says `false`, so the executor calls it in place, without a thread hop.
    ///
    /// The executor's async methods honour it. Its synchronous methods (`pending`, `deny`,
    /// `abandon`, `activity`, ...) call the store on the calling thread: from async code, call
    /// them on the blocking pool (`tokio::task::spawn_blocking`).
    fn blocks(&self) -> bool {
        true
    }

    /// Parks an operation.
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError>;
    /// One operation by id, in any state.
    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError>;
    /// Operations still waiting for a decision, oldest first.
    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError>;
    /// A page of [`Store::list_pending`]: at most `limit` operations after the first `offset`,
    /// oldest first. Pages are what a person's listing reads, so a store that can read one
    /// without reading the rest (an indexed query) does; this default lists them all.
    fn list_pending_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<PendingOperation>, StoreError> {
        let ops = self.list_pending()?;
        Ok(ops.into_iter().skip(offset).take(limit).collect())
    }
    /// How many operations wait for a decision: in the whole store, of `session` (`None`: of
    /// calls without a session) and of `credential` (`None`: not counted, 0). The executor asks
    /// before parking each deferred call, so a store answers from an index or a counter, at a
    /// cost that does not grow with how many wait; this default lists them all and suits only a
    /// store that keeps few.
    fn count_pending(
        &self,
        session: Option<&str>,
        credential: Option<&Credential>,
    ) -> Result<PendingCount, StoreError> {
        let ops = self.list_pending()?;
        Ok(PendingCount {
            total: ops.len(),
            session: ops
                .iter()
                .filter(|o| o.session.as_deref() == session)
                .count(),
            credential: credential.map_or(0, |c| {
                ops.iter()
                    .filter(|o| o.credential.as_ref() == Some(c))
                    .count()
            }),
        })
    }
    /// Moves an operation from `Pending` to `to` (approved or denied) if and only if it is still
    /// pending: exactly one of any number of concurrent callers wins.
    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError>;
    /// Records how an approved operation ended.
    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError>;
    /// Operations approved and not completed (running, or interrupted by a crash), oldest first.
    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError>;
    /// Replaces what an operation keeps of its call (arguments, preview and recorded outcome)
    /// with `scrubbed`, if and only if it is decided (denied or completed): `true` if it was.
    /// The executor passes their redacted form once the decision no longer needs the real
    /// ones. A store that keeps files must leave no copy of the replaced text in them (a
    /// journal, a write-ahead log).
    fn scrub_decided(&self, id: &str, scrubbed: &Scrubbed) -> Result<bool, StoreError>;
    /// Operations waiting or approved whose stored form cannot be read, which
    /// [`Store::list_pending`] and [`Store::list_approved`] leave out.
    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError>;
    /// Takes an unreadable operation off the lists (its data is kept for inspection): `true` if
    /// `id` was one, `false` if it is readable or unknown. Nothing runs.
    fn close_unreadable(&self, id: &str) -> Result<bool, StoreError>;
    /// Closes an approved, uncompleted operation with `outcome` (`Completed`) if and only if it
    /// is still `Approved`: exactly one of any number of concurrent callers wins. The process
    /// running it, if it was only slow, still records its real outcome when it finishes.
    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError>;

    /// Remembers that a tool's first-time gate was passed.
    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError>;
    /// Whether a tool's first-time gate was passed in this scope.
    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError>;

    /// Journals how to undo a call, under `entry.id` (never replacing another entry).
    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError>;
    /// The journal entry with this id.
    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError>;
    /// Every journal entry of calls with this provider call id, oldest first.
    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError>;
    /// Marks an entry undone if it was not: `true` for exactly one caller.
    fn claim_undo(&self, id: &str) -> Result<bool, StoreError>;
    /// Reverts [`Store::claim_undo`] when the undo itself failed, so it can be tried again.
    fn release_undo(&self, id: &str) -> Result<(), StoreError>;

    /// Records a call against rate-limit windows shared by every process on this store, if the
    /// store shares them: `Some(Ok(()))` when every window (`(key, window)`) had room and the
    /// call was counted in each, `Some(Err(wait))` when one was full (nothing counted), `None`
    /// when this store keeps no shared limits and the executor's in-process limiter applies.
    fn acquire_rate(
        &self,
        windows: &[(String, Window)],
    ) -> Result<Option<Result<(), Duration>>, StoreError> {
        let _ = windows;
        Ok(None)
    }

    /// Appends an audit record; the store gives it the next sequence number
    /// ([`AuditRecord::seq`]) when it enters the trail, at the latest before the next
    /// [`Store::query_audit`] of any handle on the store answers. (The SQLite store spools the
    /// records of read-only calls and moves them into its table in batches: their numbers follow
    /// the order they reach the table.)
    ///
    /// A store that counts changes ([`Store::changes`]) counts the record of a call that may
    /// have changed something ([`AuditRecord::is_change`]) in the same write.
    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError>;

    /// How many calls that may have changed something were recorded in this store by every
    /// executor and process that shares it: the audit records for which
    /// [`AuditRecord::is_change`] holds, counted as they are appended.
    ///
    /// Executors that share a store keep their caches of read-only results apart. Each one
    /// compares the count with the one its cached results were made under before it answers
    /// from its cache, so a change made through another replica (another process on the same
    /// SQLite file or Redis server) empties every replica's cache, not only its own.
    ///
    /// `None` (the default) means the store does not count: each executor then empties its cache
    /// only for the changes it ran itself.
    fn changes(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    /// [`Store::append_audit`] only if it can be done at once, without waiting for anything: a
    /// lock another thread or process holds, a checkpoint, a disk flush, a server's answer.
    /// `None` when it cannot, with nothing written; the caller then calls
    /// [`Store::append_audit`], where waiting is allowed (the executor calls it on tokio's
    /// blocking pool). A store that answers `None` to a record it could have written loses
    /// nothing but the saved thread hop, so `None` is also the answer to anything the store
    /// would rather handle on its full path (a failure to report, records kept from an earlier
    /// failure).
    ///
    /// The executor tries this first for a store that [blocks](Store::blocks), on the runtime's
    /// thread, so that the usual case (nobody else writing) costs the insert alone. The default
    /// answers `None`: a store that does not say otherwise may have to wait.
    fn try_append_audit(&self, record: &AuditRecord) -> Option<Result<(), StoreError>> {
        let _ = record;
        None
    }
    /// The activity feed: matching records with their sequence numbers, newest first, or oldest
    /// first after a sequence number ([`ActivityQuery::after`]).
    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError>;

    /// Writes an agent run (see [Agent runs](self#agent-runs) in the module docs) and
    /// gives `owner` its lease for `ttl`, if and only if the run is new or `owner` holds its
    /// lease, unexpired: `true` if written. `false` means another worker claimed the run (this
    /// one's lease ran out): the caller stops driving it. `created_ms` of a run that exists is
    /// kept. The default refuses: the store keeps no runs.
    fn save_run(&self, run: &StoredRun, owner: &str, ttl: Duration) -> Result<bool, StoreError> {
        let _ = (run, owner, ttl);
        Err(runs::no_runs())
    }
    /// Takes the lease of run `id` for `owner` for `ttl`, if it is free, expired or already
    /// `owner`'s (then it is renewed): the run as stored, or `None` when it is unknown or
    /// another worker holds it. Exactly one of any number of concurrent claimants wins.
    fn claim_run(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<StoredRun>, StoreError> {
        let _ = (id, owner, ttl);
        Err(runs::no_runs())
    }
    /// Gives up `owner`'s lease of run `id` (nothing if another worker holds it).
    fn release_run(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        let _ = (id, owner);
        Err(runs::no_runs())
    }
    /// One run by id, with its lease as of now.
    fn get_run(&self, id: &str) -> Result<Option<StoredRun>, StoreError> {
        let _ = id;
        Err(runs::no_runs())
    }
    /// Runs matching `query`, most recently saved first, at most [`RunQuery::cap`].
    fn list_runs(&self, query: &RunQuery) -> Result<Vec<StoredRun>, StoreError> {
        let _ = query;
        Err(runs::no_runs())
    }

    /// Writes `pin` if and only if the tool's current pin has the hash `replaces` (`None`: the
    /// tool has no pin yet): `true` if written. Exactly one of any number of concurrent writers
    /// expecting the same hash wins. The default refuses: the store keeps no pins.
    fn put_pin(&self, pin: &ToolPin, replaces: Option<&str>) -> Result<bool, StoreError> {
        let _ = (pin, replaces);
        Err(pins::no_pins())
    }
    /// The pin of the tool registered as `tool`.
    fn get_pin(&self, tool: &str) -> Result<Option<ToolPin>, StoreError> {
        let _ = tool;
        Err(pins::no_pins())
    }
    /// Every pin, by tool name.
    fn list_pins(&self) -> Result<Vec<ToolPin>, StoreError> {
        Err(pins::no_pins())
    }

    /// Marks that call `start` of run `run_id` (the call's correlation id) is about to run its
    /// tool's body (see [`CallStart`]); a call may be marked once per attempt to run it. The
    /// default refuses: the store keeps no starts, and the executor then refuses a call that
    /// asked for its start to be kept, rather than run it unmarked.
    fn mark_started(&self, run_id: &str, start: &CallStart) -> Result<(), StoreError> {
        let _ = (run_id, start);
        Err(starts::no_starts())
    }
    /// The starts marked for run `run_id`, oldest first.
    fn started_calls(&self, run_id: &str) -> Result<Vec<CallStart>, StoreError> {
        let _ = run_id;
        Err(starts::no_starts())
    }
    /// Removes the starts of run `run_id`, once nothing will resume it.
    fn forget_starts(&self, run_id: &str) -> Result<(), StoreError> {
        let _ = run_id;
        Err(starts::no_starts())
    }

    /// Keeps the state of MCP session `id` (text the store does not read) for `ttl`, replacing
    /// what was kept; writing it again renews it. The default refuses: the store keeps no MCP
    /// sessions, and they live in one process.
    fn put_mcp_session(&self, id: &str, state: &str, ttl: Duration) -> Result<(), StoreError> {
        let _ = (id, state, ttl);
        Err(mcp_sessions::no_mcp_sessions())
    }
    /// The state of MCP session `id`, unless it is unknown or expired.
    fn get_mcp_session(&self, id: &str) -> Result<Option<String>, StoreError> {
        let _ = id;
        Err(mcp_sessions::no_mcp_sessions())
    }
    /// Forgets MCP session `id` (nothing if it is unknown).
    fn delete_mcp_session(&self, id: &str) -> Result<(), StoreError> {
        let _ = id;
        Err(mcp_sessions::no_mcp_sessions())
    }

    // What the calls running now show a person, shared by the processes on one store.

    /// Keeps `entry` (text the store does not read) on board `board` under `key` for `ttl`,
    /// replacing what was kept there; writing it again renews it. `Ok(false)` when the store
    /// shares no boards (the default): what a process shows of its running calls (the questions
    /// their tools ask, their progress) then stays in that process.
    fn put_live(
        &self,
        board: &str,
        key: &str,
        entry: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let _ = (board, key, entry, ttl);
        Ok(false)
    }
    /// The entries of `board` that have not expired, as `(key, entry)` pairs in no set order
    /// (none when the store shares no boards).
    fn list_live(&self, board: &str) -> Result<Vec<(String, String)>, StoreError> {
        let _ = board;
        Ok(Vec::new())
    }
    /// Removes `key`'s entry from `board` and returns it unless it had expired: of several
    /// processes taking one entry, one gets it.
    fn take_live(&self, board: &str, key: &str) -> Result<Option<String>, StoreError> {
        let _ = (board, key);
        Ok(None)
    }

    /// What kind of store this is (`"sqlite"`, `"redis"`, `"memory"`), for a readiness probe or
    /// a log line: it names no file and no server, so it can be shown to anyone.
    fn kind(&self) -> &'static str {
        "custom"
    }

    // Retention of agent runs.

    /// Removes the runs whose status is one of `statuses` and that were last saved before
    /// `saved_before_ms` (ms since the epoch), unless a worker holds one's lease: how many went.
    /// A retention sweep names the statuses of ended runs, so a run that waits or runs stays
    /// however old it is. A removed run's start marks ([`Store::mark_started`]) go with it. The
    /// default refuses: the store keeps no runs.
    fn prune_runs(&self, statuses: &[&str], saved_before_ms: u64) -> Result<usize, StoreError> {
        let _ = (statuses, saved_before_ms);
        Err(runs::no_runs())
    }
}

pub(crate) fn new_operation_id() -> String {
    format!("op-{:032x}", fastrand::u128(..))
}

/// `op` with what `with` gives in place of its own, if it is decided.
fn scrubbed(mut op: PendingOperation, with: &Scrubbed) -> Option<PendingOperation> {
    if !op.state.is_decided() {
        return None;
    }
    op.arguments = with.arguments.clone();
    op.preview = with.preview.clone();
    if let (PendingState::Completed { outcome }, Some(redacted)) = (&mut op.state, &with.outcome) {
        **outcome = redacted.clone();
    }
    Some(op)
}

pub(crate) fn new_undo_id() -> String {
    format!("un-{:032x}", fastrand::u128(..))
}

/// `url` with any user and password replaced by `***`, for messages.
pub(crate) fn without_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Whether `location` names a Redis server rather than a file (where the embedding cache is).
#[cfg(all(feature = "select", feature = "sqlite"))]
pub(crate) fn is_redis_url(location: &str) -> bool {
    ["redis://", "rediss://", "redis+unix://"]
        .iter()
        .any(|scheme| {
            location
                .get(..scheme.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
        })
}
