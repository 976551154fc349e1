//! The catalog agent: struct-form tools with verbatim schemas among ~400 declared
//! tools; `pick` narrows them to a few before each request.
//!
//! ```text
//! cargo run -p examples --bin catalog -- [--provider P] [--max N] QUESTION...
//! cargo run -p examples --bin catalog -- --pick "convert 10 miles to km"   # show the narrowing, no model
//! cargo run -p examples --bin catalog -- serve [--addr 127.0.0.1:8080]     # HTTP API, page, MCP
//! cargo run -p examples --bin catalog -- tools list|schema|check|pick|call ...
//! ```
//! Every catalog tool is read-only, so none of them is ever confirmed. The agent keeps its
//! records in memory; `serve` (the JSON API, the approvals page at `/`, MCP at `/mcp`) and
//! `tools call` keep theirs (audit records, the activity feed) in the store the executor
//! configuration names: SQLite at `.tools/state.sqlite3` in the working directory unless
//! `TOOLS_STORE` or a `tools.toml` says otherwise. `serve` reads only the `[mcp.servers.NAME]`
//! tables of `tools.toml` (or `TOOLS_CONFIG`): those servers' tools are served beside the
//! catalog's, under the default policy (confirmed and gated unless trusted), and otherwise uses
//! the defaults. A subcommand is one only as the first argument.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use examples::catalog;
use examples::cli::{self, AgentFlags, AppCommand};
use examples::events::print_event;
use examples::setup;
use tool_providers::agent::{Agent, AgentConfig};
use tool_providers::codec::ToolChoice;
use tool_runtime::executor::{ApproveAll, Deferred, Executor, ExecutorConfig};

/// The catalog agent: a few runnable tools among ~400 declared ones, narrowed by `pick`.
#[derive(Parser)]
#[command(
    name = "catalog",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<AppCommand>,
    #[command(flatten)]
    agent: AgentFlags,
    /// How many tools `pick` declares to the model
    #[arg(long, value_name = "N", default_value_t = 3)]
    max: usize,
    /// Only show the narrowing (the tools `pick` offers, as JSON lines), without a model
    #[arg(long)]
    pick: bool,
    /// The request
    #[arg(value_name = "QUESTION", allow_negative_numbers = true)]
    question: Vec<String>,
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!(
        "error: {}",
        tool_runtime::display::visible_lines(&e.to_string())
    );
    std::process::exit(1)
}

#[tokio::main]
async fn main() -> ExitCode {
    examples::setup::init_logging();
    let args = Args::parse();
    cli::check_question::<Args>(&args.question);
    match args.command {
        // The commands' executor has the store the configuration names.
        Some(AppCommand::Tools { args: words }) => {
            return cli::run_tools("catalog tools", words, catalog::toolset(), None).await;
        }
        Some(AppCommand::Serve { addr }) => {
            // the configuration's MCP servers are served beside the catalog's tools, under the
            // same policy and store
            let config = ExecutorConfig::default();
            let store = config.store.open().unwrap_or_else(|e| fail(e));
            let (toolset, pins) =
                cli::with_mcp_servers(catalog::toolset(), &cli::configured_mcp(), store.clone())
                    .await;
            let executor = Executor::builder(toolset)
                .config(config)
                .store(store)
                .confirmation(Deferred)
                .build()
                .unwrap_or_else(|e| fail(e));
            let max = args.max;
            let agent = cli::chat_agent(args.agent.provider, |choice| {
                Agent::new(
                    choice.model,
                    executor.clone(),
                    agent_config(choice.local, max),
                )
            });
            cli::serve(
                addr,
                executor,
                pins,
                "tool-catalog",
                "A catalog of read-only tools (conversions, look-ups and the like); none changes anything.",
                agent,
            )
            .await
        }
        None => {}
    }
    if args.question.is_empty() {
        cli::usage_error::<Args>(
            "nothing to ask: give a question (or --pick QUERY), or a subcommand (tools, serve)",
        )
    }
    let (provider, max, pick_only) = (args.agent.provider, args.max, args.pick);
    let q = args.question.join(" ");
    // Read-only tools only: nothing here needs a person's confirmation.
    let executor = catalog::executor(Arc::new(ApproveAll), ExecutorConfig::default())
        .unwrap_or_else(|e| fail(e));
    let total = executor.toolset().len();
    let picked = catalog::narrow(&executor.toolset(), &q, max)
        .await
        .unwrap_or_else(|e| fail(e));
    eprintln!(
        "pick: {} of {total} tools declared: {:?}",
        picked.len(),
        picked.iter().map(|c| c.name()).collect::<Vec<_>>()
    );
    if pick_only {
        for c in &picked {
            println!("{}", serde_json::to_string(c).unwrap_or_else(|e| fail(e)));
        }
        return ExitCode::SUCCESS;
    }
    let choice = setup::choose(provider).unwrap_or_else(|e| fail(e));
    eprintln!("model: {}", choice.description);
    let config = AgentConfig {
        session: Some("catalog-cli".into()),
        ..agent_config(choice.local, max)
    };
    let agent = Agent::new(choice.model, executor, config).on_event(Arc::new(print_event));
    let r = agent.run(&q).await.unwrap_or_else(|e| fail(e));
    setup::print_status(&r);
    setup::print_usage(&r);
    ExitCode::SUCCESS
}

/// The agent's configuration over the catalog: pre-selection declares at most `max` tools.
fn agent_config(local: bool, max: usize) -> AgentConfig {
    AgentConfig {
        system: Some(catalog::SYSTEM.into()),
        selection: Some(catalog::selection(max)),
        first_choice: local.then_some(ToolChoice::Required),
        // The local 135M model may only answer once the results are back: left free it calls
        // the same tool again instead.
        choice: if local {
            ToolChoice::None
        } else {
            ToolChoice::Auto
        },
        max_iterations: if local { 2 } else { 6 },
        ..Default::default()
    }
}
