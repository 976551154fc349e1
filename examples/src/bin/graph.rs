//! The knowledge graph agent (seed 001).
//!
//! ```text
//! cargo run -p examples --bin graph -- [--provider P] [--db PATH] QUESTION...
//! cargo run -p examples --bin graph -- --pending                   # operations waiting for you
//! cargo run -p examples --bin graph -- --approve OP_ID             # run it (exactly once)
//! cargo run -p examples --bin graph -- --deny OP_ID [--reason R]   # refuse it (recorded)
//! cargo run -p examples --bin graph -- --resume OP_ID              # continue the suspended run
//! cargo run -p examples --bin graph -- --activity [--tool T] [--limit N]
//! cargo run -p examples --bin graph -- --mcp                       # serve the tools over MCP (stdio)
//! ```
//! Merges and deletions never run inside the model's turn: they become pending operations in the
//! store next to the graph, decided later by id from this or any other process. A run that
//! suspended on them is saved, and `--resume` continues it once they are decided. The same tools,
//! under the same policy and store, are served to MCP hosts with `--mcp`: an MCP client's merge
//! or deletion becomes a pending operation too, decided here with `--approve` / `--deny`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use examples::events::print_event;
use examples::graph::{self, GraphDb};
use examples::setup;
use tool_providers::agent::{Agent, AgentConfig, RunState, RunStatus};
use tool_providers::codec::ToolChoice;
use tool_providers::http::Provider;
use tool_runtime::executor::{ActivityQuery, Executor, ExecutorConfig};
use tool_runtime::select::PickOptions;

#[derive(Default)]
struct Args {
    provider: Option<Provider>,
    db: PathBuf,
    pending: bool,
    approve: Option<String>,
    deny: Option<String>,
    reason: Option<String>,
    resume: Option<String>,
    activity: bool,
    mcp: bool,
    tool: Option<String>,
    limit: Option<usize>,
    question: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: graph [--provider P] [--db PATH] QUESTION...\n       graph --pending | --approve ID | --deny ID [--reason R] | --resume ID | --activity [--tool T] [--limit N] | --mcp"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let db = std::env::var("TOOLS_GRAPH_DB")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
            PathBuf::from(home).join(".local/share/tool-calling/graph.sqlite")
        });
    let mut a = Args {
        db,
        ..Default::default()
    };
    let mut it = std::env::args().skip(1);
    let next = |it: &mut std::iter::Skip<std::env::Args>| it.next().unwrap_or_else(|| usage());
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--provider" => {
                a.provider = Some(next(&mut it).parse().unwrap_or_else(|e| {
                    eprintln!("{e}");
                    std::process::exit(2)
                }))
            }
            "--db" => a.db = PathBuf::from(next(&mut it)),
            "--pending" => a.pending = true,
            "--approve" => a.approve = Some(next(&mut it)),
            "--deny" => a.deny = Some(next(&mut it)),
            "--reason" => a.reason = Some(next(&mut it)),
            "--resume" => a.resume = Some(next(&mut it)),
            "--activity" => a.activity = true,
            "--mcp" => a.mcp = true,
            "--tool" => a.tool = Some(next(&mut it)),
            "--limit" => a.limit = Some(next(&mut it).parse().unwrap_or_else(|_| usage())),
            "-h" | "--help" => usage(),
            _ => a.question.push(arg),
        }
    }
    a
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

fn agent(args: &Args, executor: Executor) -> Agent {
    let choice = setup::choose(args.provider).unwrap_or_else(|e| fail(e));
    eprintln!("model: {}", choice.description);
    let mut config = AgentConfig {
        system: Some(graph::SYSTEM.into()),
        session: Some("graph-cli".into()),
        ..Default::default()
    };
    if choice.local {
        // A 135M model needs a forced call among few tools (see the research assistant).
        config.first_choice = Some(ToolChoice::Required);
        // Once the results are back it may only answer: left free it calls the tool again.
        config.choice = ToolChoice::None;
        config.selection = Some(PickOptions::new().max_candidates(2).allow_unsafe(true));
        config.max_iterations = 2;
    }
    Agent::new(choice.model, executor, config).on_event(Arc::new(print_event))
}

fn report(args: &Args, r: &tool_providers::agent::RunReport) {
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
                let path = run_file(&args.db, id);
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
async fn main() {
    examples::setup::init_logging();
    let args = parse();
    let db = GraphDb::open(&args.db).unwrap_or_else(|e| fail(e));
    let executor = graph::executor(
        db,
        &args.db.with_extension("store.sqlite"),
        ExecutorConfig::default(),
    )
    .unwrap_or_else(|e| fail(e));

    if args.mcp {
        // stdout is the protocol channel: nothing else may be printed there.
        tool_providers::mcp::McpServer::new(executor)
            .named("knowledge-graph", env!("CARGO_PKG_VERSION"))
            .instructions(
                "A research knowledge graph. Merges and deletions wait for a person's approval \
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
            println!("{}  {}", op.id, op.preview.intent);
            if let Some(change) = &op.preview.change {
                println!("    {change}");
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
        let path = run_file(&args.db, id);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| fail(format!("no saved run at {}: {e}", path.display())));
        let state = RunState::from_json(&text).unwrap_or_else(|e| fail(e));
        let r = agent(&args, executor)
            .resume(state)
            .await
            .unwrap_or_else(|e| fail(e));
        if !matches!(r.status, RunStatus::Suspended { .. }) {
            std::fs::remove_file(&path).ok();
        }
        report(&args, &r);
    } else if args.activity {
        let feed = executor
            .activity(&ActivityQuery {
                tool: args.tool.clone(),
                limit: args.limit,
                ..Default::default()
            })
            .unwrap_or_else(|e| fail(e));
        for r in feed {
            println!(
                "{}  {:<18} {:<9} {:<8} by {:<7} {}",
                r.timestamp_ms,
                r.tool,
                format!("{:?}", r.decision).to_lowercase(),
                r.status.as_str(),
                format!("{:?}", r.decided_by).to_lowercase(),
                r.operation_id.as_deref().unwrap_or(""),
            );
        }
    } else if args.question.is_empty() {
        usage()
    } else {
        let q = args.question.join(" ");
        let r = agent(&args, executor)
            .run(&q)
            .await
            .unwrap_or_else(|e| fail(e));
        report(&args, &r);
    }
}
