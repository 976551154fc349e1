//! The command line the example agents share: the flags every agent takes ([`AgentFlags`],
//! flattened into each binary's own parser), and the two subcommands every agent gets
//! ([`AppCommand`]):
//!
//! ```text
//! APP tools [--db PATH] COMMAND ...   # the `tools` command line over the app's own tools and store
//! APP serve [--addr HOST:PORT]        # the HTTP API, the approvals page and MCP over HTTP
//! ```
//!
//! A subcommand is one only in first position: `research tools list` lists the tools and
//! `research what tools are there` asks a question, while `research --yes tools list` is a usage
//! error (see [`check_question`]) rather than a question sent to a model. Flags that apply to a
//! subcommand too (`--db`) are written after it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tool_mcp::client::PinnedImports;
use tool_providers::agent::Agent;
use tool_providers::http::Provider;
use tool_runtime::ToolSet;
use tool_runtime::cli::{Cli, Output};
use tool_runtime::executor::cli::{ExecutorCli, Setup};
use tool_runtime::executor::{Executor, McpConfig};
use tool_runtime::select::cli::PickCommand;
use tool_runtime::store::Store;
use tool_server::{ServerOptions, Tokens};

use crate::setup::{self, ModelChoice};

/// Where `serve` listens unless told otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// The flags every agent takes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AgentFlags {
    /// The model's provider (openai, openai-responses, anthropic, ollama, gemini), its key and
    /// base URL from the environment [default: TOOLS_LLAMA_URL, else the first provider whose
    /// key is set, else the local llama.cpp server]
    #[arg(long, value_name = "P", global = true)]
    pub provider: Option<Provider>,
}

/// The subcommands every agent has.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum AppCommand {
    /// The `tools` command line over this app's tools and store (`tools --help`)
    ///
    /// list, schema, check, decode and pick; call, and the pending operations (pending, approve,
    /// deny, abandon) through an executor with this app's store, previews and undo.
    #[command(disable_help_flag = true)]
    Tools {
        /// The `tools` subcommand and its arguments
        #[arg(
            value_name = "COMMAND",
            trailing_var_arg = true,
            allow_hyphen_values = true
        )]
        args: Vec<String>,
    },
    /// Serve the tools over HTTP: the JSON API, the app's agent, the approvals page and MCP
    ///
    /// The JSON API under /api/v1 (OpenAPI document at /api/v1/openapi.json), the app's agent
    /// at POST /api/v1/chat (with the model the terminal agent uses: --provider after `serve`,
    /// TOOLS_LLAMA_URL or a provider's key), the approvals page at / and MCP over streamable
    /// HTTP at /mcp. Calls that need a person wait as pending operations the page decides; a
    /// chat run that waits for them is kept in the store and goes on once they are decided.
    Serve {
        /// The address to listen on (a non-loopback one needs TOOLS_AGENT_TOKEN and
        /// TOOLS_APPROVER_TOKEN)
        #[arg(long, value_name = "HOST:PORT", default_value = DEFAULT_ADDR)]
        addr: SocketAddr,
    },
}

/// An app's database: `flag` (its `--db`) if given, else the path in the variable `var`, else
/// `FILE` in `~/.local/share/tool-calling`. A URL there (`redis://...`) is refused with the
/// setting that names a shared store, `TOOLS_STORE`: the database is the app's own file, and
/// taking a URL for a path would create a directory named after its scheme.
pub fn data_path(flag: Option<PathBuf>, var: &str, file: &str) -> Result<PathBuf, String> {
    let (given, by) = match (flag, std::env::var_os(var)) {
        (Some(p), _) => (Some(p), "--db".to_owned()),
        (None, Some(v)) => (Some(PathBuf::from(v)), var.to_owned()),
        (None, None) => (None, String::new()),
    };
    if let Some(path) = given {
        if let Some((scheme, _)) = path.to_str().and_then(|p| p.split_once("://")) {
            return Err(format!(
                "{by} is the app's database file, and {:?} is a {scheme}:// URL; a store shared by \
                 several processes is set with TOOLS_STORE (e.g. TOOLS_STORE=redis://127.0.0.1:6379/), \
                 and {by} stays a file path",
                path.display().to_string()
            ));
        }
        return Ok(path);
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
    Ok(PathBuf::from(home)
        .join(".local/share/tool-calling")
        .join(file))
}

/// Exits with a usage error (code 2) that clap formats like its own, with `P`'s usage line.
pub fn usage_error<P: clap::CommandFactory>(message: impl std::fmt::Display) -> ! {
    P::command()
        .error(clap::error::ErrorKind::MissingRequiredArgument, message)
        .exit()
}

/// Refuses, as a usage error, a question whose first word is a subcommand's name: the
/// subcommand was written after a flag (`research --db PATH tools list`), where it is not one,
/// and running it as a question would send it to a model. A question that really starts with
/// the word is written in quotes.
pub fn check_question<P: clap::CommandFactory>(question: &[String]) {
    let Some(first) = question.first() else {
        return;
    };
    let command = P::command();
    if command.get_subcommands().any(|c| c.get_name() == first) {
        let db = if command.get_arguments().any(|a| a.get_id() == "db") {
            ", with `--db` after it"
        } else {
            ""
        };
        usage_error::<P>(format!(
            "`{first}` is a subcommand only as the first argument: `{} {first} ...`{db} (to ask \
             a question that starts with the word, quote the question)",
            command.get_name()
        ))
    }
}

/// Runs the `tools` command line over `toolset` with `args` (the words after `tools`), as the
/// program `program` (e.g. `"research tools"`, in its usage lines). `setup` gives the executor
/// of `call`, `pending`, `approve`, `deny` and `abandon` the app's store, previews and undo, so
/// that they see the operations the app's agent and its `serve` leave pending. Exit codes: 0
/// success, 1 refused, 2 usage.
pub async fn run_tools(
    program: &str,
    args: Vec<String>,
    toolset: ToolSet,
    setup: Option<Setup>,
) -> ExitCode {
    let cli = Cli::new(toolset)
        .with_schema_view(tool_providers::cli::ProviderSchemas)
        .with(tool_providers::cli::DecodeCommand)
        .with(PickCommand::from_env())
        // the app's tools and those of the MCP servers of `--mcp-config` and of the
        // configuration's [mcp.servers], as the `tools` command line has them
        .with_source(tool_mcp::client::McpConfigOption);
    let cli = tool_mcp::client::PinCommands::install(cli);
    let executor_cli = match setup {
        Some(setup) => ExecutorCli::with_setup(setup),
        None => ExecutorCli::new(),
    };
    let cli = executor_cli.install(cli);
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let mut output = Output {
        out: &mut out,
        err: &mut err,
        json: false,
    };
    let argv = std::iter::once(program.to_owned()).chain(args);
    let exit = cli.run(argv, &mut output).await;
    let _ = output.out.flush();
    exit.into()
}

/// The agent `serve` answers `POST /api/v1/chat` with: `build` makes it from the model the
/// terminal agent would use (`provider`, else `TOOLS_LLAMA_URL`, else a provider's key), over
/// the executor `serve` serves. `None`, said on stderr, when the environment names no model: a
/// server does not start (and on first use build) the local model server the way the terminal
/// agent does, since it would keep clients waiting minutes for its address.
pub fn chat_agent(
    provider: Option<Provider>,
    build: impl FnOnce(ModelChoice) -> Agent,
) -> Option<Agent> {
    match setup::configured(provider) {
        Ok(Some(choice)) => {
            eprintln!("chat model: {}", choice.description);
            Some(build(choice))
        }
        Ok(None) => {
            eprintln!(
                "chat: no model is configured (--provider after `serve`, TOOLS_LLAMA_URL or a \
                 provider's key), so POST /api/v1/chat answers 404"
            );
            None
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

/// The `[mcp.servers.NAME]` tables of the configuration the command line reads
/// (`$TOOLS_CONFIG`, else `./tools.toml` when present): the MCP servers `serve` imports. A
/// configuration that cannot be read exits 2, saying why.
pub fn configured_mcp() -> McpConfig {
    match tool_runtime::executor::cli::load_config(None) {
        Ok(config) => config.mcp,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    }
}

/// `toolset` with the tools of the MCP servers `mcp` names beside the app's own, pinned in
/// `store` (the executor's), for `serve`: each imported tool is under the executor's policy
/// like the app's (by default every call confirmed and first use gated). What was imported,
/// refused, flagged or held is said on stderr; a server that cannot be reached exits 2. The
/// imported tools' pins go to [`serve`], whose approvals page shows a held tool's change and
/// approves it.
pub async fn with_mcp_servers(
    mut toolset: ToolSet,
    mcp: &McpConfig,
    store: Arc<dyn Store>,
) -> (ToolSet, PinnedImports) {
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let mut output = Output {
        out: &mut out,
        err: &mut err,
        json: false,
    };
    match tool_mcp::client::import_configured_pins(mcp, &mut toolset, store, &mut output).await {
        Ok(pins) => (toolset, pins),
        Err(exit) => std::process::exit(exit.code()),
    }
}

/// Serves `executor` on `addr` (the JSON API, the approvals page, MCP over HTTP and, with
/// `chat`, the app's agent at `POST /api/v1/chat`) until Ctrl-C. The agent's runs are kept in
/// the executor's store, so that a run waiting for a person survives a restart and any replica
/// on the same store answers for it; ended runs are removed after `TOOLS_RUNS_KEEP_DAYS`
/// ([`crate::retention`]). The bearer tokens come from `TOOLS_AGENT_TOKEN` and `TOOLS_APPROVER_TOKEN`; without
/// them, on a loopback address, fresh ones are made, the agent's is printed, and so is a one-time
/// sign-in link to the approvals page. The addresses are printed on stderr (`API:
/// http://ADDR/api/v1/tools ...`). MCP clients are told the application's `name` and this
/// crate's version in `serverInfo`, and `instructions` for their model. `pins` are the imported
/// tools' ([`with_mcp_servers`]): a tool whose server changed its definition shows on the
/// approvals page with its change, held until the approver approves it.
pub async fn serve(
    addr: SocketAddr,
    executor: Executor,
    pins: PinnedImports,
    name: &str,
    instructions: &str,
    chat: Option<Agent>,
) -> ! {
    // ended chat runs go after their retention; the store's other records are kept apart
    match crate::retention::keep_from_env() {
        Ok(Some(keep)) => crate::retention::sweep(executor.store().clone(), keep),
        Ok(None) => {}
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    }
    let tokens = match Tokens::from_env() {
        Ok(Some(t)) => t,
        Ok(None) => Tokens::generate(),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    };
    // the tools the imported servers add while this serves are served too
    pins.follow(&executor);
    let mut options = ServerOptions::new(tokens.clone())
        .mcp_server_info(name, env!("CARGO_PKG_VERSION"))
        .mcp_instructions(instructions)
        .held_tools(Arc::new(pins));
    if let Some(agent) = chat {
        options = options.chat(agent);
    }
    let listener = tool_server::bind(addr, &options).await.unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let local = listener.local_addr().unwrap_or(addr);
    eprintln!("{}", tool_server::announcement(local, &options));
    match tool_server::serve_on(listener, executor, options).await {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}
