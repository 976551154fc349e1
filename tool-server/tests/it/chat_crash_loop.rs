//! Crash loop for checkpointed agent runs: two worker processes on one store (a SQLite file;
//! then Redis, when a test server is configured) start runs and resume the ones nobody drives, and both are killed with SIGKILL at seeded random points
//! (before the model answers, while a tool runs, after its effect and before its audit record,
//! during a resume), round after round. A last worker resumes what is left and exits. Then every
//! run has its answer, no call the model issued had its effect twice, and a call without its
//! effect was answered `OUTCOME_UNKNOWN`. A call is in doubt only when its body started (the
//! executor's start mark is in the store) and its audit record is missing; a call killed before
//! its body started is run by the worker that resumes it.
//!
//! The workers are this test binary started again with `TOOL_SERVER_LOOP_WORKER` set (see
//! [`loop_worker`]); the model is served by the test's process, so it outlives the workers. Its
//! tool, `add_note`, is a note-taking tool confirmed automatically, so it runs without a person:
//! it appends the note to a file and syncs it, then pauses, so that kills land between a call's
//! effect and its audit record.
//!
//! The kill delays come from a seed, printed; `TOOL_SERVER_LOOP_SEED=N` replays a schedule.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Json;
use serde_json::{Value, json};
use tool_providers::agent::{Agent, AgentConfig, AgentError, ChatModel, Checkpoints};
use tool_providers::http::{ClientConfig, HttpClient, Provider, RetryPolicy};
use tool_runtime::executor::{Executor, ExecutorConfig};
use tool_runtime::store::{RedisStore, RunQuery, SqliteStore, Store};
use tool_runtime::{State, ToolError, tool};

const WORKER: &str = "TOOL_SERVER_LOOP_WORKER";
const DRAIN: &str = "TOOL_SERVER_LOOP_DRAIN";
const MODEL: &str = "TOOL_SERVER_LOOP_MODEL";
const SEED: &str = "TOOL_SERVER_LOOP_SEED";
const ROUNDS: &str = "TOOL_SERVER_LOOP_ROUNDS";
/// The store the workers share: a Redis URL, or none for the SQLite file in the test's folder.
const REDIS: &str = "TOOL_SERVER_LOOP_REDIS";

/// How long a worker's lease on a run lasts: short, so that the runs of a killed worker are
/// taken over within the test.
const LEASE: Duration = Duration::from_millis(400);

#[derive(Clone)]
struct Notes(PathBuf);

/// Adds a note.
#[tool(create, intent = "Add note {text}")]
async fn add_note(
    /// The note.
    text: String,
    State(notes): State<Notes>,
) -> Result<String, ToolError> {
    let line = format!("{text} {}\n", std::process::id());
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&notes.0)
        .map_err(|e| ToolError::execution(e.to_string()))?;
    // one write, synced: the file lists every effect, whatever the store says
    f.write_all(line.as_bytes())
        .map_err(|e| ToolError::execution(e.to_string()))?;
    f.sync_data()
        .map_err(|e| ToolError::execution(e.to_string()))?;
    // the window between the effect and the call's audit record
    tokio::time::sleep(Duration::from_millis(fastrand::u64(0..30))).await;
    Ok(format!("noted {text}"))
}

fn store_path(dir: &Path) -> PathBuf {
    dir.join("store.sqlite")
}

/// The store of a loop in `dir`: on Redis under a prefix named for the folder, so that loops
/// and other tests on one server never meet.
fn open_store(dir: &Path, redis: Option<&str>) -> Arc<dyn Store> {
    match redis {
        Some(url) => {
            let prefix = format!("crash-loop-{}:", dir.file_name().unwrap().to_string_lossy());
            Arc::new(RedisStore::with_prefix(url, &prefix).unwrap())
        }
        None => Arc::new(SqliteStore::open(store_path(dir)).unwrap()),
    }
}

fn notes_path(dir: &Path) -> PathBuf {
    dir.join("notes")
}

/// The worker process: resumes the runs nobody drives, then (unless draining) starts new runs
/// from two tasks until killed. A no-op as a test of its own.
#[test]
fn loop_worker() {
    let Ok(dir) = std::env::var(WORKER) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let drain = std::env::var(DRAIN).is_ok();
    let model_url = std::env::var(MODEL).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let set = tool_runtime::toolset![add_note]
            .unwrap()
            .with_state(Notes(notes_path(&dir)));
        let store = open_store(&dir, std::env::var(REDIS).ok().as_deref());
        let executor = Executor::builder(set)
            .config(ExecutorConfig {
                auto_confirm_create: true,
                ..Default::default()
            })
            .store(store.clone())
            .build()
            .unwrap();
        let cfg = ClientConfig::new(Provider::OpenAiChat, "scripted")
            .with_base_url(model_url)
            .with_retry(RetryPolicy::none());
        let model = ChatModel::new(HttpClient::new(cfg).unwrap());
        let agent = Arc::new(
            Agent::new(model, executor, AgentConfig::default())
                .with_checkpoints(Checkpoints::new().lease(LEASE)),
        );
        resume_all(&agent, &store, drain).await;
        if drain {
            return;
        }
        let me = std::process::id();
        let tasks: Vec<_> = (0..2)
            .map(|t| {
                let agent = agent.clone();
                tokio::spawn(async move {
                    for k in 0.. {
                        // a run that fails here is left to the next worker, like a killed one
                        let _ = agent.run(&format!("note n-{me}-{t}-{k}")).await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

/// Resumes every run that is not final; a run another worker holds is tried again after its
/// lease could have expired. Draining, it returns only when no run is left running.
async fn resume_all(agent: &Agent, store: &Arc<dyn Store>, drain: bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let running = store
            .list_runs(&RunQuery {
                status: Some("running".into()),
                ..Default::default()
            })
            .unwrap();
        if running.is_empty() {
            return;
        }
        for run in running {
            match agent.resume_run(&run.id).await {
                Ok(_) | Err(AgentError::Claimed { .. }) => {}
                Err(e) => panic!("resuming {}: {e}", run.id),
            }
        }
        if !drain {
            return;
        }
        assert!(Instant::now() < deadline, "runs left running");
        tokio::time::sleep(LEASE / 2).await;
    }
}

/// The model: a user message `note TAG` gets a call of `add_note` with the tag (the call's id
/// names it); once the call's result is in the conversation, the answer.
async fn model(Json(body): Json<Value>) -> Json<Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tag = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .and_then(|c| c.strip_prefix("note "))
        .unwrap_or("?")
        .to_owned();
    // the model's pause: kills land before it answers too
    tokio::time::sleep(Duration::from_millis(fastrand::u64(0..20))).await;
    let last = messages
        .last()
        .map(|m| m["role"].clone())
        .unwrap_or_default();
    Json(if last == "tool" {
        json!({"choices":[{"index":0,"finish_reason":"stop",
            "message":{"role":"assistant","content":format!("noted {tag}")}}],
            "usage":{"prompt_tokens":10,"completion_tokens":5}})
    } else {
        json!({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",
            "content":null,"tool_calls":[{"id":format!("call-{tag}"),"type":"function",
            "function":{"name":"add_note","arguments":json!({"text": tag}).to_string()}}]}}],
            "usage":{"prompt_tokens":10,"completion_tokens":5}})
    })
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(dir: &Path, model: &str, redis: Option<&str>, drain: bool) -> Running {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "chat_crash_loop::loop_worker",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(WORKER, dir)
    .env(MODEL, model)
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(dir.join("worker.stderr")).unwrap());
    if drain {
        cmd.env(DRAIN, "1");
    }
    if let Some(url) = redis {
        cmd.env(REDIS, url);
    }
    Running(cmd.spawn().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_killed_at_random_points_finish_and_run_each_call_once() {
    crash_loop(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_on_redis_killed_at_random_points_finish_and_run_each_call_once() {
    let Some(url) = test_support::redis_url() else {
        return;
    };
    crash_loop(Some(&url)).await;
}

async fn crash_loop(redis: Option<&str>) {
    let seed = std::env::var(SEED)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    let rounds: usize = std::env::var(ROUNDS)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let on = redis.map_or("SQLite", |_| "Redis");
    println!("crash loop on {on}, seed {seed} ({rounds} rounds); replay with {SEED}={seed}");
    let mut rng = fastrand::Rng::with_seed(seed);

    let app = Router::new().fallback(axum::routing::post(model));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let model_url = format!("http://{}/v1", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    for _ in 0..rounds {
        let a = spawn(dir.path(), &model_url, redis, false);
        let b = spawn(dir.path(), &model_url, redis, false);
        tokio::time::sleep(Duration::from_millis(rng.u64(100..700))).await;
        drop(a);
        tokio::time::sleep(Duration::from_millis(rng.u64(0..100))).await;
        drop(b);
    }
    let mut last = spawn(dir.path(), &model_url, redis, true);
    let deadline = Instant::now() + Duration::from_secs(40);
    let status = loop {
        if let Some(s) = last.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the last worker never finished");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let stderr = std::fs::read_to_string(dir.path().join("worker.stderr")).unwrap_or_default();
    assert!(status.success(), "the last worker failed: {stderr}");

    // every run that was started has its answer
    let store = open_store(dir.path(), redis);
    let runs = store.list_runs(&RunQuery::default()).unwrap();
    assert!(!runs.is_empty(), "no run was started");
    let mut tags = Vec::new();
    let mut left_marked = 0;
    for run in &runs {
        assert_eq!(run.status, "answered", "run {} was lost: {run:?}", run.id);
        let text = run.checkpoint.as_str();
        let tag = text
            .split("note n-")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .map(|t| format!("n-{t}"))
            .unwrap_or_else(|| panic!("no question in {text}"));
        // nothing resumes an answered run, so its start marks are forgotten, unless its worker
        // was killed between the run's last save and that cleanup
        left_marked += usize::from(!store.started_calls(&run.id).unwrap().is_empty());
        tags.push((tag, text.contains("OUTCOME_UNKNOWN")));
    }
    // each kill cuts short at most the two runs its worker was driving
    assert!(
        left_marked <= 2 * 2 * rounds,
        "seed {seed}: {left_marked} answered runs kept their start marks"
    );
    // each issued call had its effect at most once
    let notes = std::fs::read_to_string(notes_path(dir.path())).unwrap_or_default();
    let mut effects: HashMap<&str, Vec<&str>> = HashMap::new();
    for line in notes.lines() {
        let (tag, pid) = line.split_once(' ').unwrap();
        effects.entry(tag).or_default().push(pid);
    }
    let twice: Vec<_> = effects.iter().filter(|(_, p)| p.len() > 1).collect();
    assert!(
        twice.is_empty(),
        "seed {seed}: calls whose effect happened more than once (tag: worker pids): {twice:?}"
    );
    // and a call without its effect was reported to the model as in doubt, never silently lost
    let (mut in_doubt, mut in_doubt_without_effect) = (0, 0);
    for (tag, unknown) in &tags {
        in_doubt += usize::from(*unknown);
        in_doubt_without_effect += usize::from(*unknown && !effects.contains_key(tag.as_str()));
        assert!(
            effects.contains_key(tag.as_str()) || *unknown,
            "seed {seed}: run {tag} was answered but its call never ran and nobody was told"
        );
    }
    println!(
        "{} runs, {} effects, {in_doubt} calls in doubt after a kill ({in_doubt_without_effect} \
         of them killed between the start mark and the effect), {left_marked} answered runs \
         with start marks left by a kill",
        runs.len(),
        effects.len()
    );
}
