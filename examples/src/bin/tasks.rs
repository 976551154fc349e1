//! The task manager.
//!
//! ```text
//! cargo run -p examples --bin tasks -- [--provider P] [--db PATH] [--yes] [QUESTION...]
//! cargo run -p examples --bin tasks -- --chain steps.json      # run a chain, no model
//! cargo run -p examples --bin tasks -- --list                  # every task, no model
//! cargo run -p examples --bin tasks -- serve [--addr 127.0.0.1:8080] [--db PATH]   # HTTP API, page, MCP
//! cargo run -p examples --bin tasks -- tools [--db PATH] list|call|pending|approve|deny ...
//! ```
//! With a question (or one on a non-terminal stdin) it runs one turn; in a terminal it is an
//! interactive session. Updates and deletions are confirmed in the terminal (`--yes` approves in
//! advance); creating a task asks too, unless `--yes`. `serve` serves the same tools, store and
//! previews over HTTP (`tool-server`: the JSON API, the approvals page at `/`, MCP at `/mcp`),
//! every confirmation waiting for the page; `tools` is the `tools` command line over them
//! (`tasks tools pending`, `tasks tools approve ID`). A subcommand is one only as the first
//! argument; `--db` then goes after it.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use examples::cli::{self, AgentFlags, AppCommand};
use examples::events::print_event;
use examples::setup;
use examples::tasks::{self, TaskDb};
use tool_providers::agent::{Agent, ConfirmWithEvents};
use tool_runtime::CallContext;
use tool_runtime::executor::{
    ApproveAll, ChainStep, ConfirmationHandler, Deferred, ExecutorConfig, TerminalConfirmer,
};

/// The task manager: tasks in SQLite, updates and deletions confirmed with a preview.
#[derive(Parser)]
#[command(
    name = "tasks",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<AppCommand>,
    #[command(flatten)]
    agent: AgentFlags,
    /// The tasks database; its store is next to it (PATH with the extension `store.sqlite`)
    /// [default: TOOLS_TASKS_DB, else ~/.local/share/tool-calling/tasks.sqlite]
    #[arg(long, value_name = "PATH", global = true)]
    db: Option<PathBuf>,
    /// Approve every confirmation in advance
    #[arg(short, long)]
    yes: bool,
    /// Run a chain of calls from a JSON array of {id, tool, arguments}, without a model
    #[arg(long, value_name = "FILE")]
    chain: Option<PathBuf>,
    /// Print every task as JSON, without a model
    #[arg(long)]
    list: bool,
    /// The question (one turn); without it, a non-terminal stdin, or an interactive session in a
    /// terminal
    #[arg(value_name = "QUESTION", allow_negative_numbers = true)]
    question: Vec<String>,
}

fn print_json(v: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(v).expect("serializable"));
}

#[tokio::main]
async fn main() -> ExitCode {
    examples::setup::init_logging();
    let args = Args::parse();
    cli::check_question::<Args>(&args.question);
    let db_path = cli::data_path(args.db.clone(), "TOOLS_TASKS_DB", "tasks.sqlite")
        .unwrap_or_else(|e| cli::usage_error::<Args>(e));
    let db = TaskDb::open(&db_path).unwrap_or_else(|e| {
        eprintln!("cannot open {}: {e}", db_path.display());
        std::process::exit(1)
    });
    let store_path = db_path.with_extension("store.sqlite");
    let fail = |e: tool_runtime::ToolError| -> ! {
        eprintln!("{e}");
        std::process::exit(1)
    };
    match args.command {
        Some(AppCommand::Tools { args: words }) => {
            let store = examples::open_store(&store_path).unwrap_or_else(|e| fail(e));
            let setup_db = db.clone();
            let setup: tool_runtime::executor::cli::Setup =
                Arc::new(move |b| tasks::configure(b, setup_db.clone(), store.clone()));
            return cli::run_tools("tasks tools", words, tasks::toolset(db), Some(setup)).await;
        }
        Some(AppCommand::Serve { addr }) => {
            // Every confirmation waits for the page; the configuration's MCP servers are
            // served beside the app's tools, under the same policy and store.
            let store = examples::open_store(&store_path).unwrap_or_else(|e| fail(e));
            let (toolset, pins) = cli::with_mcp_servers(
                tasks::toolset(db.clone()),
                &cli::configured_mcp(),
                store.clone(),
            )
            .await;
            let builder = tool_runtime::executor::Executor::builder(toolset)
                .config(ExecutorConfig::default())
                .confirmation(Deferred);
            let executor = tasks::configure(builder, db, store)
                .build()
                .unwrap_or_else(|e| fail(tool_runtime::ToolError::execution(e.to_string())));
            let agent = cli::chat_agent(args.agent.provider, |choice| {
                let config = setup::agent_config(tasks::SYSTEM, None, choice.local);
                Agent::new(choice.model, executor.clone(), config)
            });
            cli::serve(
                addr,
                executor,
                pins,
                "task-manager",
                "A task manager. Updates and deletions wait for a person's approval on the approvals page; a pending call has not run, so tell the user and do not retry it.",
                agent,
            )
            .await
        }
        None => {}
    }
    if args.list {
        print_json(&db.all().unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        }));
        return ExitCode::SUCCESS;
    }
    let sink: tool_providers::agent::EventSink = Arc::new(print_event);
    let confirmer: Arc<dyn ConfirmationHandler> = if args.yes {
        Arc::new(ApproveAll)
    } else {
        Arc::new(ConfirmWithEvents::new(
            TerminalConfirmer::stdio(),
            sink.clone(),
        ))
    };
    let executor = tasks::executor(db, &store_path, confirmer, ExecutorConfig::default())
        .unwrap_or_else(|e| fail(e));

    if let Some(path) = args.chain {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            eprintln!("cannot read {}: {e}", path.display());
            std::process::exit(1)
        });
        let steps: Vec<ChainStep> = serde_json::from_str(&text).unwrap_or_else(|e| {
            eprintln!(
                "{}: expected a JSON array of {{id, tool, arguments}}: {e}",
                path.display()
            );
            std::process::exit(2)
        });
        let result = executor.chain(&steps, CallContext::default()).await;
        print_json(&result);
        std::process::exit(if result.completed { 0 } else { 1 });
    }

    let choice = setup::choose(args.agent.provider).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    eprintln!("model: {}", choice.description);
    let config = setup::agent_config(tasks::SYSTEM, Some("tasks-cli"), choice.local);
    let agent = Agent::new(choice.model, executor, config).on_event(sink);
    let one_shot = if !args.question.is_empty() {
        Some(args.question.join(" "))
    } else if !std::io::stdin().is_terminal() {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).expect("stdin");
        Some(s.trim().to_owned())
    } else {
        None
    };
    match one_shot {
        Some(q) => std::process::exit(ask(&agent, &q).await),
        None => loop {
            eprint!("tasks> ");
            std::io::stderr().flush().ok();
            let mut line = String::new();
            if std::io::stdin().read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            match line.trim() {
                "" => continue,
                "exit" | "quit" => break,
                q => {
                    ask(&agent, q).await;
                }
            }
        },
    }
    ExitCode::SUCCESS
}

async fn ask(agent: &Agent, question: &str) -> i32 {
    match agent.run(question).await {
        Ok(report) => {
            setup::print_status(&report);
            setup::print_usage(&report);
            0
        }
        Err(e) => {
            eprintln!(
                "error: {}",
                tool_runtime::display::visible_lines(&e.to_string())
            );
            1
        }
    }
}
