//! `--mcp-config FILE` for the `tools` command line: every command works on the tools of the
//! servers an `mcpServers` file and the configuration's `[mcp.servers.NAME]` tables name,
//! beside the application's own; `tools pins` and `tools approve-change NAME` show and approve
//! the definitions those tools are pinned to.
//!
//! The configuration is the file a subcommand's `--config` names, else `$TOOLS_CONFIG`, else
//! `./tools.toml`, then the `TOOLS_*` variables. The pins live in the store it names (SQLite by
//! default), the one `tools call` and `tools approve` use.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Arg, ArgMatches, Command};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_runtime::ToolSet;
use tool_runtime::cli::{CliCommand, Exit, Output, ToolSource};
use tool_runtime::display::visible_lines;
use tool_runtime::store::{Store, ToolPin};

use super::{
    Held, McpClient, PinnedImports, ServerConfig, approve_change, read_servers_config,
    read_servers_json,
};

pub(crate) fn usage(output: &mut Output<'_>, message: String) -> Exit {
    let _ = writeln!(output.err, "error: {message}");
    Exit::Usage
}

/// The store the command line's configuration names.
fn open_store(output: &mut Output<'_>) -> Result<Arc<dyn Store>, Exit> {
    let config =
        tool_runtime::executor::cli::load_config(None).map_err(|e| usage(output, e.to_string()))?;
    (config.store.open()).map_err(|e| usage(output, format!("the pin store: {e}")))
}

/// The servers of every `mcpServers` file, in order.
fn servers_of(
    files: &[String],
    output: &mut Output<'_>,
) -> Result<Vec<(String, ServerConfig)>, Exit> {
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| usage(output, format!("cannot read {file:?}: {e}")))?;
        let servers =
            read_servers_json(&text).map_err(|e| usage(output, format!("{file:?}: {e}")))?;
        all.extend(servers);
    }
    Ok(all)
}

/// The `--mcp-config FILE` option ([`tool_runtime::cli::Cli::with_source`]): the servers of the
/// `mcpServers` file, and those of the configuration's `[mcp.servers.NAME]` tables with or
/// without the option, are connected when a command starts and their tools imported, named
/// `<server>__<tool>` unless a server's `prefix` says otherwise. A file that cannot be read or a
/// server that cannot be reached is a usage error (2); a tool that cannot be imported is named on
/// standard error with its reason and the others are used.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpConfigOption;

impl ToolSource for McpConfigOption {
    fn arg(&self) -> clap::Arg {
        clap::Arg::new("mcp-config")
            .long("mcp-config")
            .value_name("FILE")
            .help(
                "Add the tools of the MCP servers in FILE (the mcpServers JSON of desktop MCP \
                 hosts), named <server>__<tool>",
            )
    }

    fn add<'a>(
        &'a self,
        files: Vec<String>,
        toolset: &'a mut ToolSet,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Result<(), Exit>> {
        Box::pin(async move {
            let servers = servers_of(&files, output)?;
            if servers.is_empty() {
                return Ok(());
            }
            let store = open_store(output)?;
            import_servers(servers, toolset, store, output)
                .await
                .map(drop)
        })
    }

    /// The servers of the configuration's `[mcp.servers.NAME]` tables, for every subcommand:
    /// the file its `--config` names, else `$TOOLS_CONFIG`, else `./tools.toml` when present.
    /// `gateway` reads them itself, with the rest of its configuration.
    fn add_implied<'a>(
        &'a self,
        name: &'a str,
        matches: &'a ArgMatches,
        toolset: &'a mut ToolSet,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Result<(), Exit>> {
        Box::pin(async move {
            if name == "gateway" {
                return Ok(());
            }
            let config = configuration(matches, output)?;
            if config.mcp.is_empty() {
                return Ok(());
            }
            let store =
                (config.store.open()).map_err(|e| usage(output, format!("the pin store: {e}")))?;
            import_configured(&config.mcp, toolset, store, output).await
        })
    }
}

/// The configuration a subcommand reads: its `--config FILE` when it has one, else
/// `$TOOLS_CONFIG`, else `./tools.toml` when present, then the `TOOLS_*` variables.
fn configuration(
    matches: &ArgMatches,
    output: &mut Output<'_>,
) -> Result<tool_runtime::executor::ExecutorConfig, Exit> {
    let explicit = matches.try_get_one::<PathBuf>("config").ok().flatten();
    tool_runtime::executor::cli::load_config(explicit.map(PathBuf::as_path))
        .map_err(|e| usage(output, e.to_string()))
}

/// Imports the tools of a configuration's `[mcp.servers.NAME]` tables into `toolset`, pinned in
/// `store`, for an application that serves or runs them under its own executor (an app's
/// `serve`, `tools gateway`). Each server's tools are registered as configured (by default
/// `external`: every call confirmed, first use gated); what was imported, refused, flagged or
/// held is said on `output`'s standard error. A table that does not read as a server or a
/// server that cannot be reached is a usage error (2), explained there first. Nothing is
/// connected or opened when no server is configured.
pub async fn import_configured(
    mcp: &tool_runtime::executor::McpConfig,
    toolset: &mut ToolSet,
    store: Arc<dyn Store>,
    output: &mut Output<'_>,
) -> Result<(), Exit> {
    import_configured_pins(mcp, toolset, store, output)
        .await
        .map(drop)
}

/// [`import_configured`], answering with the imported tools' pins: what a surface that shows
/// held tools and approves their changes needs (the gateway's approvals page).
pub async fn import_configured_pins(
    mcp: &tool_runtime::executor::McpConfig,
    toolset: &mut ToolSet,
    store: Arc<dyn Store>,
    output: &mut Output<'_>,
) -> Result<PinnedImports, Exit> {
    if mcp.is_empty() {
        return Ok(PinnedImports::new(store));
    }
    let servers = read_servers_config(mcp).map_err(|e| usage(output, e.to_string()))?;
    import_servers(servers, toolset, store, output).await
}

/// Connects each server and imports its tools into `toolset`, pinned in `store`; what was
/// imported, refused, flagged or held is said on `output`'s standard error. A server that
/// cannot be reached is a usage error (2).
pub(crate) async fn import_servers(
    servers: impl IntoIterator<Item = (String, ServerConfig)>,
    toolset: &mut ToolSet,
    store: Arc<dyn Store>,
    output: &mut Output<'_>,
) -> Result<PinnedImports, Exit> {
    let mut pins = PinnedImports::new(store.clone());
    for (name, config) in servers {
        let client = match McpClient::connect(&name, config).await {
            Ok(c) => c,
            Err(e) => return Err(usage(output, e.to_string())),
        };
        let imported = client.import_pinned(toolset, store.clone());
        pins.add(&client);
        let _ = writeln!(
            output.err,
            "mcp: {name}: {} tools imported{}",
            imported.registered.len(),
            match imported.refused.len() {
                0 => String::new(),
                n => format!(", {n} refused"),
            }
        );
        for refused in &imported.refused {
            let _ = writeln!(
                output.err,
                "warning: {name}: tool {:?} not imported: {}",
                refused.tool, refused.reason
            );
        }
        for flagged in &imported.flagged {
            let s = &flagged.suspicion;
            let _ = writeln!(
                output.err,
                "warning: {name}: tool {:?}: its text at {} reads like {} ({:?})",
                flagged.tool, s.pointer, s.kind, s.phrase
            );
        }
        for note in &imported.notes {
            let _ = writeln!(output.err, "note: {name}: {note}");
        }
        for held in &imported.held {
            let _ = writeln!(
                output.err,
                "warning: {name}: tool {:?} is held: the server changed its definition since a \
                 person approved it (review: tools pins; approve: tools approve-change {})",
                held.served.tool, held.served.tool
            );
        }
    }
    Ok(pins)
}

/// `tools pins` and `tools approve-change NAME` (add both with [`PinCommands::install`]).
#[derive(Debug, Clone, Copy)]
pub struct PinCommands {
    approve: bool,
}

impl PinCommands {
    /// `tools pins`: every pin in the store; with `--mcp-config`, each imported tool's standing
    /// (`approved`, `changed` with what changed, `unpinned`).
    pub fn list() -> Self {
        PinCommands { approve: false }
    }

    /// `tools approve-change NAME [--hash H]`: approves a held tool's new definition, shown as
    /// it is approved; `--hash` approves only the definition with that hash (the one `tools
    /// pins` showed), so a server that changed again meanwhile is not approved unseen.
    pub fn approve_change() -> Self {
        PinCommands { approve: true }
    }

    /// Adds both commands to a `tools` command line.
    pub fn install(cli: tool_runtime::cli::Cli) -> tool_runtime::cli::Cli {
        cli.with(Self::list()).with(Self::approve_change())
    }
}

/// `--config FILE`: the configuration whose `[mcp.servers.NAME]` tables name servers too.
fn config_arg() -> Arg {
    Arg::new("config")
        .long("config")
        .value_name("FILE")
        .value_parser(clap::value_parser!(PathBuf))
        .help(
            "TOML configuration, with [mcp.servers.NAME] tables (default: $TOOLS_CONFIG, else \
             ./tools.toml if present)",
        )
}

/// One tool's standing: its stored pin and the definition its server serves now.
struct Standing {
    tool: String,
    server: String,
    pinned: Option<ToolPin>,
    served: Option<ToolPin>,
}

impl Standing {
    fn status(&self) -> &'static str {
        match (&self.pinned, &self.served) {
            (Some(p), Some(s)) if p.hash == s.hash => "approved",
            (Some(_), Some(_)) => "changed",
            (None, _) => "unpinned",
            (Some(_), None) => "pinned",
        }
    }

    fn held(&self) -> Option<Held> {
        match (&self.pinned, &self.served) {
            (Some(p), Some(s)) if p.hash != s.hash => Some(Held::new(p.clone(), s.clone())),
            _ => None,
        }
    }

    fn json(&self) -> Value {
        json!({
            "tool": self.tool,
            "server": self.server,
            "status": self.status(),
            "pinned": self.pinned.as_ref().map(|p| &p.hash),
            "pinned_ms": self.pinned.as_ref().map(|p| p.pinned_ms),
            "served": self.served.as_ref().map(|p| &p.hash),
            "changes": self.held().map(|h| h.changes).unwrap_or_default(),
        })
    }
}

/// The stored pins beside what the servers of `files` serve now.
async fn standings(
    servers: Vec<(String, ServerConfig)>,
    store: &dyn Store,
    output: &mut Output<'_>,
) -> Result<Vec<Standing>, Exit> {
    let pins = store
        .list_pins()
        .map_err(|e| usage(output, format!("the pin store: {e}")))?;
    let mut served = Vec::new();
    for (name, config) in servers {
        let client = McpClient::connect(&name, config)
            .await
            .map_err(|e| usage(output, e.to_string()))?;
        served.extend(client.served_pins());
        client.close();
    }
    let mut all: Vec<Standing> = pins
        .into_iter()
        .map(|p| Standing {
            tool: p.tool.clone(),
            server: p.server.clone(),
            served: None,
            pinned: Some(p),
        })
        .collect();
    for s in served {
        match all.iter_mut().find(|t| t.tool == s.tool) {
            Some(t) => t.served = Some(s),
            None => all.push(Standing {
                tool: s.tool.clone(),
                server: s.server.clone(),
                pinned: None,
                served: Some(s),
            }),
        }
    }
    all.sort_by(|a, b| a.tool.cmp(&b.tool));
    Ok(all)
}

impl CliCommand for PinCommands {
    fn command(&self) -> Command {
        if self.approve {
            Command::new("approve-change")
                .about("Approve the new definition of an imported tool its server changed")
                .arg(
                    Arg::new("name")
                        .required(true)
                        .help("The tool (<server>__<tool>)"),
                )
                .arg(
                    Arg::new("hash")
                        .long("hash")
                        .value_name("SHA256")
                        .help("Approve only the definition with this hash (from `tools pins`)"),
                )
                .arg(config_arg())
        } else {
            Command::new("pins")
                .about(
                    "List the definitions imported tools are pinned to, and which ones their \
                     servers changed",
                )
                .arg(config_arg())
        }
    }

    fn run<'a>(
        &'a self,
        _toolset: &'a ToolSet,
        matches: &'a ArgMatches,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Exit> {
        Box::pin(async move {
            let files: Vec<String> = matches
                .try_get_many::<String>("mcp-config")
                .ok()
                .flatten()
                .map(|v| v.cloned().collect())
                .unwrap_or_default();
            let (store, servers) = match pins_and_servers(&files, matches, output) {
                Ok(found) => found,
                Err(exit) => return exit,
            };
            let all = match standings(servers, &*store, output).await {
                Ok(all) => all,
                Err(exit) => return exit,
            };
            if self.approve {
                approve(&all, matches, &*store, output)
            } else {
                list(&all, output)
            }
        })
    }
}

/// The pin store of the subcommand's configuration, and the servers of the `mcpServers` files
/// and of that configuration's `[mcp.servers.NAME]` tables.
#[allow(clippy::type_complexity)]
fn pins_and_servers(
    files: &[String],
    matches: &ArgMatches,
    output: &mut Output<'_>,
) -> Result<(Arc<dyn Store>, Vec<(String, ServerConfig)>), Exit> {
    let config = configuration(matches, output)?;
    let store = (config.store.open()).map_err(|e| usage(output, format!("the pin store: {e}")))?;
    let mut servers = servers_of(files, output)?;
    servers.extend(read_servers_config(&config.mcp).map_err(|e| usage(output, e.to_string()))?);
    Ok((store, servers))
}

fn list(all: &[Standing], output: &mut Output<'_>) -> Exit {
    if output.json {
        let rows: Vec<Value> = all.iter().map(Standing::json).collect();
        let _ = writeln!(output.out, "{}", Value::Array(rows));
        return Exit::Success;
    }
    if all.is_empty() {
        let _ = writeln!(output.out, "no pins");
    }
    for t in all {
        let hash = (t.pinned.as_ref().or(t.served.as_ref())).map_or("", |p| p.hash.as_str());
        let _ = writeln!(
            output.out,
            "{}\t{}\t{}\t{hash}",
            t.tool,
            t.server,
            t.status()
        );
        if let Some(held) = t.held() {
            let _ = writeln!(output.out, "  served now: {}", held.served.hash);
            for line in &held.changes {
                let _ = writeln!(output.out, "  {}", visible_lines(line));
            }
        }
    }
    Exit::Success
}

fn approve(
    all: &[Standing],
    matches: &ArgMatches,
    store: &dyn Store,
    output: &mut Output<'_>,
) -> Exit {
    let name = matches.get_one::<String>("name").map_or("", String::as_str);
    let refuse = |output: &mut Output<'_>, message: String| {
        let _ = writeln!(output.err, "error: {message}");
        Exit::Refused
    };
    let Some(t) = all.iter().find(|t| t.tool == name) else {
        return refuse(
            output,
            format!(
                "no imported tool is named {:?} (give its server with --mcp-config or an \
                 [mcp.servers.NAME] table of the configuration)",
                visible_lines(name)
            ),
        );
    };
    let Some(held) = t.held() else {
        return match t.status() {
            "approved" => {
                let _ = writeln!(output.out, "{name}: unchanged, nothing to approve");
                Exit::Success
            }
            "unpinned" => refuse(
                output,
                format!("{name} is not pinned yet: its first approved call pins it"),
            ),
            _ => refuse(
                output,
                format!(
                    "{name}: its server is not connected (give it with --mcp-config or an \
                     [mcp.servers.NAME] table of the configuration)"
                ),
            ),
        };
    };
    if let Some(wanted) = matches.get_one::<String>("hash")
        && *wanted != held.served.hash
    {
        return refuse(
            output,
            format!(
                "{name}: the server now serves {}, not {wanted}; review it again (tools pins)",
                held.served.hash
            ),
        );
    }
    match approve_change(store, &held) {
        Ok(true) => {}
        Ok(false) => {
            return refuse(
                output,
                format!("{name}: its pin changed meanwhile; review it again (tools pins)"),
            );
        }
        Err(e) => return refuse(output, format!("the pin store: {e}")),
    }
    if output.json {
        let row = json!({"tool": name, "approved": held.served.hash,
                         "replaced": held.pinned.hash, "changes": held.changes});
        let _ = writeln!(output.out, "{row}");
    } else {
        let _ = writeln!(output.out, "{name}: approved the change");
        for line in &held.changes {
            let _ = writeln!(output.out, "  {}", visible_lines(line));
        }
        let _ = writeln!(output.out, "now pinned: {}", held.served.hash);
    }
    Exit::Success
}
