//! How long the apps keep their ended agent runs. A run that answered, ran out of iterations or
//! was cancelled stays readable (`GET /api/v1/chat/{run_id}`, `--resume` says it has ended) for
//! `TOOLS_RUNS_KEEP_DAYS` days after it was last saved (30 by default; 0 keeps them forever),
//! then goes; a run that waits for a person, runs or failed (and can be resumed) stays however
//! old it is. Its calls stay in the audit trail, which is kept apart.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tool_runtime::store::{Store, StoreError};

/// The statuses of runs that are over for good.
pub const ENDED: &[&str] = &["answered", "max_iterations", "cancelled"];

/// How many days an ended run is kept unless `TOOLS_RUNS_KEEP_DAYS` says otherwise.
pub const DEFAULT_KEEP_DAYS: u64 = 30;

/// How long ended runs are kept: `TOOLS_RUNS_KEEP_DAYS` (whole days; 0 keeps them forever,
/// `None`), else [`DEFAULT_KEEP_DAYS`]. A value that is not a whole number is an error that
/// names the setting.
pub fn keep_from_env() -> Result<Option<Duration>, String> {
    let days = match std::env::var("TOOLS_RUNS_KEEP_DAYS") {
        Ok(v) if !v.trim().is_empty() => v.trim().parse::<u64>().map_err(|_| {
            format!(
                "TOOLS_RUNS_KEEP_DAYS is {v:?}; it takes a whole number of days (0 keeps ended \
                 runs forever)"
            )
        })?,
        _ => DEFAULT_KEEP_DAYS,
    };
    Ok((days > 0).then(|| Duration::from_secs(days.saturating_mul(86_400))))
}

/// Removes the ended runs of `store` last saved more than `keep` ago: how many went.
pub fn prune(store: &dyn Store, keep: Duration) -> Result<usize, StoreError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    store.prune_runs(ENDED, now.saturating_sub(keep.as_millis() as u64))
}

/// How often a server sweeps.
const EVERY: Duration = Duration::from_secs(3600);

/// Sweeps `store` now and every hour after, in the background (a server's runtime): a sweep
/// that fails is said on stderr and tried again at the next.
pub fn sweep(store: std::sync::Arc<dyn Store>, keep: Duration) {
    tokio::spawn(async move {
        loop {
            let s = store.clone();
            match tokio::task::spawn_blocking(move || prune(s.as_ref(), keep)).await {
                Ok(Ok(0)) => {}
                Ok(Ok(n)) => eprintln!("removed {n} ended chat run(s) older than their retention"),
                Ok(Err(e)) => eprintln!("cannot remove ended chat runs: {}", e.message),
                Err(e) => eprintln!("cannot remove ended chat runs: {e}"),
            }
            tokio::time::sleep(EVERY).await;
        }
    });
}
