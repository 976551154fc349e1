//! Running one attempt of a tool body: on its own task (so a panic is caught and stays with this
//! call), under a timeout (so an overrun is cancelled), and the backoff between retries.

use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;

use crate::error::{ErrorCode, ToolError};
use crate::hydrate::ToolInstance;
use crate::tool::CallContext;

use super::config::RetryConfig;

/// Aborts the task when dropped, so that a caller who stops waiting (a cancelled request)
/// cancels the tool too instead of leaving it running detached.
struct AbortOnDrop(JoinHandle<Result<Value, ToolError>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One attempt: the tool runs on its own task; a panic becomes `TOOL_PANICKED`, an overrun a
/// retryable `TIMEOUT` (and the task is cancelled).
pub(crate) async fn attempt(
    instance: ToolInstance,
    cx: CallContext,
    timeout: Duration,
) -> Result<Value, ToolError> {
    let name = instance.name().to_owned();
    let mut task = AbortOnDrop(tokio::spawn(instance.run(cx)));
    match tokio::time::timeout(timeout, &mut task.0).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) if join.is_panic() => {
            let what = super::engine::panic_text(&*join.into_panic());
            tracing::error!(tool = %name, panic = %what, "tool panicked");
            Err(ToolError::new(
                ErrorCode::TOOL_PANICKED,
                format!("the tool {name:?} failed unexpectedly (it panicked): {what}"),
            )
            .recover("do not retry the same call; tell the user the tool is failing"))
        }
        Ok(Err(_)) => Err(ToolError::new(
            ErrorCode::INTERNAL,
            format!("the tool {name:?} was cancelled"),
        )),
        Err(_) => Err(ToolError::new(
            ErrorCode::TIMEOUT,
            format!(
                "the tool {name:?} did not finish within {} ms and was cancelled",
                timeout.as_millis()
            ),
        )
        .retryable(true)
        .recover("retry later, or ask for less (a narrower query, a smaller limit)")
        .with_detail("timeout_ms", timeout.as_millis() as u64)),
    }
}

/// The delay before retry number `retry` (1 for the first retry): exponential, capped, with
/// jitter drawn from the upper half so that concurrent callers spread out but still back off.
pub(crate) fn backoff(cfg: &RetryConfig, retry: u32) -> Duration {
    let exp = cfg
        .base_delay_ms
        .saturating_mul(1u64 << retry.saturating_sub(1).min(20));
    let cap = exp.min(cfg.max_delay_ms);
    let low = cap / 2;
    Duration::from_millis(low + fastrand::u64(0..=cap - low))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let cfg = RetryConfig {
            max_attempts: 10,
            base_delay_ms: 100,
            max_delay_ms: 1000,
            opt_in: vec![],
        };
        for _ in 0..100 {
            let d1 = backoff(&cfg, 1).as_millis();
            assert!((50..=100).contains(&d1), "{d1}");
            let d3 = backoff(&cfg, 3).as_millis();
            assert!((200..=400).contains(&d3), "{d3}");
            let d9 = backoff(&cfg, 9).as_millis();
            assert!((500..=1000).contains(&d9), "{d9}");
        }
        let spread: std::collections::HashSet<_> = (0..50).map(|_| backoff(&cfg, 3)).collect();
        assert!(spread.len() > 1, "jitter");
    }
}
