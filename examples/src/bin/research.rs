//! The research assistant.
//!
//! ```text
//! cargo run -p examples --bin research -- [--provider P] [--small-model] [--db PATH] [--yes] [--stream] [QUESTION...]
//! cargo run -p examples --bin research -- --undo CALL_ID   # or the undo id (`un-...`) an ambiguous call id lists
//! cargo run -p examples --bin research -- --defer QUESTION...   # calls that need a person wait for `tools approve`
//! cargo run -p examples --bin research -- --resume RUN_ID   # continue a run whose process was closed
//! cargo run -p examples --bin research -- serve [--addr 127.0.0.1:8080] [--db PATH] [--provider P]
//! cargo run -p examples --bin research -- tools [--db PATH] list|schema|check|pick|call|pending|approve|deny|abandon ...
//! ```
//! `serve` serves the same tools, store and policy over HTTP (`tool-server`): the JSON API, the
//! assistant itself at `POST /api/v1/chat` (with the model chosen as below), the approvals page
//! at `/`, MCP at `/mcp`, and the OpenAPI document. Calls that need a person wait
//! as pending operations that the page (or `POST /api/v1/pending/{id}/approve`) decides. The
//! bearer tokens come from `TOOLS_AGENT_TOKEN` and `TOOLS_APPROVER_TOKEN`; without them, on a
//! loopback address, fresh ones are made and printed with the page's link.
//! `tools` is the `tools` command line over the assistant's tools, store, previews and undo:
//! `research tools pending` lists the operations the assistant or `serve` left waiting, and
//! `research tools approve ID` runs one, from any process.
//! A subcommand is one only as the first argument; `--db` then goes after it.
//! The external tools reach the services the environment names: `TOOLS_DOI_URL` (Crossref by
//! default), `TOOLS_GNORM_URL` (GNORM's annotation service; no default), `TOOLS_CITATIONS_URL`
//! (Semantic Scholar's Graph API by default) and `TOOLS_CATALOGUE_URL` (Open Library by default).
//! Their results are printed with the service's execution time and, for annotations, each
//! confidence.
//! With a question as arguments it runs one turn and exits; so it does with a non-terminal stdin,
//! whose first line is then the question, or, when that stdin ends before its first line (as
//! `/dev/null` does), with a read-only demo question (`research::DEMO_QUESTION`). In a terminal without a question it is an interactive
//! session that keeps the conversation across questions. Confirmations are asked in the terminal
//! and read from the same input (so a script can answer them on the lines after the question);
//! `--yes` approves everything in advance; `--defer` asks nobody here: such calls wait as
//! pending operations, the run says its id and waits for the decisions (made from any terminal
//! or the approvals page), then goes on. Without either, a person who leaves at a confirmation
//! (the input ends, or Ctrl-C) leaves that call waiting the same way: the run says its id and
//! how to continue it, and the program ends. Every run is kept in the store as it goes, so a run
//! whose process was closed while it waited is continued by `--resume RUN_ID`, and a call that
//! already ran is never run again. Without `--provider` it uses the local llama.cpp server
//! (set up on first run), unless a provider's key is in the environment.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use examples::cli::{self, AgentFlags, AppCommand};
use examples::events::print_event;
use examples::history::History;
use examples::input::SharedInput;
use examples::leaving::Leaving;
use examples::research::{self, Db, Services};
use examples::setup;
use tool_providers::agent::{
    Agent, AgentError, AgentEvent, Checkpoints, ConfirmWithEvents, RunReport, TranscriptEntry,
};
use tool_runtime::display::visible;
use tool_runtime::executor::Status;
use tool_runtime::executor::{
    ApproveAll, ConfirmationHandler, Deferred, Executor, ExecutorConfig, TerminalConfirmer,
};
use tool_runtime::{CallContext, ErrorCode, ToolError};

/// The research assistant: notes and a bibliography, with confirmations, previews and undo.
#[derive(Parser)]
#[command(
    name = "research",
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<AppCommand>,
    #[command(flatten)]
    agent: AgentFlags,
    /// Tune prompts and tool choice for a small model behind --provider (as for the local one)
    #[arg(long, global = true)]
    small_model: bool,
    /// The notes database; its store is next to it (PATH with the extension `store.sqlite`)
    /// [default: TOOLS_RESEARCH_DB, else ~/.local/share/tool-calling/research.sqlite]
    #[arg(long, value_name = "PATH", global = true)]
    db: Option<PathBuf>,
    /// Approve every confirmation in advance
    #[arg(short, long)]
    yes: bool,
    /// Stream the model's answer
    #[arg(long)]
    stream: bool,
    /// Undo a call (by its call id, or the undo id `un-...` an ambiguous call id lists) and exit
    #[arg(long, value_name = "CALL_ID|UNDO_ID")]
    undo: Option<String>,
    /// Let calls that need a person wait as pending operations, decided from any terminal
    /// (`research tools approve ID`) or the approvals page, instead of asking here; the run
    /// waits for the decisions and goes on
    #[arg(long, conflicts_with = "yes")]
    defer: bool,
    /// Continue the run RUN_ID (printed when it waited) once its operations are decided: after
    /// its process was closed, or from another machine on the same store
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["undo", "question"])]
    resume: Option<String>,
    /// The question (one turn); without it, the first line of a non-terminal stdin, or an
    /// interactive session in a terminal
    #[arg(value_name = "QUESTION", allow_negative_numbers = true)]
    question: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    examples::setup::init_logging();
    let args = Args::parse();
    cli::check_question::<Args>(&args.question);
    let db_path = cli::data_path(args.db.clone(), "TOOLS_RESEARCH_DB", "research.sqlite")
        .unwrap_or_else(|e| cli::usage_error::<Args>(e));
    let db = Db::open(&db_path).unwrap_or_else(|e| {
        eprintln!("cannot open {}: {e}", db_path.display());
        std::process::exit(1)
    });
    // TOOLS_DOI_URL, TOOLS_GNORM_URL, TOOLS_CITATIONS_URL and TOOLS_CATALOGUE_URL
    let services = Services::from_env();
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
                Arc::new(move |b| research::configure(b, setup_db.clone(), store.clone()));
            let toolset = research::toolset(db, services);
            return cli::run_tools("research tools", words, toolset, Some(setup)).await;
        }
        Some(AppCommand::Serve { addr }) => {
            // Every confirmation waits for the page; the configuration's MCP servers are
            // served beside the app's tools, under the same policy and store.
            let store = examples::open_store(&store_path).unwrap_or_else(|e| fail(e));
            let (toolset, pins) = cli::with_mcp_servers(
                research::toolset(db.clone(), services),
                &cli::configured_mcp(),
                store.clone(),
            )
            .await;
            let builder = Executor::builder(toolset)
                .config(ExecutorConfig::default())
                .confirmation(Deferred);
            let executor = research::configure(builder, db, store)
                .build()
                .unwrap_or_else(|e| fail(ToolError::execution(e.to_string())));
            let small_model = args.small_model;
            let agent = cli::chat_agent(args.agent.provider, |choice| {
                let config =
                    setup::agent_config(research::SYSTEM, None, choice.local || small_model);
                Agent::new(choice.model, executor.clone(), config)
            });
            cli::serve(
                addr,
                executor,
                pins,
                "research-assistant",
                "A research assistant's notes, sources and citations. Changes to existing work wait for a person's approval on the approvals page; a pending call has not run, so tell the user and do not retry it.",
                agent,
            )
            .await
        }
        None => {}
    }
    // Each call on its line; the results of external services also as a block with what was
    // found, the confidences and how long the service took.
    let sink: tool_providers::agent::EventSink = Arc::new(|e: &AgentEvent| {
        print_event(e);
        if let AgentEvent::CallFinished {
            tool,
            status: Status::Success,
            result,
            ..
        } = e
            && let Some(block) = research::display::render(tool, result)
        {
            eprint!("{block}");
        }
    });
    // One reader of stdin for the questions and the confirmations (see `examples::input`).
    let input = SharedInput::stdin();
    // A person who leaves at a confirmation (end of input, Ctrl-C) leaves the call waiting.
    let mut leaving = None;
    let confirmer: Arc<dyn ConfirmationHandler> = if args.yes {
        Arc::new(ApproveAll)
    } else if args.defer {
        Arc::new(Deferred)
    } else {
        let watch = Leaving::watch(input.clone());
        let confirmer = watch.confirmer(Arc::new(ConfirmWithEvents::new(
            TerminalConfirmer::new(input.reader(), std::io::stderr()),
            sink.clone(),
        )));
        leaving = Some(watch);
        confirmer
    };
    let executor = research::executor(
        research::toolset(db.clone(), services),
        db,
        &store_path,
        confirmer,
        ExecutorConfig::default(),
    )
    .unwrap_or_else(|e| fail(e));

    if let Some(call_id) = args.undo {
        let exec = executor.undo(&call_id, CallContext::default()).await;
        println!(
            "{}",
            serde_json::to_string_pretty(&exec.outcome.to_json()).expect("json")
        );
        std::process::exit(if exec.outcome.is_success() { 0 } else { 1 });
    }

    let choice = setup::choose(args.agent.provider).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    eprintln!("model: {}", choice.description);
    // The local server is the small model; `--small-model` says so of a provider flag's server
    // too (e.g. the same model behind a proxy that speaks another wire format).
    let small = choice.local || args.small_model;
    let config = setup::agent_config(research::SYSTEM, Some("research-cli"), small);
    // Every run is kept in the store, step by step, so that one whose process is closed while
    // it waits for a person is continued with `--resume`.
    let agent = Agent::new(choice.model.streaming(args.stream), executor, config)
        .on_event(sink)
        .with_checkpoints(Checkpoints::new());
    let session = Session {
        agent,
        local: small,
        leaving,
    };

    if let Some(run_id) = args.resume {
        let resumed = session.agent.resume_run(&run_id).await;
        let code = match session.finish(resumed).await {
            Some(report) => {
                setup::print_status(&report);
                setup::print_usage(&report);
                0
            }
            None => 1,
        };
        std::process::exit(code)
    }

    let one_shot = if !args.question.is_empty() {
        Some(args.question.join(" "))
    } else if !std::io::stdin().is_terminal() {
        match input.next_line().await {
            Some(line) => Some(line.trim().to_owned()),
            // Nobody to ask (stdin ended before a line: /dev/null, a closed pipe): the main job
            // still shows the agent at work, on a question that needs no confirmation.
            None => {
                eprintln!(
                    "no question given and no terminal to ask one in: asking \"{}\" (give a question as arguments or as stdin's first line)",
                    research::DEMO_QUESTION
                );
                Some(research::DEMO_QUESTION.to_owned())
            }
        }
    } else {
        None
    };
    match one_shot {
        Some(q) if q.is_empty() => {
            eprintln!("no question: the first line of the input is empty");
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
    ExitCode::SUCCESS
}

struct Session {
    agent: Agent,
    local: bool,
    /// Whether the person left at a confirmation (not with `--yes` or `--defer`).
    leaving: Option<Leaving>,
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
            let run = self
                .agent
                .run_with_history(conversation.clone(), question)
                .await;
            let r = self.finish(run).await?;
            let retry = attempt < attempts && only_malformed_calls(&r.transcript);
            report = Some(r);
            if !retry {
                break;
            }
            eprintln!("(every call was malformed; asking the model again)");
        }
        let report = report?;
        setup::print_status(&report);
        setup::print_usage(&report);
        Some(report)
    }

    /// Carries a run through its waits: while it waits for decisions it says which and how to
    /// continue it elsewhere, and resumes once they are made. The run's report, or `None`
    /// (said on stderr) when it failed.
    async fn finish(&self, run: Result<RunReport, AgentError>) -> Option<RunReport> {
        let mut run = run;
        loop {
            let report = match run {
                Ok(report) => report,
                Err(e) => {
                    // The client already retried what is worth retrying (429, 5xx, timeouts).
                    eprintln!(
                        "error: {}",
                        tool_runtime::display::visible_lines(&e.to_string())
                    );
                    // the run is kept as it stood: it can be tried again later
                    if let Some(partial) = e.partial()
                        && !matches!(e.cause(), AgentError::LeaseLost(_))
                    {
                        let id = visible(&partial.state.correlation_id);
                        eprintln!("run {id} stopped; `research --resume {id}` tries again");
                    }
                    return None;
                }
            };
            let Some(state) = report.suspended() else {
                return Some(report);
            };
            let ops = state.operation_ids();
            if let Some(leaving) = self.leaving.as_ref().filter(|l| l.left()) {
                eprintln!(
                    "run {} waits for {}: nobody answered here; decide with `research tools \
                     approve ID` (or deny) from any terminal, then `research --resume {}` \
                     continues it",
                    visible(&report.correlation_id),
                    ops.iter()
                        .map(|o| visible(o))
                        .collect::<Vec<_>>()
                        .join(", "),
                    visible(&report.correlation_id),
                );
                if leaving.interrupted() {
                    std::process::exit(130);
                }
                return None;
            }
            eprintln!(
                "run {} waits for {}: decide with `research tools approve ID` (or deny) from any \
                 terminal; if this program is closed, `research --resume {}` continues it",
                visible(&report.correlation_id),
                ops.iter()
                    .map(|o| visible(o))
                    .collect::<Vec<_>>()
                    .join(", "),
                visible(&report.correlation_id),
            );
            if let Err(e) = decided(self.agent.executor(), &ops).await {
                eprintln!(
                    "error: {}",
                    tool_runtime::display::visible_lines(&e.to_string())
                );
                return None;
            }
            run = self.agent.resume_run(&report.correlation_id).await;
        }
    }
}

/// Waits until every operation of `ids` is decided (run, failed or denied), looking at the store
/// every half second: a decision made by another process counts.
async fn decided(executor: &Executor, ids: &[String]) -> Result<(), ToolError> {
    loop {
        let (executor, ids) = (executor.clone(), ids.to_vec());
        let open = tokio::task::spawn_blocking(move || -> Result<bool, ToolError> {
            for id in &ids {
                let waiting = executor
                    .pending_operation(id)?
                    .is_some_and(|op| !op.state.is_decided());
                if waiting {
                    return Ok(true);
                }
            }
            Ok(false)
        })
        .await
        .map_err(|e| ToolError::execution(e.to_string()))??;
        if !open {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
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
