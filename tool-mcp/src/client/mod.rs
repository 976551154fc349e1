//! Tools from other people's MCP servers, under this project's policy.
//!
//! [`McpClient::connect`] starts a server (stdio: a child process this client owns, stopped when
//! the client is dropped, its stderr passed to `tracing`) or reaches one (streamable HTTP),
//! initializes, and lists every tool, page by page. [`McpClient::import`] registers each of them
//! in a [`ToolSet`] as a dynamic tool named `<server>__<tool>`:
//!
//! - its `inputSchema` is checked and compiled once, as for any dynamic tool, and every call is
//!   validated against it here, so a model's bad call never reaches the server; a schema that
//!   cannot be compiled refuses that tool, with the reason, and the others still register;
//! - its category is the operator's decision, not the server's: by default
//!   [`Safety::Unspecified`](tool_runtime::definition::Safety::Unspecified) (every call confirmed
//!   by a person and the server's first use gated), the server's annotations only when the
//!   operator trusts them ([`Trust::Annotations`]), a category per tool over both; a tool the
//!   server marks destructive is confirmed whatever the configuration says;
//! - a server that goes away is started again (stdio) or reached again (HTTP), with backoff,
//!   and its tools listed again; meanwhile its tools answer `UNAVAILABLE` (retryable, nothing
//!   sent), and a call that was in flight is `UNAVAILABLE` and not retryable, never sent twice;
//! - a description or schema that reads like instructions to the model ("tool poisoning", the
//!   executor's injection check) is flagged, or refused with `refuse_suspicious`;
//! - a call's result is its structured content (checked against the tool's `outputSchema` when
//!   it declares one), else its content (text as text, images and
//!   audio as their type and size, never their bytes); `isError` is the tool's failure, a lost
//!   connection is `UNAVAILABLE` and retryable. A call the executor gives up (its timeout) is
//!   cancelled at the server with `notifications/cancelled`;
//! - while a call runs, the server's progress notifications reach the call's progress sink
//!   (the agent's events, an MCP client in front of a gateway), and its questions
//!   (`elicitation/create`, or the input requests of a server that asks in rounds) go to the
//!   call's host, the person behind the call, through the same route as its confirmation;
//!   with nobody to ask, the server is told the question was declined, and the model never
//!   sees it;
//! - with a store ([`McpClient::import_pinned`]), each tool's exact definition is pinned by hash
//!   the first time a call of it is let through (for a confirmed or gated tool, when a person
//!   first approves it); a server that later serves another definition has that tool held, its
//!   calls refused with [`DEFINITION_CHANGED`] before anything is sent and the model shown the
//!   approved definition, until a person approves the change ([`approve_change`]);
//! - the server's `notifications/tools/list_changed` has its tools listed again: a tool it no
//!   longer lists is refused (`NOT_FOUND`, never sent) and, in an executor the client follows,
//!   taken out of the tool set, a pinned one that changed is held, one
//!   changed before anything was pinned is refused as stale, and a new one is registered in the
//!   executor the client follows ([`McpClient::follow`], [`PinnedImports::follow`]) as the first
//!   ones were: the same configuration, checks, pins and policy (without an executor to follow,
//!   it is announced in the log and registered by the next import).
//!
//! The executor then runs these tools like any other: timeouts, retries (only for tools the
//! trusted annotations call idempotent), rate limits, confirmation, gates and the audit trail.

mod child;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub(crate) mod cli;
mod config;
mod conn;
mod held;
mod import;
mod oauth;
mod pin;
mod relay;
mod result;
mod watch;

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{RunningService, ServiceExt};
use serde_json::Value;
use tool_runtime::store::{Store, ToolPin};
use tool_runtime::toolset::{CallCheck, DynHandler};
use tool_runtime::validate::Validator;
use tool_runtime::{Executor, ToolSet};

#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub use cli::{McpConfigOption, PinCommands, import_configured, import_configured_pins};
pub use config::{ServerConfig, Trust, read_servers_config, read_servers_json};
pub use held::{Approval, PinnedImports};
pub use import::{Flagged, Imported, Refused};
pub use oauth::{AssertionAudience, Consent, Grant, IdentityProvider, OAuthConfig};
pub use pin::{DEFINITION_CHANGED, Held, approve_change, definition_change};

use config::Transport;

/// What can go wrong reaching a server or reading its configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The configuration of a server is not usable.
    #[error("MCP server {server:?}: {message}")]
    Config {
        /// The server's name (empty when the file itself is wrong).
        server: String,
        /// What is wrong, and what to write instead.
        message: String,
    },
    /// The server could not be started, reached or initialized.
    #[error("MCP server {server:?} could not be connected: {message}")]
    Connect {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
    /// The server refused this client: it asks for an authorization that is not configured
    /// (`oauth`), or the one configured did not win its acceptance. The message names the
    /// server's refusal, never a token or a secret.
    #[error("MCP server {server:?} refused the authorization: {message}")]
    Unauthorized {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
    /// The server did not list its tools.
    #[error("MCP server {server:?} did not list its tools: {message}")]
    List {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
}

/// A connection to one MCP server and the tools it listed. The connection lasts while the client
/// or any tool imported from it is alive, and a stdio server's process with it.
pub struct McpClient {
    name: String,
    config: ServerConfig,
    conn: Arc<conn::Conn>,
    live: Arc<watch::Live>,
    relay: Arc<relay::Relay>,
    auth: oauth::Auth,
    tools: Vec<Tool>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts or reaches the server `name` as `config` says, initializes and lists its tools.
    pub async fn connect(name: &str, config: ServerConfig) -> Result<Self, ClientError> {
        config::check_name(name)?;
        let live = Arc::new(watch::Live::default());
        let relay = Arc::new(relay::Relay::default());
        let watcher = watch::Watcher {
            server: name.into(),
            live: live.clone(),
            relay: relay.clone(),
        };
        let auth = oauth::authorization(name, &config).await?;
        let service = start(name, &config, watcher.clone(), &auth).await?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| ClientError::List {
                server: name.to_owned(),
                message: e.to_string(),
            })?;
        live.listed(&tools);
        let conn = Arc::new(conn::Conn::default());
        let again = (name.to_owned(), config.clone(), watcher, auth.clone());
        conn::supervise(name.into(), &conn, service, move || {
            let (name, config, watcher, auth) = again.clone();
            async move {
                let service = start(&name, &config, watcher.clone(), &auth)
                    .await
                    .map_err(|e| e.to_string())?;
                // listed again: what changed meanwhile is judged as a list change is
                let tools = service.list_all_tools().await.map_err(|e| e.to_string())?;
                watcher.relisted(tools).await;
                Ok(service)
            }
        });
        Ok(McpClient {
            name: name.to_owned(),
            config,
            conn,
            live,
            relay,
            auth,
            tools,
        })
    }

    /// The server's name (its tools' prefix unless the configuration gives another).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tools the server listed, as it described them.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Registers the server's tools (those the configuration admits) in `set`, each as described
    /// in the module docs. A tool that cannot be registered — a schema that does not compile, a
    /// name that does not fit or is taken (both origins named) — is refused with its reason in
    /// [`Imported::refused`]; the others are registered regardless.
    pub fn import(&self, set: &mut ToolSet) -> Imported {
        self.import_with(set, None)
    }

    /// [`McpClient::import`], with every tool's definition pinned in `store` (see the module
    /// docs): a tool whose stored pin differs from what the server serves is registered with
    /// the pinned definition and held ([`Imported::held`]), and the pins are read here, once, on
    /// the calling thread. A store that cannot be read refuses every tool, with its error: no
    /// tool runs unpinned because its pin could not be looked up.
    pub fn import_pinned(&self, set: &mut ToolSet, store: Arc<dyn Store>) -> Imported {
        self.import_with(set, Some(store))
    }

    fn import_with(&self, set: &mut ToolSet, store: Option<Arc<dyn Store>>) -> Imported {
        self.live.follow_from(watch::Follow::new(
            &self.name,
            &self.config,
            &self.conn,
            &self.relay,
            &self.auth,
            store.clone(),
        ));
        self.parts().import(&self.tools, set, store)
    }

    /// Registers the tools the server adds later (announced with
    /// `notifications/tools/list_changed`) in `executor`'s tool set, with
    /// [`Executor::update_tools`], as this client imported its first tools (the same
    /// configuration, and pinned in the same store when they were). Without it they are
    /// registered by the next import. The executor is not kept alive by this client.
    pub fn follow(&self, executor: &Executor) {
        self.live.follow(executor.downgrade());
    }

    /// What registering this client's tools needs of it.
    fn parts(&self) -> Parts<'_> {
        Parts {
            name: &self.name,
            config: &self.config,
            conn: &self.conn,
            live: &self.live,
            relay: &self.relay,
            auth: &self.auth,
        }
    }
    /// The tools imported with pins ([`McpClient::import_pinned`]) that are held now: changed
    /// since a person approved them, at import or by a later `notifications/tools/list_changed`.
    pub fn held(&self) -> Vec<Held> {
        self.live.held()
    }

    /// The definitions the server serves for the tools the configuration admits, as they
    /// would be pinned.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn served_pins(&self) -> Vec<ToolPin> {
        let prefix = self.config.prefix(&self.name);
        (self.tools.iter().filter(|t| self.config.admits(&t.name)))
            .map(|tool| {
                let definition = pin::pinned_form(tool);
                ToolPin {
                    tool: format!("{prefix}__{}", tool.name),
                    server: self.name.clone(),
                    hash: pin::hash_of(&definition),
                    definition,
                    pinned_ms: 0,
                }
            })
            .collect()
    }

    /// Stops the connection now and for good (and a stdio server's process), for the client and
    /// every tool imported from it: their calls answer `UNAVAILABLE` from then on, and the
    /// server is not started again.
    pub fn close(&self) {
        self.conn.close();
    }
}

/// What registering a server's tools needs of its client: borrowed from an [`McpClient`] at
/// import, or from what [`McpClient::follow`] keeps for the tools the server adds later.
pub(crate) struct Parts<'a> {
    pub(crate) name: &'a str,
    pub(crate) config: &'a ServerConfig,
    pub(crate) conn: &'a Arc<conn::Conn>,
    pub(crate) live: &'a Arc<watch::Live>,
    pub(crate) relay: &'a Arc<relay::Relay>,
    pub(crate) auth: &'a oauth::Auth,
}

impl Parts<'_> {
    /// Registers those of `tools` the configuration admits in `set`, as the module docs say.
    pub(crate) fn import(
        &self,
        tools: &[Tool],
        set: &mut ToolSet,
        store: Option<Arc<dyn Store>>,
    ) -> Imported {
        let prefix = self.config.prefix(self.name);
        let service = self.config.described(self.name);
        let mut imported = Imported::default();
        let pins: std::collections::HashMap<String, ToolPin> = match store.as_deref() {
            None => Default::default(),
            Some(store) => match store.list_pins() {
                Ok(pins) => pins.into_iter().map(|p| (p.tool.clone(), p)).collect(),
                Err(e) => {
                    for tool in tools.iter().filter(|t| self.config.admits(&t.name)) {
                        imported.refused.push(Refused {
                            tool: tool.name.to_string(),
                            reason: format!("its pin could not be read: {e}"),
                        });
                    }
                    return imported;
                }
            },
        };
        for tool in tools.iter().filter(|t| self.config.admits(&t.name)) {
            let refuse = |reason: String| Refused {
                tool: tool.name.to_string(),
                reason,
            };
            if let Some(suspicion) = import::suspicion(tool) {
                tracing::warn!(
                    server = %self.name, tool = %tool.name, at = %suspicion.pointer,
                    "an MCP tool's own text reads like {}: {:?}", suspicion.kind, suspicion.phrase
                );
                let refused = self.config.refuse_suspicious;
                if refused {
                    imported.refused.push(refuse(format!(
                        "its text at {} reads like {} ({:?}), and this server's configuration \
                         refuses such tools",
                        suspicion.pointer, suspicion.kind, suspicion.phrase
                    )));
                }
                imported.flagged.push(import::Flagged {
                    tool: tool.name.to_string(),
                    suspicion,
                });
                if refused {
                    continue;
                }
            }
            let registered = format!("{prefix}__{}", tool.name);
            let guard = store.as_ref().map(|store| {
                let form = pin::pinned_form(tool);
                let hash = pin::hash_of(&form);
                let pinned = pins.get(&registered).cloned();
                Arc::new(pin::Guard::new(
                    store.clone(),
                    self.name,
                    &registered,
                    form,
                    hash,
                    pinned,
                ))
            });
            let held = guard.as_ref().and_then(|g| g.held());
            // a held tool is declared as it was approved: the new text never reaches the model
            let approved: Option<Tool> = held
                .as_ref()
                .and_then(|h| serde_json::from_value(h.pinned.definition.clone()).ok());
            let shown = approved.as_ref().unwrap_or(tool);
            let def =
                match import::definition(prefix, &service, shown, self.config, &mut imported.notes)
                {
                    Ok(def) => def,
                    Err(reason) => {
                        imported.refused.push(refuse(reason));
                        continue;
                    }
                };
            if set.get(&registered).is_some() {
                imported.refused.push(refuse(format!(
                    "{registered} is already registered (another server or the application's \
                     own tool); give this server another `prefix`"
                )));
                continue;
            }
            let output = match &def.output_schema {
                None => None,
                Some(schema) => match Validator::compile(schema) {
                    Ok(v) => Some(Arc::new(v)),
                    Err(e) => {
                        imported
                            .refused
                            .push(refuse(format!("its outputSchema: {e}")));
                        continue;
                    }
                },
            };
            if let Some(guard) = &guard {
                self.live.watch(&tool.name, guard.clone());
            }
            let handler = self.handler(tool.name.to_string(), output, guard.clone());
            match set.register_dynamic(def, Some(handler)) {
                Ok(_) => {
                    set.set_check(&registered, self.check(tool.name.to_string(), guard));
                    imported.registered.push(registered);
                    imported.held.extend(held);
                }
                Err(e) => imported.refused.push(refuse(e.to_string())),
            }
        }
        imported
    }

    /// The check an imported tool's calls pass before the policy: a tool its server no longer
    /// lists, or (pinned) that is held or stale, is refused before anyone is asked to confirm it.
    fn check(&self, tool: String, guard: Option<Arc<pin::Guard>>) -> CallCheck {
        let live = self.live.clone();
        let server: Arc<str> = self.name.into();
        Arc::new(move || {
            let (live, server, tool, guard) =
                (live.clone(), server.clone(), tool.clone(), guard.clone());
            Box::pin(async move {
                live.check(&server, &tool)?;
                match &guard {
                    Some(guard) => guard.check().await,
                    None => Ok(()),
                }
            })
        })
    }

    /// The body of an imported tool: the validated arguments sent to the server as they are.
    fn handler(
        &self,
        tool: String,
        output: Option<Arc<Validator>>,
        guard: Option<Arc<pin::Guard>>,
    ) -> DynHandler {
        // each tool holds the connection: it lasts while the client or any imported tool does
        let (conn, live) = (self.conn.clone(), self.live.clone());
        let (relay, auth) = (self.relay.clone(), self.auth.clone());
        let server: Arc<str> = self.name.into();
        Arc::new(move |arguments: Value, cx: tool_runtime::CallContext| {
            let (conn, server, tool) = (conn.clone(), server.clone(), tool.clone());
            let (output, guard, live) = (output.clone(), guard.clone(), live.clone());
            let (relay, auth) = (relay.clone(), auth.clone());
            Box::pin(async move {
                live.check(&server, &tool)?;
                if let Some(guard) = &guard {
                    guard.admit().await?;
                }
                let mut params = CallToolRequestParams::new(tool.clone());
                params.arguments = match arguments {
                    Value::Object(map) => Some(map),
                    Value::Null => None,
                    other => Some([("value".to_owned(), other)].into_iter().collect()),
                };
                // dropping this future (the executor's timeout, a cancelled call) sends
                // notifications/cancelled to the server
                // a connection that has ended but is not yet replaced sends nothing: the
                // request could not reach the server, so the call may be tried again
                let Some(peer) = conn.peer().filter(|p| !p.is_transport_closed()) else {
                    return Err(result::not_connected(&server, &tool, conn.is_closed()));
                };
                match relay.call(&peer, &server, params, &cx).await {
                    Ok(answer) => result::value_of(&server, answer, output.as_deref()),
                    Err(e) => Err(match oauth::refused(&auth) {
                        Some(why) => result::unauthorized(&server, &tool, &why),
                        None => result::error_of(&server, &tool, e),
                    }),
                }
            })
        })
    }
}

/// Starts or reaches the server once and initializes the connection.
async fn start(
    name: &str,
    config: &ServerConfig,
    watcher: watch::Watcher,
    auth: &oauth::Auth,
) -> Result<RunningService<RoleClient, watch::Watcher>, ClientError> {
    let connect_error = |message: String| ClientError::Connect {
        server: name.to_owned(),
        message,
    };
    Ok(match config.transport(name)? {
        Transport::Stdio(command) => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&config.args);
            for (key, value) in &config.env {
                cmd.env(key, config::resolve(name, value)?);
            }
            if let Some(cwd) = &config.cwd {
                cmd.current_dir(cwd);
            }
            let (process, stderr) = child::ChildTransport::spawn(cmd)
                .map_err(|e| connect_error(format!("cannot start {command:?}: {e}")))?;
            if let Some(stderr) = stderr {
                tokio::spawn(log_stderr(name.to_owned(), stderr));
            }
            watcher
                .serve(process)
                .await
                .map_err(|e| connect_error(e.to_string()))?
        }
        #[cfg(feature = "client-http")]
        Transport::Http(url) => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut headers = std::collections::HashMap::new();
            for (key, value) in &config.headers {
                let value = config::resolve(name, value)?;
                let wrong = |what: &str| ClientError::Config {
                    server: name.to_owned(),
                    message: format!("header {key:?}: not a valid {what}"),
                };
                headers.insert(
                    key.parse().map_err(|_| wrong("name"))?,
                    value.parse().map_err(|_| wrong("value"))?,
                );
            }
            let transport_config =
                StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
            let served = match auth {
                Some(auth) => {
                    let client = oauth::OAuthHttp(auth.clone());
                    let transport =
                        StreamableHttpClientTransport::with_client(client, transport_config);
                    watcher.serve(transport).await
                }
                None => {
                    let transport = StreamableHttpClientTransport::from_config(transport_config);
                    watcher.serve(transport).await
                }
            };
            served.map_err(|e| match oauth::refused(auth) {
                Some(why) => ClientError::Unauthorized {
                    server: name.to_owned(),
                    message: why,
                },
                None if auth.is_none() && e.to_string().contains("Auth required") => {
                    let sent =
                        (config.headers.keys()).any(|k| k.eq_ignore_ascii_case("authorization"));
                    let message = if sent {
                        "the server refused the credentials of the `headers` entry"
                    } else {
                        "the server asks for authorization: give the server an `oauth` entry \
                         (or a token in `headers`)"
                    };
                    ClientError::Unauthorized {
                        server: name.to_owned(),
                        message: message.to_owned(),
                    }
                }
                None => connect_error(e.to_string()),
            })?
        }
        #[cfg(not(feature = "client-http"))]
        Transport::Http(_) => {
            let _ = auth;
            return Err(ClientError::Config {
                server: name.to_owned(),
                message: "this build has no HTTP client: enable tool-mcp's `client-http` \
                          feature"
                    .to_owned(),
            });
        }
    })
}

/// Passes a stdio server's stderr to `tracing`, a line at a time, until it closes.
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "tool_mcp::server", server = %server, "{line}");
    }
}
