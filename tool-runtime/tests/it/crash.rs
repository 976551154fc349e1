//! Crash loop: a process parking and approving operations on a SQLite file is killed with SIGKILL
//! at random points, again and again, a new process starting each time on the same files. After
//! every kill the file opens cleanly (integrity check, nothing unreadable); at the end every
//! operation is pending (never run), done exactly once (run once, completed, audited), or in
//! doubt (approved, run at most once, listed by `Executor::in_doubt`), and nothing ran twice.
//!
//! The child is this test binary started again with `TOOLS_CRASH_CHILD` set to the directory of
//! the files (see [`crash_child`]). Its modifying tool appends the call id to a journal file and
//! syncs it before returning, so the journal lists every real execution, whatever the store says.
//!
//! The kill delays come from a seed, printed; `TOOLS_CRASH_SEED=N` replays a run's kill schedule
//! (the interleaving inside the child still varies) and `TOOLS_CRASH_ROUNDS` sets the rounds.

use crate::executor_support;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use executor_support::*;
use futures::future::BoxFuture;
use serde_json::json;
use tool_runtime::executor::{
    ActivityQuery, Decision, Deferred, Executor, ExecutorConfig, Outcome, Status,
};
use tool_runtime::store::{PendingOperation, PendingState, SqliteStore};
use tool_runtime::{CallContext, ToolCall, ToolError, ToolSet};

const CHILD: &str = "TOOLS_CRASH_CHILD";
const CHILD_SEED: &str = "TOOLS_CRASH_CHILD_SEED";
const SEED: &str = "TOOLS_CRASH_SEED";
const ROUNDS: &str = "TOOLS_CRASH_ROUNDS";

/// Tasks parking and approving at once in each child.
const TASKS: u64 = 4;

fn store_path(dir: &Path) -> PathBuf {
    dir.join("state.sqlite3")
}

fn journal_path(dir: &Path) -> PathBuf {
    dir.join("journal")
}

/// The toolset of the child: `apply` (modifying) records each execution in the journal, synced,
/// after a short random pause, so that kills land before, during and after its runs.
fn toolset(journal: PathBuf) -> ToolSet {
    let mut set = ToolSet::new();
    let journal = Arc::new(journal);
    set.register_dynamic(
        def("apply", tool_runtime::definition::Safety::Modify),
        Some(Arc::new(
            move |_args, cx: CallContext| -> BoxFuture<'static, _> {
                let journal = journal.clone();
                Box::pin(async move {
                    sleep_ms(fastrand::u64(0..3)).await;
                    let line = format!("{}\n", cx.call_id);
                    let mut f = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&*journal)
                        .map_err(ToolError::from_error)?;
                    // one write, so that a line is never half there
                    f.write_all(line.as_bytes())
                        .map_err(ToolError::from_error)?;
                    f.sync_data().map_err(ToolError::from_error)?;
                    Ok(json!({"applied": cx.call_id.as_str()}))
                })
            },
        )),
    )
    .unwrap();
    set
}

fn executor(dir: &Path) -> Executor {
    let cfg = ExecutorConfig {
        max_pending_per_session: 100_000,
        max_pending: 100_000,
        ..quick()
    };
    Executor::builder(toolset(journal_path(dir)))
        .config(cfg)
        .store(Arc::new(SqliteStore::open(store_path(dir)).unwrap()))
        .confirmation(Deferred)
        .build()
        .unwrap()
}

/// The child process: parks operations and approves them, from several tasks, until killed. A
/// no-op as a test of its own.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let seed: u64 = std::env::var(CHILD_SEED).unwrap().parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let exec = executor(&dir);
        // what an earlier child left approved and unfinished is never run again
        for op in exec.in_doubt().unwrap() {
            let err = exec.approve(&op.id).await.unwrap_err();
            assert_eq!(err.code.as_str(), "ALREADY_RESOLVED", "{err:?}");
        }
        println!("READY");
        std::io::stdout().flush().unwrap();
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let exec = exec.clone();
                tokio::spawn(async move {
                    let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(t));
                    for k in 0.. {
                        let call = ToolCall::new(
                            format!("s{seed}-t{t}-{k}"),
                            "apply",
                            json!({"text": "change", "n": k}),
                        );
                        let parked = exec.call(&call, CallContext::new("")).await;
                        assert!(
                            matches!(parked.outcome, Outcome::Pending { .. }),
                            "{:?}",
                            parked.outcome
                        );
                        // a few operations stay waiting; the others are approved, a random one
                        // each time, so that tasks race for the same operation
                        let pending = exec.pending().unwrap();
                        if pending.len() < 8 && rng.bool() {
                            continue;
                        }
                        let id = &pending[rng.usize(..pending.len())].id;
                        match exec.approve(id).await {
                            Ok(e) => assert!(e.outcome.is_success(), "{:?}", e.outcome),
                            Err(e) => assert_eq!(e.code.as_str(), "ALREADY_RESOLVED", "{e:?}"),
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

/// A running child, killed and reaped when dropped (a failing parent leaves no process behind).
struct Running {
    child: Child,
    stderr: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    fn spawn(dir: &Path, seed: u64, round: usize) -> Running {
        let stderr = dir.join(format!("child-{round}.stderr"));
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "crash::crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, dir)
            .env(CHILD_SEED, seed.to_string())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Running { child, stderr }
    }

    /// Waits for the child to say it is ready (its store is open, in-doubt operations checked).
    fn ready(&mut self, timeout: Duration) {
        let stdout = self.child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref() {
                // libtest prints `test crash_child ... ` before the output, on the same line
                if line.is_ok_and(|l| l.contains("READY")) {
                    let _ = tx.send(());
                    break;
                }
            }
            // keep reading until the child is gone, so that it never blocks on a full pipe
            for _ in lines {}
        });
        if rx.recv_timeout(timeout).is_err() {
            self.still_running();
            panic!("the child did not get ready within {timeout:?}");
        }
    }

    /// Fails (with the child's stderr) if the child has stopped by itself: it must run until
    /// killed.
    fn still_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!(
                "the child stopped by itself ({status}):\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            );
        }
    }

    /// SIGKILL, and wait until the process is gone.
    fn kill(mut self) {
        self.still_running();
        // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet
        let r = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGKILL) };
        assert_eq!(r, 0, "kill: {}", std::io::Error::last_os_error());
        let status = self.child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    }
}

/// The store after a kill: the file passes SQLite's integrity check, opens as a store, and
/// every waiting or approved operation in it can be read.
fn check_opens_cleanly(dir: &Path, round: usize) {
    let conn = rusqlite::Connection::open(store_path(dir)).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok", "after kill {round}");
    drop(conn);
    let exec = executor(dir);
    assert_eq!(exec.unreadable().unwrap(), [], "after kill {round}");
    exec.pending().unwrap();
    exec.in_doubt().unwrap();
}

/// Each call id in the journal, with the times it ran.
fn journal(dir: &Path) -> HashMap<String, usize> {
    let text = std::fs::read_to_string(journal_path(dir)).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a torn journal line"
    );
    let mut runs = HashMap::new();
    for line in text.lines() {
        *runs.entry(line.to_owned()).or_insert(0) += 1;
    }
    runs
}

fn all_operations(dir: &Path) -> Vec<PendingOperation> {
    let conn = rusqlite::Connection::open(store_path(dir)).unwrap();
    let mut stmt = conn
        .prepare("SELECT state, data FROM pending ORDER BY created_ms, id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|row| {
            let (state, data) = row.unwrap();
            let op: PendingOperation = serde_json::from_str(&data).unwrap();
            assert_eq!(op.state.name(), state, "{}: column and data agree", op.id);
            op
        })
        .collect()
}

#[test]
fn killed_at_random_points_every_operation_is_pending_done_once_or_in_doubt() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let seed: u64 = match std::env::var(SEED) {
        Ok(s) => s.parse().expect("TOOLS_CRASH_SEED is a number"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    let rounds: usize = std::env::var(ROUNDS).map_or(40, |r| r.parse().unwrap());
    eprintln!("crash loop: seed {seed}, {rounds} rounds (replay with {SEED}={seed})");
    let mut rng = fastrand::Rng::with_seed(seed);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut in_doubt_after_kill = Vec::new();
    for round in 0..rounds {
        let mut child = Running::spawn(
            dir.path(),
            seed.wrapping_mul(1000).wrapping_add(round as u64),
            round,
        );
        // one round in five is killed while starting (opening the file, recovering its WAL);
        // the others while parking and approving
        let delay = if round % 5 == 4 {
            Duration::from_millis(rng.u64(0..40))
        } else {
            child.ready(Duration::from_secs(60));
            Duration::from_millis(rng.u64(20..400))
        };
        std::thread::sleep(delay);
        child.kill();
        check_opens_cleanly(dir.path(), round);
        in_doubt_after_kill.push(executor(dir.path()).in_doubt().unwrap().len());
    }
    let elapsed = started.elapsed();

    let runs = journal(dir.path());
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "operations run more than once: {twice:?}");

    let exec = executor(dir.path());
    let ops = all_operations(dir.path());
    let listed_pending: HashSet<String> =
        exec.pending().unwrap().into_iter().map(|o| o.id).collect();
    let listed_in_doubt: HashSet<String> =
        exec.in_doubt().unwrap().into_iter().map(|o| o.id).collect();
    // the records of parking are not changes: they go through the store's audit spool, which
    // the kills cut at random points (appending, moving, emptying) and the next child moves
    let mut parked: HashMap<String, usize> = HashMap::new();
    let confirmed: HashMap<String, usize> = {
        let mut by_op = HashMap::new();
        let mut offset = 0;
        loop {
            let page = exec
                .activity(&ActivityQuery {
                    limit: Some(1000),
                    offset: Some(offset),
                    ..Default::default()
                })
                .unwrap();
            if page.is_empty() {
                break;
            }
            offset += page.len();
            for r in page.iter().filter(|r| r.decision == Decision::Deferred) {
                *parked.entry(r.call_id.to_string()).or_insert(0) += 1;
            }
            for r in page.iter().filter(|r| r.decision == Decision::Confirmed) {
                assert_eq!(r.status, Status::Success, "{r:?}");
                *by_op
                    .entry(
                        r.operation_id
                            .clone()
                            .expect("an approval names its operation"),
                    )
                    .or_insert(0) += 1;
            }
        }
        by_op
    };
    let call_ids: HashSet<&str> = ops.iter().map(|o| o.call_id.as_str()).collect();
    assert_eq!(call_ids.len(), ops.len(), "one operation per call");
    for id in runs.keys() {
        assert!(
            call_ids.contains(id.as_str()),
            "{id} ran but no operation stands for it"
        );
    }
    assert!(!parked.is_empty(), "no parking was audited");
    for (id, n) in &parked {
        assert_eq!(*n, 1, "{id} has {n} parking records");
        assert!(
            call_ids.contains(id.as_str()),
            "{id} audited as parked but no operation stands for it"
        );
    }

    let (mut pending, mut done, mut in_doubt_ran, mut in_doubt_not_run) = (0, 0, 0, 0);
    for op in &ops {
        let ran = runs.get(op.call_id.as_str()).copied().unwrap_or(0);
        let audited = confirmed.get(&op.id).copied().unwrap_or(0);
        match &op.state {
            PendingState::Pending => {
                assert!(
                    listed_pending.contains(&op.id),
                    "{} not listed pending",
                    op.id
                );
                assert_eq!(ran, 0, "{} ran without approval", op.id);
                assert_eq!(audited, 0, "{} audited as approved", op.id);
                pending += 1;
            }
            PendingState::Approved { .. } => {
                assert!(
                    listed_in_doubt.contains(&op.id),
                    "{} not listed in doubt",
                    op.id
                );
                assert!(audited <= 1, "{}: {audited} approval records", op.id);
                if ran == 1 {
                    in_doubt_ran += 1;
                } else {
                    in_doubt_not_run += 1;
                }
            }
            PendingState::Completed { outcome } => {
                assert!(outcome.is_success(), "{}: {outcome:?}", op.id);
                assert_eq!(
                    ran, 1,
                    "{} completed but the journal has it {ran} times",
                    op.id
                );
                assert_eq!(
                    audited, 1,
                    "{} completed with {audited} approval records",
                    op.id
                );
                done += 1;
            }
            other => panic!("{}: nobody denies, yet {other:?}", op.id),
        }
    }
    assert_eq!(listed_pending.len(), pending);
    assert_eq!(listed_in_doubt.len(), in_doubt_ran + in_doubt_not_run);
    assert!(done > 0, "no operation was done in {rounds} rounds");
    eprintln!(
        "crash loop: {rounds} rounds, {rounds} kills in {:.1} s; {} operations: {pending} pending, \
         {done} done once, {} in doubt ({in_doubt_ran} ran, {in_doubt_not_run} did not); \
         {} executions in the journal, 0 twice; {} parkings audited, 0 twice; in doubt after each \
         kill: {in_doubt_after_kill:?}",
        elapsed.as_secs_f64(),
        ops.len(),
        in_doubt_ran + in_doubt_not_run,
        runs.values().sum::<usize>(),
        parked.len(),
    );
}
