//! The load run shared by `tests/load.rs` (the debug build of `cargo test`) and
//! `examples/load.rs` (a release-mode runner printing the figures): many calls through one
//! executor on a SQLite file with audit on, a fixed number at a time, while a sampler thread
//! reads the resident set size from `/proc/self/statm`.
//!
//! The mix, by call number `i`: 3% failing calls (half a tool that returns an error, half
//! arguments that do not validate), 30% modifying calls approved by the confirmation handler,
//! and read-only calls for the rest. Sessions cycle through 16 names, as a server's clients would.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_runtime::executor::{ApproveAll, Executor, ExecutorConfig, Outcome};
use tool_runtime::store::SqliteStore;
use tool_runtime::{
    CallContext, ErrorCode, ToolCall, ToolError,
    definition::{Safety, ToolDefinition},
    tool::Initiator,
};
use tool_runtime::{ToolSet, executor::Status};

/// The calls of a run, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    pub read_only: usize,
    pub modifying: usize,
    pub tool_errors: usize,
    pub invalid: usize,
}

impl Mix {
    /// The calls that end as errors.
    pub fn failing(&self) -> usize {
        self.tool_errors + self.invalid
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    ReadOnly,
    Modifying,
    ToolError,
    Invalid,
}

fn kind(i: usize) -> Kind {
    match i % 100 {
        0 => Kind::ToolError,
        50 => Kind::ToolError,
        25 => Kind::Invalid,
        n if n % 10 == 3 || n % 10 == 7 || n % 10 == 9 => Kind::Modifying,
        _ => Kind::ReadOnly,
    }
}

/// The mix of the first `calls` calls.
pub fn mix(calls: usize) -> Mix {
    let mut m = Mix::default();
    for i in 0..calls {
        match kind(i) {
            Kind::ReadOnly => m.read_only += 1,
            Kind::Modifying => m.modifying += 1,
            Kind::ToolError => m.tool_errors += 1,
            Kind::Invalid => m.invalid += 1,
        }
    }
    m
}

/// One sample of the resident set: how many calls had finished, and the RSS then.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub done: usize,
    pub rss_kib: u64,
}

/// What a run measured.
#[derive(Debug)]
pub struct Report {
    pub calls: usize,
    pub concurrency: usize,
    pub wall: Duration,
    /// Per-call latency (the `Executor::call` future, first poll to outcome), sorted,
    /// microseconds.
    pub latencies_us: Vec<u32>,
    /// Per-call latency from submission (the call's task spawned, one of the `concurrency`
    /// slots taken) to its outcome: the above plus waiting for a worker thread. Sorted.
    pub submitted_us: Vec<u32>,
    /// Outcomes counted by status: success, error, other.
    pub successes: usize,
    pub errors: usize,
    pub others: usize,
    /// RSS samples, in order.
    pub samples: Vec<Sample>,
    /// The process's RSS high-water mark at the end (`VmHWM`).
    pub vm_hwm_kib: u64,
}

impl Report {
    /// The RSS once a tenth of the calls had finished: the end of the warm-up (connections,
    /// statement caches, SQLite's page cache, the result cache filled, allocator arenas sized).
    pub fn warm_rss_kib(&self) -> u64 {
        let warm = self.calls / 10;
        self.samples
            .iter()
            .find(|s| s.done >= warm)
            .or(self.samples.last())
            .map_or(0, |s| s.rss_kib)
    }

    /// The highest RSS sampled after the warm-up.
    pub fn peak_rss_kib(&self) -> u64 {
        let warm = self.calls / 10;
        self.samples
            .iter()
            .filter(|s| s.done >= warm)
            .map(|s| s.rss_kib)
            .max()
            .unwrap_or(0)
    }

    /// Peak after warm-up minus RSS at warm-up.
    pub fn growth_kib(&self) -> u64 {
        self.peak_rss_kib().saturating_sub(self.warm_rss_kib())
    }

    pub fn percentile_us(&self, p: f64) -> u32 {
        percentile(&self.latencies_us, p)
    }

    pub fn submitted_percentile_us(&self, p: f64) -> u32 {
        percentile(&self.submitted_us, p)
    }

    pub fn calls_per_s(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64()
    }
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn micros(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

/// The resident set size of this process, from `/proc/self/statm` (second field, in pages).
pub fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages * page / 1024
}

/// `VmHWM` from `/proc/self/status`: the highest RSS the process has had, in KiB.
pub fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn def(name: &str, safety: Safety) -> ToolDefinition {
    let mut d = ToolDefinition::new(
        name.to_owned(),
        format!("The {name} tool, for the load run."),
        &json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}, "text": {"type": "string"}},
            "required": ["n"]
        }),
    );
    d.safety = safety;
    d
}

fn add(
    set: &mut ToolSet,
    def: ToolDefinition,
    body: fn(Value) -> Result<Value, ToolError>,
) -> &mut ToolSet {
    set.register_dynamic(
        def,
        Some(Arc::new(move |args, _cx| -> BoxFuture<'static, _> {
            Box::pin(async move { body(args) })
        })),
    )
    .unwrap()
}

/// The tools: `lookup` (read-only), `update` (modifying, confirmed by the handler), `flaky`
/// (read-only, always fails with a non-retryable error).
pub fn toolset() -> ToolSet {
    let mut set = ToolSet::new();
    add(&mut set, def("lookup", Safety::ReadOnly), |args| {
        Ok(json!({"found": args["n"], "text": "a short result"}))
    });
    add(&mut set, def("update", Safety::Modify), |args| {
        Ok(json!({"updated": args["n"]}))
    });
    add(&mut set, def("flaky", Safety::ReadOnly), |args| {
        Err(ToolError::new(
            ErrorCode::of("UPSTREAM_DOWN"),
            format!("the upstream refused item {}", args["n"]),
        ))
    });
    set
}

/// The executor of the run: SQLite at `db`, audit to the store (the default), every confirmation
/// answered yes.
pub fn executor(db: &Path) -> Executor {
    let mut cfg = ExecutorConfig::default();
    cfg.store.path = None;
    Executor::builder(toolset())
        .config(cfg)
        .store(Arc::new(SqliteStore::open(db).unwrap()))
        .confirmation(ApproveAll)
        .build()
        .unwrap()
}

/// The call number `i`, and its context.
pub fn call(i: usize) -> (ToolCall, CallContext) {
    let id = format!("load-{i}");
    let (tool, args) = match kind(i) {
        Kind::ReadOnly => ("lookup", json!({"n": i})),
        Kind::Modifying => ("update", json!({"n": i, "text": "new text"})),
        Kind::ToolError => ("flaky", json!({"n": i})),
        Kind::Invalid => ("lookup", json!({"n": "not a number"})),
    };
    let cx = CallContext {
        correlation_id: format!("req-{}", i / 4).into(),
        session: Some(format!("s{}", i % 16)),
        initiator: Initiator::Model,
        ..CallContext::new(id.clone())
    };
    (ToolCall::new(id, tool, args), cx)
}

/// Worker threads of the run's runtime: fixed, so that the memory figures do not depend on the
/// machine's core count (each thread that allocates gets a malloc arena of its own).
pub const WORKERS: usize = 2;

/// Runs `calls` calls, `concurrency` at a time, on a multi-threaded runtime of [`WORKERS`]
/// threads, sampling the RSS every `sample_every`.
pub fn run(db: &Path, calls: usize, concurrency: usize, sample_every: Duration) -> Report {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .unwrap();
    let exec = executor(db);
    let done = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // everything the run keeps is allocated before it starts, so that it does not count as growth
    let sampler = {
        let (done, stop) = (done.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut samples = Vec::with_capacity(1 << 16);
            while !stop.load(Ordering::Acquire) {
                let s = Sample {
                    done: done.load(Ordering::Acquire),
                    rss_kib: rss_kib(),
                };
                if samples.len() < samples.capacity() {
                    samples.push(s);
                }
                std::thread::sleep(sample_every);
            }
            samples.push(Sample {
                done: done.load(Ordering::Acquire),
                rss_kib: rss_kib(),
            });
            samples
        })
    };
    let mut latencies_us: Vec<u32> = Vec::with_capacity(calls);
    let mut submitted_us: Vec<u32> = Vec::with_capacity(calls);
    let (mut successes, mut errors, mut others) = (0, 0, 0);
    let started = Instant::now();
    runtime.block_on(async {
        let mut results = futures::stream::iter(0..calls)
            .map(|i| {
                let exec = exec.clone();
                let done = done.clone();
                let submitted = Instant::now();
                tokio::spawn(async move {
                    let (call, cx) = call(i);
                    let t = Instant::now();
                    let e = exec.call(&call, cx).await;
                    let us = micros(t.elapsed());
                    let since_submitted = micros(submitted.elapsed());
                    done.fetch_add(1, Ordering::AcqRel);
                    assert!(e.audit_failure.is_none(), "call {i}: {:?}", e.audit_failure);
                    let expected = match kind(i) {
                        Kind::ReadOnly | Kind::Modifying => Status::Success,
                        Kind::ToolError | Kind::Invalid => Status::Error,
                    };
                    assert_eq!(
                        e.outcome.status(),
                        expected,
                        "call {i} ({}): {:?}",
                        call.name,
                        e.outcome
                    );
                    (us, since_submitted, e.outcome)
                })
            })
            .buffer_unordered(concurrency);
        while let Some(r) = results.next().await {
            let (us, since_submitted, outcome) = r.expect("a call task panicked");
            latencies_us.push(us);
            submitted_us.push(since_submitted);
            match outcome {
                Outcome::Success { .. } => successes += 1,
                Outcome::Error { .. } => errors += 1,
                _ => others += 1,
            }
        }
    });
    let wall = started.elapsed();
    stop.store(true, Ordering::Release);
    let samples = sampler.join().unwrap();
    drop(exec);
    runtime.shutdown_timeout(Duration::from_secs(5));
    latencies_us.sort_unstable();
    submitted_us.sort_unstable();
    Report {
        calls,
        concurrency,
        wall,
        latencies_us,
        submitted_us,
        successes,
        errors,
        others,
        samples,
        vm_hwm_kib: vm_hwm_kib(),
    }
}

/// What the audit table of `db` holds: records in all, and call ids that do not have exactly
/// one record among `load-0 .. load-{calls-1}` (missing, repeated or unknown), with their count.
pub struct AuditCount {
    pub records: usize,
    pub statuses: Vec<(String, usize)>,
    pub not_once: Vec<(String, usize)>,
}

pub fn audit_count(db: &Path, calls: usize) -> AuditCount {
    let conn = rusqlite::Connection::open(db).unwrap();
    let records: i64 = conn
        .query_row("SELECT COUNT(*) FROM audit", [], |r| r.get(0))
        .unwrap();
    let mut per_call = vec![0usize; calls];
    let mut not_once = Vec::new();
    let mut stmt = conn
        .prepare("SELECT json_extract(data, '$.call_id') FROM audit")
        .unwrap();
    let ids = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
    for id in ids {
        let id = id.unwrap();
        match id
            .strip_prefix("load-")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n < calls)
        {
            Some(n) => per_call[n] += 1,
            None => not_once.push((id, 1)),
        }
    }
    not_once.extend(
        per_call
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 1)
            .map(|(i, c)| (format!("load-{i}"), *c)),
    );
    let mut stmt = conn
        .prepare("SELECT json_extract(data, '$.status'), COUNT(*) FROM audit GROUP BY 1 ORDER BY 1")
        .unwrap();
    let statuses = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as usize))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    AuditCount {
        records: records as usize,
        statuses,
        not_once,
    }
}
