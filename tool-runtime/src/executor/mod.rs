//! The executor: runs hydrated tool instances under the human-centred policy, and records them.
//!
//! ```text
//! executor.run(instance, cx)
//!   policy      allow/deny lists; category → run now | confirm (+ first-time gate)
//!   confirm     ConfirmationHandler: yes | no(reason) | edit(args → re-validated) | timeout | defer
//!               defer → PendingOperation in the Store, approved/denied by id later, runs at
//!               most once (a crash after approval leaves it in doubt: listed, never re-run)
//!   run         cache (read-only) → rate limits → attempt under a timeout, panics caught
//!               (polled in place first; a body that waits goes on on its own task)
//!               → retries with backoff (read-only / idempotent / opted-in tools)
//!   after       undo journal (reversible tools) → result fitted for the model
//!   record      one AuditRecord per call → sinks + store; `execute_tool {name}` tracing span
//! ```
//!
//! What goes back to the model is an [`Outcome`]: success, error, denied (the user's choice, not
//! an error) or pending. Nothing in a call's arguments or the model's output takes part in a
//! decision: approval comes only from the [`ConfirmationHandler`] or from
//! [`Executor::approve`], called by the application on a person's behalf.

pub(crate) mod audit;
mod builder;
mod cache;
mod chain;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;
mod config;
mod confirm;
mod decision;
mod engine;
mod format;
mod in_place;
mod injection;
mod limit;
mod pending;
pub mod policy;
mod record;
mod run;
mod start;
mod store_call;
mod suspicion;
mod undo;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;

pub use crate::records::{
    ActivityQuery, AuditArguments, AuditRecord, Change, ChangeEntry, Decider, Decision, Execution,
    FirstUse, Outcome, Preview, SAMPLE_CHARS, Status, Undo, Window,
};
pub use audit::{
    AuditSink, MIN_SCRUBBED_CHARS, MemoryAuditSink, REDACTED, SUMMARY_CHARS, Secrets,
    is_secret_key, redact, redact_shapes, summarize,
};
pub use builder::{BuildError, ExecutorBuilder};
pub use cache::{cache_key, write_canonical};
pub use chain::{ChainResult, ChainStep, MAX_CHAIN_STEPS, REF_KEY};
pub use config::{
    AuditMode, CacheConfig, ConfirmationMode, DEFAULT_REDIS_PREFIX, ExecutorConfig, McpConfig,
    RateLimitConfig, RetryConfig, StoreConfig, StoreKind,
};
#[cfg(feature = "config")]
#[cfg_attr(docsrs, doc(cfg(feature = "config")))]
pub use config::{ConfigError, ENV_PREFIX};
pub use confirm::{
    Answer, ApproveAll, ConfirmationHandler, ConfirmationRequest, ConfirmationRoute, Deferred,
    DenyAll, FnConfirmer,
};
#[cfg(feature = "terminal")]
#[cfg_attr(docsrs, doc(cfg(feature = "terminal")))]
pub use confirm::{TerminalConfirmer, read_stdin_line};
pub use format::{FormatFields, RESPONSE_FORMAT_ARG, ResponseFormat, fit};
pub use injection::POTENTIAL_INJECTION;
pub use limit::RateLimiter;
pub use suspicion::{Suspicion, find_suspicious, find_suspicious_in_object, find_suspicious_text};
pub use undo::{Reversible, UndoPlanner};

use crate::error::ToolError;
use crate::store::Store;
use crate::tool::CallContext;
use crate::toolset::ToolSet;

/// Describes the change a modifying call will make, for the confirmation preview: validated
/// arguments and the call's context in, the [`Change`] out (what is added, removed, replaced;
/// [`Change::json`] for what fits none of those).
pub type Previewer =
    Arc<dyn Fn(Value, CallContext) -> BoxFuture<'static, Result<Change, ToolError>> + Send + Sync>;

/// Runs tool calls under policy. Cheap to clone; clones share everything (store, rate limits,
/// cache, first-time gates).
///
/// The executor is the unit of shared state: build one per application and clone it into every
/// task, so that rate limits (per tool and per category) hold across the whole process. Two
/// executors built separately do not share a limiter unless given the same one
/// ([`ExecutorBuilder::rate_limiter`], [`RateLimiter::global`]).
///
/// The async methods ([`Executor::call`], [`Executor::run`], [`Executor::run_batch`],
/// [`Executor::chain`], [`Executor::undo`], [`Executor::approve`]) never hold up the runtime on
/// the store: a store that may block ([`Store::blocks`]: SQLite, Redis) is called on tokio's
/// blocking pool, and each store call is awaited before the call goes on, so a decision is
/// stored before the tool runs and the audit record before the execution is returned. The
/// synchronous methods ([`Executor::pending`], [`Executor::in_doubt`], [`Executor::deny`],
/// [`Executor::abandon`], [`Executor::activity`], ...) call the store on the calling thread:
/// from async code, call them through `tokio::task::spawn_blocking`. Either way a store that
/// panics gives an error, not a crashed task.
#[derive(Clone)]
pub struct Executor {
    inner: Arc<Inner>,
    /// Who asks a person; per handle, so that one connection (an MCP client that can ask its
    /// user) can confirm its own calls while sharing everything else.
    confirmer: Arc<dyn ConfirmationHandler>,
}

/// An [`Executor`] that is not kept alive by this handle ([`Executor::downgrade`]).
#[derive(Clone)]
pub struct WeakExecutor {
    inner: std::sync::Weak<Inner>,
    confirmer: Arc<dyn ConfirmationHandler>,
}

impl std::fmt::Debug for WeakExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakExecutor").finish_non_exhaustive()
    }
}

impl WeakExecutor {
    /// The executor, while any other handle of it is alive.
    pub fn upgrade(&self) -> Option<Executor> {
        Some(Executor {
            inner: self.inner.upgrade()?,
            confirmer: self.confirmer.clone(),
        })
    }
}

struct Inner {
    /// Replaced whole by [`Executor::update_tools`]; a call keeps the set it started with.
    toolset: arc_swap::ArcSwap<ToolSet>,
    /// Serialises [`Executor::update_tools`], so that no update is lost to a concurrent one.
    updating: Mutex<()>,
    /// The tool set's generation, raised by each update, for the surfaces that list the tools.
    generation: tokio::sync::watch::Sender<u64>,
    config: ExecutorConfig,
    store: Arc<dyn Store>,
    sinks: Vec<Arc<dyn AuditSink>>,
    limiter: RateLimiter,
    cache: cache::TtlCache,
    undo: HashMap<String, UndoPlanner>,
    previews: HashMap<String, Previewer>,
    /// Audit records also go to the store.
    store_audit: bool,
    /// First-time gates passed in this process: (session, tool).
    gates: Mutex<HashSet<(String, String)>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("toolset", &self.inner.toolset.load())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// Starts building an executor for `toolset`.
    pub fn builder(toolset: ToolSet) -> ExecutorBuilder {
        ExecutorBuilder::new(toolset)
    }

    /// The same executor (store, tools, rate limits, cache, first-time gates, audit) asking
    /// `handler` for the confirmations of the calls made through the returned handle: for a
    /// surface whose own user can answer, such as an MCP client that declared elicitation. The
    /// operator's `confirmation = "deferred"` still wins: then calls are parked as pending
    /// operations whatever the handler.
    pub fn with_confirmation(&self, handler: Arc<dyn ConfirmationHandler>) -> Executor {
        if self.inner.config.confirmation == Some(ConfirmationMode::Deferred) {
            return self.clone();
        }
        Executor {
            inner: self.inner.clone(),
            confirmer: handler,
        }
    }

    /// The tools this executor runs: the set as it is now. A later [`Executor::update_tools`]
    /// does not change the returned set, only what the next call of this method returns.
    pub fn toolset(&self) -> Arc<ToolSet> {
        self.inner.toolset.load_full()
    }

    /// Changes the tools this executor runs, for every handle of it: `change` gets a copy of the
    /// current set (registering or removing tools), and the result replaces it if it passes the
    /// checks [`ExecutorBuilder::build`] makes (state, undo planners of reversible tools).
    /// Calls already started keep the set they started with; the next calls, listings and
    /// [`Executor::tools_changed`] see the new one. For tools that appear while the process
    /// runs, such as those an MCP server adds and announces with `tools/list_changed`.
    ///
    /// When the checks fail nothing changes and the error says why.
    pub fn update_tools<R>(&self, change: impl FnOnce(&mut ToolSet) -> R) -> Result<R, BuildError> {
        let _one_at_a_time = self
            .inner
            .updating
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut set = ToolSet::clone(&self.inner.toolset.load());
        let out = change(&mut set);
        builder::check_tools(&set, &self.inner.undo, &self.inner.previews)?;
        self.inner.toolset.store(Arc::new(set));
        self.inner.generation.send_modify(|g| *g += 1);
        Ok(out)
    }

    /// A handle that does not keep the executor alive: for what the executor's own tools hold
    /// (an imported MCP server that registers the tools it adds later), which would otherwise
    /// keep each other alive for good.
    pub fn downgrade(&self) -> WeakExecutor {
        WeakExecutor {
            inner: Arc::downgrade(&self.inner),
            confirmer: self.confirmer.clone(),
        }
    }

    /// A receiver that is told each time [`Executor::update_tools`] changes the tools: a surface
    /// that lists them (an MCP server's `tools/list_changed`, a page) waits on it. Its value is
    /// the number of updates so far.
    pub fn tools_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.generation.subscribe()
    }

    /// The configuration.
    pub fn config(&self) -> &ExecutorConfig {
        &self.inner.config
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }
}
