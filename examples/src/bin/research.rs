//! The research assistant (seed 000).
//!
//! ```text
//! cargo run -p examples --bin research -- [--provider P] [--db PATH] [--yes] [--stream] [QUESTION...]
//! cargo run -p examples --bin research -- --undo CALL_ID
//! ```
//! With a question (or a question on a non-terminal stdin) it runs one turn and exits; in a
//! terminal without a question it is an interactive session. Confirmations are asked in the
//! terminal (`--yes` approves everything in advance). Without `--provider` it uses the local
//! llama.cpp server (set up on first run), unless a provider's key is in the environment.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use examples::research::{self, Db, DoiService};
use examples::setup;
use tool_providers::agent::{Agent, AgentConfig, AgentEvent, ConfirmWithEvents, RunStatus};
use tool_providers::codec::ToolChoice;
use tool_providers::http::Provider;
use tool_runtime::CallContext;
use tool_runtime::executor::{ApproveAll, ConfirmationHandler, ExecutorConfig, TerminalConfirmer};
use tool_runtime::select::PickOptions;

struct Args {
    provider: Option<Provider>,
    db: PathBuf,
    yes: bool,
    stream: bool,
    undo: Option<String>,
    question: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: research [--provider openai|openai-responses|anthropic|ollama|gemini] [--db PATH] [--yes] [--stream] [QUESTION...]\n       research --undo CALL_ID"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let data = std::env::var("TOOLS_RESEARCH_DB")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
            PathBuf::from(home).join(".local/share/tool-calling/research.sqlite")
        });
    let mut a = Args {
        provider: None,
        db: data,
        yes: false,
        stream: false,
        undo: None,
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
            "--yes" | "-y" => a.yes = true,
            "--stream" => a.stream = true,
            "--undo" => a.undo = Some(it.next().unwrap_or_else(|| usage())),
            "-h" | "--help" => usage(),
            _ => a.question.push(arg),
        }
    }
    a
}

fn print_event(e: &AgentEvent) {
    match e {
        AgentEvent::CallStarted {
            tool, arguments, ..
        } => eprintln!("→ {tool} {arguments}"),
        AgentEvent::CallFinished {
            tool,
            status,
            result,
            call_id,
        } => {
            let mut text = result.to_string();
            if text.len() > 300 {
                text = format!("{}…", text.chars().take(300).collect::<String>());
            }
            eprintln!("← {tool} [{}] {text}   (call {call_id})", status.as_str());
        }
        AgentEvent::Suspended { operations } => eprintln!("⏸ waiting for approval: {operations:?}"),
        _ => {}
    }
}

#[tokio::main]
async fn main() {
    let args = parse();
    let db = Db::open(&args.db).unwrap_or_else(|e| {
        eprintln!("cannot open {}: {e}", args.db.display());
        std::process::exit(1)
    });
    let doi = DoiService {
        base_url: std::env::var("TOOLS_DOI_URL")
            .unwrap_or_else(|_| "https://api.crossref.org/works".into()),
        http: reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(15))
            .build()
            .expect("client"),
    };
    let sink: tool_providers::agent::EventSink = Arc::new(print_event);
    let confirmer: Arc<dyn ConfirmationHandler> = if args.yes {
        Arc::new(ApproveAll)
    } else {
        Arc::new(ConfirmWithEvents::new(
            TerminalConfirmer::stdio(),
            sink.clone(),
        ))
    };
    let store_path = args.db.with_extension("store.sqlite");
    let executor = research::executor(
        research::toolset(db.clone(), doi),
        db,
        &store_path,
        confirmer,
        ExecutorConfig::default(),
    )
    .unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });

    if let Some(call_id) = args.undo {
        let exec = executor.undo(&call_id, CallContext::default()).await;
        println!(
            "{}",
            serde_json::to_string_pretty(&exec.outcome.to_json()).expect("json")
        );
        std::process::exit(if exec.outcome.is_success() { 0 } else { 1 });
    }

    let choice = setup::choose(args.provider).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    eprintln!("model: {}", choice.description);
    let mut config = AgentConfig {
        system: Some(research::SYSTEM.into()),
        session: Some("research-cli".into()),
        ..Default::default()
    };
    if choice.local {
        // A 135M model calls tools reliably only when told to, and chooses well among few tools:
        // force a call on the first request and declare the tools `pick` finds relevant.
        config.first_choice = Some(ToolChoice::Required);
        config.selection = Some(PickOptions::new().max_candidates(2).allow_unsafe(true));
        config.max_iterations = 3;
    }
    let agent = Agent::new(choice.model.streaming(args.stream), executor, config).on_event(sink);

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
            eprint!("research> ");
            std::io::stderr().flush().ok();
            let mut line = String::new();
            if std::io::stdin().read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let q = line.trim();
            if q.is_empty() {
                continue;
            }
            if q == "exit" || q == "quit" {
                break;
            }
            ask(&agent, q).await;
        },
    }
}

async fn ask(agent: &Agent, question: &str) -> i32 {
    match agent.run(question).await {
        Ok(report) => {
            match &report.status {
                RunStatus::Answered => println!("{}", report.answer.as_deref().unwrap_or("")),
                RunStatus::MaxIterations => println!(
                    "(no final answer after {} model requests)",
                    report.iterations
                ),
                RunStatus::Suspended { state } => {
                    println!("(waiting for approval of {:?})", state.operation_ids())
                }
            }
            eprintln!(
                "[{} model requests, {} input + {} output tokens, {} tool calls audited]",
                report.iterations,
                report.usage.input_tokens,
                report.usage.output_tokens,
                report.audit.len()
            );
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}
