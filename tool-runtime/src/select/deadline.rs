//! The time budget of a pick, below everything that checks it (the index between query terms,
//! the scorers between tools).

use std::time::Duration;

/// The moment a pick's time budget runs out.
///
/// It reads Tokio's clock, which is the system's monotonic clock except in tests that pause
/// time, so it works with or without a runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline(tokio::time::Instant);

impl Deadline {
    /// `budget` from now.
    pub fn after(budget: Duration) -> Self {
        let now = tokio::time::Instant::now();
        // A budget too large to represent is no budget at all: keep a far-away deadline.
        Deadline(
            now.checked_add(budget)
                .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600)),
        )
    }

    /// Whether the budget is spent (a zero budget is spent at once).
    pub fn expired(&self) -> bool {
        tokio::time::Instant::now() >= self.0
    }

    /// Time left, zero once expired.
    pub fn remaining(&self) -> Duration {
        self.0
            .saturating_duration_since(tokio::time::Instant::now())
    }

    pub(crate) fn instant(&self) -> tokio::time::Instant {
        self.0
    }
}
