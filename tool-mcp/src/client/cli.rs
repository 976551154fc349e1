//! `--mcp-config FILE` for the `tools` command line: every command works on the tools of the
//! servers an `mcpServers` file names, beside the application's own.

use futures::future::BoxFuture;
use tool_runtime::ToolSet;
use tool_runtime::cli::{Exit, Output, ToolSource};

use super::{McpClient, read_servers_json};

/// The `--mcp-config FILE` option ([`tool_runtime::cli::Cli::with_source`]): the servers of the
/// `mcpServers` file are connected when a command starts and their tools imported, named
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
            for file in files {
                let usage = |output: &mut Output<'_>, message: String| {
                    let _ = writeln!(output.err, "error: {message}");
                    Exit::Usage
                };
                let text = match std::fs::read_to_string(&file) {
                    Ok(t) => t,
                    Err(e) => return Err(usage(output, format!("cannot read {file:?}: {e}"))),
                };
                let servers = match read_servers_json(&text) {
                    Ok(s) => s,
                    Err(e) => return Err(usage(output, format!("{file:?}: {e}"))),
                };
                for (name, config) in servers {
                    let client = match McpClient::connect(&name, config).await {
                        Ok(c) => c,
                        Err(e) => return Err(usage(output, e.to_string())),
                    };
                    let imported = client.import(toolset);
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
                }
            }
            Ok(())
        })
    }
}
