//! How the executor calls its store: a store that may block ([`Store::blocks`]: SQLite waiting
//! for another process's lock, a Redis round trip) is called on tokio's blocking pool, so that
//! the call's task waits without holding the runtime's thread; the in-memory store is called in
//! place, since a thread hop would cost more than its answer. The audit record of a call goes
//! first to [`Store::try_append_audit`] in place, which a store that blocks answers only when
//! it can write at once (SQLite: a read-only call's record appended to its spool, any other with
//! nobody else writing), and to the blocking pool otherwise.
//! Either way a store that panics gives a [`StoreError`], and the executor's usual handling of a
//! failed store applies (a record reported as lost, a call refused, an approval left pending),
//! instead of a crashed task.
//!
//! Each call is awaited before the executor goes on, so the order the executor relies on holds:
//! a decision is stored before the tool runs, the journal entry and the audit record are written
//! before the execution is returned.

use std::panic::AssertUnwindSafe;

use crate::store::{Store, StoreError};

use super::Executor;
use super::engine::panic_text;

impl Executor {
    /// Calls the store with `f` without holding up the runtime (see the module docs). `what`
    /// names the call in the error of a store that panicked.
    ///
    /// The blocking call runs to its end even if the returned future is dropped: a store call
    /// is never cut off halfway, and what it changed stays changed, as when a process stops
    /// after it.
    pub(crate) async fn with_store<T, F>(&self, what: &'static str, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    {
        let store = &self.inner.store;
        if !store.blocks() {
            return self.store_now(what, f);
        }
        // polled outside a tokio runtime, there is no pool to use
        let Ok(pool) = tokio::runtime::Handle::try_current() else {
            return self.store_now(what, f);
        };
        let store = store.clone();
        match pool.spawn_blocking(move || f(&*store)).await {
            Ok(result) => result,
            Err(join) if join.is_panic() => Err(panicked(what, &*join.into_panic())),
            Err(_) => Err(StoreError::unavailable(format!(
                "the store call {what} was cancelled: the runtime is shutting down"
            ))),
        }
    }

    /// Calls the store with `f` on this thread: for the executor's synchronous methods, and for
    /// stores that do not block.
    pub(crate) fn store_now<T>(
        &self,
        what: &'static str,
        f: impl FnOnce(&dyn Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let store = &*self.inner.store;
        // the stores keep their state consistent across a panic (every change is one statement
        // or one insert under a lock that tolerates poisoning), so going on after one is safe
        std::panic::catch_unwind(AssertUnwindSafe(|| f(store)))
            .unwrap_or_else(|payload| Err(panicked(what, &*payload)))
    }
}

/// The error of a store call that panicked: it needs a person (a bug in the store), so it is not
/// retryable.
fn panicked(what: &str, payload: &(dyn std::any::Any + Send)) -> StoreError {
    let text = panic_text(payload);
    tracing::error!(store_call = what, panic = %text, "the store panicked");
    StoreError::new(format!(
        "the store call {what} failed unexpectedly (the store panicked: {text})"
    ))
}
