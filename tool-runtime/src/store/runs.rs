//! Agent runs kept in the store: a checkpoint per run, written after every step, and a lease
//! that lets one worker at a time drive it.
//!
//! The store does not read the checkpoint: it keeps it as the text its writer gives, with the
//! few fields a listing filters on beside it (status, session, times). The agent loop defines
//! and versions the checkpoint's format (`tool_providers::agent::Checkpoint`).
//!
//! A lease is an owner's name and an expiry on the store's clock.
//! [`Store::claim_run`](super::Store::claim_run) takes a run whose lease is free, expired or
//! already the caller's; [`Store::save_run`](super::Store::save_run) writes only under a lease
//! the caller holds (or creates the run with one), so a worker whose lease ran out and was taken
//! by another cannot overwrite what the new one writes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::StoreError;

/// One agent run as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRun {
    /// The run's id (its correlation id).
    pub id: String,
    /// Where it stands, as its writer names it (`running`, `suspended`, `answered`, ...): what
    /// listings filter on.
    pub status: String,
    /// The run's session, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// When the run was first saved (ms since the epoch).
    pub created_ms: u64,
    /// When it was last saved (ms since the epoch).
    pub updated_ms: u64,
    /// The checkpoint, as its writer serialized it.
    pub checkpoint: String,
    /// Who holds the run's lease, and until when, as of the read (`None`: nobody).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<RunLease>,
}

/// A worker's claim on a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunLease {
    /// The worker's name (unique per process).
    pub owner: String,
    /// When it expires (ms since the epoch, on the store's clock).
    pub expires_ms: u64,
}

/// Which runs [`Store::list_runs`](super::Store::list_runs) gives, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs with this status.
    pub status: Option<String>,
    /// Only runs of this session.
    pub session: Option<String>,
    /// At most this many (the store's own cap of 1,000 applies too).
    pub limit: Option<usize>,
}

/// The most runs one listing gives.
pub const MAX_RUNS_LISTED: usize = 1000;

impl RunQuery {
    /// How many runs to give at most.
    pub fn cap(&self) -> usize {
        self.limit.unwrap_or(MAX_RUNS_LISTED).min(MAX_RUNS_LISTED)
    }

    /// Whether `run` is one this query asks for.
    pub fn matches(&self, run: &StoredRun) -> bool {
        self.status.as_ref().is_none_or(|s| *s == run.status)
            && self
                .session
                .as_ref()
                .is_none_or(|s| run.session.as_ref() == Some(s))
    }
}

/// The error of a store that keeps no agent runs (the default of the run methods).
pub(crate) fn no_runs() -> StoreError {
    StoreError::new(
        "this store keeps no agent runs; use the SQLite, Redis or in-memory store to checkpoint \
         and resume agent runs",
    )
}

/// Milliseconds since the epoch on this machine's clock.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A lease's length in whole milliseconds, at least one.
pub(crate) fn lease_ms(ttl: Duration) -> u64 {
    (ttl.as_millis() as u64).max(1)
}
