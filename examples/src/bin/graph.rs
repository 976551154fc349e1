//! The knowledge graph agent.
//!
//! ```text
//! cargo run -p examples --bin graph -- [--provider P] [--db PATH] QUESTION...
//! cargo run -p examples --bin graph -- --pending                   # operations waiting for you
//! cargo run -p examples --bin graph -- --approve OP_ID             # run it (exactly once)
//! cargo run -p examples --bin graph -- --deny OP_ID [--reason R]   # refuse it (recorded)
//! cargo run -p examples --bin graph -- --resume OP_ID              # continue the suspended run
//! cargo run -p examples --bin graph -- --activity [--tool T] [--from user|agent|system] [--limit N]
//! cargo run -p examples --bin graph -- --reanalyze                 # a system job: one batch to approve
//! cargo run -p examples --bin graph -- --mcp                       # serve the tools over MCP (stdio)
//! cargo run -p examples --bin graph -- serve [--addr 127.0.0.1:8080] [--db PATH]   # HTTP API, page, MCP
//! cargo run -p examples --bin graph -- tools [--db PATH] list|call|pending|approve|deny ...
//! ```
//! Changes to the graph never run inside the model's turn: they become pending operations in the
//! store next to the graph, decided later by id from this or any other process. A run that
//! suspended on them is saved, and `--resume` continues it once they are decided. The same tools,
//! under the same policy and store, are served to MCP hosts with `--mcp`: an MCP client's merge
//! or deletion becomes a pending operation too, decided here with `--approve` / `--deny`.
//! `serve` serves them over HTTP (`tool-server`: the JSON API, the approvals page at `/`, MCP at
//! `/mcp`), every merge and deletion waiting for the page; `tools` is the `tools` command line
//! over the graph's tools and store (`graph tools pending` lists the same operations as
//! `--pending`, in the `tools` format). A subcommand is one only as the first argument; `--db`
//! then goes after it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use examples::cli::{self, AgentFlags, AppCommand};
use examples::events::print_event;
use examples::graph::tools::BatchTool;
use examples::graph::{self, GraphDb, Services, Summarizer};
use examples::setup::{self, ModelChoice};
use tool_mcp::client::PinnedImports;
use tool_providers::agent::{Agent, RunState, RunStatus};
use tool_runtime::display::{change_lines, visible};
use tool_runtime::executor::{ActivityQuery, Executor, ExecutorConfig};

/// The knowledge graph agent: every change waits for a person's approval.
#[derive(Parser)]
#[command(
    name = "graph",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<AppCommand>,
    #[command(flatten)]
    agent: AgentFlags,
    /// The graph database; its store is next to it (PATH with the extension `store.sqlite`)
    /// [default: TOOLS_GRAPH_DB, else ~/.local/share/tool-calling/graph.sqlite]
    #[arg(long, value_name = "PATH", global = true)]
    db: Option<PathBuf>,
    /// List the operations waiting for approval, with previews
    #[arg(long)]
    pending: bool,
    /// Approve a pending operation and run it (exactly once)
    #[arg(long, value_name = "OP_ID")]
    approve: Option<String>,
    /// Deny a pending operation (recorded)
    #[arg(long, value_name = "OP_ID")]
    deny: Option<String>,
    /// Why, with --deny
    #[arg(long, value_name = "R")]
    reason: Option<String>,
    /// Continue the run that suspended on this operation, once it is decided
    #[arg(long, value_name = "OP_ID")]
    resume: Option<String>,
    /// Show the activity feed (the stored audit records)
    #[arg(long)]
    activity: bool,
    /// With --activity: only this tool's records
    #[arg(long, value_name = "T")]
    tool: Option<String>,
    /// With --activity: only calls initiated by user, agent or system
    #[arg(long, value_name = "WHO", value_parser = graph::feed::parse_initiator)]
    from: Option<tool_runtime::tool::Initiator>,
    /// With --activity: at most N records
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Serve the tools over MCP on stdin and stdout
    #[arg(long)]
    mcp: bool,
    /// Recalculate every node's confidence as the system (a scheduled job): one pending
    /// operation listing every node, for a person to approve
    #[arg(long)]
    reanalyze: bool,
    /// The question (one turn)
    #[arg(value_name = "QUESTION", allow_negative_numbers = true)]
    question: Vec<String>,
}

fn print_json(v: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(v).expect("serializable"));
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!(
        "error: {}",
        tool_runtime::display::visible_lines(&e.to_string())
    );
    std::process::exit(1)
}

/// Where a suspended run waiting on `op` is saved.
fn run_file(db: &Path, op: &str) -> PathBuf {
    db.with_extension("runs").join(format!("{op}.json"))
}

fn agent(choice: ModelChoice, executor: Executor) -> Agent {
    eprintln!("model: {}", choice.description);
    let config = setup::agent_config(graph::SYSTEM, Some("graph-cli"), choice.local);
    Agent::new(choice.model, executor, config).on_event(Arc::new(print_event))
}

fn report(db: &Path, r: &tool_providers::agent::RunReport) {
    match &r.status {
        RunStatus::Answered => println!(
            "{}",
            tool_runtime::display::visible_lines(r.answer.as_deref().unwrap_or(""))
        ),
        RunStatus::MaxIterations => {
            println!("(no final answer after {} model requests)", r.iterations)
        }
        RunStatus::Suspended { state } => {
            let ids = state.operation_ids();
            for id in &ids {
                let path = run_file(db, id);
                std::fs::create_dir_all(path.parent().expect("a parent")).ok();
                std::fs::write(&path, state.to_json()).unwrap_or_else(|e| fail(e));
            }
            println!(
                "(waiting for approval of {ids:?}: `graph --approve ID` or `--deny ID`, then `graph --resume ID`)"
            );
        }
    }
    setup::print_usage(r);
}

#[tokio::main]
async fn main() -> ExitCode {
    examples::setup::init_logging();
    let args = Args::parse();
    cli::check_question::<Args>(&args.question);
    let db_path = cli::data_path(args.db.clone(), "TOOLS_GRAPH_DB", "graph.sqlite")
        .unwrap_or_else(|e| cli::usage_error::<Args>(e));
    let db = GraphDb::open(&db_path).unwrap_or_else(|e| fail(e));
    let store_path = db_path.with_extension("store.sqlite");
    let mut services = Services::from_env().unwrap_or_else(|e| fail(e));
    if let Some(AppCommand::Tools { args: words }) = &args.command {
        let store = examples::open_store(&store_path).unwrap_or_else(|e| fail(e));
        let (setup_db, setup_services) = (db.clone(), services.clone());
        let setup: tool_runtime::executor::cli::Setup = Arc::new(move |b| {
            graph::configure(b, setup_db.clone(), setup_services.clone(), store.clone())
        });
        return cli::run_tools(
            "graph tools",
            words.clone(),
            graph::toolset(db, services),
            Some(setup),
        )
        .await;
    }
    // A run of the agent has a model: it writes the summaries too.
    let model = if !args.question.is_empty() || args.resume.is_some() {
        let summaries = setup::choose(args.agent.provider).unwrap_or_else(|e| fail(e));
        services.summarizer = Summarizer::model(summaries.model);
        Some(setup::choose(args.agent.provider).unwrap_or_else(|e| fail(e)))
    } else {
        None
    };
    // The agent's and `serve`'s executor: every change waits as a pending operation (or, over
    // MCP, is asked about in-band). The operator's configuration applies: `tools.toml` or
    // `TOOLS_CONFIG`, then `TOOLS_*` variables (e.g. `TOOLS_CONFIRMATION_TIMEOUT_MS`).
    let config = ExecutorConfig::load(None).unwrap_or_else(|e| fail(e));
    let (executor, pins) = if matches!(args.command, Some(AppCommand::Serve { .. })) {
        // `serve` serves the configuration's MCP servers beside the graph's tools, under the
        // same policy and store
        let store = examples::open_store(&store_path).unwrap_or_else(|e| fail(e));
        let (toolset, pins) = cli::with_mcp_servers(
            graph::toolset(db.clone(), services.clone()),
            &config.mcp,
            store.clone(),
        )
        .await;
        let builder = tool_runtime::executor::Executor::builder(toolset)
            .config(graph::with_search_limit(config))
            .confirmation(tool_runtime::executor::Deferred);
        let executor = graph::configure(builder, db, services, store)
            .build()
            .unwrap_or_else(|e| fail(e));
        (executor, Some(pins))
    } else {
        let executor =
            graph::executor_with(db, services, &store_path, config).unwrap_or_else(|e| fail(e));
        (executor, None)
    };

    if let Some(AppCommand::Serve { addr }) = &args.command {
        let agent = cli::chat_agent(args.agent.provider, |choice| {
            let config = setup::agent_config(graph::SYSTEM, None, choice.local);
            Agent::new(choice.model, executor.clone(), config)
        });
        let pins = pins.unwrap_or_else(|| PinnedImports::new(executor.store().clone()));
        cli::serve(
            *addr,
            executor,
            pins,
            "knowledge-graph",
            "A research knowledge graph. Changes wait for a person's approval on the approvals \
             page; a pending call has not run, so tell the user and do not retry it.",
            agent,
        )
        .await
    } else if args.mcp {
        // stdout is the protocol channel: nothing else may be printed there.
        // Confirming in-band is the operator's grant: the MCP host's configuration sets
        // TOOLS_MCP_HOST_CONFIRMS=1 when the host shows each confirmation to a person; without
        // it, changes wait for `graph --approve` whatever the client offers to answer.
        let in_band = match std::env::var("TOOLS_MCP_HOST_CONFIRMS").as_deref() {
            Ok("1" | "true" | "yes") => tool_mcp::server::InBandConfirmation::AnyClient,
            _ => tool_mcp::server::InBandConfirmation::Never,
        };
        tool_mcp::server::McpServer::new(executor)
            .in_band_confirmation(in_band)
            .named("knowledge-graph", env!("CARGO_PKG_VERSION"))
            .instructions(
                "A research knowledge graph. Changes wait for a person's approval \
                 (graph --pending / --approve ID).",
            )
            .serve_stdio()
            .await
            .unwrap_or_else(|e| fail(e));
    } else if args.pending {
        let ops = executor.pending().unwrap_or_else(|e| fail(e));
        if ops.is_empty() {
            eprintln!("nothing is waiting for approval");
        }
        for op in ops {
            println!("{}  {}", op.id, visible(&op.preview.intent));
            if let Some(change) = &op.preview.change {
                for line in change_lines(change) {
                    println!("    {line}");
                }
            }
        }
    } else if let Some(id) = &args.approve {
        let exec = executor.approve(id).await.unwrap_or_else(|e| fail(e));
        print_json(&exec.outcome.to_json());
    } else if let Some(id) = &args.deny {
        let exec = executor
            .deny(id, args.reason.clone())
            .unwrap_or_else(|e| fail(e));
        print_json(&exec.outcome.to_json());
    } else if let Some(id) = &args.resume {
        let path = run_file(&db_path, id);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| fail(format!("no saved run at {}: {e}", path.display())));
        let state = RunState::from_json(&text).unwrap_or_else(|e| fail(e));
        let r = agent(model.expect("chosen for --resume"), executor)
            .resume(state)
            .await
            .unwrap_or_else(|e| fail(e));
        if !matches!(r.status, RunStatus::Suspended { .. }) {
            std::fs::remove_file(&path).ok();
        }
        report(&db_path, &r);
    } else if args.activity {
        let feed = executor
            .activity(&ActivityQuery {
                tool: args.tool.clone(),
                initiator: args.from,
                limit: args.limit,
                ..Default::default()
            })
            .unwrap_or_else(|e| fail(e));
        for r in feed {
            println!("{}", graph::feed::line(&r));
        }
    } else if args.reanalyze {
        // What a schedule runs (e.g. nightly from cron): the system initiates it, a person
        // approves the one operation listing every node.
        let ids: Vec<String> = examples::graph::GraphDb::open(&db_path)
            .and_then(|db| db.nodes())
            .unwrap_or_else(|e| fail(e))
            .into_iter()
            .map(|n| n.id)
            .collect();
        let exec =
            graph::feed::system_batch(&executor, BatchTool::RecalculateNodeConfidence, &ids).await;
        print_json(&exec.outcome.to_json());
    } else if args.question.is_empty() {
        cli::usage_error::<Args>(
            "nothing to do: give a question, one of --pending, --approve, --deny, --resume, \
             --activity, --reanalyze, --mcp, or a subcommand (tools, serve)",
        )
    } else {
        let q = args.question.join(" ");
        let r = agent(model.expect("chosen for a question"), executor)
            .run(&q)
            .await
            .unwrap_or_else(|e| fail(e));
        report(&db_path, &r);
    }
    ExitCode::SUCCESS
}
