//! The built-in subcommands: `list`, `schema`, `check`.

use std::io::Read;
use std::sync::Mutex;

use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::{Value, json};

use super::{Exit, Output, SchemaView};
use crate::definition::{SchemaOrigin, ToolDefinition};
use crate::display::{visible, visible_lines};
use crate::error::{ErrorCode, ToolError};
use crate::hydrate::{Arguments, ToolCall};
use crate::toolset::ToolSet;

/// The clap definitions of the built-ins. `providers` lists the `--provider` values known now,
/// for the help text.
pub(super) fn commands(providers: &[&'static str]) -> Vec<Command> {
    let provider_help = if providers.is_empty() {
        "Render the declarations as PROVIDER expects them (no provider view is registered)"
            .to_owned()
    } else {
        format!(
            "Render the declarations as PROVIDER expects them ({})",
            providers.join(", ")
        )
    };
    vec![
        Command::new("list").about("List the tools: name, safety category, description"),
        Command::new("schema")
            .about("Print the canonical tool definitions as JSON")
            .arg(
                Arg::new("names")
                    .value_name("NAME")
                    .action(ArgAction::Append)
                    .help("Only these tools (default: all)"),
            )
            .arg(
                Arg::new("provider")
                    .long("provider")
                    .value_name("PROVIDER")
                    .help(provider_help),
            ),
        Command::new("check")
            .about("Hydrate a call without running it: print the typed arguments, or why not")
            .arg(Arg::new("name").value_name("NAME").required(true).help("The tool"))
            .arg(
                Arg::new("args")
                    .long("args")
                    .value_name("JSON|@FILE|-")
                    .allow_hyphen_values(true)
                    // bytes that are not UTF-8 are the arguments' fault (exit 1), not a usage error
                    .value_parser(clap::value_parser!(std::ffi::OsString))
                    .help("The arguments: JSON text, @FILE to read a file, - for standard input (default: empty)"),
            ),
    ]
}

/// Writes a refusal: the error's JSON on stdout with `--json`, a readable account on stderr
/// otherwise.
pub(super) fn report(err: &ToolError, output: &mut Output<'_>) {
    if output.json {
        let _ = writeln!(output.out, "{}", err.to_json());
        return;
    }
    // messages quote what the model sent (names, values): shown, never obeyed
    let _ = writeln!(
        output.err,
        "error[{}]: {}",
        err.code,
        visible_lines(&err.message)
    );
    for v in &err.violations {
        let at = if v.pointer.is_empty() {
            "(root)"
        } else {
            &v.pointer
        };
        let _ = writeln!(
            output.err,
            "  at {}: {}",
            visible(at),
            visible_lines(&v.message)
        );
    }
    if let Some(action) = &err.recover_action {
        let _ = writeln!(output.err, "  hint: {}", visible_lines(action));
    }
}

fn print_json(value: &Value, output: &mut Output<'_>) -> Exit {
    let text = if output.json {
        value.to_string()
    } else {
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    };
    match writeln!(output.out, "{text}") {
        Ok(()) => Exit::Success,
        Err(_) => Exit::Usage,
    }
}

fn origin(def: &ToolDefinition) -> &'static str {
    match def.schema_origin {
        SchemaOrigin::Derived => "derived",
        SchemaOrigin::Verbatim => "verbatim",
        SchemaOrigin::Dynamic => "dynamic",
        SchemaOrigin::None(_) => "none",
    }
}

/// `tools list [--json]`.
pub(super) fn list(toolset: &ToolSet, output: &mut Output<'_>) -> Exit {
    if output.json {
        let tools: Vec<Value> = toolset
            .definitions()
            .map(|d| {
                json!({
                    "name": d.name,
                    "description": d.description,
                    "safety": d.safety.as_str(),
                    "schema": origin(d),
                    "fast_path": toolset.has_fast_path(&d.name),
                    "runnable": toolset.is_runnable(&d.name),
                })
            })
            .collect();
        return print_json(&Value::Array(tools), output);
    }
    let width = toolset
        .definitions()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(4);
    for d in toolset.definitions() {
        // a catalog's descriptions are somebody else's text
        let summary = visible(d.description.lines().next().unwrap_or(""));
        let mut flags = String::new();
        if !toolset.is_runnable(&d.name) {
            flags.push_str(" [declared only]");
        }
        if d.schema_origin == SchemaOrigin::Dynamic {
            flags.push_str(" [dynamic]");
        }
        let _ = writeln!(
            output.out,
            "{:width$}  {:11}  {summary}{flags}",
            d.name,
            d.safety.as_str(),
        );
    }
    Exit::Success
}

/// `tools schema [NAME...] [--provider P]`.
pub(super) fn schema(
    toolset: &ToolSet,
    matches: &ArgMatches,
    views: &[&dyn SchemaView],
    output: &mut Output<'_>,
) -> Exit {
    let names: Vec<&String> = matches
        .get_many::<String>("names")
        .map(|v| v.collect())
        .unwrap_or_default();
    let mut defs: Vec<&ToolDefinition> = Vec::new();
    if names.is_empty() {
        defs.extend(toolset.definitions());
    } else {
        for n in names {
            match toolset.get(n) {
                Some(d) => defs.push(d),
                None => {
                    report(&unknown_tool(toolset, n), output);
                    return Exit::Refused;
                }
            }
        }
    }
    let Some(provider) = matches.get_one::<String>("provider") else {
        let value = serde_json::to_value(&defs).unwrap_or(Value::Null);
        return print_json(&value, output);
    };
    let Some(view) = views
        .iter()
        .find(|v| v.providers().contains(&provider.as_str()))
    else {
        let known: Vec<&str> = views.iter().flat_map(|v| v.providers()).collect();
        let known = if known.is_empty() {
            "none is registered".to_owned()
        } else {
            format!("known providers: {}", known.join(", "))
        };
        let _ = writeln!(output.err, "error: unknown provider {provider:?}; {known}");
        return Exit::Usage;
    };
    match view.render(provider, &defs) {
        Ok(value) => print_json(&value, output),
        Err(message) => {
            let err = ToolError::new(
                ErrorCode::INVALID_DEFINITION,
                format!("{provider} cannot declare these tools: {message}"),
            );
            report(&err, output);
            Exit::Refused
        }
    }
}

fn unknown_tool(toolset: &ToolSet, name: &str) -> ToolError {
    // the same error hydration gives, with its suggestions
    match toolset.hydrate(&ToolCall::new("cli", name, "{}")) {
        Err(e) if e.code == ErrorCode::UNKNOWN_TOOL => e,
        _ => ToolError::new(
            ErrorCode::UNKNOWN_TOOL,
            format!("there is no tool named {name:?}"),
        ),
    }
}

/// `tools check NAME --args JSON|@FILE|-`.
pub(super) fn check(
    toolset: &ToolSet,
    matches: &ArgMatches,
    stdin: &Mutex<Option<Box<dyn Read + Send>>>,
    output: &mut Output<'_>,
) -> Exit {
    let name = matches
        .get_one::<String>("name")
        .expect("clap requires NAME");
    let spec = match matches.get_one::<std::ffi::OsString>("args") {
        None => "",
        Some(spec) => match spec.to_str() {
            Some(spec) => spec,
            None => {
                let bytes = spec.as_encoded_bytes().to_vec();
                let err = Arguments::from_utf8(bytes).expect_err("not UTF-8");
                report(&err, output);
                return Exit::Refused;
            }
        },
    };
    let limits = toolset.limits();
    let read = if spec == "-" {
        match stdin.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            Some(reader) => Arguments::read(reader, limits),
            None => Arguments::read(std::io::stdin().lock(), limits),
        }
        .map_err(|e| format!("cannot read the arguments from standard input: {e}"))
    } else if let Some(path) = spec.strip_prefix('@') {
        std::fs::File::open(path)
            .and_then(|file| Arguments::read(file, limits))
            .map_err(|e| format!("cannot read the arguments from {path:?}: {e}"))
    } else {
        Ok(Ok(Arguments::Text(spec.to_owned())))
    };
    let arguments = match read {
        Ok(Ok(arguments)) => arguments,
        // bytes that are not arguments (too many, not UTF-8) are refused like any bad input
        Ok(Err(err)) => {
            report(&err, output);
            return Exit::Refused;
        }
        Err(message) => {
            let _ = writeln!(output.err, "error: {message}");
            return Exit::Usage;
        }
    };
    match toolset.hydrate(&ToolCall::new("cli", name.as_str(), arguments)) {
        Ok(instance) => {
            for r in instance.repairs() {
                let _ = writeln!(
                    output.err,
                    "note: the arguments were repaired: {}",
                    serde_json::to_value(r).unwrap_or(Value::Null)
                );
            }
            print_json(instance.arguments(), output)
        }
        Err(err) => {
            report(&err, output);
            Exit::Refused
        }
    }
}
