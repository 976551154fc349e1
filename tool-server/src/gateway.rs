//! `tools gateway`: this program's tools and the tools of other people's MCP servers, served to
//! MCP hosts, agents and people under one policy.
//!
//! The tool set is the application's own, those of every `--mcp-config FILE` and those of the
//! `[mcp.servers.NAME]` tables of the configuration file (`--config`, else `$TOOLS_CONFIG`, else
//! `./tools.toml`). Every call, whoever makes it, goes through one executor built from that
//! file: arguments are validated before anything reaches an upstream server, tools that change
//! something wait for a person, definitions are pinned, and the audit trail records it all.
//!
//! - Over streamable HTTP (the default, `--addr`, `127.0.0.1:8700`): the JSON API, the
//!   approvals page and MCP at `/mcp`, as `tool-server` serves them. Changes wait for a person on
//!   the page (or for an MCP host holding `TOOLS_HOST_TOKEN`, which shows each confirmation to
//!   its person). Tokens come from `TOOLS_AGENT_TOKEN`/`TOOLS_APPROVER_TOKEN`; without them, on a
//!   loopback address, fresh ones are made and printed.
//! - Over stdio (`--stdio`), for an MCP host that starts the gateway itself: changes wait as
//!   pending operations (`tools pending`, `tools approve ID` from another terminal on the same
//!   store), or are confirmed in-band when the host's configuration sets
//!   `TOOLS_MCP_HOST_CONFIRMS=1` (it shows each confirmation to a person).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Arg, ArgAction, ArgMatches, Command};
use futures::future::BoxFuture;
use tool_mcp::client::{Approval, PinnedImports, import_configured_pins};
use tool_mcp::server::{InBandConfirmation, McpServer};
use tool_runtime::cli::{CliCommand, Exit, Output};
use tool_runtime::executor::cli::config_path;
use tool_runtime::executor::{Deferred, Executor, ExecutorConfig};
use tool_runtime::{ToolError, ToolSet};

use crate::{HeldRefusal, HeldTool, HeldTools, ServerOptions, Tokens};

/// Where the gateway listens unless `--addr` says otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8700";

/// What MCP hosts are told about the gateway.
const INSTRUCTIONS: &str = "Tools of several MCP servers behind one policy. Changes wait for a \
     person's approval; a pending call has not run, so tell the user and do not retry it.";

/// The `gateway` subcommand (add it with [`tool_runtime::cli::Cli::with`]); see the module docs.
#[derive(Debug, Clone)]
pub struct GatewayCommand {
    name: String,
}

impl GatewayCommand {
    /// The command, telling MCP hosts its server is `tools-gateway`.
    pub fn new() -> Self {
        GatewayCommand {
            name: "tools-gateway".to_owned(),
        }
    }

    /// With this server name in MCP's `serverInfo`.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl Default for GatewayCommand {
    fn default() -> Self {
        Self::new()
    }
}

impl CliCommand for GatewayCommand {
    fn command(&self) -> Command {
        Command::new("gateway")
            .about(
                "Serve these tools and those of the configured MCP servers over MCP, the HTTP \
                 API and the approvals page, under the executor's policy",
            )
            .arg(
                Arg::new("addr")
                    .long("addr")
                    .value_name("ADDR")
                    .default_value(DEFAULT_ADDR)
                    .value_parser(clap::value_parser!(SocketAddr))
                    .help("Where to serve HTTP (the API, the approvals page, MCP at /mcp)"),
            )
            .arg(
                Arg::new("stdio")
                    .long("stdio")
                    .action(ArgAction::SetTrue)
                    .conflicts_with("addr")
                    .help("Serve MCP on stdin and stdout instead, for a host that starts it"),
            )
            .arg(
                Arg::new("config")
                    .long("config")
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(
                        "TOML configuration, with [mcp.servers.NAME] tables (default: \
                         $TOOLS_CONFIG, else ./tools.toml if present)",
                    ),
            )
    }

    fn run<'a>(
        &'a self,
        toolset: &'a ToolSet,
        matches: &'a ArgMatches,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Exit> {
        Box::pin(async move {
            let (executor, pins) = match self.executor(toolset, matches, output).await {
                Ok(e) => e,
                Err(exit) => return exit,
            };
            if matches.get_flag("stdio") {
                self.serve_stdio(executor, output).await
            } else {
                let addr = *matches.get_one::<SocketAddr>("addr").expect("defaulted");
                self.serve_http(addr, executor, pins, output).await
            }
        })
    }
}

impl GatewayCommand {
    /// The executor over the whole tool set: the configuration file's policy and store, every
    /// call that needs a person parked for one; and the imported tools' pins, for the page.
    async fn executor(
        &self,
        toolset: &ToolSet,
        matches: &ArgMatches,
        output: &mut Output<'_>,
    ) -> Result<(Executor, PinnedImports), Exit> {
        let path = config_path(matches.get_one::<PathBuf>("config").map(|p| p.as_path()));
        let config =
            ExecutorConfig::load(path.as_deref()).map_err(|e| usage(output, e.to_string()))?;
        let origin = path
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "TOOLS_* variables".to_owned());
        for weaker in config.weakenings() {
            let _ = writeln!(output.err, "note: {origin}: {weaker}");
        }
        let store = (config.store.open()).map_err(|e| usage(output, format!("the store: {e}")))?;
        let mut toolset = toolset.clone();
        let pins = import_configured_pins(&config.mcp, &mut toolset, store.clone(), output).await?;
        let executor = Executor::builder(toolset)
            .config(config)
            .store(store)
            .confirmation(Deferred)
            .build()
            .map_err(|e| usage(output, e.to_string()))?;
        pins.follow(&executor);
        Ok((executor, pins))
    }

    async fn serve_http(
        &self,
        addr: SocketAddr,
        executor: Executor,
        pins: PinnedImports,
        output: &mut Output<'_>,
    ) -> Exit {
        let tokens = match Tokens::from_env() {
            Ok(Some(t)) => t,
            Ok(None) => Tokens::generate(),
            Err(e) => return usage(output, e.to_string()),
        };
        let options = ServerOptions::new(tokens)
            .mcp_server_info(&self.name, env!("CARGO_PKG_VERSION"))
            .mcp_instructions(INSTRUCTIONS)
            .held_tools(Arc::new(pins));
        let listener = match crate::bind(addr, &options).await {
            Ok(l) => l,
            Err(e) => return usage(output, e.to_string()),
        };
        let local = listener.local_addr().unwrap_or(addr);
        let tools = executor.toolset().len();
        let _ = writeln!(output.err, "gateway: {tools} tools");
        let _ = writeln!(output.err, "{}", crate::announcement(local, &options));
        let _ = output.err.flush();
        match crate::serve_on(listener, executor, options).await {
            Ok(()) => Exit::Success,
            Err(e) => {
                let _ = writeln!(output.err, "error: {e}");
                Exit::Refused
            }
        }
    }

    async fn serve_stdio(&self, executor: Executor, output: &mut Output<'_>) -> Exit {
        // the operator's grant, set in the host's configuration: see the module docs
        let in_band = match std::env::var("TOOLS_MCP_HOST_CONFIRMS").as_deref() {
            Ok("1" | "true" | "yes") => InBandConfirmation::AnyClient,
            _ => InBandConfirmation::Never,
        };
        let served = McpServer::new(executor)
            .in_band_confirmation(in_band)
            .named(&self.name, env!("CARGO_PKG_VERSION"))
            .instructions(INSTRUCTIONS)
            .serve_stdio()
            .await;
        match served {
            Ok(()) => Exit::Success,
            Err(e) => {
                let _ = writeln!(output.err, "error: {e}");
                Exit::Refused
            }
        }
    }
}

fn held_tool(held: tool_mcp::client::Held) -> HeldTool {
    HeldTool {
        tool: held.served.tool,
        server: held.served.server,
        pinned: held.pinned.hash,
        pinned_ms: held.pinned.pinned_ms,
        served: held.served.hash,
        changes: held.changes,
    }
}

/// The imported tools' pins as the approvals page reads and approves them.
impl HeldTools for PinnedImports {
    fn held(&self) -> Result<Vec<HeldTool>, ToolError> {
        let held = PinnedImports::held(self).map_err(ToolError::from)?;
        Ok(held.into_iter().map(held_tool).collect())
    }

    fn approve(&self, tool: &str, hash: &str) -> Result<Result<HeldTool, HeldRefusal>, ToolError> {
        Ok(
            match PinnedImports::approve(self, tool, hash).map_err(ToolError::from)? {
                Approval::Approved(held) => Ok(held_tool(*held)),
                Approval::OtherHash { served } => Err(HeldRefusal::Changed {
                    served: Some(served),
                }),
                Approval::Raced => Err(HeldRefusal::Changed { served: None }),
                _ => Err(HeldRefusal::NotHeld),
            },
        )
    }
}

/// A refusal of the gateway's arguments or configuration, told on stderr.
fn usage(output: &mut Output<'_>, message: String) -> Exit {
    let _ = writeln!(output.err, "error: {message}");
    Exit::Usage
}
