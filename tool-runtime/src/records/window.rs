//! A rate limit's window: how many calls in how long. The executor's configuration names it and
//! the stores that share limits count in it.

use serde::{Deserialize, Serialize};

/// A sliding window: at most `max_calls` in any `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// Calls allowed in the window.
    pub max_calls: u32,
    /// The window's length.
    #[serde(default = "minute")]
    pub window_ms: u64,
}

fn minute() -> u64 {
    60_000
}
