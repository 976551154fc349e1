//! Running a decided call: the cache of read-only results, the rate limits, then attempts of the
//! tool body under a timeout (so an overrun is cancelled) with a panic caught as this call's
//! error, with backoff between retries. A body that answers at once runs in place; one that waits
//! goes on on its own task.

use std::panic::AssertUnwindSafe;
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;

use crate::definition::ToolDefinition;
use crate::error::{ErrorCode, ToolError};
use crate::hydrate::{Arguments, ToolCall, ToolInstance};
use crate::tool::CallContext;

use super::Executor;
use super::cache::Lookup;
use super::config::{RateLimitConfig, RetryConfig};

/// What running the body produced.
pub(super) struct Ran {
    pub(super) result: Result<Value, ToolError>,
    /// How many times the body ran (0: from the cache, or refused before running).
    pub(super) attempts: u32,
    pub(super) cached: bool,
    /// The call's arguments as JSON, when they were made: the record may keep them.
    pub(super) arguments: Option<Value>,
}

impl Executor {
    /// Cache, rate limits, then attempts with timeout and retries.
    pub(super) async fn execute(&self, mut instance: ToolInstance, cx: &CallContext) -> Ran {
        let cfg = &self.inner.config;
        let entry = instance.entry.clone();
        let def = entry.definition();
        if !instance.is_runnable() {
            return Ran {
                result: Err(ToolError::new(
                    ErrorCode::NOT_ALLOWED,
                    format!(
                        "the tool {:?} is declared without a body in this process and cannot be run here",
                        def.name
                    ),
                )),
                attempts: 0,
                cached: false,
                arguments: instance.take_made_arguments(),
            };
        }
        let cache_key = match self.look_up(def, instance.arguments()).await {
            Lookup::Hit(v) => {
                return Ran {
                    result: Ok(v),
                    attempts: 0,
                    cached: true,
                    arguments: instance.take_made_arguments(),
                };
            }
            lookup => lookup.into_key(),
        };
        let limited = super::limit::limited(def, &cfg.rate_limits);
        if let Err(error) = match limited {
            true => Box::pin(self.acquire_rate(def, &cfg.rate_limits)).await,
            false => Ok(()),
        } {
            return Ran {
                result: Err(error),
                attempts: 0,
                cached: false,
                arguments: instance.take_made_arguments(),
            };
        }
        if cx.record_start
            && !(def.safety.is_read_only() || def.idempotent)
            && let Err(error) = Box::pin(self.mark_started(def, cx)).await
        {
            return Ran {
                result: Err(error),
                attempts: 0,
                cached: false,
                arguments: instance.take_made_arguments(),
            };
        }
        let timeout = def.timeout.unwrap_or_else(|| cfg.default_timeout());
        let may_retry = self.may_retry(def);
        // read again only by a retry; then handed to the record, which may keep them
        let arguments = match may_retry {
            true => Some(instance.take_arguments()),
            false => instance.take_made_arguments(),
        };
        // whoever follows the call's progress knows it runs now, until it ends however it ends
        let _running = cx
            .progress
            .as_ref()
            .map(|r| r.running(&cx.call_id, &def.name));
        let first = attempt(instance, cx.clone(), timeout).await;
        let (result, attempts) = match self.retry_due(may_retry, &first, 1) {
            false => (first, 1),
            true => Box::pin(self.retried(def, cx, timeout, arguments.as_ref(), first)).await,
        };
        if let Ok(v) = &result {
            self.keep(cache_key, v);
        }
        self.note_ran(def, attempts);
        Ran {
            result,
            attempts,
            cached: false,
            arguments,
        }
    }

    /// After the body of `def` ran `attempts` times: a tool that may change something (one that
    /// is not read-only, whether it succeeded or not) empties the cache of read-only results.
    pub(super) fn note_ran(&self, def: &ToolDefinition, attempts: u32) {
        if attempts > 0 && !def.safety.is_read_only() && self.inner.config.cache.enabled {
            self.inner.cache.changed();
        }
    }

    /// Whether a failed attempt of `def` may be tried again: read-only, idempotent and opted-in
    /// tools, when the configuration allows more than one attempt.
    pub(super) fn may_retry(&self, def: &ToolDefinition) -> bool {
        let cfg = &self.inner.config;
        cfg.retry.max_attempts > 1
            && (def.safety.is_read_only()
                || def.idempotent
                || def.retry
                || cfg.retry.opt_in.iter().any(|t| t == def.name.as_ref()))
    }

    /// Whether `result`, of attempt number `attempts`, is tried again.
    pub(super) fn retry_due(
        &self,
        may_retry: bool,
        result: &Result<Value, ToolError>,
        attempts: u32,
    ) -> bool {
        matches!(result, Err(e) if may_retry && e.retryable && attempts < self.inner.config.retry.max_attempts)
    }

    /// The retries after a first attempt that failed retryably, with backoff between them, each
    /// on a fresh instance of the same validated `arguments`: the last result and how many
    /// attempts were made in all.
    pub(super) async fn retried(
        &self,
        def: &ToolDefinition,
        cx: &CallContext,
        timeout: Duration,
        arguments: Option<&Value>,
        first: Result<Value, ToolError>,
    ) -> (Result<Value, ToolError>, u32) {
        let cfg = &self.inner.config;
        let mut result = first;
        let mut attempts = 1;
        while self.retry_due(true, &result, attempts) {
            let Err(e) = &result else { break };
            let delay = backoff(&cfg.retry, attempts);
            tracing::warn!(
                tool = %def.name,
                attempt = attempts,
                code = %e.code,
                delay_ms = delay.as_millis() as u64,
                "retrying a retryable failure"
            );
            tokio::time::sleep(delay).await;
            let hydrated = self.inner.toolset.load().hydrate(&ToolCall::new(
                cx.call_id.clone(),
                def.name.to_string(),
                Arguments::Json(arguments.cloned().unwrap_or_default()),
            ));
            let instance = match hydrated {
                Ok(i) => i,
                Err(e) => return (Err(e), attempts),
            };
            attempts += 1;
            result = attempt(instance, cx.clone(), timeout).await;
        }
        (result, attempts)
    }

    /// Counts a call against its rate limits: in the store when the store shares them across
    /// processes (every replica then sees one budget), else in this process's limiter. A store
    /// that cannot be asked refuses the call, retryably: a limit that cannot be checked is not
    /// skipped.
    async fn acquire_rate(
        &self,
        def: &ToolDefinition,
        cfg: &RateLimitConfig,
    ) -> Result<(), ToolError> {
        let windows = super::limit::windows(def, cfg);
        if windows.is_empty() {
            return Ok(());
        }
        let shared = self
            .with_store("acquire_rate", move |store| store.acquire_rate(&windows))
            .await;
        let decision = match shared {
            Ok(Some(decision)) => decision,
            Ok(None) => self.inner.limiter.acquire(def, cfg),
            Err(e) => {
                return Err(ToolError::from(e)
                    .retryable(true)
                    .recover("the rate limits could not be checked; try again shortly"));
            }
        };
        decision.map_err(|wait| {
            let ms = wait.as_millis() as u64;
            ToolError::new(
                ErrorCode::RATE_LIMITED,
                format!("too many calls of {:?}; try again in {ms} ms", def.name),
            )
            .retryable(true)
            .recover(format!("wait {ms} ms before calling this tool again"))
            .with_detail("retry_after_ms", ms)
        })
    }
}

/// Aborts the task when dropped, so that a caller who stops waiting (a cancelled request)
/// cancels the tool too instead of leaving it running detached.
struct AbortOnDrop(JoinHandle<Result<Value, ToolError>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One attempt: a panic becomes `TOOL_PANICKED`, an overrun a retryable `TIMEOUT` (and the body is
/// cancelled).
///
/// The body is polled once in place, under `catch_unwind`: many bodies (a lookup, a computation)
/// answer at once, and then neither a task nor a timer is set up for them. A body that waits (on
/// IO, a timer, a sync body on the blocking pool) goes on on its own task, under the timeout
/// counted from before the first poll: its panic is caught by the task, and an await it blocks
/// in later cannot hold up the caller's timeout on a multi-thread runtime. Dropping the attempt
/// drops or aborts the body either way.
pub(crate) async fn attempt(
    instance: ToolInstance,
    cx: CallContext,
    timeout: Duration,
) -> Result<Value, ToolError> {
    let entry = instance.entry.clone();
    let name = || entry.definition().name.as_ref();
    let deadline = tokio::time::Instant::now() + timeout;
    // the body runs in the call's span (the caller's future is in it), so what it logs and the
    // spans it opens belong to the call
    let mut body = instance.into_body(cx);
    let first = std::future::poll_fn(|task| {
        Poll::Ready(std::panic::catch_unwind(AssertUnwindSafe(|| {
            body.as_mut().poll(task)
        })))
    })
    .await;
    match first {
        Ok(Poll::Ready(result)) => return result,
        Ok(Poll::Pending) => {}
        Err(payload) => {
            // a future that panicked may panic again when dropped; that is this call's too
            let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(body)));
            return Err(panicked(name(), &*payload));
        }
    }
    Box::pin(on_own_task(body, &entry, deadline, timeout)).await
}

/// The rest of an attempt whose body waits: on its own task, under the timeout.
pub(super) async fn on_own_task(
    body: futures::future::BoxFuture<'static, Result<Value, ToolError>>,
    entry: &crate::hydrate::entry::Entry,
    deadline: tokio::time::Instant,
    timeout: Duration,
) -> Result<Value, ToolError> {
    let name = || entry.definition().name.as_ref();
    let mut task = AbortOnDrop(tokio::spawn(tracing::Instrument::in_current_span(body)));
    match tokio::time::timeout_at(deadline, &mut task.0).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) if join.is_panic() => Err(panicked(name(), &*join.into_panic())),
        Ok(Err(_)) => Err(ToolError::new(
            ErrorCode::INTERNAL,
            format!("the tool {:?} was cancelled", name()),
        )),
        Err(_) => Err(ToolError::new(
            ErrorCode::TIMEOUT,
            format!(
                "the tool {:?} did not finish within {} ms and was cancelled",
                name(),
                timeout.as_millis()
            ),
        )
        .retryable(true)
        .recover("retry later, or ask for less (a narrower query, a smaller limit)")
        .with_detail("timeout_ms", timeout.as_millis() as u64)),
    }
}

/// The error of a body that panicked.
pub(super) fn panicked(name: &str, payload: &(dyn std::any::Any + Send)) -> ToolError {
    let what = super::engine::panic_text(payload);
    // the panic's text may quote the arguments: it goes only into the error, which the executor
    // scrubs of the call's secrets before anyone sees it
    tracing::error!(tool = %name, "tool panicked");
    ToolError::new(
        ErrorCode::TOOL_PANICKED,
        format!("the tool {name:?} failed unexpectedly (it panicked): {what}"),
    )
    .recover("do not retry the same call; tell the user the tool is failing")
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
