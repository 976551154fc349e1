//! The client side of the suite (its `client` scenarios): the MCP server the suite starts is
//! imported as any other server is ([`tool_mcp::client::McpClient`] over streamable HTTP), and
//! the scenario's tool is called through the executor, so what the suite checks is the client
//! the project's users get: the handshake, arguments validated before they are sent, the
//! server's questions put to the person behind the call with the form's defaults, and the
//! stream resumed when the server closes it.
//!
//! Nobody sits at the suite's client: the operator of this program is taken to approve every
//! call of the scenario's server ([`ApproveAll`]) and to accept every question as the form
//! shows it, pre-filled with its defaults.

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_mcp::client::{McpClient, ServerConfig};
use tool_runtime::executor::{ApproveAll, Outcome};
use tool_runtime::host::{CallHost, Form, Host, Reply};
use tool_runtime::{CallContext, Executor, ToolCall, ToolError, ToolSet};

/// The name the scenario's server is imported under (its tools are `suite__<tool>`).
const SERVER: &str = "suite";

/// The tool each scenario has the client call, and its arguments; a scenario not listed here
/// (the handshake alone) calls none.
fn call_of(scenario: &str) -> Option<(&'static str, Value)> {
    Some(match scenario {
        "tools_call" => ("add_numbers", json!({"a": 5, "b": 3})),
        "elicitation-sep1034-client-defaults" => ("test_client_elicitation_defaults", json!({})),
        "sse-retry" => ("test_reconnection", json!({})),
        _ => return None,
    })
}

/// The person at the suite's client: accepts every form as shown, so every field keeps the
/// default the form gives it.
struct AcceptsAsShown;

impl CallHost for AcceptsAsShown {
    fn ask<'a>(&'a self, _form: &'a Form) -> BoxFuture<'a, Result<Reply<Value>, ToolError>> {
        Box::pin(async { Ok(Reply::Accepted(json!({}))) })
    }
}

/// Runs `scenario` against the server at `url`: connects, lists and imports its tools, and
/// calls the scenario's tool. What happened is printed to standard output, one JSON line per
/// step; an error is what the suite should see as a failed client.
pub async fn run(scenario: &str, url: &str) -> Result<(), String> {
    let client = McpClient::connect(SERVER, ServerConfig::http(url))
        .await
        .map_err(|e| e.to_string())?;
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    println!(
        "{}",
        json!({"imported": imported.registered, "refused": imported.refused.len()})
    );
    let Some((tool, arguments)) = call_of(scenario) else {
        client.close();
        return Ok(());
    };
    let executor = Executor::builder(set)
        .confirmation(ApproveAll)
        .build()
        .map_err(|e| e.to_string())?;
    let name = format!("{SERVER}__{tool}");
    let cx = CallContext {
        host: Some(Host::new(AcceptsAsShown)),
        ..CallContext::new("conformance-1")
    };
    let call = ToolCall::new("conformance-1", name.as_str(), arguments);
    let outcome = executor.call(&call, cx).await.outcome;
    client.close();
    match outcome {
        Outcome::Success { value, .. } => {
            println!("{}", json!({"call": name, "result": value}));
            Ok(())
        }
        other => Err(format!("{name}: {other:?}")),
    }
}
