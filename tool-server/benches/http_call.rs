//! `POST /api/v1/tools/{name}/call` of a read-only tool over loopback, measured in one process
//! and one run against two baselines:
//!
//! - a. a bare axum handler on the same route shape (no auth, no parsing) answering the same JSON
//!   bytes a real call answers;
//! - b. the executor alone: `Executor::call` in-process for the same tool and arguments, with the
//!   same executor (in-memory store, audit records to the store, result cache off);
//! - c. the full `tool_server::router` call route, with the agent's bearer token.
//!
//! a and c are driven by one keep-alive `reqwest` client on 127.0.0.1. Each variant is measured
//! sequentially (one request at a time, after a warm-up), then all three again interleaved in
//! rounds (a, b, c, a, b, c, ...) so that noise from other processes hits them alike, then with
//! `IN_FLIGHT` requests in flight for throughput. Every sample is the time of one whole
//! request (building it, sending it, reading the whole response) or of one `Executor::call`.
//! Around each variant's concurrent pass the process's CPU time and context switches
//! (`getrusage`, every thread of the process, client and servers included) are read, and
//! reported per request.
//!
//! `cargo bench -p tool-server --bench http_call`, with the tool as a sync fn, whose body runs on
//! the runtime's threads for sync bodies; `HTTP_CALL_TOOL=non_blocking` for the same sync fn
//! marked `#[tool(non_blocking)]` (called in place), `HTTP_CALL_TOOL=async` for it as an
//! `async fn`, `HTTP_CALL_TOOL=spawn_blocking` for its body on tokio's blocking pool (the
//! baseline of the runtime's own threads), and `HTTP_CALL_TOOL=pool` / `idle_pool` for two
//! simpler hand-offs: the sync body handed to a fixed pool of long-lived
//! threads over a channel (`idle_pool`: only to an idle one, else to tokio's blocking pool).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header;
use axum::routing::post;
use test_support::instr;
use tool_runtime::executor::{CacheConfig, ExecutorConfig};
use tool_runtime::store::MemoryStore;
use tool_runtime::{
    CallContext, Executor, ToolCall, ToolError, hydrate::Arguments, tool, tool::Initiator,
};
use tool_server::{ServerOptions, Tokens};

const AGENT: &str = "agent-token-for-the-bench-0001";
const APPROVER: &str = "approver-token-for-the-bench-0001";
const TOOL: &str = "read_note";
const ROUTE: &str = "/api/v1/tools/{name}/call";
/// The arguments as the server hands them to the executor (text, as in a request body).
const ARGUMENTS: &str = r#"{"id":"n1"}"#;
const REQUEST_BODY: &str = r#"{"arguments":{"id":"n1"}}"#;

/// Requests (or calls) per variant before any measurement.
const WARM_UP: usize = 2_000;
/// Samples per variant, sequential.
const SEQUENTIAL: usize = 20_000;
/// The interleaved pass: `ROUNDS` rounds of `SEQUENTIAL / ROUNDS` per variant.
const ROUNDS: usize = 20;
/// Requests in flight in the concurrent pass, and the requests per variant there.
const IN_FLIGHT: usize = 16;
const CONCURRENT: usize = 32_000;

/// Reads one note. Trivially cheap on purpose: the bench measures what is around the tool. A sync
/// function, so its body runs on the threads for sync bodies (a hop to another thread and back).
#[tool(read_only)]
pub fn read_note(
    /// The note's id.
    id: String,
) -> Result<String, ToolError> {
    Ok(format!("the note {id}"))
}

/// The same sync function marked `non_blocking` (`HTTP_CALL_TOOL=non_blocking`): its body never
/// blocks, so it is called in place, on the thread that polls the call.
#[tool(read_only, non_blocking, name = "read_note")]
pub fn read_note_in_place(
    /// The note's id.
    id: String,
) -> Result<String, ToolError> {
    Ok(format!("the note {id}"))
}

/// Long-lived threads, one per core, taking jobs from one channel: a hand-off without tokio's
/// blocking-pool bookkeeping (no thread spawned or retired, no `JoinHandle` task), for comparing
/// with `spawn_blocking` (`HTTP_CALL_TOOL=pool` and `idle_pool`).
struct Pool {
    jobs: std::sync::mpsc::Sender<Box<dyn FnOnce() + Send>>,
    /// With `idle_pool`: the threads waiting for a job and not yet claimed by a caller.
    idle: Arc<std::sync::atomic::AtomicUsize>,
}

impl Pool {
    /// `count_idle`: each thread counts itself idle before it waits for a job, and a caller that
    /// hands it one first takes one off the count ([`Pool::claim`]).
    fn start(count_idle: bool) -> Pool {
        let (jobs, queue) = std::sync::mpsc::channel::<Box<dyn FnOnce() + Send>>();
        let queue = Arc::new(std::sync::Mutex::new(queue));
        let idle = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        for _ in 0..threads {
            let (queue, idle) = (queue.clone(), idle.clone());
            std::thread::spawn(move || {
                loop {
                    if count_idle {
                        idle.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                    }
                    // the lock is held only to take one job, not while it runs
                    let job = queue.lock().expect("the queue's lock").recv();
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            });
        }
        Pool { jobs, idle }
    }

    /// Takes one idle thread for a job, if one is idle.
    fn claim(&self) -> bool {
        use std::sync::atomic::Ordering::{AcqRel, Acquire};
        self.idle
            .fetch_update(AcqRel, Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

static POOL: std::sync::LazyLock<Pool> = std::sync::LazyLock::new(|| Pool::start(false));
static IDLE_POOL: std::sync::LazyLock<Pool> = std::sync::LazyLock::new(|| Pool::start(true));

/// The sync body handed to an idle thread of [`IDLE_POOL`] when one is idle, and to tokio's
/// blocking pool otherwise, so that a body never queues behind another that blocks
/// (`HTTP_CALL_TOOL=idle_pool`).
#[tool(read_only, name = "read_note")]
pub async fn read_note_idle_pooled(
    /// The note's id.
    id: String,
) -> Result<String, ToolError> {
    if !IDLE_POOL.claim() {
        return read_note_spawn_blocking(id).await;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    IDLE_POOL
        .jobs
        .send(Box::new(move || {
            let _ = tx.send(read_note(id));
        }))
        .expect("the pool runs");
    rx.await.expect("the pool's thread answers")
}

/// The sync body on tokio's blocking pool (`HTTP_CALL_TOOL=spawn_blocking`).
#[tool(read_only, name = "read_note")]
pub async fn read_note_spawn_blocking(
    /// The note's id.
    id: String,
) -> Result<String, ToolError> {
    tokio::task::spawn_blocking(move || read_note(id))
        .await
        .expect("the body ran")
}

/// The sync body run on [`POOL`], its result sent back over a oneshot channel.
#[tool(read_only, name = "read_note")]
pub async fn read_note_pooled(
    /// The note's id.
    id: String,
) -> Result<String, ToolError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    POOL.jobs
        .send(Box::new(move || {
            let _ = tx.send(read_note(id));
        }))
        .expect("the pool runs");
    rx.await.expect("the pool's thread answers")
}

/// The same tool as an `async fn` (`HTTP_CALL_TOOL=async`): its body runs in place, on the
/// thread that polls the call, as the bare handler does.
#[tool(read_only, name = "read_note")]
pub async fn read_note_async(
    /// The note's id.
    id: String,
) -> Result<String, ToolError> {
    Ok(format!("the note {id}"))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Bare,
    Executor,
    Server,
}

const VARIANTS: [Variant; 3] = [Variant::Bare, Variant::Executor, Variant::Server];

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Bare => "a. bare axum handler",
            Variant::Executor => "b. executor alone (no HTTP)",
            Variant::Server => "c. tool_server::router",
        }
    }
}

/// What every sample needs; cloned into the concurrent tasks (every field is shared).
#[derive(Clone)]
struct Bench {
    client: reqwest::Client,
    bare_url: Arc<str>,
    server_url: Arc<str>,
    executor: Executor,
    /// The length of a real call's answer: both HTTP variants must answer that many bytes.
    answer_len: usize,
}

impl Bench {
    /// One sample of `variant`; `seq` makes the executor's call ids distinct.
    async fn once(&self, variant: Variant, seq: u64) -> Duration {
        match variant {
            Variant::Bare | Variant::Server => {
                let (url, token) = if variant == Variant::Bare {
                    (&*self.bare_url, None)
                } else {
                    (&*self.server_url, Some(AGENT))
                };
                let started = Instant::now();
                let mut request = self
                    .client
                    .post(url)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(REQUEST_BODY);
                if let Some(token) = token {
                    request = request.bearer_auth(token);
                }
                let response = request.send().await.expect("the request is answered");
                let status = response.status();
                let body = response.bytes().await.expect("the answer is read");
                let took = started.elapsed();
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                assert_eq!(body.len(), self.answer_len);
                took
            }
            Variant::Executor => {
                // what the call route builds from a request, built outside the clock
                let call = ToolCall::new(
                    format!("http-{seq:032x}"),
                    TOOL,
                    Arguments::Text(ARGUMENTS.to_owned()),
                );
                let mut cx = CallContext::new(call.id.clone());
                cx.initiator = Initiator::User;
                let started = Instant::now();
                let exec = self.executor.call(&call, cx).await;
                let took = started.elapsed();
                assert!(exec.outcome.is_success(), "{:?}", exec.outcome);
                took
            }
        }
    }

    /// `n` samples one after another; the samples and the wall time.
    async fn sequential(&self, variant: Variant, n: usize, seq: &mut u64) -> Run {
        let mut samples = Vec::with_capacity(n);
        let started = Instant::now();
        for _ in 0..n {
            *seq += 1;
            samples.push(self.once(variant, *seq).await);
        }
        Run {
            samples,
            wall: started.elapsed(),
        }
    }

    /// `n` samples from `IN_FLIGHT` tasks, each one request after another.
    async fn concurrent(&self, variant: Variant, n: usize, seq: &mut u64) -> Run {
        let per_task = n / IN_FLIGHT;
        let started = Instant::now();
        let tasks: Vec<_> = (0..IN_FLIGHT)
            .map(|t| {
                let bench = self.clone();
                let mut seq = *seq + (t * per_task) as u64;
                tokio::spawn(async move { bench.sequential(variant, per_task, &mut seq).await })
            })
            .collect();
        let mut samples = Vec::with_capacity(n);
        for task in tasks {
            samples.extend(task.await.expect("a bench task panicked").samples);
        }
        *seq += (IN_FLIGHT * per_task) as u64;
        Run {
            samples,
            wall: started.elapsed(),
        }
    }
}

/// Samples and the wall time they took (for the throughput).
#[derive(Default)]
struct Run {
    samples: Vec<Duration>,
    wall: Duration,
}

/// The process's CPU time (user and system) and context switches (voluntary and involuntary),
/// summed over all its threads, those that have ended included.
#[derive(Clone, Copy)]
struct Usage {
    cpu: Duration,
    switches: u64,
}

impl Usage {
    fn now() -> Usage {
        // SAFETY: `getrusage` writes the struct it is given and nothing else; a zeroed `rusage` is
        // a valid value of it.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut ru), 0, "getrusage");
            ru
        };
        let time = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        Usage {
            cpu: time(ru.ru_utime) + time(ru.ru_stime),
            switches: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        }
    }

    /// CPU µs and context switches per request between `self` and `later`, for `n` requests.
    fn per_request(self, later: Usage, n: usize) -> (f64, f64) {
        (
            us(later.cpu - self.cpu) / n as f64,
            (later.switches - self.switches) as f64 / n as f64,
        )
    }
}

impl Run {
    fn add(&mut self, other: Run) {
        self.samples.extend(other.samples);
        self.wall += other.wall;
    }
}

struct Stats {
    n: usize,
    p50: Duration,
    p99: Duration,
    mean: Duration,
    per_sec: f64,
}

impl Stats {
    fn of(run: &Run) -> Stats {
        let mut v = run.samples.clone();
        v.sort_unstable();
        let n = v.len();
        // nearest rank: the smallest sample with at least q of the samples at or below it
        let rank = |q: f64| v[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Stats {
            n,
            p50: rank(0.50),
            p99: rank(0.99),
            mean: v.iter().sum::<Duration>() / n as u32,
            per_sec: n as f64 / run.wall.as_secs_f64(),
        }
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The bare handler: the same route shape, the body read and ignored, the same answer bytes.
async fn bare(
    State(answer): State<Bytes>,
    Path(_name): Path<String>,
    _body: Bytes,
) -> ([(header::HeaderName, &'static str); 1], Bytes) {
    ([(header::CONTENT_TYPE, "application/json")], answer)
}

async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("the port");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn bench() {
    // which of the three forms of the tool: a sync fn by default
    let body = std::env::var("HTTP_CALL_TOOL").unwrap_or_default();
    let (set, body) = match body.as_str() {
        "" | "sync" => (
            tool_runtime::toolset![read_note],
            "sync fn, its body on the threads for sync bodies",
        ),
        "spawn_blocking" => (
            tool_runtime::toolset![read_note_spawn_blocking],
            "sync fn's body on tokio's blocking pool",
        ),
        "non_blocking" => (
            tool_runtime::toolset![read_note_in_place],
            "sync fn with `non_blocking`, called in place",
        ),
        "async" => (
            tool_runtime::toolset![read_note_async],
            "async fn, its body polled in place",
        ),
        "pool" => (
            tool_runtime::toolset![read_note_pooled],
            "sync fn's body handed to a pool of long-lived threads over a channel",
        ),
        "idle_pool" => (
            tool_runtime::toolset![read_note_idle_pooled],
            "sync fn's body handed to an idle long-lived thread, else to tokio's blocking pool",
        ),
        other => {
            panic!(
                "HTTP_CALL_TOOL={other:?}: say sync, non_blocking, async, spawn_blocking, pool or \
                 idle_pool"
            )
        }
    };
    let set = set.expect("the tool registers");
    let config = ExecutorConfig {
        // every call runs the tool: the same arguments would otherwise be answered from the cache
        cache: CacheConfig {
            enabled: false,
            ..CacheConfig::default()
        },
        ..ExecutorConfig::default()
    };
    // one executor for b and c: the same store, the same configuration
    let executor = Executor::builder(set)
        .config(config)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .expect("the executor builds");
    let options = ServerOptions::new(Tokens::new(AGENT, APPROVER).expect("valid tokens"));
    let server = serve(tool_server::router(executor.clone(), options)).await;
    let server_url = format!("{server}/api/v1/tools/{TOOL}/call");
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("the client builds");

    // a real call's answer, which the bare handler answers byte for byte
    let response = client
        .post(&server_url)
        .bearer_auth(AGENT)
        .header(header::CONTENT_TYPE, "application/json")
        .body(REQUEST_BODY)
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 200);
    let answer = response.bytes().await.expect("the answer is read");
    let json: serde_json::Value = serde_json::from_slice(&answer).expect("JSON");
    assert_eq!(json["status"], "success", "{json}");
    assert_eq!(json["value"], "the note n1", "{json}");

    let bare_app = axum::Router::new()
        .route(ROUTE, post(bare))
        .with_state(answer.clone());
    let bare_url = format!("{}/api/v1/tools/{TOOL}/call", serve(bare_app).await);

    let bench = Bench {
        client,
        bare_url: bare_url.into(),
        server_url: server_url.into(),
        executor,
        answer_len: answer.len(),
    };

    println!(
        "http_call: POST /api/v1/tools/{TOOL}/call over 127.0.0.1, one keep-alive reqwest client"
    );
    println!(
        "request {REQUEST_BODY} ({} bytes); answer {} ({} bytes)",
        REQUEST_BODY.len(),
        String::from_utf8_lossy(&answer),
        answer.len()
    );
    println!("tool: {body} (HTTP_CALL_TOOL=sync|non_blocking|async|spawn_blocking|pool|idle_pool)");
    println!(
        "executor: MemoryStore with audit records to the store, result cache off; tokio \
         multi-thread runtime, {} workers (client and servers share it)",
        tokio::runtime::Handle::current().metrics().num_workers()
    );
    println!(
        "samples per variant: {SEQUENTIAL} sequential, {SEQUENTIAL} interleaved in {ROUNDS} \
         rounds, {CONCURRENT} with {IN_FLIGHT} in flight; warm-up {WARM_UP}"
    );

    let mut seq = 0u64;
    for variant in VARIANTS {
        bench.sequential(variant, WARM_UP, &mut seq).await;
    }

    let mut results: Vec<(&str, Vec<(Variant, Stats)>)> = Vec::new();

    let mut blocked = Vec::new();
    for variant in VARIANTS {
        let run = bench.sequential(variant, SEQUENTIAL, &mut seq).await;
        blocked.push((variant, Stats::of(&run)));
    }
    results.push(("sequential", blocked));

    let mut interleaved: Vec<Run> = VARIANTS.iter().map(|_| Run::default()).collect();
    for _ in 0..ROUNDS {
        for (i, variant) in VARIANTS.into_iter().enumerate() {
            let run = bench
                .sequential(variant, SEQUENTIAL / ROUNDS, &mut seq)
                .await;
            interleaved[i].add(run);
        }
    }
    results.push((
        "interleaved",
        VARIANTS
            .into_iter()
            .zip(&interleaved)
            .map(|(v, r)| (v, Stats::of(r)))
            .collect(),
    ));

    let mut concurrent = Vec::new();
    let mut usage = Vec::new();
    for variant in VARIANTS {
        // open (and warm) the pool's connections before measuring
        bench.concurrent(variant, IN_FLIGHT * 100, &mut seq).await;
        let before = Usage::now();
        let run = bench.concurrent(variant, CONCURRENT, &mut seq).await;
        usage.push((variant, before.per_request(Usage::now(), run.samples.len())));
        concurrent.push((variant, Stats::of(&run)));
    }
    let concurrent_mode = format!("{IN_FLIGHT} in flight");
    results.push((&concurrent_mode, concurrent));

    println!();
    println!(
        "| mode | variant | n | p50 | p99 | mean | requests/s |\n|---|---|---|---|---|---|---|"
    );
    for (mode, rows) in &results {
        for (variant, s) in rows {
            println!(
                "| {mode} | {} | {} | {:.1} µs | {:.1} µs | {:.1} µs | {:.0} |",
                variant.label(),
                s.n,
                us(s.p50),
                us(s.p99),
                us(s.mean),
                s.per_sec
            );
        }
    }

    println!();
    println!(
        "| {IN_FLIGHT} in flight | CPU per request (all threads) | context switches per request |\n|---|---|---|"
    );
    for (variant, (cpu, switches)) in &usage {
        println!("| {} | {cpu:.1} µs | {switches:.2} |", variant.label());
    }

    println!();
    println!(
        "| mode | added p50: c − a − b | goal < 50 µs | p50 c / a | p99 c / a | mean c / a | \
         requests/s c / a |\n|---|---|---|---|---|---|---|"
    );
    for (mode, rows) in &results {
        let [(_, a), (_, b), (_, c)] = &rows[..] else {
            unreachable!("three variants")
        };
        // with requests in flight a sample includes queueing: the subtraction says nothing there
        let (added, goal) = if *mode == "sequential" || *mode == "interleaved" {
            let added = us(c.p50) - us(a.p50) - us(b.p50);
            let goal = if added < 50.0 { "met" } else { "missed" };
            (format!("{added:.1} µs"), goal)
        } else {
            ("—".to_owned(), "—")
        };
        println!(
            "| {mode} | {added} | {goal} | {:.2}x | {:.2}x | {:.2}x | {:.2}x |",
            us(c.p50) / us(a.p50),
            us(c.p99) / us(a.p99),
            us(c.mean) / us(a.mean),
            c.per_sec / a.per_sec
        );
    }
}

/// One request, as a client sends it, to `uri` in the process (no socket).
fn request(uri: &str, token: Option<&str>) -> axum::http::Request<axum::body::Body> {
    let mut request = axum::http::Request::post(uri)
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, REQUEST_BODY.len());
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request
        .body(axum::body::Body::from(REQUEST_BODY))
        .expect("a valid request")
}

/// The body of `app`'s answer to `request`, handed to it in the process as hyper hands it a
/// request; the answer must be `200 OK`.
async fn answered(
    app: &hyper_util::service::TowerToHyperService<axum::Router>,
    request: axum::http::Request<axum::body::Body>,
) -> axum::body::Bytes {
    use hyper::service::Service;
    let response = app.call(request).await.expect("infallible");
    assert_eq!(response.status(), 200);
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("the answer is read")
}

/// The instruction counts of `bench/instr.sh http_call`: one request handed to a router in the
/// process, on a current-thread runtime, its answer read whole and its length checked. The
/// tool is the `non_blocking` form, so that the whole call runs on the counted thread.
///
/// - `bare_call`: the bare handler's router (the baseline);
/// - `router_call`: `tool_server::router`, with the agent's token.
fn instr_cases() -> Vec<instr::Case> {
    use hyper_util::service::TowerToHyperService;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let set = tool_runtime::toolset![read_note_in_place].expect("the tool registers");
    let executor = Executor::builder(set)
        .config(ExecutorConfig {
            cache: CacheConfig {
                enabled: false,
                ..CacheConfig::default()
            },
            ..ExecutorConfig::default()
        })
        .store(Arc::new(MemoryStore::new()))
        .build()
        .expect("the executor builds");
    let options = ServerOptions::new(Tokens::new(AGENT, APPROVER).expect("valid tokens"));
    let server = TowerToHyperService::new(tool_server::router(executor, options));
    let uri = format!("/api/v1/tools/{TOOL}/call");
    let answer = rt.block_on(answered(&server, request(&uri, Some(AGENT))));
    let answer_len = answer.len();
    let bare_app = TowerToHyperService::new(
        axum::Router::new()
            .route(ROUTE, post(bare))
            .with_state(answer),
    );
    let rt = Arc::new(rt);
    let (rt1, uri1) = (rt.clone(), uri.clone());
    vec![
        instr::Case::warm("bare_call", move || {
            let body = rt1.block_on(answered(&bare_app, request(&uri1, None)));
            assert_eq!(body.len(), answer_len);
        }),
        instr::Case::warm("router_call", move || {
            let body = rt.block_on(answered(&server, request(&uri, Some(AGENT))));
            assert_eq!(body.len(), answer_len);
        }),
    ]
}

fn main() {
    if instr::run_if_requested(instr_cases) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // everything runs on the runtime's workers, as a server's handlers do
    runtime.block_on(async {
        tokio::spawn(bench())
            .await
            .expect("the bench ran to the end")
    });
}
