//! Building an [`Executor`]: the toolset plus configuration, store, confirmation handler, audit
//! sinks, rate limiter, undo planners and previewers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::store::{InverseCall, Store, StoreError};
use crate::toolset::{RegistrationError, ToolSet};

use super::config::ConfirmationMode;
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
    /// A tool is declared reversible but nothing says how to undo it: its confirmation would
    /// promise an undo that `Executor::undo` cannot perform.
    #[error(
        "the tool {tool:?} is declared reversible, but no undo is registered for it; register one \
         with ExecutorBuilder::reversible::<T>() or ExecutorBuilder::undo_with({tool:?}, ..), \
         or drop the tool's `reversible` flag"
    )]
    NoUndo {
        /// The tool.
        tool: String,
    },
    /// The configuration asks for inline confirmation, but no handler was given to answer.
    #[error(
        "the configuration sets confirmation = \"inline\", but no confirmation handler was given; \
         give one with ExecutorBuilder::confirmation (TerminalConfirmer::stdio() asks in the \
         terminal), or set confirmation = \"deferred\" to park calls as pending operations"
    )]
    NoInlineHandler,
}

/// Builds an [`Executor`]. Defaults: [`ExecutorConfig::default`], the store the configuration
/// names ([`crate::executor::StoreConfig`]: SQLite at `store.path` by default, Redis at
/// `store.url`, or memory), and, without a confirmation handler,
/// [`Deferred`]: calls that need a person become pending operations rather than run unasked.
///
/// The configuration's `confirmation` is honoured: `"deferred"` parks every call that needs a
/// person whatever handler was given, and `"inline"` requires a handler
/// ([`BuildError::NoInlineHandler`] otherwise).
///
/// Rate limits: the executor is the unit. Its clones (cheap: one `Arc`) share one limiter, as
/// they share the store, cache and gates, so an application that clones one executor into every
/// task has per-tool and per-category limits across the whole process. Executors built
/// separately have separate limiters unless given the same one with
/// [`ExecutorBuilder::rate_limiter`] ([`RateLimiter::global`] for one budget per process).
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
        // the confirmation says "this action can be undone" from the planner's presence; a
        // reversible flag without a planner is a promise nobody could keep
        if let Some(def) = self
            .toolset
            .definitions()
            .find(|d| d.reversible && !self.undo.contains_key(d.name.as_ref()))
        {
            return Err(BuildError::NoUndo {
                tool: def.name.to_string(),
            });
        }
        let confirmer: Arc<dyn ConfirmationHandler> =
            match (self.config.confirmation, self.confirmer) {
                // the operator's switch wins over the program's handler
                (Some(ConfirmationMode::Deferred), _) => Arc::new(Deferred),
                (Some(ConfirmationMode::Inline), None) => return Err(BuildError::NoInlineHandler),
                (_, Some(handler)) => handler,
                (None, None) => Arc::new(Deferred),
            };
        let store: Arc<dyn Store> = match self.store {
            Some(s) => s,
            None => self.config.store.open()?,
        };
        Ok(Executor {
            confirmer,
            inner: Arc::new(Inner {
                toolset: self.toolset,
                config: self.config,
                store,
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
