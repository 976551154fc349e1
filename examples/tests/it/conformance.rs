//! The `conformance` app as the suite meets it: `serve --without-token` serves a client that
//! sends no token as the agent (it lists and calls, it never approves), on a loopback address
//! only; `/mcp` announces the application's resources, prompts, completions and logging beside
//! the fixture tools, whose 2020-12 schema is declared as written. The suite itself runs in CI
//! (`scripts/mcp-conformance.sh`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use serde_json::{Value, json};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn conformance() -> std::process::Command {
    let mut cmd = crate::support::isolated(env!("CARGO_BIN_EXE_conformance"));
    cmd.env_remove("TOOLS_AGENT_TOKEN")
        .env_remove("TOOLS_APPROVER_TOKEN")
        .stdin(Stdio::null());
    cmd
}

/// The JSON-RPC message of a response: the body, or the event of a stream that answers.
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

#[test]
fn without_a_token_only_a_loopback_address_is_served() {
    let out = conformance()
        .args(["serve", "--addr", "0.0.0.0:0", "--without-token"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("loopback address only"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_client_without_a_token_is_the_agent_and_meets_the_composed_server() {
    let mut child = conformance()
        .args(["serve", "--addr", "127.0.0.1:0", "--without-token"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let _server = Server(child);
    let mcp = loop {
        let line = lines.next().expect("the address line").unwrap();
        if let Some(rest) = line.strip_prefix("MCP: ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    let base = mcp.trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::new();

    // the agent's rights and no more
    let tools = http
        .get(format!("{base}/api/v1/tools"))
        .send()
        .await
        .unwrap();
    assert_eq!(tools.status(), 200);
    let pending = http
        .get(format!("{base}/api/v1/pending"))
        .send()
        .await
        .unwrap();
    assert_eq!(pending.status(), 403, "an agent does not decide");

    let post = |session: Option<String>, body: Value| {
        let mut req = http
            .post(&mcp)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(id) = session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25");
        }
        req.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "suite", "version": "1"}}});
    let res = post(None, init).await.unwrap();
    let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let init = rpc(res).await;
    let result = &init["result"];
    for capability in ["tools", "resources", "prompts", "completions", "logging"] {
        assert!(
            result["capabilities"][capability].is_object(),
            "{capability}: {init}"
        );
    }
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(result["serverInfo"]["name"], "mcp-conformance-server");
    post(
        Some(session.clone()),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .unwrap();

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let list = rpc(post(Some(session.clone()), list).await.unwrap()).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "test_simple_text",
            "test_error_handling",
            "test_tool_with_progress",
            "test_reconnection",
            "json_schema_2020_12_tool",
            "test_multiple_content_types",
            "test_image_content",
            "test_audio_content",
            "test_embedded_resource",
            "test_tool_with_logging",
            "test_sampling",
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums"
        ]
    );
    let schema = &tools
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap()["inputSchema"];
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{schema}"
    );
    assert_eq!(schema["properties"]["address"]["$ref"], "#/$defs/address");
    assert_eq!(schema["additionalProperties"], false);

    // the verbatim schema validates: an unknown property is refused before the tool runs
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "json_schema_2020_12_tool", "arguments": {"name": "Ada", "age": 36}}});
    let call = rpc(post(Some(session.clone()), call).await.unwrap()).await;
    assert_eq!(call["result"]["isError"], true, "{call}");
    let read = json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
        "params": {"uri": "test://template/42/data"}});
    let read = rpc(post(Some(session), read).await.unwrap()).await;
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap()["id"],
        "42",
        "{read}"
    );
}

/// The rich fixtures as each official SDK's client reads them (its own result types parse every
/// block): an image, a sound, an embedded resource and mixed content, with their bytes intact.
#[test]
fn each_official_client_reads_the_rich_results() {
    use test_support::mcp::{calls, clients};
    let clients = clients();
    if clients.is_empty() {
        return;
    }
    let mut child = conformance()
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("TOOLS_AGENT_TOKEN", "agent-token-for-rich-results")
        .env("TOOLS_APPROVER_TOKEN", "approver-token-for-rich-results")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let _server = Server(child);
    let mcp = loop {
        let line = lines.next().expect("the address line").unwrap();
        if let Some(rest) = line.strip_prefix("MCP: ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // the rest of its output is not read: keep the pipe from filling
    std::thread::spawn(move || lines.for_each(drop));
    let target = [
        "--http".to_owned(),
        mcp,
        "--token".to_owned(),
        "agent-token-for-rich-results".to_owned(),
    ];
    let png = base64_of(&examples::conformance::TEST_IMAGE_PNG);
    assert_eq!(png, examples::conformance::TEST_IMAGE_BASE64);
    for client in clients {
        let out = client.run(
            &target,
            &[],
            "none",
            &[
                "test_image_content",
                "test_audio_content",
                "test_embedded_resource",
                "test_multiple_content_types",
            ],
        );
        let context = format!("{client:?}: {out:?}");
        let steps = calls(&out);
        assert_eq!(steps.len(), 4, "{context}");
        for step in &steps {
            assert_eq!(step["result"]["isError"], false, "{context}");
            assert!(
                step["result"].get("structuredContent").is_none(),
                "{context}"
            );
        }
        assert_eq!(
            steps[0]["result"]["content"],
            json!([{"type": "image", "data": png, "mimeType": "image/png"}]),
            "{context}"
        );
        let audio = &steps[1]["result"]["content"][0];
        assert_eq!(audio["type"], "audio", "{context}");
        assert_eq!(audio["mimeType"], "audio/wav", "{context}");
        assert_eq!(
            audio["data"],
            base64_of(&examples::conformance::silent_wav(80)),
            "{context}"
        );
        assert_eq!(
            steps[2]["result"]["content"],
            json!([{"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content."}}]),
            "{context}"
        );
        let mixed = steps[3]["result"]["content"].as_array().unwrap();
        let kinds: Vec<&str> = mixed.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["text", "image", "resource"], "{context}");
        assert_eq!(mixed[0]["text"], "Multiple content types test:");
        assert_eq!(mixed[1]["data"], png);
        assert_eq!(
            mixed[2]["resource"]["text"], r#"{"test":"data","value":123}"#,
            "{context}"
        );
    }
}

/// Standard base64, written out here so the test does not share the library's encoder.
fn base64_of(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
