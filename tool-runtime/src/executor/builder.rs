//! Building an [`Executor`]: the toolset plus configuration, store, confirmation handler, audit
//! sinks, rate limiter, undo planners and previewers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::store::{InverseCall, MemoryStore, SqliteStore, Store, StoreError};
use crate::toolset::{RegistrationError, ToolSet};

use super::confirm::{ConfirmationHandler, Deferred};
use super::undo::{Reversible, UndoPlanner, planner_of};
use super::{AuditSink, Executor, ExecutorConfig, Inner, Previewer, RateLimiter, cache::TtlCache};

/// Why an executor could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A tool's injected state is missing.
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    /// An undo planner or previewer names a tool that is not in the toolset.
    #[error("{what} is registered for {tool:?}, which is not in the toolset")]
    UnknownTool {
        /// What was registered.
        what: &'static str,
        /// The tool.
        tool: String,
    },
}

/// Builds an [`Executor`]. Defaults: [`ExecutorConfig::default`], the store the configuration
/// names (SQLite at `store.path`, in memory when unset), and, without a confirmation handler,
/// [`Deferred`]: calls that need a person become pending operations rather than run unasked.
pub struct ExecutorBuilder {
    toolset: ToolSet,
    config: ExecutorConfig,
    store: Option<Arc<dyn Store>>,
    confirmer: Option<Arc<dyn ConfirmationHandler>>,
    sinks: Vec<Arc<dyn AuditSink>>,
    limiter: Option<RateLimiter>,
    undo: HashMap<String, UndoPlanner>,
    previews: HashMap<String, Previewer>,
    store_audit: bool,
}

impl ExecutorBuilder {
    pub(crate) fn new(toolset: ToolSet) -> Self {
        ExecutorBuilder {
            toolset,
            config: ExecutorConfig::default(),
            store: None,
            confirmer: None,
            sinks: Vec::new(),
            limiter: None,
            undo: HashMap::new(),
            previews: HashMap::new(),
            store_audit: true,
        }
    }

    /// Sets the configuration.
    pub fn config(mut self, config: ExecutorConfig) -> Self {
        self.config = config;
        self
    }

    /// Uses this store instead of the one the configuration names.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Sets who asks a person.
    pub fn confirmation(mut self, handler: impl ConfirmationHandler + 'static) -> Self {
        self.confirmer = Some(Arc::new(handler));
        self
    }

    /// Sets who asks a person, shared.
    pub fn confirmation_shared(mut self, handler: Arc<dyn ConfirmationHandler>) -> Self {
        self.confirmer = Some(handler);
        self
    }

    /// Adds an audit sink (records also go to the store, whose query is the activity feed).
    pub fn audit_sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// Whether audit records also go to the store (default `true`: the store's records are the
    /// activity feed). Turn it off when a sink is the only audit trail wanted.
    pub fn store_audit(mut self, enabled: bool) -> Self {
        self.store_audit = enabled;
        self
    }

    /// Shares a rate limiter with other executors ([`RateLimiter::global`] for the whole
    /// process). By default each built executor, and all its clones, share one of their own.
    pub fn rate_limiter(mut self, limiter: RateLimiter) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// Registers how the typed tool `T` is undone.
    pub fn reversible<T: Reversible>(mut self) -> Self {
        self.undo
            .insert(T::definition().name.to_string(), planner_of::<T>());
        self
    }

    /// Registers how the tool `name` is undone: arguments and result in, the inverse call out.
    pub fn undo_with(
        mut self,
        name: impl Into<String>,
        planner: impl Fn(&Value, &Value) -> Option<InverseCall> + Send + Sync + 'static,
    ) -> Self {
        self.undo.insert(name.into(), Arc::new(planner));
        self
    }

    /// Registers the change preview shown when `name` asks for confirmation.
    pub fn preview_with(mut self, name: impl Into<String>, previewer: Previewer) -> Self {
        self.previews.insert(name.into(), previewer);
        self
    }

    /// Builds the executor.
    pub fn build(self) -> Result<Executor, BuildError> {
        self.toolset.check_state()?;
        for (what, names) in [
            ("an undo planner", self.undo.keys().collect::<Vec<_>>()),
            ("a previewer", self.previews.keys().collect()),
        ] {
            if let Some(n) = names.into_iter().find(|n| self.toolset.get(n).is_none()) {
                return Err(BuildError::UnknownTool {
                    what,
                    tool: n.clone(),
                });
            }
        }
        let store: Arc<dyn Store> = match self.store {
            Some(s) => s,
            None => match &self.config.store.path {
                Some(p) => Arc::new(SqliteStore::open(p)?),
                None => Arc::new(MemoryStore::new()),
            },
        };
        Ok(Executor {
            inner: Arc::new(Inner {
                toolset: self.toolset,
                config: self.config,
                store,
                confirmer: self.confirmer.unwrap_or_else(|| Arc::new(Deferred)),
                sinks: self.sinks,
                limiter: self.limiter.unwrap_or_default(),
                cache: TtlCache::default(),
                undo: self.undo,
                previews: self.previews,
                store_audit: self.store_audit,
                gates: Mutex::new(Default::default()),
            }),
        })
    }
}
