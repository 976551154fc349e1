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
//!
//! The authorization scenarios (`auth/*`) put the server behind OAuth: it is imported with an
//! `oauth` entry, the client identified by the suite's client ID metadata document, or by the
//! pre-registered client the suite names in `MCP_CONFORMANCE_CONTEXT`, and every tool it lists
//! is called. The suite's authorization server grants at once, so its redirect is read without
//! a browser ([`Consent::FollowRedirect`]) where a person would open the URL.

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_mcp::client::{Consent, Grant, IdentityProvider, McpClient, OAuthConfig, ServerConfig};
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

/// The client ID metadata document the suite's authorization servers know (SEP-991).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// How an authorization scenario's server is imported: OAuth, with the client the suite's
/// context names (`client_id`, with `client_secret` or `private_key_pem` and its
/// `signing_algorithm`) or its metadata document; the client credentials grant where the
/// scenario is about it, and enterprise-managed authorization where the context names an
/// identity provider (`idp_issuer`, `idp_token_endpoint`, `idp_client_id`) and the person's ID
/// token there (`idp_id_token`).
fn oauth_of(scenario: &str) -> OAuthConfig {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let identity_provider = text("idp_issuer").map(|issuer| IdentityProvider {
        issuer,
        token_endpoint: text("idp_token_endpoint").unwrap_or_default(),
        client_id: text("idp_client_id").unwrap_or_default(),
        id_token: text("idp_id_token"),
        ..IdentityProvider::default()
    });
    let grant = if identity_provider.is_some() {
        Grant::EnterpriseManaged
    } else if scenario.starts_with("auth/client-credentials") {
        Grant::ClientCredentials
    } else {
        Grant::AuthorizationCode
    };
    OAuthConfig {
        client_id: text("client_id"),
        client_secret: text("client_secret"),
        client_key: text("private_key_pem"),
        client_key_algorithm: text("signing_algorithm"),
        client_metadata_url: Some(CLIENT_METADATA_URL.to_owned()),
        client_name: Some("tool-mcp conformance client".to_owned()),
        grant,
        identity_provider,
        consent: Consent::FollowRedirect,
        ..OAuthConfig::default()
    }
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
    let mut config = ServerConfig::http(url);
    let authorized = scenario.starts_with("auth/");
    if authorized {
        config.oauth = Some(oauth_of(scenario));
    }
    let client = McpClient::connect(SERVER, config)
        .await
        .map_err(|e| e.to_string())?;
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    println!(
        "{}",
        json!({"imported": imported.registered, "refused": imported.refused.len()})
    );
    let calls: Vec<(String, Value)> = match call_of(scenario) {
        Some((tool, arguments)) => vec![(tool.to_owned(), arguments)],
        None if authorized => (client.tools().iter())
            .map(|t| (t.name.to_string(), json!({})))
            .collect(),
        None => Vec::new(),
    };
    if calls.is_empty() {
        client.close();
        return Ok(());
    }
    let executor = Executor::builder(set)
        .confirmation(ApproveAll)
        .build()
        .map_err(|e| e.to_string())?;
    let mut failed = None;
    for (n, (tool, arguments)) in calls.into_iter().enumerate() {
        let name = format!("{SERVER}__{tool}");
        let id = format!("conformance-{}", n + 1);
        let cx = CallContext {
            host: Some(Host::new(AcceptsAsShown)),
            ..CallContext::new(id.as_str())
        };
        let call = ToolCall::new(id.as_str(), name.as_str(), arguments);
        match executor.call(&call, cx).await.outcome {
            Outcome::Success { value, .. } => {
                println!("{}", json!({"call": name, "result": value}));
            }
            other => failed = Some(format!("{name}: {other:?}")),
        }
    }
    client.close();
    failed.map_or(Ok(()), Err)
}
