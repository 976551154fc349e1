//! [`Cli`]: the `tools` command group, composed at run time from the built-in subcommands, the
//! [`CliCommand`]s other layers add, and the [`SchemaView`]s providers add.

use std::ffi::OsString;
use std::io::Read;
use std::sync::Mutex;

use clap::{Arg, ArgAction, ArgMatches, Command};

use super::builtin;
use super::{CliCommand, Exit, Output, SchemaView, ToolSource};
use crate::error::{ErrorCode, ToolError};
use crate::toolset::ToolSet;

/// The `tools` command line of a [`ToolSet`].
pub struct Cli {
    toolset: ToolSet,
    commands: Vec<Box<dyn CliCommand>>,
    views: Vec<Box<dyn SchemaView>>,
    sources: Vec<Box<dyn ToolSource>>,
    stdin: Mutex<Option<Box<dyn Read + Send>>>,
}

impl std::fmt::Debug for Cli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cli")
            .field("toolset", &self.toolset)
            .field(
                "commands",
                &self
                    .commands
                    .iter()
                    .map(|c| c.command().get_name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("providers", &self.providers())
            .finish()
    }
}

impl Cli {
    /// The command line of `toolset`, with the built-in `list`, `schema` and `check`.
    pub fn new(toolset: ToolSet) -> Self {
        Cli {
            toolset,
            commands: Vec::new(),
            views: Vec::new(),
            sources: vec![Box::new(Catalogs)],
            stdin: Mutex::new(None),
        }
    }

    /// Adds a subcommand (the executor's `call`, selection's `pick`, ...). A command named like a
    /// built-in replaces it.
    pub fn with(mut self, command: impl CliCommand + 'static) -> Self {
        self.commands.push(Box::new(command));
        self
    }

    /// Adds a global option that brings more tools (the MCP client's `--mcp-config`, ...); its
    /// tools are added after the `--catalog` files'.
    pub fn with_source(mut self, source: impl ToolSource + 'static) -> Self {
        self.sources.push(Box::new(source));
        self
    }

    /// Adds provider views for `schema --provider NAME`.
    pub fn with_schema_view(mut self, view: impl SchemaView + 'static) -> Self {
        self.views.push(Box::new(view));
        self
    }

    /// Reads `--args -` from `reader` instead of standard input (for tests and embedding).
    pub fn with_stdin(self, reader: impl Read + Send + 'static) -> Self {
        *self.stdin.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(reader));
        self
    }

    /// The tool set the commands run against (before any `--catalog` or other source).
    pub fn toolset(&self) -> &ToolSet {
        &self.toolset
    }

    /// The `tools` command: nest it in an application's own clap command line with
    /// `Command::subcommand`, then pass its matches to [`Cli::run_matches`].
    pub fn command(&self) -> Command {
        let mut cmd = Command::new("tools")
            .about("Inspect and check the tools of this application")
            .subcommand_required(true)
            .arg_required_else_help(true);
        for source in &self.sources {
            cmd = cmd.arg(source.arg().global(true).action(ArgAction::Append));
        }
        cmd = cmd.arg(
            Arg::new("json")
                .long("json")
                .global(true)
                .action(ArgAction::SetTrue)
                .help("Write machine-readable JSON to standard output"),
        );
        for builtin in builtin::commands(&self.providers()) {
            if !self.overrides(builtin.get_name()) {
                cmd = cmd.subcommand(builtin);
            }
        }
        for c in &self.commands {
            cmd = cmd.subcommand(c.command());
        }
        cmd
    }

    /// Parses `args` (the first is the program name, as in `std::env::args_os`) and runs the
    /// subcommand. Usage errors, clap's included, exit with [`Exit::Usage`]; `--help` succeeds.
    pub async fn run<I, T>(&self, args: I, output: &mut Output<'_>) -> Exit
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        match self.command().try_get_matches_from(args) {
            Ok(matches) => self.run_matches(&matches, output).await,
            Err(e) => {
                use clap::error::ErrorKind;
                let text = e.render().to_string();
                match e.kind() {
                    ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                        if e.exit_code() == 0 =>
                    {
                        let _ = write!(output.out, "{text}");
                        Exit::Success
                    }
                    _ => {
                        let _ = write!(output.err, "{text}");
                        Exit::Usage
                    }
                }
            }
        }
    }

    /// Runs the subcommand of already parsed matches of [`Cli::command`] (for a nested `tools`).
    pub async fn run_matches(&self, matches: &ArgMatches, output: &mut Output<'_>) -> Exit {
        output.json = output.json || matches.get_flag("json");
        let Some((name, sub)) = matches.subcommand() else {
            let _ = writeln!(output.err, "error: a subcommand is required; see --help");
            return Exit::Usage;
        };
        let mut toolset = self.toolset.clone();
        for source in &self.sources {
            let id = source.arg().get_id().clone();
            let values: Vec<String> = matches
                .get_many::<String>(id.as_str())
                .map(|v| v.cloned().collect())
                .unwrap_or_default();
            if !values.is_empty()
                && let Err(exit) = source.add(values, &mut toolset, output).await
            {
                return exit;
            }
            if let Err(exit) = source.add_implied(name, sub, &mut toolset, output).await {
                return exit;
            }
        }
        if let Some(c) = self
            .commands
            .iter()
            .find(|c| c.command().get_name() == name)
        {
            return c.run(&toolset, sub, output).await;
        }
        let views: Vec<&dyn SchemaView> = self.views.iter().map(|v| &**v).collect();
        match name {
            "list" => builtin::list(&toolset, output),
            "schema" => builtin::schema(&toolset, sub, &views, output),
            "check" => builtin::check(&toolset, sub, &self.stdin, output),
            other => {
                let _ = writeln!(output.err, "error: unknown subcommand {other:?}");
                Exit::Usage
            }
        }
    }

    /// Runs with the process's arguments, standard output and standard error, on a runtime of
    /// its own: call it from a synchronous `main` (inside an async runtime, use [`Cli::run`]).
    pub fn run_from_env(&self) -> Exit {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("error: cannot start the async runtime: {e}");
                return Exit::Usage;
            }
        };
        let mut out = std::io::stdout();
        let mut err = std::io::stderr();
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json: false,
        };
        let exit = runtime.block_on(self.run(std::env::args_os(), &mut output));
        let _ = output.out.flush();
        exit
    }

    fn providers(&self) -> Vec<&'static str> {
        self.views.iter().flat_map(|v| v.providers()).collect()
    }

    fn overrides(&self, name: &str) -> bool {
        self.commands.iter().any(|c| c.command().get_name() == name)
    }
}

/// `--catalog FILE`: the tools defined in a JSON array of canonical definitions.
struct Catalogs;

impl ToolSource for Catalogs {
    fn arg(&self) -> Arg {
        Arg::new("catalog")
            .long("catalog")
            .value_name("FILE")
            .help("Add the tools defined in FILE (a JSON array of canonical definitions)")
    }

    /// An unreadable file is a usage error (2); a catalog whose definitions are refused is
    /// refused input (1), explained like any other.
    fn add<'a>(
        &'a self,
        files: Vec<String>,
        toolset: &'a mut ToolSet,
        output: &'a mut Output<'_>,
    ) -> futures::future::BoxFuture<'a, Result<(), Exit>> {
        Box::pin(async move {
            for file in files {
                let bytes = std::fs::read(&file).map_err(|e| {
                    let _ = writeln!(output.err, "error: cannot read catalog {file:?}: {e}");
                    Exit::Usage
                })?;
                // a catalog that is not UTF-8 is refused like any other bad definition
                let registered = match String::from_utf8(bytes) {
                    Ok(text) => toolset
                        .register_catalog(&text)
                        .map(drop)
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(format!(
                        "not valid UTF-8 from byte {} on",
                        e.utf8_error().valid_up_to()
                    )),
                };
                if let Err(e) = registered {
                    let err = ToolError::new(
                        ErrorCode::INVALID_DEFINITION,
                        format!("catalog {file:?}: {e}"),
                    )
                    .recover("fix the definition named in the message");
                    builtin::report(&err, output);
                    return Err(Exit::Refused);
                }
            }
            Ok(())
        })
    }
}
