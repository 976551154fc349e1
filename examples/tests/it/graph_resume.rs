//! The knowledge graph's suspended run, end to end over real HTTP with a scripted
//! OpenAI-compatible peer (a few lines of std networking, so the test needs no model): the
//! model's `delete_node` parks a pending operation and suspends the run; the run's state goes
//! through JSON (as `graph` saves it to disk); another executor sharing the store approves it;
//! a fresh agent resumes, the tool result reaches the model, and the model's answer ends the run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use examples::graph::{self, GraphDb};
use examples::setup;
use serde_json::{Value, json};
use tool_providers::agent::{Agent, AgentConfig, RunState, RunStatus};
use tool_runtime::executor::ExecutorConfig;

/// Serves `replies` in order, one per request, and records the request bodies.
fn scripted_peer(replies: Vec<Value>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for (stream, reply) in listener.incoming().zip(replies) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            log.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            let text = reply.to_string();
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            )
            .unwrap();
        }
    });
    (url, seen)
}

fn completion(message: Value, finish: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
}

#[tokio::test]
async fn a_suspended_run_resumes_after_approval_from_another_executor() {
    let (url, seen) = scripted_peer(vec![
        completion(
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "delete_node", "arguments": "{\"node_id\":\"obs-3\",\"cascade\":true}"}}]}),
            "tool_calls",
        ),
        completion(
            json!({"role": "assistant", "content": "obs-3 is deleted."}),
            "stop",
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let db = GraphDb::open(dir.path().join("graph.sqlite")).unwrap();
    let store = dir.path().join("store.sqlite");
    let config = AgentConfig {
        system: Some(graph::SYSTEM.into()),
        ..Default::default()
    };
    let agent = Agent::new(
        setup::local(&url).model,
        graph::executor(db.clone(), &store, ExecutorConfig::default()).unwrap(),
        config.clone(),
    );
    let report = agent.run("Delete node obs-3 with cascade").await.unwrap();
    let RunStatus::Suspended { state } = &report.status else {
        panic!("expected a suspension: {:?}", report.status)
    };
    let ops = state.operation_ids();
    assert_eq!(ops.len(), 1);
    assert!(db.node("obs-3").is_ok(), "nothing runs before approval");
    let saved = state.to_json();
    drop(agent);

    // Later, elsewhere: a person approves by id; then the run continues from the saved state.
    let approver = graph::executor(db.clone(), &store, ExecutorConfig::default()).unwrap();
    assert!(
        approver
            .approve(&ops[0])
            .await
            .unwrap()
            .outcome
            .is_success()
    );
    assert!(db.node("obs-3").is_err());

    let agent = Agent::new(
        setup::local(&url).model,
        graph::executor(db.clone(), &store, ExecutorConfig::default()).unwrap(),
        config,
    );
    let report = agent
        .resume(RunState::from_json(&saved).unwrap())
        .await
        .unwrap();
    assert_eq!(report.status, RunStatus::Answered, "{report:#?}");
    assert_eq!(report.answer.as_deref(), Some("obs-3 is deleted."));
    // The second request carried the approved call's result back to the model.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let last = seen[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool", "{last:#}");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("Node deleted successfully"),
        "{last:#}"
    );
}
