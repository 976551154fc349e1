//! The load run in release mode, for figures: `cargo run --release -p tool-runtime --example load
//! -- [CALLS] [CONCURRENCY]` (defaults 100000 and 64). Prints calls/s, p50/p99 latency, the RSS
//! after warm-up and its peak after it, `VmHWM`, and the audit records counted in the store. The
//! same run is the test `tests/load.rs`, which asserts on it.

#[path = "../tests/load_support/mod.rs"]
mod load_support;

use std::time::Duration;

use load_support::*;

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args
        .next()
        .map_or(100_000, |a| a.parse().expect("CALLS is a number"));
    let concurrency: usize = args
        .next()
        .map_or(64, |a| a.parse().expect("CONCURRENCY is a number"));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("load.sqlite3");
    let report = run(&db, calls, concurrency, Duration::from_millis(5));
    let audit = audit_count(&db, calls);
    let mix = mix(calls);
    println!(
        "calls          {calls} ({} read-only, {} modifying, {} failing)",
        mix.read_only,
        mix.modifying,
        mix.failing()
    );
    println!("concurrency    {concurrency} calls in flight, {WORKERS} worker threads");
    println!("wall           {:.2} s", report.wall.as_secs_f64());
    println!("throughput     {:.0} calls/s", report.calls_per_s());
    println!(
        "latency        p50 {} us, p99 {} us, max {} us",
        report.percentile_us(0.50),
        report.percentile_us(0.99),
        report.latencies_us.last().copied().unwrap_or(0)
    );
    println!(
        "from submission p50 {} us, p99 {} us (the call's task waiting for a worker included)",
        report.submitted_percentile_us(0.50),
        report.submitted_percentile_us(0.99),
    );
    println!(
        "rss            {} KiB after warm-up ({} calls), peak {} KiB after it (+{} KiB)",
        report.warm_rss_kib(),
        calls / 10,
        report.peak_rss_kib(),
        report.growth_kib()
    );
    println!("VmHWM          {} KiB", report.vm_hwm_kib);
    println!(
        "audit records  {} ({} calls without exactly one)",
        audit.records,
        audit.not_once.len()
    );
    println!("by status      {:?}", audit.statuses);
    println!(
        "outcomes       {} success, {} error, {} other",
        report.successes, report.errors, report.others
    );
    if !audit.not_once.is_empty() || audit.records != calls {
        std::process::exit(1);
    }
}
