//! The approvals page is the person's side of every call the server runs, not only of those made
//! with `POST /api/v1/tools/{name}/call`: a tool called by the server's chat agent asks its
//! question on the page and shows its progress in the running list, and so does the tool of an
//! operation the approver approves. The model's answer never reaches either question.

use serde_json::{Value, json};

use crate::questions::{Asking, answer_path, start_full};
use crate::support::{AGENT, APPROVER, answer, call, scripted};

/// The one running call of `tool`, once it shows.
async fn running(s: &Asking, tool: &str) -> Value {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, body) = s.get("/api/v1/running", APPROVER).await;
        assert_eq!(status, 200, "{body}");
        let found: Vec<&Value> = body["running"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tool"] == tool)
            .collect();
        if let [one] = found[..] {
            return one.clone();
        }
        assert!(found.is_empty(), "{body}");
        assert!(tokio::time::Instant::now() < deadline, "{tool} never ran");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn nothing_running(s: &Asking) {
    let (_, body) = s.get("/api/v1/running", APPROVER).await;
    assert_eq!(body["running"], json!([]), "{body}");
}

#[tokio::test]
async fn a_chat_runs_tool_asks_on_the_page_and_shows_its_progress_there() {
    let (model, script) = scripted(vec![
        // the model even offers an answer in the arguments: the tool asks the person anyway
        call("c1", "sync_files", json!({"label": "go_on=true"})),
        answer("Your files are synced."),
    ])
    .await;
    let s = start_full(Some(&model), |_| {}).await;
    let chat = {
        let (http, url) = (s.http.clone(), format!("{}/api/v1/chat", s.base));
        tokio::spawn(async move {
            let res = http
                .post(url)
                .bearer_auth(AGENT)
                .json(&json!({"messages": [{"role": "user", "content": "sync my files"}]}))
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        })
    };

    let q = s.question("sync_files").await;
    assert_eq!(q["message"], "Copied 3 of 10: go on?");
    let run = running(&s, "sync_files").await;
    assert_eq!(run["call_id"], q["call_id"], "{run} {q}");
    assert_eq!(
        (&run["progress"], &run["total"], &run["message"]),
        (&json!(3.0), &json!(10.0), &json!("copying <b>photos</b>")),
        "{run}"
    );
    assert!(!chat.is_finished(), "the run waits for the person");

    let (status, body) = s
        .post(
            &answer_path(&q),
            APPROVER,
            json!({"action": "accept", "content": {"go_on": true}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, done) = chat.await.unwrap();
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["answer"], "Your files are synced.", "{done}");
    // what the person chose is what the model was sent back
    let second = script.requests.lock().unwrap()[1].to_string();
    assert!(second.contains("synced 10 of 10"), "{second}");
    assert!(s.questions().await.is_empty());
    nothing_running(&s).await;
}

#[tokio::test]
async fn an_approved_operations_tool_asks_on_the_page_while_it_runs() {
    let s = start_full(None, |_| {}).await;
    let (status, parked) = s.call("ship_order", json!({"label": "o-7"})).await.unwrap();
    assert_eq!(status, 202, "{parked}");
    let op = parked["operation_id"].as_str().unwrap().to_owned();
    // parked, it has not run: nothing asks and nothing runs
    assert!(s.questions().await.is_empty());
    nothing_running(&s).await;

    let approve = {
        let (http, url) = (
            s.http.clone(),
            format!("{}/api/v1/pending/{op}/approve", s.base),
        );
        tokio::spawn(async move {
            let res = http
                .post(url)
                .bearer_auth(APPROVER)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        })
    };
    let q = s.question("ship_order").await;
    assert_eq!(q["message"], "What goes in the box?");
    assert_eq!(running(&s, "ship_order").await["call_id"], q["call_id"]);

    // the agent's token answers nothing
    let (status, _) = s
        .post(
            &answer_path(&q),
            AGENT,
            json!({"action": "accept", "content": {"name": "Mallory"}}),
        )
        .await;
    assert_eq!(status, 403);
    let (status, body) = s
        .post(
            &answer_path(&q),
            APPROVER,
            json!({"action": "accept", "content": {"name": "Ada", "cups": 3}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, exec) = approve.await.unwrap();
    assert_eq!(status, 200, "{exec}");
    assert_eq!(exec["value"], "shipped o-7: 3 cups for Ada", "{exec}");
    nothing_running(&s).await;
}
