//! End to end: an agent on the local model (llama.cpp running SmolLM2-135M) with a tool it
//! knows only from another party's MCP server: `get-sum` of the reference
//! `@modelcontextprotocol/server-everything`, started over stdio, imported with its annotations
//! trusted (read-only), validated here, run on the server and audited, with nobody asked.
//!
//! Needs `TOOLS_LLAMA_URL` and the reference servers (`TOOLS_MCP_SERVERS`), both set by
//! `.ci/run`; without them the test prints why and passes, except when `CI` is set.

use std::sync::{Arc, Mutex};

use examples::setup;
use futures::FutureExt;
use serde_json::Value;
use tool_mcp::client::{McpClient, ServerConfig};
use tool_providers::agent::{Agent, AgentConfig, TranscriptEntry};
use tool_providers::codec::ToolChoice;
use tool_runtime::ToolSet;
use tool_runtime::definition::Safety;
use tool_runtime::executor::{Answer, ConfirmationRequest, Decider, Executor, FnConfirmer, Status};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_adds_two_numbers_with_a_tool_of_another_servers() {
    let Some(url) = test_support::llama_url() else {
        return;
    };
    let Some(modules) = test_support::mcp_servers() else {
        return;
    };
    let script = format!("{modules}/@modelcontextprotocol/server-everything/dist/index.js");
    let mut config =
        ServerConfig::stdio("node", [script, "stdio".to_owned()]).trusting_annotations();
    config.allow = Some(vec!["get-sum".to_owned()]);
    let client = McpClient::connect("ev", config).await.unwrap();
    let mut set = ToolSet::new();
    let imported = client.import(&mut set);
    assert_eq!(imported.registered, ["ev__get-sum"], "{imported:?}");
    assert_eq!(set.get("ev__get-sum").unwrap().safety, Safety::ReadOnly);

    let asked: Arc<Mutex<Vec<ConfirmationRequest>>> = Arc::default();
    let seen = asked.clone();
    let confirmer = FnConfirmer(move |req: ConfirmationRequest| {
        seen.lock().unwrap().push(req);
        async {
            Answer::No {
                reason: Some("a read-only tool is never confirmed".into()),
            }
        }
        .boxed()
    });
    let executor = Executor::builder(set)
        .confirmation(confirmer)
        .build()
        .unwrap();
    let agent_config = AgentConfig {
        first_choice: Some(ToolChoice::Required),
        choice: ToolChoice::Required,
        // a 135M model sometimes writes a call that does not fit the schema; each is refused
        // here with the pointer, and it tries again
        retry_budget: 3,
        max_iterations: 3,
        ..Default::default()
    };
    let agent = Agent::new(setup::local(&url).model, executor, agent_config);
    let report = crate::support::run_until_a_valid_call(
        &agent,
        "What is 2 plus 40? Add them with the get-sum tool.",
        &asked,
        || true,
    )
    .await;

    let sums: Vec<_> = (report.audit.iter())
        .filter(|r| r.tool == "ev__get-sum")
        .collect();
    assert!(
        sums.iter().any(|r| r.status == Status::Success),
        "a valid call of the imported tool: {:#?}",
        report.transcript
    );
    for record in &sums {
        // read-only, or refused as malformed before anything was sent: decided by policy
        assert_eq!(record.decided_by, Decider::Policy, "{record:#?}");
        if record.status != Status::Success {
            assert_eq!(record.attempts, 0, "{record:#?}");
        }
    }
    assert!(asked.lock().unwrap().is_empty(), "nobody was asked");
    // what went back to the model is the server's own sum of the model's numbers
    for entry in &report.transcript {
        if let TranscriptEntry::Tool {
            status: Status::Success,
            result,
            call_id,
            ..
        } = entry
        {
            let call = (report.audit.iter())
                .find(|r| &r.call_id == call_id)
                .expect("audited");
            let args = call.arguments.as_ref().expect("arguments are audited");
            let sum = args["a"].as_f64().unwrap() + args["b"].as_f64().unwrap();
            let text = match result {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            assert!(text.contains(&format!("is {sum}")), "{args} gave {text}");
        }
    }
    client.close();
}
