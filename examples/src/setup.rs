//! Picks the model for an example: a provider named with `--provider`, else the local llama.cpp
//! server (`TOOLS_LLAMA_URL`, or started by `scripts/llama-server.sh`, built once and cached),
//! unless a provider's key is in the environment.

use std::process::Command;

use tool_providers::agent::{AgentConfig, ChatModel, RunReport, RunStatus};
use tool_providers::codec::ToolChoice;
use tool_providers::http::{ClientConfig, HttpClient, Provider, ProviderApi};
use tool_runtime::select::PickOptions;

/// Where the model is and how to talk to it.
#[derive(Debug)]
pub struct ModelChoice {
    /// The model.
    pub model: ChatModel,
    /// A line for the user: which provider, which address.
    pub description: String,
    /// Whether this is the small local model (prompts and tool choice are tuned for it).
    pub local: bool,
}

/// The local server's script (next to the workspace, found at compile time).
pub fn llama_script() -> String {
    std::env::var("TOOLS_LLAMA_SCRIPT")
        .unwrap_or_else(|_| format!("{}/../scripts/llama-server.sh", env!("CARGO_MANIFEST_DIR")))
}

/// Chooses the model: `provider` if given; else `TOOLS_LLAMA_URL`; else the first provider whose
/// key is set (OpenAI, Anthropic, Gemini); else the local server, started (and on first run
/// built) by the script.
pub fn choose(provider: Option<Provider>) -> Result<ModelChoice, String> {
    if let Some(choice) = configured(provider)? {
        return Ok(choice);
    }
    eprintln!(
        "No provider key in the environment: using the local model server (the first run builds it, ~6 minutes)."
    );
    let out = Command::new("bash")
        .arg(llama_script())
        .arg("start")
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("could not run {}: {e}", llama_script()))?;
    if !out.status.success() {
        return Err(format!(
            "{} start failed; see the messages above",
            llama_script()
        ));
    }
    let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Ok(local(&url))
}

/// The model [`choose`] picks when the environment (or `provider`) names one: `provider`, else
/// `TOOLS_LLAMA_URL`, else the first provider whose key is set; `None` when nothing does, where
/// `choose` would start the local server.
pub fn configured(provider: Option<Provider>) -> Result<Option<ModelChoice>, String> {
    let from_env = |p: Provider| -> Result<ModelChoice, String> {
        let client = HttpClient::from_env(p).map_err(|e| e.to_string())?;
        let description = format!(
            "{p} at {} (model {})",
            client.config().base_url,
            client.config().model
        );
        Ok(ModelChoice {
            model: ChatModel::new(client),
            description,
            local: false,
        })
    };
    if let Some(p) = provider {
        return from_env(p).map(Some);
    }
    if let Ok(url) = std::env::var("TOOLS_LLAMA_URL") {
        return Ok(Some(local(&url)));
    }
    for p in [Provider::OpenAiChat, Provider::Anthropic, Provider::Gemini] {
        if p.key_env()
            .iter()
            .any(|k| std::env::var(k).is_ok_and(|v| !v.is_empty()))
        {
            return from_env(p).map(Some);
        }
    }
    Ok(None)
}

/// An agent's configuration: the app's `system` prompt, its `session`, and, for a small model
/// (the local server, or `--small-model`), the tuning it needs. A 135M model calls tools
/// reliably only when told to, and chooses well among few tools: the first request forces a
/// call and declares the tools `pick` finds relevant. Left free afterwards it calls the same
/// tool again and again (three identical notes for one request), so once the results are back
/// it may only answer (`tool_choice: none`).
pub fn agent_config(system: &str, session: Option<&str>, small: bool) -> AgentConfig {
    let mut config = AgentConfig {
        system: Some(system.into()),
        session: session.map(Into::into),
        ..Default::default()
    };
    if small {
        config.first_choice = Some(ToolChoice::Required);
        config.choice = ToolChoice::None;
        config.selection = Some(PickOptions::new().max_candidates(2).allow_unsafe(true));
        config.max_iterations = 2;
    }
    config
}

/// The OpenAI-compatible client for a local llama.cpp server at `url`.
pub fn local(url: &str) -> ModelChoice {
    let cfg = ClientConfig::new(Provider::OpenAiChat, "local")
        .with_base_url(format!("{}/v1", url.trim_end_matches('/')))
        .with_timeout(std::time::Duration::from_secs(300));
    let client = HttpClient::new(cfg).expect("a valid local URL");
    ModelChoice {
        model: ChatModel::new(client),
        description: format!("local llama.cpp server at {url} (SmolLM2-135M-Instruct)"),
        local: true,
    }
}

/// Prints a run's outcome the way every example does: the answer (or why there is none) on
/// stdout, so it can be piped.
pub fn print_status(report: &RunReport) {
    match &report.status {
        RunStatus::Answered => println!(
            "{}",
            tool_runtime::display::visible_lines(report.answer.as_deref().unwrap_or(""))
        ),
        RunStatus::MaxIterations => println!(
            "(no final answer after {} model requests)",
            report.iterations
        ),
        RunStatus::Suspended { state } => {
            println!("(waiting for approval of {:?})", state.operation_ids())
        }
    }
}

/// Prints a run's cost line (requests, tokens, audited calls) on stderr, out of the answer's way.
pub fn print_usage(report: &RunReport) {
    eprintln!(
        "[{} model requests, {} input + {} output tokens, {} tool calls audited]",
        report.iterations,
        report.usage.input_tokens,
        report.usage.output_tokens,
        report.audit.len()
    );
}

/// Installs the log output every example binary has: `RUST_LOG` decides what is shown (e.g.
/// `RUST_LOG=tool_runtime=debug`), and without it warnings and errors are, so that a problem
/// the program survives (an audit record that could not be written, a lost connection) is
/// never silent. Logs go to stderr; stdout keeps the answer.
///
/// With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the agent's and the executor's spans (`invoke_agent`,
/// `chat`, `execute_tool`) are also exported to that OTLP receiver (see
/// `tool_providers::telemetry`), whatever `RUST_LOG` says, under `OTEL_SERVICE_NAME` or the
/// program's name. The last spans are sent when the program exits, however it exits.
pub fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let program = std::env::args()
        .next()
        .and_then(|a| {
            let name = std::path::Path::new(&a).file_name()?.to_str()?.to_owned();
            Some(name)
        })
        .unwrap_or_else(|| "tool-calling".into());
    let otel = match tool_providers::telemetry::Otlp::from_env(&program)
        .and_then(|o| o.map(|o| o.layer()).transpose())
    {
        Ok(layer) => layer,
        Err(e) => {
            eprintln!("warning: spans are not exported: {e}");
            None
        }
    };
    let (otel, guard) = match otel {
        Some((layer, guard)) => (Some(layer), Some(guard)),
        None => (None, None),
    };
    if tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init()
        .is_ok()
        && let Some(guard) = guard
    {
        keep_until_exit(guard);
    }
}

/// The exporter of this process, dropped (its last spans sent) when the process exits.
static TELEMETRY: std::sync::Mutex<Option<tool_providers::telemetry::TelemetryGuard>> =
    std::sync::Mutex::new(None);

/// Keeps `guard` until the process exits: the binaries end with `std::process::exit` as often as
/// by returning from `main`, and neither drops what `main` holds, but both run `atexit` handlers.
fn keep_until_exit(guard: tool_providers::telemetry::TelemetryGuard) {
    extern "C" fn flush() {
        // `try_lock`: never block an exit, and never unwind out of a C callback
        if let Ok(mut slot) = TELEMETRY.try_lock() {
            drop(slot.take());
        }
    }
    if let Ok(mut slot) = TELEMETRY.lock() {
        *slot = Some(guard);
    }
    // SAFETY: `flush` is an `extern "C"` function without arguments that does not unwind.
    unsafe {
        libc::atexit(flush);
    }
}
