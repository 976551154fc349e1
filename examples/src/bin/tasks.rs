//! The task manager (seed 003).
//!
//! ```text
//! cargo run -p examples --bin tasks -- [--provider P] [--db PATH] [--yes] [QUESTION...]
//! cargo run -p examples --bin tasks -- --chain steps.json      # run a chain, no model
//! cargo run -p examples --bin tasks -- --list                  # every task, no model
//! ```
//! With a question (or one on a non-terminal stdin) it runs one turn; in a terminal it is an
//! interactive session. Updates and deletions are confirmed in the terminal (`--yes` approves in
//! advance); creating a task asks too, unless `--yes`.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use examples::events::print_event;
use examples::setup;
use examples::tasks::{self, TaskDb};
use tool_providers::agent::{Agent, AgentConfig, ConfirmWithEvents};
use tool_providers::codec::ToolChoice;
use tool_providers::http::Provider;
use tool_runtime::CallContext;
use tool_runtime::executor::{
    ApproveAll, ChainStep, ConfirmationHandler, ExecutorConfig, TerminalConfirmer,
};
use tool_runtime::select::PickOptions;

struct Args {
    provider: Option<Provider>,
    db: PathBuf,
    yes: bool,
    chain: Option<PathBuf>,
    list: bool,
    question: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: tasks [--provider openai|openai-responses|anthropic|ollama|gemini] [--db PATH] [--yes] [QUESTION...]\n       tasks --chain STEPS.json | --list"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let db = std::env::var("TOOLS_TASKS_DB")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
            PathBuf::from(home).join(".local/share/tool-calling/tasks.sqlite")
        });
    let mut a = Args {
        provider: None,
        db,
        yes: false,
        chain: None,
        list: false,
        question: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--provider" => {
                let v = it.next().unwrap_or_else(|| usage());
                a.provider = Some(v.parse().unwrap_or_else(|e| {
                    eprintln!("{e}");
                    std::process::exit(2)
                }));
            }
            "--db" => a.db = PathBuf::from(it.next().unwrap_or_else(|| usage())),
            "--chain" => a.chain = Some(PathBuf::from(it.next().unwrap_or_else(|| usage()))),
            "--list" => a.list = true,
            "--yes" | "-y" => a.yes = true,
            "-h" | "--help" => usage(),
            _ => a.question.push(arg),
        }
    }
    a
}

fn print_json(v: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(v).expect("serializable"));
}

#[tokio::main]
async fn main() {
    examples::setup::init_logging();
    let args = parse();
    let db = TaskDb::open(&args.db).unwrap_or_else(|e| {
        eprintln!("cannot open {}: {e}", args.db.display());
        std::process::exit(1)
    });
    if args.list {
        print_json(&db.all().unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        }));
        return;
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
    let executor = tasks::executor(
        db,
        &args.db.with_extension("store.sqlite"),
        confirmer,
        ExecutorConfig::default(),
    )
    .unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });

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

    let choice = setup::choose(args.provider).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    eprintln!("model: {}", choice.description);
    let mut config = AgentConfig {
        system: Some(tasks::SYSTEM.into()),
        session: Some("tasks-cli".into()),
        ..Default::default()
    };
    if choice.local {
        // As in the research assistant: a 135M model needs a forced call among few tools.
        config.first_choice = Some(ToolChoice::Required);
        // Once the results are back it may only answer: left free it calls the tool again.
        config.choice = ToolChoice::None;
        config.selection = Some(PickOptions::new().max_candidates(2).allow_unsafe(true));
        config.max_iterations = 2;
    }
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
