//! What bounds a client's hold on the server: a connection must send its request's headers in
//! time, and MCP sessions are capped and end when idle.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;
use tool_runtime::executor::{Deferred, Executor, ExecutorConfig};
use tool_runtime::store::SqliteStore;
use tool_server::{ServerOptions, Tokens};

/// A server run by `tool_server::serve_until` (as `serve` runs it) over the notes tools and a
/// SQLite store in `dir`; it stops when the sender is dropped.
pub struct Served {
    pub addr: SocketAddr,
    pub base: String,
    pub dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn serve(options: impl FnOnce(ServerOptions) -> ServerOptions) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let set = tool_runtime::toolset![read_note, add_note, delete_note]
        .unwrap()
        .with_state(Notes::default());
    let store = SqliteStore::open(dir.path().join("store.sqlite")).unwrap();
    let executor = Executor::builder(set)
        .config(ExecutorConfig::default())
        .store(Arc::new(store))
        .confirmation(Deferred)
        .build()
        .unwrap();
    let opts = options(ServerOptions::new(
        Tokens::new(AGENT, APPROVER)
            .unwrap()
            .with_host(HOST)
            .unwrap(),
    ));
    let listener = tool_server::bind("127.0.0.1:0".parse().unwrap(), &opts)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        tool_server::serve_until(listener, executor, opts, shutdown).await
    });
    Served {
        addr,
        base: format!("http://{addr}"),
        dir,
        _stop: stop,
    }
}

/// How long until the server closes `conn` (reading gives end of file or an error).
fn time_to_close(mut conn: TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    conn.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => return Some(start.elapsed()),
            // hyper may answer 408 before closing
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None;
            }
            Err(_) => return Some(start.elapsed()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_its_headers_too_slowly_is_closed() {
    let s = serve(|o| o.header_read_timeout(Duration::from_millis(400))).await;
    let addr = s.addr;
    let closed = tokio::task::spawn_blocking(move || {
        let mut half = TcpStream::connect(addr).unwrap();
        half.write_all(b"GET /healthz HT").unwrap();
        let silent = TcpStream::connect(addr).unwrap();
        (
            time_to_close(half, Duration::from_secs(5)),
            time_to_close(silent, Duration::from_secs(5)),
        )
    })
    .await
    .unwrap();
    for (what, after) in [("half a request line", closed.0), ("nothing", closed.1)] {
        let after = after.unwrap_or_else(|| panic!("{what}: still open after 5 s"));
        assert!(
            after < Duration::from_secs(3),
            "{what}: closed after {after:?}"
        );
    }
    // a client that sends its request in time is answered as always
    let res = reqwest::get(format!("{}/healthz", s.base)).await.unwrap();
    assert_eq!(res.status(), 200);
}

/// Opens an MCP session with the agent's token; the response's status, session id and body.
async fn initialize(
    http: &reqwest::Client,
    base: &str,
) -> (u16, Option<String>, reqwest::Response) {
    initialize_as(http, base, AGENT).await
}

/// [`initialize`] with `token`.
async fn initialize_as(
    http: &reqwest::Client,
    base: &str,
    token: &str,
) -> (u16, Option<String>, reqwest::Response) {
    let res = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "limits", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    let id = res
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (res.status().as_u16(), id, res)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_sessions_are_capped_and_end_when_idle() {
    let s = serve(|o| {
        o.max_mcp_sessions(2)
            .mcp_session_idle_timeout(Duration::from_millis(800))
    })
    .await;
    let http = reqwest::Client::new();
    let (a, a_id, _) = initialize(&http, &s.base).await;
    // one token holds at most half the places, so the agent cannot take the host's
    let (again, _, res) = initialize(&http, &s.base).await;
    assert_eq!(again, 429, "{}", res.text().await.unwrap());
    let (b, _, _) = initialize_as(&http, &s.base, HOST).await;
    assert_eq!((a, b), (200, 200));
    let (c, c_id, res) = initialize_as(&http, &s.base, APPROVER).await;
    assert_eq!((c, c_id), (503, None), "one session over the cap");
    assert!(res.headers().contains_key("retry-after"));
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("limit"),
        "{body}"
    );

    // idle sessions end, which frees their places
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let res = http
        .post(format!("{}/mcp", s.base))
        .bearer_auth(AGENT)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", a_id.unwrap())
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404, "the idle session is gone");
    let (d, d_id, _) = initialize(&http, &s.base).await;
    assert_eq!(d, 200);
    assert!(d_id.is_some());
}
