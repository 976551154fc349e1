//! The research assistant (seed 000).
//!
//! ```text
//! cargo run -p examples --bin research -- [--provider P] [--small-model] [--db PATH] [--yes] [--stream] [QUESTION...]
//! cargo run -p examples --bin research -- --undo CALL_ID   # or the undo id (`un-...`) an ambiguous call id lists
//! cargo run -p examples --bin research -- serve [--addr 127.0.0.1:8080] [--db PATH]
//! ```
//! `serve` serves the same tools, store and policy over HTTP (`tool-server`): the JSON API, the
//! approvals page at `/`, and the OpenAPI document. Calls that need a person wait as pending
//! operations that the page (or `POST /api/v1/pending/{id}/approve`) decides. The bearer tokens
//! come from `TOOLS_AGENT_TOKEN` and `TOOLS_APPROVER_TOKEN`; without them, on a loopback address,
//! fresh ones are made and printed with the page's link.
//! With a question as arguments it runs one turn and exits; so it does with a non-terminal stdin,
//! whose first line is then the question. In a terminal without a question it is an interactive
//! session that keeps the conversation across questions. Confirmations are asked in the terminal
//! and read from the same input (so a script can answer them on the lines after the question);
//! `--yes` approves everything in advance. Without `--provider` it uses the local llama.cpp server
//! (set up on first run), unless a provider's key is in the environment.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use examples::events::print_event;
use examples::history::History;
use examples::input::SharedInput;
use examples::research::{self, Db, DoiService};
use examples::setup;
use tool_providers::agent::{Agent, AgentConfig, ConfirmWithEvents, RunReport, TranscriptEntry};
use tool_providers::codec::ToolChoice;
use tool_providers::http::Provider;
use tool_runtime::executor::Status;
use tool_runtime::executor::{
    ApproveAll, ConfirmationHandler, Deferred, ExecutorConfig, TerminalConfirmer,
};
use tool_runtime::select::PickOptions;
use tool_runtime::{CallContext, ErrorCode};
use tool_server::{ServerOptions, Tokens};

struct Args {
    serve: Option<SocketAddr>,
    provider: Option<Provider>,
    db: PathBuf,
    yes: bool,
    stream: bool,
    small_model: bool,
    undo: Option<String>,
    question: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: research [--provider openai|openai-responses|anthropic|ollama|gemini] [--small-model] [--db PATH] [--yes] [--stream] [QUESTION...]\n       research --undo CALL_ID|UNDO_ID\n       research serve [--addr HOST:PORT] [--db PATH]"
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
        serve: None,
        provider: None,
        db: data,
        yes: false,
        stream: false,
        small_model: false,
        undo: None,
        question: Vec::new(),
    };
    let mut it = std::env::args().skip(1).peekable();
    if it.peek().map(String::as_str) == Some("serve") {
        it.next();
        a.serve = Some(DEFAULT_ADDR.parse().expect("a valid address"));
    }
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--addr" if a.serve.is_some() => {
                let v = it.next().unwrap_or_else(|| usage());
                a.serve = Some(v.parse().unwrap_or_else(|e| {
                    eprintln!("--addr {v}: {e}");
                    std::process::exit(2)
                }));
            }
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
            "--small-model" => a.small_model = true,
            "--undo" => a.undo = Some(it.next().unwrap_or_else(|| usage())),
            "-h" | "--help" => usage(),
            _ if a.serve.is_some() => usage(),
            _ => a.question.push(arg),
        }
    }
    a
}

/// Where `serve` listens unless told otherwise.
const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// `research serve`: the tools over HTTP, with every confirmation waiting for the page.
async fn serve(addr: SocketAddr, db: Db, doi: DoiService, db_path: &std::path::Path) -> ! {
    let executor = research::executor(
        research::toolset(db.clone(), doi),
        db,
        &db_path.with_extension("store.sqlite"),
        Arc::new(Deferred),
        ExecutorConfig::default(),
    )
    .unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let tokens = match Tokens::from_env() {
        Ok(Some(t)) => t,
        Ok(None) => Tokens::generate(),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    };
    let options = ServerOptions::new(tokens.clone());
    let listener = tool_server::bind(addr, &options).await.unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let local = listener.local_addr().unwrap_or(addr);
    if tokens.generated() {
        eprintln!(
            "approvals page: http://{local}/#token={}",
            tokens.approver()
        );
        eprintln!("agent token (TOOLS_AGENT_TOKEN): {}", tokens.agent());
    } else {
        eprintln!("approvals page: http://{local}/ (enter TOOLS_APPROVER_TOKEN)");
    }
    eprintln!("API: http://{local}/api/v1/tools  OpenAPI: http://{local}/api/v1/openapi.json");
    match tool_server::serve_on(listener, executor, options).await {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

#[tokio::main]
async fn main() {
    examples::setup::init_logging();
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
    if let Some(addr) = args.serve {
        serve(addr, db, doi, &args.db).await;
    }
    let sink: tool_providers::agent::EventSink = Arc::new(print_event);
    // One reader of stdin for the questions and the confirmations (see `examples::input`).
    let input = SharedInput::stdin();
    let confirmer: Arc<dyn ConfirmationHandler> = if args.yes {
        Arc::new(ApproveAll)
    } else {
        Arc::new(ConfirmWithEvents::new(
            TerminalConfirmer::new(input.reader(), std::io::stderr()),
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
    // The local server is the small model; `--small-model` says so of a provider flag's server
    // too (e.g. the same model behind a proxy that speaks another wire format).
    let small = choice.local || args.small_model;
    if small {
        // A 135M model calls tools reliably only when told to, and chooses well among few tools:
        // force a call on the first request and declare the tools `pick` finds relevant. Left
        // free afterwards it calls the same tool again and again (three identical notes for one
        // request), so once the results are back it may only answer (`tool_choice: none`).
        config.first_choice = Some(ToolChoice::Required);
        config.choice = ToolChoice::None;
        config.selection = Some(PickOptions::new().max_candidates(2).allow_unsafe(true));
        config.max_iterations = 2;
    }
    let agent = Agent::new(choice.model.streaming(args.stream), executor, config).on_event(sink);
    let session = Session {
        agent,
        local: small,
    };

    let one_shot = if !args.question.is_empty() {
        Some(args.question.join(" "))
    } else if !std::io::stdin().is_terminal() {
        Some(
            input
                .next_line()
                .await
                .unwrap_or_default()
                .trim()
                .to_owned(),
        )
    } else {
        None
    };
    match one_shot {
        Some(q) if q.is_empty() => {
            eprintln!("no question: the input is empty");
            std::process::exit(2)
        }
        Some(q) => {
            let code = match session.ask(&History::new(0), &q).await {
                Some(_) => 0,
                None => 1,
            };
            std::process::exit(code)
        }
        None => {
            // A small local model has a 4096-token context: it gets the last two exchanges.
            let mut history = History::new(if session.local { 2 } else { 20 });
            loop {
                eprint!("research> ");
                std::io::stderr().flush().ok();
                let Some(line) = input.next_line().await else {
                    break;
                };
                let q = line.trim();
                if q.is_empty() {
                    continue;
                }
                if q == "exit" || q == "quit" {
                    break;
                }
                if let Some(report) = session.ask(&history, q).await {
                    history.push(report.transcript);
                }
            }
        }
    }
}

struct Session {
    agent: Agent,
    local: bool,
}

impl Session {
    /// Runs one question after `history` and prints the outcome; `None` when the run failed.
    /// With the local model, a turn whose every call was refused as malformed is asked once
    /// more: the model then only sees the refusal and tends to apologise instead of retrying.
    async fn ask(&self, history: &History, question: &str) -> Option<RunReport> {
        let conversation = history.conversation(self.agent.model());
        let attempts = if self.local { 2 } else { 1 };
        let mut report = None;
        for attempt in 1..=attempts {
            match self
                .agent
                .run_with_history(conversation.clone(), question)
                .await
            {
                Ok(r) => {
                    let retry = attempt < attempts && only_malformed_calls(&r.transcript);
                    report = Some(r);
                    if !retry {
                        break;
                    }
                    eprintln!("(every call was malformed; asking the model again)");
                }
                Err(e) => {
                    // The client already retried what is worth retrying (429, 5xx, timeouts).
                    eprintln!(
                        "error: {}",
                        tool_runtime::display::visible_lines(&e.to_string())
                    );
                    return None;
                }
            }
        }
        let report = report?;
        setup::print_status(&report);
        setup::print_usage(&report);
        Some(report)
    }
}

/// Whether the run made calls and every one was refused before running because its arguments
/// were malformed (unparsable JSON or a schema violation).
fn only_malformed_calls(transcript: &[TranscriptEntry]) -> bool {
    let mut results = transcript.iter().filter_map(|e| match e {
        TranscriptEntry::Tool { status, result, .. } => Some((*status, result)),
        _ => None,
    });
    let malformed = |(status, result): (Status, &serde_json::Value)| {
        status == Status::Error
            && [ErrorCode::INVALID_JSON, ErrorCode::INVALID_ARGUMENTS]
                .iter()
                .any(|c| result["error"]["code"] == c.as_str())
    };
    let first = results.next();
    first.is_some_and(malformed) && results.all(malformed)
}
