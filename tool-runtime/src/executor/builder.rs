//! Building an [`Executor`]: the toolset plus configuration, store, confirmation handler, audit
//! sinks, rate limiter, undo planners and previewers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::store::{InverseCall, Store, StoreError};
use crate::tool::{CallContext, Tool};
use crate::toolset::{RegistrationError, ToolSet};

use super::config::ConfirmationMode;
use super::confirm::{ConfirmationHandler, Deferred};
use super::undo::{Reversible, UndoPlanner, planner_of};
use super::{
    AuditSink, Change, Executor, ExecutorConfig, Inner, Previewer, RateLimiter, cache::TtlCache,
};

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
    // the message names the terminal confirmer only in builds that have it
    #[cfg_attr(
        feature = "terminal",
        error(
            "the configuration sets confirmation = \"inline\", but no confirmation handler was \
             given; give one with ExecutorBuilder::confirmation (TerminalConfirmer::stdio() asks \
             in the terminal), or set confirmation = \"deferred\" to park calls as pending \
             operations"
        )
    )]
    #[cfg_attr(
        not(feature = "terminal"),
        error(
            "the configuration sets confirmation = \"inline\", but no confirmation handler was \
             given; give one with ExecutorBuilder::confirmation (a ConfirmationHandler, such as \
             an FnConfirmer; tool-runtime's `terminal` feature adds TerminalConfirmer, which asks \
             in the terminal), or set confirmation = \"deferred\" to park calls as pending \
             operations"
        )
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

    /// Registers how the typed tool `T` is undone, from its own argument and output types: the
    /// tool is named by its type, so a renamed or removed tool is a compile error, not a
    /// planner that silently never runs. Name the inverse the same way, with
    /// [`InverseCall::to`].
    ///
    /// ```ignore
    /// builder.undo::<create_note>(|_args, note| Some(InverseCall::to::<delete_note>(json!({"id": note.id}))))
    /// ```
    ///
    /// The output reaches the planner as the journal keeps it (JSON), read back into
    /// `T::Output`; an output that does not read back plans no undo for that call.
    pub fn undo<T: Tool>(
        self,
        planner: impl Fn(&T::Args, &T::Output) -> Option<InverseCall> + Send + Sync + 'static,
    ) -> Self
    where
        T::Output: DeserializeOwned,
    {
        self.undo_with(T::NAME, move |args: &Value, output: &Value| {
            let args: T::Args = serde_json::from_value(args.clone()).ok()?;
            let output: T::Output = serde_json::from_value(output.clone()).ok()?;
            planner(&args, &output)
        })
    }

    /// Registers how the tool `name` is undone: arguments and result in, the inverse call out.
    /// For tools defined at run time; a typed tool has [`ExecutorBuilder::undo`].
    pub fn undo_with(
        mut self,
        name: impl Into<String>,
        planner: impl Fn(&Value, &Value) -> Option<InverseCall> + Send + Sync + 'static,
    ) -> Self {
        self.undo.insert(name.into(), Arc::new(planner));
        self
    }

    /// Registers the change preview shown when the typed tool `T` asks for confirmation, from its
    /// own argument type (the arguments were validated before a preview is made). The tool is
    /// named by its type, so a renamed or removed tool is a compile error.
    ///
    /// The previewer describes the change as a [`Change`] (added, removed and replaced values
    /// with a label, counts of what else is touched, notes; [`Change::json`] for the rest), and
    /// each surface draws it: lines in the terminal box, `tools pending` and the MCP
    /// elicitation message, a marked diff on the approvals page.
    pub fn preview<T: Tool>(
        self,
        previewer: impl Fn(T::Args, CallContext) -> BoxFuture<'static, Result<Change, ToolError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        let typed: Previewer =
            Arc::new(
                move |args: Value, cx| match serde_json::from_value::<T::Args>(args) {
                    Ok(args) => previewer(args, cx),
                    Err(e) => futures::future::ready(Err(ToolError::execution(format!(
                        "the preview of {:?} could not read its arguments: {e}",
                        T::NAME
                    ))))
                    .boxed(),
                },
            );
        self.preview_with(T::NAME, typed)
    }

    /// Registers the change preview shown when `name` asks for confirmation. For tools defined
    /// at run time; a typed tool has [`ExecutorBuilder::preview`].
    pub fn preview_with(mut self, name: impl Into<String>, previewer: Previewer) -> Self {
        self.previews.insert(name.into(), previewer);
        self
    }

    /// Builds the executor.
    pub fn build(self) -> Result<Executor, BuildError> {
        check_tools(&self.toolset, &self.undo, &self.previews)?;
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
                toolset: arc_swap::ArcSwap::from_pointee(self.toolset),
                updating: Mutex::new(()),
                generation: tokio::sync::watch::Sender::new(0),
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

/// What an executor's tools must satisfy, at build and at each [`Executor::update_tools`]: the
/// state their handlers read, and every undo planner and previewer naming a registered tool.
pub(crate) fn check_tools(
    toolset: &ToolSet,
    undo: &HashMap<String, UndoPlanner>,
    previews: &HashMap<String, Previewer>,
) -> Result<(), BuildError> {
    toolset.check_state()?;
    for (what, names) in [
        ("an undo planner", undo.keys().collect::<Vec<_>>()),
        ("a previewer", previews.keys().collect()),
    ] {
        if let Some(n) = names.into_iter().find(|n| toolset.get(n).is_none()) {
            return Err(BuildError::UnknownTool {
                what,
                tool: n.clone(),
            });
        }
    }
    // the confirmation says "this action can be undone" from the planner's presence; a
    // reversible flag without a planner is a promise nobody could keep
    if let Some(def) = toolset
        .definitions()
        .find(|d| d.reversible && !undo.contains_key(d.name.as_ref()))
    {
        return Err(BuildError::NoUndo {
            tool: def.name.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::StoreConfig;

    #[test]
    fn the_missing_handler_error_names_what_this_build_has() {
        let mut config = ExecutorConfig {
            confirmation: Some(ConfirmationMode::Inline),
            ..Default::default()
        };
        config.store = StoreConfig::memory();
        let err = ExecutorBuilder::new(ToolSet::new())
            .config(config)
            .build()
            .unwrap_err();
        assert!(matches!(err, BuildError::NoInlineHandler), "{err:?}");
        let message = err.to_string();
        assert!(
            message.contains("ExecutorBuilder::confirmation"),
            "{message}"
        );
        assert_eq!(
            message.contains("TerminalConfirmer::stdio()"),
            cfg!(feature = "terminal"),
            "{message}"
        );
        assert_eq!(
            message.contains("`terminal` feature"),
            cfg!(not(feature = "terminal")),
            "{message}"
        );
    }
}
