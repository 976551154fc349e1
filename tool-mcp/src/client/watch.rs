//! `notifications/tools/list_changed`: the server's tools listed again, and each imported tool
//! told what its server serves now. A tool the server no longer lists is refused (its calls are
//! never sent), and taken out of the executor the client follows; one whose definition changed is held against its pin (or refused as stale when
//! nothing was pinned yet); a new tool is registered in the executor the client follows
//! ([`McpClient::follow`](super::McpClient::follow)) as the first ones were, or, when it follows
//! none, announced in the log and registered by the next import.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ErrorData, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProtocolVersion, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use tool_runtime::executor::WeakExecutor;
use tool_runtime::progress::Progress;
use tool_runtime::store::Store;
use tool_runtime::{ErrorCode, ToolError};

use super::pin::{self, Guard};
use super::{ServerConfig, conn::Conn, oauth, relay::Relay};

/// What registering the tools a server adds later needs: what its first tools were imported
/// with, and the executor to register them in. Nothing here keeps the connection or the
/// executor alive, as both hold the [`Live`] that holds this.
pub(crate) struct Follow {
    name: String,
    config: ServerConfig,
    conn: Weak<Conn>,
    relay: Arc<Relay>,
    auth: oauth::Auth,
    store: Option<Arc<dyn Store>>,
    executor: Option<WeakExecutor>,
}

impl Follow {
    pub(crate) fn new(
        name: &str,
        config: &ServerConfig,
        conn: &Arc<Conn>,
        relay: &Arc<Relay>,
        auth: &oauth::Auth,
        store: Option<Arc<dyn Store>>,
    ) -> Self {
        Follow {
            name: name.to_owned(),
            config: config.clone(),
            conn: Arc::downgrade(conn),
            relay: relay.clone(),
            auth: auth.clone(),
            store,
            executor: None,
        }
    }
}

/// What the server lists now, and the guards of the imported tools it concerns.
#[derive(Default)]
pub(crate) struct Live {
    state: Mutex<LiveState>,
}

#[derive(Default)]
struct LiveState {
    /// The server's tools by its names for them, as last listed (`None` before the first list).
    listed: Option<HashMap<String, Tool>>,
    /// The guards of pinned imports, by the server's names.
    guards: HashMap<String, Vec<Arc<Guard>>>,
    /// How the tools the server adds are registered, once its first tools were imported.
    follow: Option<Follow>,
}

impl Live {
    fn state(&self) -> std::sync::MutexGuard<'_, LiveState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the server's first listing, unless a later one came first.
    pub(crate) fn listed(&self, tools: &[Tool]) {
        let map = tools.iter().map(|t| (t.name.to_string(), t.clone()));
        self.state().listed.get_or_insert_with(|| map.collect());
    }

    /// Keeps how the client's tools were imported, for the tools the server adds later.
    pub(crate) fn follow_from(&self, mut follow: Follow) {
        let mut state = self.state();
        follow.executor = state.follow.take().and_then(|f| f.executor);
        state.follow = Some(follow);
    }

    /// Registers the tools the server adds later in `executor`.
    pub(crate) fn follow(&self, executor: WeakExecutor) {
        match &mut self.state().follow {
            Some(follow) => follow.executor = Some(executor),
            None => tracing::warn!(
                "an MCP client follows an executor before any of its tools was imported:                  nothing is registered"
            ),
        }
    }

    /// Tells `guard` of the server's later listings of `tool`.
    pub(crate) fn watch(&self, tool: &str, guard: Arc<Guard>) {
        self.state()
            .guards
            .entry(tool.to_owned())
            .or_default()
            .push(guard);
    }

    /// The imported tools held now.
    pub(crate) fn held(&self) -> Vec<super::Held> {
        let state = self.state();
        let mut held: Vec<super::Held> = (state.guards.values().flatten())
            .filter_map(|g| g.held())
            .collect();
        held.sort_by(|a, b| a.served.tool.cmp(&b.served.tool));
        held
    }

    /// What the server serves now for each pinned import.
    pub(crate) fn served(&self) -> Vec<tool_runtime::store::ToolPin> {
        let state = self.state();
        (state.guards.values().flatten())
            .map(|g| g.served())
            .collect()
    }

    /// Refuses a call of `tool` when the server no longer lists it.
    pub(crate) fn check(&self, server: &str, tool: &str) -> Result<(), ToolError> {
        let state = self.state();
        match &state.listed {
            Some(listed) if !listed.contains_key(tool) => Err(ToolError::new(
                ErrorCode::NOT_FOUND,
                format!("the MCP server {server} no longer offers the tool {tool}"),
            )
            .retryable(false)
            .recover("do not retry; use another tool or tell the user it is gone")
            .with_detail("server", server.to_owned())
            .with_detail("tool", tool.to_owned())),
            _ => Ok(()),
        }
    }

    /// The server's tools listed again; answers those it did not list before, and the names of
    /// those it no longer lists.
    pub(crate) fn relisted(&self, server: &str, tools: Vec<Tool>) -> (Vec<Tool>, Vec<String>) {
        let mut state = self.state();
        let before = state.listed.take().unwrap_or_default();
        let mut added = Vec::new();
        for tool in &tools {
            let name = tool.name.as_ref();
            if !before.contains_key(name) {
                added.push(tool.clone());
            }
            if let Some(guards) = state.guards.get(name) {
                let form = pin::pinned_form(tool);
                let hash = pin::hash_of(&form);
                for guard in guards {
                    guard.served_now(form.clone(), hash.clone());
                }
            }
        }
        let mut removed = Vec::new();
        for name in before.keys() {
            if !tools.iter().any(|t| t.name.as_ref() == name.as_str()) {
                tracing::warn!(
                    server = %server, tool = %name,
                    "the MCP server no longer offers this tool; its calls are refused"
                );
                removed.push(name.clone());
            }
        }
        state.listed = Some(tools.into_iter().map(|t| (t.name.to_string(), t)).collect());
        (added, removed)
    }

    /// Registers `added`, the tools the server lists that it did not list before, in the
    /// executor the client follows, as its first tools were imported, and takes out the tools
    /// it no longer lists (`removed`), so that neither the model nor a client is offered them;
    /// on the blocking pool, as pins are read from the store.
    pub(crate) async fn register(
        self: &Arc<Self>,
        server: &str,
        added: Vec<Tool>,
        removed: Vec<String>,
    ) {
        if added.is_empty() && removed.is_empty() {
            return;
        }
        // what the import needs, taken while the state is locked once; none of it is kept
        let target = self.state().follow.as_ref().and_then(|f| {
            Some((
                f.executor.as_ref()?.upgrade()?,
                f.conn.upgrade()?,
                f.name.clone(),
                f.config.clone(),
                f.relay.clone(),
                f.auth.clone(),
                f.store.clone(),
            ))
        });
        let Some((executor, conn, name, config, relay, auth, store)) = target else {
            for tool in &added {
                tracing::warn!(
                    server = %server, tool = %tool.name,
                    "the MCP server offers a new tool; it is registered by the next import"
                );
            }
            return;
        };
        let live = self.clone();
        let registered = tokio::task::spawn_blocking(move || {
            let parts = super::Parts {
                name: &name,
                config: &config,
                conn: &conn,
                live: &live,
                relay: &relay,
                auth: &auth,
            };
            let prefix = config.prefix(&name);
            let imported = executor.update_tools(|set| {
                for tool in &removed {
                    set.remove(&format!("{prefix}__{tool}"));
                }
                parts.import(&added, set, store)
            });
            (name, imported)
        })
        .await;
        match registered {
            Ok((name, Ok(imported))) => {
                for tool in &imported.registered {
                    tracing::info!(server = %name, tool = %tool, "a tool the MCP server added is registered");
                }
                for refused in &imported.refused {
                    tracing::warn!(
                        server = %name, tool = %refused.tool,
                        "a tool the MCP server added is not registered: {}", refused.reason
                    );
                }
                for flagged in &imported.flagged {
                    let s = &flagged.suspicion;
                    tracing::warn!(
                        server = %name, tool = %flagged.tool, at = %s.pointer,
                        "a tool the MCP server added reads like {}: {:?}", s.kind, s.phrase
                    );
                }
            }
            Ok((name, Err(e))) => tracing::warn!(
                server = %name,
                "the tools the MCP server added are not registered: {e}"
            ),
            Err(e) => tracing::warn!(
                server = %server,
                "the tools the MCP server added are not registered: {e}"
            ),
        }
    }
}

impl Watcher {
    /// The server's tools listed again: each imported tool told, the new ones registered.
    pub(crate) async fn relisted(&self, tools: Vec<Tool>) {
        let (added, removed) = self.live.relisted(&self.server, tools);
        self.live.register(&self.server, added, removed).await;
    }
}

/// The client's handler of the server's notifications.
#[derive(Clone)]
pub(crate) struct Watcher {
    pub(crate) server: Arc<str>,
    pub(crate) live: Arc<Live>,
    pub(crate) relay: Arc<super::relay::Relay>,
}

impl ClientHandler for Watcher {
    /// Form elicitation is declared: a server's questions go to the person behind the call
    /// ([`super::relay`]), and are declined when nobody can be asked.
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        // the connection starts with `initialize`, so it names the newest revision that has it
        ClientConfig::new(
            capabilities,
            Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let mut progress = Progress::new(params.progress);
        progress.total = params.total;
        progress.message = params.message;
        self.relay.progress(&params.progress_token, progress);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.relay.elicit(&self.server, request).await)
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        match context.peer.list_all_tools().await {
            Ok(tools) => self.relisted(tools).await,
            Err(e) => tracing::warn!(
                server = %self.server,
                "the MCP server changed its tools but did not list them: {e}"
            ),
        }
    }
}
