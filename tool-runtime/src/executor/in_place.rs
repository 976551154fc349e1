//! The common path of a call the policy lets run at once, within one poll of the call's future.
//!
//! When nothing before the body has to wait (no first-time gate, no confirmation, no rate limit
//! to count, no start mark to store, no undo journal to write), the policy's decision, the cache
//! lookup, the body's first poll, the result and the record are made in place, without an await
//! of their own: the call's future then holds no nested futures, and the runtime moves (copies)
//! a small future instead of a large one. A body that waits, or fails in a way that is retried,
//! goes on in a boxed future ([`Executor::resume`]) under the same deadline, retries and record
//! of a call cut off; every other call takes the general path, boxed, where the policy may ask a
//! person.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::error::ToolError;
use crate::hydrate::ToolInstance;
use crate::hydrate::entry::Entry;
use crate::progress::RunningCall;
use crate::records::{AuditArguments, AuditRecord, Execution, Outcome};
use crate::tool::CallContext;

use super::Executor;
use super::cache::Lookup;
use super::record::{Trail, Unfinished};
use super::run::{on_own_task, panicked};

/// How far a call got in place.
// `Done` is the common case: boxing it would cost every call an allocation
#[allow(clippy::large_enum_variant)]
pub(super) enum InPlace {
    /// Finished and recorded; the record is returned when it still goes to a store that blocks
    /// ([`Executor::write_record`]).
    Done(Execution, Option<Arc<AuditRecord>>),
    /// The body waits, or its first attempt is tried again: [`Executor::resume`] goes on.
    Later(Box<Later>),
}

/// A call whose body started in place and goes on later.
pub(super) struct Later {
    entry: Arc<Entry>,
    trail: Trail,
    now: Now,
    deadline: tokio::time::Instant,
    timeout: Duration,
    may_retry: bool,
    arguments: Option<Again>,
    cache_key: Option<String>,
    _running: Option<RunningCall>,
}

/// The call's arguments as a retry reads them.
enum Again {
    /// Made as JSON from the typed arguments.
    Made(Value),
    /// The record's tree of them (nothing to hide), made into JSON only if a retry runs.
    Kept(AuditArguments),
}

impl Again {
    fn value(&self) -> &Value {
        match self {
            Again::Made(v) => v,
            Again::Kept(kept) => kept.value(),
        }
    }

    /// The JSON the call made, which [`Trail::settle`] may hand to the record.
    fn made(self) -> Option<Value> {
        match self {
            Again::Made(v) => Some(v),
            Again::Kept(_) => None,
        }
    }
}

/// Where the first attempt stands.
enum Now {
    /// The body waits: it goes on on its own task.
    Waiting(BoxFuture<'static, Result<Value, ToolError>>),
    /// It failed in a way that is tried again.
    Failed(ToolError),
}

impl Executor {
    /// Whether `instance` can run in place (see the module docs).
    pub(super) fn runs_in_place(&self, instance: &ToolInstance, cx: &CallContext) -> bool {
        let def = instance.definition();
        let cfg = &self.inner.config;
        instance.is_runnable()
            && (self.inner.undo.is_empty() || !self.inner.undo.contains_key(def.name.as_ref()))
            && !super::limit::limited(def, &cfg.rate_limits)
            && !(cx.record_start && !(def.safety.is_read_only() || def.idempotent))
            // the arguments are made as JSON only for a cache
            && !(self.caches(def) && self.cache_waits(def, instance.arguments()))
    }

    /// Runs a call that [`Executor::runs_in_place`] admitted, within the poll that `task` belongs
    /// to: what [`Executor::proceed`] does, as far as it goes without waiting. `plain` is the
    /// arguments' tree the record keeps ([`Trail::note_plain_arguments`]), if it keeps one.
    pub(super) fn run_in_place(
        &self,
        mut instance: ToolInstance,
        cx: &CallContext,
        mut trail: Trail,
        plain: Option<AuditArguments>,
        task: &mut Context<'_>,
    ) -> InPlace {
        let cfg = &self.inner.config;
        let entry = instance.entry.clone();
        let def = entry.definition();
        let lookup = match self.caches(def) {
            true => self.look_up_now(def, instance.arguments()),
            false => Lookup::Off,
        };
        let cache_key = match lookup {
            Lookup::Hit(v) => {
                trail.cached = true;
                trail.settle(instance.take_made_arguments());
                let (exec, record) = self.conclude(&entry, cx, trail, Ok(v));
                return InPlace::Done(exec, record);
            }
            lookup => lookup.into_key(),
        };
        let timeout = def.timeout.unwrap_or_else(|| cfg.default_timeout());
        let may_retry = self.may_retry(def);
        // read again only by a retry; then handed to the record, which may keep them
        let arguments = match (may_retry, plain) {
            (true, Some(plain)) => Some(Again::Kept(plain)),
            (true, None) => Some(Again::Made(instance.take_arguments())),
            (false, _) => instance.take_made_arguments().map(Again::Made),
        };
        // whoever follows the call's progress knows it runs now, until it ends however it ends
        let running = cx
            .progress
            .as_ref()
            .map(|r| r.running(&cx.call_id, &def.name));
        let deadline = tokio::time::Instant::now() + timeout;
        // the body runs in the call's span (this poll is in it), so what it logs and the spans it
        // opens belong to the call
        let mut body = instance.into_body(cx.clone());
        let first = match std::panic::catch_unwind(AssertUnwindSafe(|| body.as_mut().poll(task))) {
            Ok(Poll::Ready(result)) => result,
            Ok(Poll::Pending) => {
                return self.later(
                    entry,
                    trail,
                    Now::Waiting(body),
                    deadline,
                    timeout,
                    may_retry,
                    arguments,
                    cache_key,
                    running,
                );
            }
            Err(payload) => {
                // a future that panicked may panic again when dropped; that is this call's too
                let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(body)));
                Err(panicked(def.name.as_ref(), &*payload))
            }
        };
        if self.retry_due(may_retry, &first, 1) {
            let Err(error) = first else {
                unreachable!("only a failure is tried again")
            };
            return self.later(
                entry,
                trail,
                Now::Failed(error),
                deadline,
                timeout,
                may_retry,
                arguments,
                cache_key,
                running,
            );
        }
        drop(running);
        if let Ok(v) = &first {
            self.keep(cache_key, v);
        }
        trail.attempts = 1;
        trail.settle(arguments.and_then(Again::made));
        let (exec, record) = self.conclude(&entry, cx, trail, first);
        InPlace::Done(exec, record)
    }

    #[allow(clippy::too_many_arguments)]
    #[cold]
    fn later(
        &self,
        entry: Arc<Entry>,
        trail: Trail,
        now: Now,
        deadline: tokio::time::Instant,
        timeout: Duration,
        may_retry: bool,
        arguments: Option<Again>,
        cache_key: Option<String>,
        running: Option<RunningCall>,
    ) -> InPlace {
        InPlace::Later(Box::new(Later {
            entry,
            trail,
            now,
            deadline,
            timeout,
            may_retry,
            arguments,
            cache_key,
            _running: running,
        }))
    }

    /// The rest of a call that [`Executor::run_in_place`] started: the waiting body on its own
    /// task under the call's deadline, the retries, the cache, the result and the record.
    pub(super) async fn resume(&self, later: Box<Later>, cx: &CallContext) -> Execution {
        let Later {
            entry,
            mut trail,
            now,
            deadline,
            timeout,
            may_retry,
            arguments,
            cache_key,
            _running,
        } = *later;
        let def = entry.definition();
        let mut unfinished = Unfinished::arm(self, cx, &def.name, def.safety, trail.started);
        let first = match now {
            Now::Waiting(body) => on_own_task(body, &entry, deadline, timeout).await,
            Now::Failed(error) => Err(error),
        };
        let (result, attempts) = match self.retry_due(may_retry, &first, 1) {
            false => (first, 1),
            true => {
                self.retried(
                    def,
                    cx,
                    timeout,
                    arguments.as_ref().map(Again::value),
                    first,
                )
                .await
            }
        };
        drop(_running);
        if let Ok(v) = &result {
            self.keep(cache_key, v);
        }
        trail.attempts = attempts;
        trail.settle(arguments.and_then(Again::made));
        let (exec, record) = self.conclude(&entry, cx, trail, result);
        unfinished.disarm();
        match record {
            None => exec,
            Some(record) => self.write_record(cx, exec, record).await,
        }
    }

    /// The result fitted for the model, the execution, and its record (returned when it still
    /// goes to a store that blocks).
    fn conclude(
        &self,
        entry: &Entry,
        cx: &CallContext,
        trail: Trail,
        result: Result<Value, ToolError>,
    ) -> (Execution, Option<Arc<AuditRecord>>) {
        let def = entry.definition();
        self.note_ran(def, trail.attempts);
        let (outcome, full) = match result {
            Ok(value) => self.success(value),
            Err(error) => (Outcome::error_from(error), None),
        };
        let mut exec = Execution {
            call_id: cx.call_id.clone(),
            tool: def.name.clone(),
            outcome,
            full,
            audit_failure: None,
            undo: None,
        };
        let record = self.record_in_place(cx, &def.name, def.safety, &mut exec, trail);
        (exec, record)
    }
}
