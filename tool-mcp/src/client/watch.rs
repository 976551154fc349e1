//! `notifications/tools/list_changed`: the server's tools listed again, and each imported tool
//! told what its server serves now. A tool the server no longer lists is refused (its calls are
//! never sent); one whose definition changed is held against its pin (or refused as stale when
//! nothing was pinned yet); a new tool is announced in the log, and registered by the next
//! import, since the tool set an executor runs is fixed when it is built.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ErrorData, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProtocolVersion, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use tool_runtime::progress::Progress;
use tool_runtime::{ErrorCode, ToolError};

use super::pin::{self, Guard};

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

    /// The server's tools listed again.
    pub(crate) fn relisted(&self, server: &str, tools: Vec<Tool>) {
        let mut state = self.state();
        let before = state.listed.take().unwrap_or_default();
        for tool in &tools {
            let name = tool.name.as_ref();
            if !before.contains_key(name) {
                tracing::warn!(
                    server = %server, tool = %name,
                    "the MCP server offers a new tool; it is registered by the next import"
                );
            }
            if let Some(guards) = state.guards.get(name) {
                let form = pin::pinned_form(tool);
                let hash = pin::hash_of(&form);
                for guard in guards {
                    guard.served_now(form.clone(), hash.clone());
                }
            }
        }
        for name in before.keys() {
            if !tools.iter().any(|t| t.name.as_ref() == name.as_str()) {
                tracing::warn!(
                    server = %server, tool = %name,
                    "the MCP server no longer offers this tool; its calls are refused"
                );
            }
        }
        state.listed = Some(tools.into_iter().map(|t| (t.name.to_string(), t)).collect());
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
            Ok(tools) => self.live.relisted(&self.server, tools),
            Err(e) => tracing::warn!(
                server = %self.server,
                "the MCP server changed its tools but did not list them: {e}"
            ),
        }
    }
}
