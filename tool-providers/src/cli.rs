//! `tools schema --provider ...` and `tools decode --provider P [FILE|-]` for the `tools` command
//! line. Register [`ProviderSchemas`] as the schema view and [`DecodeCommand`] as a command with
//! the runner in `tool_runtime::cli`.

use std::io::Read;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_runtime::cli::{CliCommand, Exit, Output, SchemaView};
use tool_runtime::display::{visible, visible_lines, visible_prefix};
use tool_runtime::{ToolSet, definition::ToolDefinition};

/// The most characters of a call's id or name printed (the providers' own name limit).
const SHOWN_CHARS: usize = 64;

use crate::codec::{
    CodecError, Decoded, Provider, StopReason, StreamCapture, ToolConfig, hydrate_call,
};

/// What `tools schema --provider P` prints: the `tools` array of the request body exactly as the
/// codec sends it (for Gemini the `[{"functionDeclarations": [...]}]` wrapper), and for MCP the
/// `tools/list` result `{"tools": [...]}`.
pub fn render_schema(provider: Provider, tools: &[&ToolDefinition]) -> Result<Value, CodecError> {
    let fragment = provider
        .codec()
        .encode_tools(tools, &ToolConfig::default())?;
    Ok(match provider {
        Provider::Mcp => fragment,
        _ => fragment["tools"].clone(),
    })
}

/// The provider views of `tools schema`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProviderSchemas;

impl SchemaView for ProviderSchemas {
    fn providers(&self) -> Vec<&'static str> {
        Provider::ALL.iter().map(|p| p.as_str()).collect()
    }

    fn render(&self, provider: &str, tools: &[&ToolDefinition]) -> Result<Value, String> {
        let provider: Provider = provider.parse().map_err(|e: CodecError| e.to_string())?;
        render_schema(provider, tools).map_err(|e| e.to_string())
    }
}

/// `tools decode --provider P [FILE|-]`: reads a response body or a stream capture (SSE `data:`
/// lines or NDJSON, detected), decodes it, hydrates every call against the tool set and prints
/// each result. Exit 0 when every call hydrated, 1 when any call is invalid or the input cannot be
/// decoded, 2 when the file cannot be read.
#[derive(Debug, Clone, Copy, Default)]
pub struct DecodeCommand;

fn stop_name(stop: &StopReason) -> String {
    match stop {
        StopReason::ToolCalls => "tool_calls".into(),
        StopReason::EndTurn => "end_turn".into(),
        StopReason::MaxTokens => "max_tokens".into(),
        StopReason::Other(o) => o.clone(),
        StopReason::Unknown => "unknown".into(),
    }
}

/// Decodes `input` for `provider` and hydrates each call: the report `tools decode` prints (as
/// JSON) and whether every call was valid.
pub fn decode_report(
    provider: Provider,
    toolset: &ToolSet,
    input: &str,
) -> Result<(Value, bool), CodecError> {
    let (decoded, streamed): (Decoded, bool) =
        StreamCapture::decode_text(provider, input, provider.codec().as_ref())?;
    let mut all_ok = true;
    let calls: Vec<Value> = decoded
        .calls
        .iter()
        .map(|call| match hydrate_call(toolset, call) {
            Ok(instance) => json!({
                "id": call.id,
                "name": call.name,
                "ok": true,
                "arguments": instance.arguments(),
                "repairs": instance.repairs(),
            }),
            Err(err) => {
                all_ok = false;
                json!({"id": call.id, "name": call.name, "ok": false, "error": err.to_json()})
            }
        })
        .collect();
    let report = json!({
        "stream": streamed,
        "text": decoded.text,
        "stop": stop_name(&decoded.stop),
        "calls": calls,
    });
    Ok((report, all_ok))
}

fn print_text(report: &Value, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let text = report["text"].as_str().unwrap_or_default();
    // everything below came from a model: shown, never obeyed, and names cut to a readable size
    if !text.is_empty() {
        writeln!(out, "text: {}", visible_lines(text))?;
    }
    let calls = report["calls"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    writeln!(
        out,
        "stop: {}  calls: {}",
        visible(report["stop"].as_str().unwrap_or_default()),
        calls.len()
    )?;
    for c in calls {
        let (id, name) = (
            visible_prefix(c["id"].as_str().unwrap_or_default(), SHOWN_CHARS),
            visible_prefix(c["name"].as_str().unwrap_or_default(), SHOWN_CHARS),
        );
        if c["ok"] == true {
            write!(
                out,
                "ok    {id} {name} {}",
                visible(&c["arguments"].to_string())
            )?;
            if c["repairs"].as_array().is_some_and(|r| !r.is_empty()) {
                write!(out, "  (repaired: {})", c["repairs"])?;
            }
            writeln!(out)?;
        } else {
            let e = &c["error"];
            writeln!(
                out,
                "error {id} {name} {}: {}",
                visible(e["code"].as_str().unwrap_or_default()),
                visible_lines(e["message"].as_str().unwrap_or_default())
            )?;
            for v in e["violations"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                writeln!(
                    out,
                    "        at {:?}: {}",
                    visible(v["pointer"].as_str().unwrap_or_default()),
                    visible_lines(v["message"].as_str().unwrap_or_default())
                )?;
            }
            if let Some(r) = e["recover_action"].as_str() {
                writeln!(out, "        recover: {}", visible_lines(r))?;
            }
        }
    }
    Ok(())
}

impl CliCommand for DecodeCommand {
    fn command(&self) -> clap::Command {
        clap::Command::new("decode")
            .about("Decode a provider response or stream capture and hydrate each tool call")
            .arg(
                clap::Arg::new("provider")
                    .long("provider")
                    .required(true)
                    .value_parser(clap::builder::PossibleValuesParser::new(
                        Provider::ALL.map(Provider::as_str),
                    ))
                    .help("The wire format of the input"),
            )
            .arg(
                clap::Arg::new("file")
                    .default_value("-")
                    .help("Response body or stream capture (SSE or NDJSON); - for stdin"),
            )
    }

    fn run<'a>(
        &'a self,
        toolset: &'a ToolSet,
        matches: &'a clap::ArgMatches,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Exit> {
        async move {
            let provider: Provider = match matches.get_one::<String>("provider").map(|p| p.parse())
            {
                Some(Ok(p)) => p,
                Some(Err(e)) => {
                    let _ = writeln!(output.err, "{e}");
                    return Exit::Usage;
                }
                None => {
                    let _ = writeln!(output.err, "--provider is required");
                    return Exit::Usage;
                }
            };
            let file = matches
                .get_one::<String>("file")
                .map(String::as_str)
                .unwrap_or("-");
            let input = if file == "-" {
                let mut bytes = Vec::new();
                std::io::stdin().read_to_end(&mut bytes).map(|_| bytes)
            } else {
                std::fs::read(file)
            };
            let input = match input {
                Ok(bytes) => bytes,
                Err(e) => {
                    let _ = writeln!(output.err, "cannot read {file}: {e}");
                    return Exit::Usage;
                }
            };
            // a body that is not UTF-8 is the response's fault (exit 1), not a usage error
            let decoded = String::from_utf8(input)
                .map_err(|e| {
                    let offset = e.utf8_error().valid_up_to();
                    CodecError::malformed(
                        provider,
                        "",
                        format!("the response is not valid UTF-8 from byte {offset} on"),
                    )
                })
                .and_then(|input| decode_report(provider, toolset, &input));
            let (report, all_ok) = match decoded {
                Ok(r) => r,
                Err(e) => {
                    if output.json {
                        let _ = writeln!(
                            output.out,
                            "{}",
                            json!({"error": tool_runtime::ToolError::from(e).to_json()})
                        );
                    } else {
                        let _ = writeln!(output.err, "cannot decode: {e}");
                    }
                    return Exit::Refused;
                }
            };
            let written = if output.json {
                writeln!(
                    output.out,
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                )
            } else {
                print_text(&report, output.out)
            };
            if written.is_err() {
                return Exit::Usage;
            }
            if all_ok { Exit::Success } else { Exit::Refused }
        }
        .boxed()
    }
}
