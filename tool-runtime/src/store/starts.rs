//! Call starts: a mark the executor writes just before the body of a tool that changes something
//! runs, for calls whose context asks for it
//! ([`CallContext::record_start`](crate::tool::CallContext::record_start)).
//!
//! The audit record of a call is written after its body returns. A process killed between the
//! two leaves an effect and no record, which looks the same as a call that never reached its
//! body. The mark tells them apart: whoever resumes the call's run finds a start without an
//! outcome (the effect may have happened; the call is in doubt and must not run again) or no
//! start at all (the body never ran; running the call now runs it once).
//!
//! Marks are kept by run (the call's correlation id). An agent forgets a run's marks once the
//! run has ended ([`Store::forget_starts`](super::Store::forget_starts)); a worker killed between
//! the run's last save and that leaves them behind, where nothing reads them, since an ended run
//! is never resumed.

use serde::{Deserialize, Serialize};

use super::StoreError;

/// One call whose body was about to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallStart {
    /// The provider's call id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// When the body was about to run (ms since the epoch).
    pub started_ms: u64,
}

/// The error of a store that keeps no call starts (the default of the start methods).
pub(crate) fn no_starts() -> StoreError {
    StoreError::new(
        "this store keeps no call starts; use the SQLite, Redis or in-memory store to resume \
         agent runs",
    )
}
