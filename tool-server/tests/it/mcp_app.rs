//! An application's own rmcp handler served with the tools at `/mcp` ([`ServerOptions::mcp_app`]):
//! `initialize` announces its capabilities beside `tools`, its methods answer over HTTP, and the
//! tools stay the executor's.

use crate::support;

use rmcp::model::{
    ListResourcesResult, PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use support::*;

/// The application's resources: one.
#[derive(Clone)]
struct Shelf;

impl ServerHandler for Shelf {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            "notes://index",
            "index",
        )]))
    }
}

/// The JSON-RPC message of a response to a POST: the body, or the first event of a stream.
async fn rpc(res: reqwest::Response) -> Value {
    let text = res.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {text:?}"))
    })
}

#[tokio::test]
async fn the_applications_handler_answers_beside_the_tools() {
    let s = start_with(|o| o.mcp_app(Shelf).mcp_server_info("notes-app", "3.1.0")).await;
    let post = |session: Option<String>, body: Value| {
        let mut req = s
            .http
            .post(format!("{}/mcp", s.base))
            .bearer_auth(AGENT)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(id) = session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        req.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let res = post(None, init).await.unwrap();
    let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let init = rpc(res).await;
    let capabilities = &init["result"]["capabilities"];
    assert!(capabilities["tools"].is_object(), "{init}");
    assert!(capabilities["resources"].is_object(), "{init}");
    assert!(capabilities.get("prompts").is_none(), "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "notes-app");
    let notified = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(Some(session.clone()), notified).await.unwrap();

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"});
    let resources = rpc(post(Some(session.clone()), list).await.unwrap()).await;
    assert_eq!(
        resources["result"]["resources"][0]["uri"], "notes://index",
        "{resources}"
    );
    let tools = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let tools = rpc(post(Some(session.clone()), tools).await.unwrap()).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "delete_note"),
        "{tools}"
    );
    let prompts = json!({"jsonrpc": "2.0", "id": 4, "method": "prompts/list"});
    let prompts = rpc(post(Some(session), prompts).await.unwrap()).await;
    assert_eq!(
        prompts["error"]["code"], -32601,
        "not the application's: {prompts}"
    );
}
