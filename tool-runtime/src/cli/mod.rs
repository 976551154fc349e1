//! The `tools` command line every app built on a `ToolSet` gets.
//!
//! Built-in subcommands: `list`, `schema`, `check`. Other layers add theirs through the same
//! [`CliCommand`] trait (the executor's `call`/`pending`/`approve`/`deny`, selection's `pick`, the
//! providers' `decode`), and provider views of `schema --provider P` through [`SchemaView`], so the
//! runtime never speaks a provider's wire format itself.
//!
//! Exit codes are a contract: 0 success, 1 the input was refused, 2 usage.
//!
//! ```no_run
//! use tool_runtime::ToolSet;
//! use tool_runtime::cli::Cli;
//!
//! fn main() -> std::process::ExitCode {
//!     let tools = ToolSet::new(); // register your tools here
//!     Cli::new(tools).run_from_env().into()
//! }
//! ```
//!
//! Inside an application's own clap command line, nest [`Cli::command`] as a subcommand and hand
//! its matches to [`Cli::run_matches`].

mod app;
mod builtin;

use std::io::Write;

use futures::future::BoxFuture;
use serde_json::Value;

pub use app::Cli;

use crate::definition::ToolDefinition;
use crate::toolset::ToolSet;

/// How a command ended; the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Success = 0,
    /// 1: the input was refused (invalid arguments, unknown tool, denied call).
    Refused = 1,
    /// 2: usage error (bad flags, unreadable file).
    Usage = 2,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> i32 {
        self as i32
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}

/// Where a command writes, and whether the user asked for JSON.
pub struct Output<'a> {
    /// Standard output (a buffer in tests).
    pub out: &'a mut (dyn Write + Send),
    /// Standard error.
    pub err: &'a mut (dyn Write + Send),
    /// `--json` was given.
    pub json: bool,
}

/// A subcommand of `tools`.
pub trait CliCommand: Send + Sync {
    /// The clap definition of the subcommand (its name, arguments and help).
    fn command(&self) -> clap::Command;

    /// Runs the subcommand against `toolset` (which already includes the tools of every
    /// [`ToolSource`], `--catalog` files among them).
    fn run<'a>(
        &'a self,
        toolset: &'a ToolSet,
        matches: &'a clap::ArgMatches,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Exit>;
}

/// A global option that adds tools to the set every subcommand sees: `--catalog FILE` is one,
/// the MCP client's `--mcp-config FILE` (in `tool-mcp`) another. The option is made global and
/// repeatable; its values are handed over in the order given.
pub trait ToolSource: Send + Sync {
    /// The option; its id is the key its values are read under.
    fn arg(&self) -> clap::Arg;

    /// Adds the tools `values` name to `toolset`. An unreadable file or an unreachable source
    /// is [`Exit::Usage`], a definition refused [`Exit::Refused`], each explained on `output`
    /// first.
    fn add<'a>(
        &'a self,
        values: Vec<String>,
        toolset: &'a mut ToolSet,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Result<(), Exit>>;

    /// Adds the tools the source finds without its option, for every run of the subcommand
    /// `name` whose own arguments are `matches` (after [`ToolSource::add`], when the option was
    /// given too): a source that also reads the configuration file finds the subcommand's
    /// `--config` there. Nothing by default.
    fn add_implied<'a>(
        &'a self,
        name: &'a str,
        matches: &'a clap::ArgMatches,
        toolset: &'a mut ToolSet,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Result<(), Exit>> {
        let _ = (name, matches, toolset, output);
        Box::pin(async { Ok(()) })
    }
}

/// A provider's view of tool declarations, for `tools schema --provider NAME`.
pub trait SchemaView: Send + Sync {
    /// The provider names this view answers to (e.g. `["openai", "anthropic"]`).
    fn providers(&self) -> Vec<&'static str>;

    /// Exactly what would be sent to `provider` to declare `tools`.
    fn render(&self, provider: &str, tools: &[&ToolDefinition]) -> Result<Value, String>;
}
