//! The executor's `tools` subcommands: `call`, `pending`, `approve`, `deny`.
//!
//! ```text
//! tools call NAME [--args JSON] [--yes] [--session S] [--config FILE]
//! tools pending [--config FILE]
//! tools approve ID [--args JSON] [--config FILE]
//! tools deny ID [--reason TEXT] [--config FILE]
//! tools abandon ID [--reason TEXT] [--config FILE]
//! ```
//!
//! `tools pending` lists the operations waiting for a decision, each with the change it will
//! make as `+`, `-` and `~` lines under it, and, marked `approved`, those
//! approved but never completed: running now, or interrupted by a crash. Those are in doubt
//! (the tool may or may not have taken effect) and never run again (at most once); after
//! checking what happened, close one with `tools abandon ID`.
//!
//! The configuration is read from `--config`, else the file named by `TOOLS_CONFIG`, else
//! `tools.toml` in the working directory when it exists, and then overlaid with `TOOLS_*`
//! variables. A file that another user could have written is refused, and every setting that
//! runs more without asking or records less than the defaults is announced on stderr, with the
//! file it came from, each time a command starts. Pending operations live in the configured store (SQLite by default), so
//! `tools call` in one process and `tools approve` in another meet there.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Arg, ArgAction, ArgMatches, Command};
use futures::future::BoxFuture;

use crate::cli::{Cli, CliCommand, Exit, Output};
use crate::display::{visible, visible_lines};
use crate::hydrate::{Arguments, ToolCall};
use crate::store::PendingState;
use crate::tool::{CallContext, Initiator};
use crate::toolset::ToolSet;

use super::{
    ApproveAll, ConfirmationMode, Execution, Executor, ExecutorBuilder, ExecutorConfig, Outcome,
    Secrets, TerminalConfirmer, Undo,
};

/// Customises the executor the commands build (undo planners, previewers, a store).
pub type Setup = Arc<dyn Fn(ExecutorBuilder) -> ExecutorBuilder + Send + Sync>;

/// The executor's subcommands, ready to add to the `tools` command line.
#[derive(Clone, Default)]
pub struct ExecutorCli {
    setup: Option<Setup>,
}

impl ExecutorCli {
    /// The commands with a default executor.
    pub fn new() -> Self {
        Self::default()
    }

    /// The commands with an executor customised by `setup`.
    pub fn with_setup(setup: Setup) -> Self {
        ExecutorCli { setup: Some(setup) }
    }

    /// `call`, `pending`, `approve`, `deny` and `abandon`.
    pub fn commands(&self) -> Vec<ExecutorCommand> {
        [
            Kind::Call,
            Kind::Pending,
            Kind::Approve,
            Kind::Deny,
            Kind::Abandon,
        ]
        .into_iter()
        .map(|kind| ExecutorCommand {
            kind,
            setup: self.setup.clone(),
        })
        .collect()
    }

    /// Adds the commands to a `tools` command line.
    pub fn install(&self, mut cli: Cli) -> Cli {
        for c in self.commands() {
            cli = cli.with(c);
        }
        cli
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Call,
    Pending,
    Approve,
    Deny,
    Abandon,
}

/// One of the executor's subcommands (see [`ExecutorCli`]).
pub struct ExecutorCommand {
    kind: Kind,
    setup: Option<Setup>,
}

fn config_arg() -> Arg {
    Arg::new("config")
        .long("config")
        .value_name("FILE")
        .value_parser(clap::value_parser!(PathBuf))
        .help("TOML configuration (default: $TOOLS_CONFIG, else ./tools.toml if present)")
}

impl CliCommand for ExecutorCommand {
    fn command(&self) -> Command {
        match self.kind {
            Kind::Call => Command::new("call")
                .about("Run a tool through the executor, confirming in the terminal")
                .arg(Arg::new("name").required(true).help("The tool"))
                .arg(
                    Arg::new("arguments")
                        .value_name("JSON")
                        .conflicts_with("args")
                        .help("The arguments as a JSON object (the same as --args)"),
                )
                .arg(
                    Arg::new("args")
                        .long("args")
                        .value_name("JSON")
                        .default_value("{}")
                        .help("The arguments as a JSON object"),
                )
                .arg(
                    Arg::new("yes")
                        .long("yes")
                        .short('y')
                        .action(ArgAction::SetTrue)
                        .help("Approve in advance instead of being asked"),
                )
                .arg(
                    Arg::new("session")
                        .long("session")
                        .default_value("cli")
                        .help("The session (first-time gates are per session)"),
                )
                .arg(config_arg()),
            Kind::Pending => Command::new("pending")
                .about(
                    "List operations waiting for approval, and approved ones that never completed",
                )
                .arg(config_arg()),
            Kind::Abandon => Command::new("abandon")
                .about(
                    "Close an approved operation whose run was interrupted (it is not run again)",
                )
                .arg(Arg::new("id").required(true))
                .arg(
                    Arg::new("reason")
                        .long("reason")
                        .help("What you found (recorded with it)"),
                )
                .arg(config_arg()),
            Kind::Approve => Command::new("approve")
                .about("Approve a pending operation and run it")
                .arg(Arg::new("id").required(true))
                .arg(
                    Arg::new("args")
                        .long("args")
                        .value_name("JSON")
                        .help("Run with these (edited) arguments instead"),
                )
                .arg(config_arg()),
            Kind::Deny => Command::new("deny")
                .about("Deny a pending operation")
                .arg(Arg::new("id").required(true))
                .arg(
                    Arg::new("reason")
                        .long("reason")
                        .help("Why (sent to the model)"),
                )
                .arg(config_arg()),
        }
    }

    fn run<'a>(
        &'a self,
        toolset: &'a ToolSet,
        matches: &'a ArgMatches,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Exit> {
        Box::pin(async move {
            let path = config_path(matches.get_one::<PathBuf>("config").map(|p| p.as_path()));
            let config = match ExecutorConfig::load(path.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    let _ = writeln!(output.err, "error: {e}");
                    return Exit::Usage;
                }
            };
            // a configuration that runs more without asking, or records less, is said out
            // loud every time, with where it came from
            let origin = path
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| format!("{}* variables", super::ENV_PREFIX));
            for weaker in config.weakenings() {
                let _ = writeln!(output.err, "note: {origin}: {weaker}");
            }
            let yes = matches!(self.kind, Kind::Call) && matches.get_flag("yes");
            let mut config = config;
            let mut builder = if yes {
                // approving in advance on the command line beats a configured "deferred"
                config.confirmation = Some(ConfirmationMode::Inline);
                Executor::builder(toolset.clone())
                    .config(config)
                    .confirmation(ApproveAll)
            } else if config.confirmation == Some(ConfirmationMode::Deferred) {
                Executor::builder(toolset.clone()).config(config)
            } else {
                Executor::builder(toolset.clone())
                    .config(config)
                    .confirmation(TerminalConfirmer::stdio())
            };
            if let Some(setup) = &self.setup {
                builder = setup(builder);
            }
            let executor = match builder.build() {
                Ok(e) => e,
                Err(e) => {
                    let _ = writeln!(output.err, "error: {e}");
                    return Exit::Usage;
                }
            };
            match self.kind {
                Kind::Call => call(&executor, matches, output).await,
                Kind::Pending => pending(&executor, output),
                Kind::Approve => {
                    let id = matches.get_one::<String>("id").expect("required");
                    let edited = match matches.get_one::<String>("args") {
                        None => None,
                        Some(text) => match serde_json::from_str(text) {
                            Ok(v) => Some(v),
                            Err(e) => {
                                let _ = writeln!(output.err, "error: --args is not JSON: {e}");
                                return Exit::Usage;
                            }
                        },
                    };
                    match executor.approve_with(id, edited).await {
                        Ok(exec) => print_execution(&exec, &executor, output),
                        Err(e) => print_error(&e, output),
                    }
                }
                Kind::Abandon => {
                    let id = matches.get_one::<String>("id").expect("required");
                    let reason = matches.get_one::<String>("reason").cloned();
                    match executor.abandon(id, reason) {
                        Ok(exec) => {
                            print_execution(&exec, &executor, output);
                            // closing it is what the user asked for
                            audit_exit(&exec, &executor).unwrap_or(Exit::Success)
                        }
                        Err(e) => print_error(&e, output),
                    }
                }
                Kind::Deny => {
                    let id = matches.get_one::<String>("id").expect("required");
                    let reason = matches.get_one::<String>("reason").cloned();
                    match executor.deny(id, reason) {
                        Ok(exec) => {
                            print_execution(&exec, &executor, output);
                            // denying is what the user asked for: a success of this command
                            audit_exit(&exec, &executor).unwrap_or(Exit::Success)
                        }
                        Err(e) => print_error(&e, output),
                    }
                }
            }
        })
    }
}

async fn call(executor: &Executor, matches: &ArgMatches, output: &mut Output<'_>) -> Exit {
    let name = matches.get_one::<String>("name").expect("required");
    let args = (matches.get_one::<String>("arguments"))
        .or_else(|| matches.get_one::<String>("args"))
        .expect("defaulted");
    let session = matches.get_one::<String>("session").cloned();
    let call_id = format!("cli-{:016x}", fastrand::u64(..));
    let call = ToolCall::new(call_id.clone(), name.clone(), Arguments::Text(args.clone()));
    let cx = CallContext {
        session,
        initiator: Initiator::User,
        ..CallContext::new(call_id)
    };
    let mut exec = executor.call(&call, cx).await;
    // a validation message quotes the offending value: on a terminal (and in its scrollback),
    // a secret stays hidden
    if let Outcome::Error { error } = &mut exec.outcome {
        let tools = executor.toolset();
        let mut secrets = Secrets::new(tools.get(name));
        if let Ok(arguments) = serde_json::from_str::<serde_json::Value>(args) {
            secrets.add_arguments(&arguments);
        }
        **error = secrets.scrub_error(error);
    }
    print_execution(&exec, executor, output)
}

fn pending(executor: &Executor, output: &mut Output<'_>) -> Exit {
    let waiting = match executor.pending() {
        Ok(ops) => ops,
        Err(e) => return print_error(&e, output),
    };
    let in_doubt = match executor.in_doubt() {
        Ok(ops) => ops,
        Err(e) => return print_error(&e, output),
    };
    // on stderr, so that the listing on stdout keeps one shape
    for bad in executor.unreadable().unwrap_or_default() {
        let _ = writeln!(
            output.err,
            "warning: {} ({}) cannot be read: {}; close it with `tools abandon {}`",
            visible(&bad.id),
            bad.state,
            visible(&bad.error),
            visible(&bad.id)
        );
    }
    if output.json {
        // every unfinished operation; each one's `state` says which kind it is
        let all: Vec<_> = waiting.iter().chain(&in_doubt).collect();
        let _ = writeln!(
            output.out,
            "{}",
            serde_json::to_string_pretty(&all).unwrap_or_default()
        );
        return Exit::Success;
    }
    if waiting.is_empty() && in_doubt.is_empty() {
        let _ = writeln!(output.out, "no pending operations");
    }
    let tools = executor.toolset();
    for op in waiting {
        // what a person reads: secrets redacted, control characters shown, never obeyed; the
        // arguments as the preview lists them (without those the model left unset)
        let def = tools.get(&op.tool);
        let arguments = match def {
            Some(def) => super::audit::redact(&op.preview.arguments, def),
            None => super::audit::redact_with_keys(&op.preview.arguments),
        };
        let _ = writeln!(
            output.out,
            "{}  {}  [{}]  {}  {}",
            op.id,
            visible(&op.tool),
            op.preview.category.as_str(),
            visible(&op.preview.intent),
            visible(&arguments.to_string())
        );
        if let Some(change) = &op.preview.change {
            let mut secrets = Secrets::new(def);
            secrets.add_arguments(&op.arguments);
            for line in crate::display::change_lines(&secrets.redact_change(change.clone())) {
                let _ = writeln!(output.out, "    {line}");
            }
        }
    }
    let now = super::audit::now_ms();
    for op in &in_doubt {
        let since = match op.state {
            PendingState::Approved { approved_ms, .. } if approved_ms > 0 => {
                format!(" {} s ago", now.saturating_sub(approved_ms) / 1000)
            }
            _ => String::new(),
        };
        let _ = writeln!(
            output.out,
            "{}  {}  [{}]  {}  approved{since}, not completed: running, or interrupted",
            op.id,
            visible(&op.tool),
            op.preview.category.as_str(),
            visible(&op.preview.intent),
        );
    }
    if !in_doubt.is_empty() {
        let _ = writeln!(
            output.out,
            "approved operations are never run again; once you have checked whether one took \
             effect, close it with `tools abandon ID`"
        );
    }
    Exit::Success
}

/// `Exit::Refused` when the call's audit record was lost and auditing is required.
fn audit_exit(exec: &Execution, executor: &Executor) -> Option<Exit> {
    (exec.audit_failure.is_some() && executor.config().audit_required).then_some(Exit::Refused)
}

fn print_execution(exec: &Execution, executor: &Executor, output: &mut Output<'_>) -> Exit {
    if let Some(failure) = &exec.audit_failure {
        // never silent, and never on stdout, where it would mix with the result
        let level = if executor.config().audit_required {
            "error"
        } else {
            "warning"
        };
        let _ = writeln!(output.err, "{level}: {}", visible(failure));
    }
    if let Some(Undo::Unavailable { reason }) = exec.undo.as_deref() {
        let _ = writeln!(output.err, "warning: {}", visible(reason));
    }
    let exit = print_outcome(exec, output);
    audit_exit(exec, executor).unwrap_or(exit)
}

fn print_outcome(exec: &Execution, output: &mut Output<'_>) -> Exit {
    if output.json {
        let _ = writeln!(
            output.out,
            "{}",
            serde_json::to_string_pretty(exec).unwrap_or_default()
        );
    } else {
        match &exec.outcome {
            Outcome::Success { value, .. } if crate::content::is_rich(value) => {
                // a person reads what the blocks are; their bytes would flood the terminal
                let text = match crate::content::blocks(value) {
                    Some(blocks) => crate::content::stand_in(&blocks),
                    None => value.to_string(),
                };
                let _ = writeln!(output.out, "{}", visible_lines(&text));
            }
            Outcome::Success { .. } => {
                let value = exec.value().cloned().unwrap_or_default();
                let _ = writeln!(
                    output.out,
                    "{}",
                    serde_json::to_string_pretty(&value).unwrap_or_default()
                );
            }
            Outcome::Error { error } => {
                let _ = writeln!(
                    output.err,
                    "error {}: {}",
                    error.code,
                    visible_lines(&error.message)
                );
                if let Some(r) = &error.recover_action {
                    let _ = writeln!(output.err, "  {}", visible_lines(r));
                }
            }
            Outcome::Denied { reason, by } => {
                let by = serde_json::to_value(by).ok();
                let by = by.as_ref().and_then(|v| v.as_str()).unwrap_or("user");
                let _ = writeln!(output.out, "denied ({by}): {}", visible_lines(reason));
            }
            Outcome::Pending {
                operation_id,
                preview,
            } => {
                let _ = writeln!(
                    output.out,
                    "pending {operation_id}: {}",
                    visible(&preview.intent)
                );
                let _ = writeln!(
                    output.out,
                    "approve with `tools approve {operation_id}` or deny with `tools deny {operation_id}`"
                );
            }
        }
    }
    match exec.outcome {
        Outcome::Success { .. } | Outcome::Pending { .. } => Exit::Success,
        Outcome::Error { .. } | Outcome::Denied { .. } => Exit::Refused,
    }
}

fn print_error(error: &crate::error::ToolError, output: &mut Output<'_>) -> Exit {
    if output.json {
        let _ = writeln!(output.out, "{}", error.to_json());
    } else {
        let _ = writeln!(
            output.err,
            "error {}: {}",
            error.code,
            visible_lines(&error.message)
        );
    }
    Exit::Refused
}

/// The configuration for the command line (see the module docs for where it is read from).
pub fn load_config(explicit: Option<&Path>) -> Result<ExecutorConfig, super::ConfigError> {
    ExecutorConfig::load(config_path(explicit).as_deref())
}

/// The configuration file the command line reads, if any: `--config`, else `$TOOLS_CONFIG`,
/// else `./tools.toml` when it exists.
pub fn config_path(explicit: Option<&Path>) -> Option<PathBuf> {
    let from_env = std::env::var_os("TOOLS_CONFIG").map(PathBuf::from);
    let local = PathBuf::from("tools.toml");
    explicit
        .map(Path::to_path_buf)
        .or(from_env)
        .or_else(|| local.exists().then_some(local))
}
