//! The activity stream as a cursor over the store's sequence numbers: a burst of thousands of
//! records reaches every open stream whole, once each and in order; a reader that reconnects
//! with `Last-Event-ID` gets exactly the rest; the feed pages the same way with `after`.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use support::*;
use tool_runtime::executor::{ActivityQuery, AuditRecord};

/// The events of one open stream, read as they arrive.
pub struct Events {
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>,
    text: String,
}

impl Events {
    /// Opens the stream at `path` (with its query) as the approver, after `last_id` if given.
    pub async fn open(s: &Server, path: &str, last_id: Option<u64>) -> Self {
        let mut req = s
            .http
            .get(format!("{}{path}", s.base))
            .bearer_auth(APPROVER);
        if let Some(id) = last_id {
            req = req.header("last-event-id", id.to_string());
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 200);
        Events {
            body: Box::pin(res.bytes_stream()),
            text: String::new(),
        }
    }

    /// The next `activity` event's id and record, or `None` if none comes within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<(u64, Value)> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.text.find("\n\n") {
                let block: String = self.text.drain(..end + 2).collect();
                if !block.lines().any(|l| l == "event: activity") {
                    continue;
                }
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(str::to_owned)
                };
                let id = field("id: ")
                    .expect("every event has an id")
                    .parse()
                    .unwrap();
                let data = serde_json::from_str(&field("data: ").unwrap()).unwrap();
                return Some((id, data));
            }
            let chunk = tokio::time::timeout_at(deadline, self.body.next())
                .await
                .ok()??
                .unwrap();
            self.text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// The next `n` events, each within `wait` of the one before.
    pub async fn take(&mut self, n: usize, wait: Duration) -> Vec<(u64, Value)> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(e) = self.next(wait).await else {
                panic!("{} of {n} events, then none for {wait:?}", out.len());
            };
            out.push(e);
        }
        out
    }
}

/// One real record, from a call through the API, to copy.
async fn template(s: &Server) -> AuditRecord {
    let (status, _) = s
        .post(
            "/api/v1/tools/read_note/call",
            Some(AGENT),
            json!({ "arguments": { "id": "n1" } }),
        )
        .await;
    assert_eq!(status, 200);
    let mut r = s.executor.activity(&ActivityQuery::default()).unwrap()[0].clone();
    r.seq = None;
    r
}

/// Appends `n` records named `b0`, `b1`, ... straight to the store, from another thread.
fn burst(s: &Server, record: AuditRecord, n: usize) -> tokio::task::JoinHandle<()> {
    let store = s.executor.store().clone();
    tokio::task::spawn_blocking(move || {
        for i in 0..n {
            let mut r = record.clone();
            r.call_id = format!("b{i}").into();
            store.append_audit(&r).unwrap();
        }
    })
}

fn call_ids(events: &[(u64, Value)]) -> Vec<String> {
    events
        .iter()
        .map(|(_, r)| r["call_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_reaches_the_stream_whole_and_a_reconnect_gets_exactly_the_rest() {
    const N: usize = 3_000;
    let s = start().await;
    let record = template(&s).await;
    let mut whole = Events::open(&s, "/api/v1/activity/stream", None).await;
    let mut broken = Events::open(&s, "/api/v1/activity/stream", None).await;
    let writer = burst(&s, record, N);
    let wait = Duration::from_secs(30);
    let first = broken.take(1_000, wait).await;
    drop(broken);
    let last_seen = first.last().unwrap().0;
    let mut resumed = Events::open(&s, "/api/v1/activity/stream", Some(last_seen)).await;
    let rest = resumed.take(N - 1_000, wait).await;
    let all = whole.take(N, wait).await;
    writer.await.unwrap();

    let expected: Vec<String> = (0..N).map(|i| format!("b{i}")).collect();
    assert_eq!(call_ids(&all), expected, "every record once, in order");
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "ids increase");
    assert!(
        all.iter().all(|(id, r)| r["seq"] == *id),
        "the id is the seq"
    );
    let mut joined = call_ids(&first);
    joined.extend(call_ids(&rest));
    assert_eq!(joined, expected, "the reconnect got exactly the rest");
    for stream in [&mut whole, &mut resumed] {
        assert_eq!(
            stream.next(Duration::from_millis(1_500)).await,
            None,
            "nothing twice"
        );
    }
}

#[tokio::test]
async fn the_feed_pages_oldest_first_after_a_sequence_number() {
    let s = start().await;
    let record = template(&s).await;
    burst(&s, record, 7).await.unwrap();
    let (mut after, mut seen) = (0u64, Vec::new());
    loop {
        let (status, body) = s
            .get(
                &format!("/api/v1/activity?after={after}&limit=3&tool=read_note"),
                Some(APPROVER),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        for r in body["records"].as_array().unwrap() {
            seen.push(r["call_id"].as_str().unwrap().to_owned());
        }
        match body.get("next_after") {
            Some(next) => after = next.as_u64().unwrap(),
            None => break,
        }
    }
    let mut expected = vec![seen[0].clone()];
    expected.extend((0..7).map(|i| format!("b{i}")));
    assert_eq!(seen, expected, "the first call, then the burst, each once");
}

#[tokio::test]
async fn paging_out_of_range_is_refused_with_the_json_error() {
    let s = start().await;
    for query in [
        "offset=18446744073709551615",
        "offset=1000001",
        "limit=0",
        "limit=501",
        "limit=many",
        "after=-1",
        "since_ms=yesterday",
    ] {
        let res = s
            .http
            .get(format!("{}/api/v1/activity?{query}", s.base))
            .bearer_auth(APPROVER)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 422, "{query}");
        assert_eq!(res.headers()["content-type"], "application/json", "{query}");
        let body: Value = res.json().await.unwrap();
        assert_error(&body, "INVALID_ARGUMENTS");
    }
    let (status, body) = s
        .get("/api/v1/activity?offset=1000000", Some(APPROVER))
        .await;
    assert_eq!((status, &body["records"]), (200, &json!([])), "{body}");
    let res = s
        .http
        .get(format!("{}/api/v1/activity/stream", s.base))
        .bearer_auth(APPROVER)
        .header("last-event-id", "not-a-number")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    assert_error(&res.json().await.unwrap(), "INVALID_ARGUMENTS");
}
