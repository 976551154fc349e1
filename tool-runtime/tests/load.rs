//! Load: 100,000 calls through one executor on a SQLite file with audit on, 64 at a time (read-only
//! calls, modifying calls approved by the confirmation handler, 3% failing calls). Every call has
//! exactly one audit record in the store, and memory stays flat: the RSS once a tenth of the
//! calls have finished is compared with the highest RSS sampled after it.
//!
//! `TOOLS_LOAD_CALLS` sets the number of calls (default 100,000). For throughput, latency and
//! memory figures, the release-mode runner is `cargo run --release -p tool-runtime --example
//! load -- 100000`.

mod load_support;

use std::time::Duration;

use load_support::*;

/// The most the RSS may grow after the warm-up, in KiB.
///
/// Everything that lives through the run has reached its size by then: the SQLite connection and
/// its page cache (2 MiB by default), the result cache (at most 1,024 entries), 16 sessions'
/// first-time gates, 64 calls in flight, and malloc's arenas (one per thread, sized by the calls
/// in flight, not by the calls made). What is left is noise: fragmentation, and which samples
/// catch a burst of in-flight calls (about 1 MiB measured, in debug and release). 8 MiB leaves
/// room for that and still fails on a leak of 94 bytes per call over the 90,000 calls after the
/// warm-up, less than anything a call could keep (its id, outcome or audit record). With fewer
/// calls (`TOOLS_LOAD_CALLS`) the bound is the same, so a leak must be larger per call to cross it.
const MAX_GROWTH_KIB: u64 = 8 * 1024;

const CONCURRENCY: usize = 64;

#[test]
fn a_hundred_thousand_calls_keep_one_audit_record_each_and_flat_memory() {
    let calls: usize = std::env::var("TOOLS_LOAD_CALLS")
        .ok()
        .map(|v| v.parse().expect("TOOLS_LOAD_CALLS is a number of calls"))
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("load.sqlite3");
    let report = run(&db, calls, CONCURRENCY, Duration::from_millis(5));
    let mix = mix(calls);
    eprintln!(
        "load: {calls} calls ({} read-only, {} modifying, {} failing), {CONCURRENCY} at a time, \
         {:.1} s, {:.0} calls/s, p50 {} us, p99 {} us (from submission: p50 {} us, p99 {} us); RSS {} KiB after warm-up, peak {} KiB \
         after it (+{} KiB), VmHWM {} KiB",
        mix.read_only,
        mix.modifying,
        mix.failing(),
        report.wall.as_secs_f64(),
        report.calls_per_s(),
        report.percentile_us(0.50),
        report.percentile_us(0.99),
        report.submitted_percentile_us(0.50),
        report.submitted_percentile_us(0.99),
        report.warm_rss_kib(),
        report.peak_rss_kib(),
        report.growth_kib(),
        report.vm_hwm_kib,
    );

    assert_eq!(report.latencies_us.len(), calls, "every call answered");
    assert_eq!(report.successes, mix.read_only + mix.modifying);
    assert_eq!(report.errors, mix.failing());
    assert_eq!(report.others, 0);

    let audit = audit_count(&db, calls);
    assert!(
        audit.not_once.is_empty(),
        "calls without exactly one audit record (call id, records): {:?}",
        &audit.not_once[..audit.not_once.len().min(20)]
    );
    assert_eq!(audit.records, calls);
    let statuses: Vec<(&str, usize)> = audit
        .statuses
        .iter()
        .map(|(s, n)| (s.as_str(), *n))
        .collect();
    let mut expected = vec![
        ("error", mix.failing()),
        ("success", mix.read_only + mix.modifying),
    ];
    expected.retain(|(_, n)| *n > 0);
    assert_eq!(statuses, expected);

    assert!(
        report.samples.len() >= 10,
        "too few RSS samples ({}) to judge memory",
        report.samples.len()
    );
    assert!(
        report.growth_kib() <= MAX_GROWTH_KIB,
        "the RSS grew by {} KiB after the warm-up ({} KiB at {} calls, peak {} KiB), more than \
         {MAX_GROWTH_KIB} KiB: something is kept per call",
        report.growth_kib(),
        report.warm_rss_kib(),
        calls / 10,
        report.peak_rss_kib(),
    );
}
