//! The `tools/list` entries: the MCP declarations of the executor's tools, made once per version
//! of its tool set, and `notifications/tools/list_changed` sent to a connected client when
//! [`Executor::update_tools`] changes that set (an imported server that added a tool, say).

use std::sync::{Arc, Mutex};

use rmcp::model::Tool;
use rmcp::service::{Peer, RoleServer};
use tool_providers::codec::mcp::Mcp;
use tool_providers::codec::{Codec, CodecError};
use tool_runtime::Executor;
use tool_runtime::definition::ToolDefinition;

use super::{McpServerError, not_run};

/// How often a connection's watch of the tool set looks whether the connection has ended.
const CLOSED_CHECK: std::time::Duration = std::time::Duration::from_secs(30);

/// The declarations of one version of the tool set, shared by every session of a server.
pub(crate) struct Listed {
    executor: Executor,
    /// The tool set's generation, read on every listing without subscribing again.
    generation: tokio::sync::watch::Receiver<u64>,
    /// The tool set's generation the declarations were made for, and the declarations.
    made: Mutex<(u64, Arc<Vec<Tool>>)>,
}

impl Listed {
    /// Declares every tool of `executor`; a definition without a valid MCP declaration fails.
    pub(crate) fn new(executor: &Executor) -> Result<Self, McpServerError> {
        let changed = executor.tools_changed();
        let generation = *changed.borrow();
        let tools = (executor.toolset().definitions())
            .map(declare)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Listed {
            executor: executor.clone(),
            generation: changed,
            made: Mutex::new((generation, Arc::new(tools))),
        })
    }

    /// The declarations of the tool set as it is now. After an update, a tool that cannot be
    /// declared is left out with a warning, as the server cannot refuse to start any more.
    pub(crate) fn tools(&self) -> Arc<Vec<Tool>> {
        let generation = *self.generation.borrow();
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if made.0 != generation {
            let tools = (self.executor.toolset().definitions())
                .filter_map(|def| {
                    declare(def)
                        .inspect_err(|e| tracing::warn!("a tool is not listed over MCP: {e}"))
                        .ok()
                })
                .collect();
            *made = (generation, Arc::new(tools));
        }
        made.1.clone()
    }

    /// Tells `peer` each time the tool set changes, until its connection ends (looked at every
    /// [`CLOSED_CHECK`] while the tools stay as they are).
    pub(crate) fn notify(&self, peer: Peer<RoleServer>) {
        let mut changed = self.executor.tools_changed();
        changed.mark_unchanged();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    result = changed.changed() => {
                        if result.is_err() || peer.notify_tool_list_changed().await.is_err() {
                            break;
                        }
                    }
                    () = tokio::time::sleep(CLOSED_CHECK) => {}
                }
                if peer.is_transport_closed() {
                    break;
                }
            }
        });
    }
}

/// The MCP declaration of one tool, as `tools/list` answers it.
fn declare(def: &ToolDefinition) -> Result<Tool, McpServerError> {
    let fail = |reason: String| McpServerError::Declaration {
        name: def.name.to_string(),
        reason,
    };
    let mut declaration = Mcp
        .declare(def)
        .map_err(|e: CodecError| fail(e.to_string()))?;
    if let Some(own) = declaration.get("outputSchema") {
        declaration["outputSchema"] = not_run::declared(own);
    }
    serde_json::from_value::<Tool>(declaration).map_err(|e| fail(e.to_string()))
}
