//! What every route does alike: the `Host` it is reached under is checked, errors from the
//! query string are JSON like every other error, responses say they must not be sniffed or
//! stored, and readiness says ready or not without naming the store's file.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

use crate::limits::serve;

#[tokio::test]
async fn every_route_refuses_a_host_it_was_not_told_to_answer_to() {
    let s = start().await;
    let port = s.addr.port();
    let get = |path: &str, host: String| {
        let req = s
            .http
            .get(format!("{}{path}", s.base))
            .bearer_auth(APPROVER)
            .header("host", host);
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            (status, res.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    for path in [
        "/",
        "/api/v1/tools",
        "/api/v1/pending",
        "/healthz",
        "/api/v1/openapi.json",
    ] {
        let (status, body) = get(path, format!("rebound.example:{port}")).await;
        assert_eq!(status, 403, "{path}");
        assert_error(&body, "HOST_NOT_ALLOWED");
        let (status, _) = get(path, format!("localhost:{port}")).await;
        assert_eq!(status, 200, "{path}");
        let (status, _) = get(path, format!("[::1]:{port}")).await;
        assert_eq!(status, 200, "{path}");
    }
    // a server reached under another name allows it
    let s = start_with(|o| o.allowed_hosts(["tools.example"])).await;
    let res = s
        .http
        .get(format!("{}/healthz", s.base))
        .header("host", "tools.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn responses_must_not_be_sniffed_and_api_answers_not_stored() {
    let s = start().await;
    let get = |path: &str, token: Option<&str>| {
        let mut req = s.http.get(format!("{}{path}", s.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move { req.send().await.unwrap() }
    };
    for (path, token) in [
        ("/api/v1/tools", Some(AGENT)),
        ("/api/v1/activity", Some(APPROVER)),
        ("/api/v1/pending", None),
        ("/api/v1/nowhere", Some(AGENT)),
        ("/healthz", None),
    ] {
        let res = get(path, token).await;
        assert_eq!(res.headers()["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(res.headers()["cache-control"], "no-store", "{path}");
    }
    let page = get("/", None).await;
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    assert_eq!(
        page.headers()["cache-control"],
        "no-cache",
        "the page's own"
    );
}

#[tokio::test]
async fn query_string_errors_get_the_json_error_shape() {
    let s = start().await;
    for path in [
        "/api/v1/activity?initiator=nobody",
        "/api/v1/activity?since_ms=-5",
        "/api/v1/activity/stream?limit=x",
    ] {
        let res = s
            .http
            .get(format!("{}{path}", s.base))
            .bearer_auth(APPROVER)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 422, "{path}");
        assert_eq!(res.headers()["content-type"], "application/json", "{path}");
        let body: Value = res.json().await.unwrap();
        assert_error(&body, "INVALID_ARGUMENTS");
        assert!(
            body["error"]["message"].as_str().unwrap().contains("query"),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_names_the_store_kind_and_never_its_file() {
    let s = serve(|o| o).await;
    let http = reqwest::Client::new();
    let ready = |http: reqwest::Client, base: String| async move {
        let res = http.get(format!("{base}/readyz")).send().await.unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    };
    let (status, body) = ready(http.clone(), s.base.clone()).await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["store"], "sqlite");
    assert_eq!(body["status"], "ready");

    // the file is deleted under the running server: not ready, and nothing says where it was
    let path = s.dir.path().join("store.sqlite");
    std::fs::remove_file(&path).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (status, text) = ready(http, s.base.clone()).await;
    assert_eq!(status, 503, "{text}");
    let dir = s.dir.path().to_str().unwrap();
    assert!(
        !text.contains(dir) && !text.contains("store.sqlite"),
        "{text}"
    );
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_error(&body, "UNAVAILABLE");
    assert_eq!(body["error"]["details"]["store"], json!("sqlite"));
}
