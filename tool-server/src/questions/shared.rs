//! The questions and running calls of several replicas on one store, shown by each one's page.
//!
//! Every [`SYNC`], a replica posts its own open questions (each kept until its tool stops
//! waiting) and running calls (kept a few periods, so a replica that dies leaves no ghost) on
//! the store's boards ([`Store::put_live`]), takes down what ended since, reads what the others
//! posted, and takes the answers left for its own questions. A store that shares no boards
//! (SQLite, memory) says so at the first post, and the replica stops: its page then shows its
//! own calls, as a single process does.

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::de::DeserializeOwned;
use tool_runtime::store::{Store, StoreError};

use super::{Answer, Live, QuestionView, Running, Snapshot, now_ms};

/// How often a replica posts and reads the boards: an answer given on another replica reaches
/// the tool within about this time.
const SYNC: Duration = Duration::from_millis(400);

/// How long a running call's post outlives its last renewal.
const RUNNING_TTL: Duration = Duration::from_secs(3);

const REPLICAS: &str = "page_replicas";
const QUESTIONS: &str = "page_questions";
const RUNNING: &str = "page_running";
const ANSWERS: &str = "page_answers";

/// What the other replicas show, as last read.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Remote {
    pub(crate) questions: Vec<QuestionView>,
    pub(crate) running: Vec<Running>,
}

/// Starts sharing `live` through `store`, on the current runtime (nothing outside one). The
/// task ends when the store shares no boards, or when `live` is gone.
pub(crate) fn share(live: &Arc<Live>, store: Arc<dyn Store>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let live = Arc::downgrade(live);
    let replica = format!("page-{:032x}", fastrand::u128(..));
    runtime.spawn(run(live, store, replica));
}

async fn run(live: Weak<Live>, store: Arc<dyn Store>, replica: String) {
    let mut posted = Posted::default();
    loop {
        let Some(here) = live.upgrade() else { return };
        let local = here.local();
        drop(here);
        let (store_, replica_) = (store.clone(), replica.clone());
        let step = tokio::task::spawn_blocking(move || {
            let outcome = sync(store_.as_ref(), &replica_, &local, &mut posted);
            (outcome, posted)
        })
        .await;
        let Ok((outcome, kept)) = step else { return };
        posted = kept;
        match outcome {
            Ok(Some((remote, answers))) => {
                let Some(here) = live.upgrade() else { return };
                here.set_remote(remote);
                for (id, answer) in answers {
                    // the tool may have stopped waiting since: the answer then goes nowhere
                    let _ = here.answer(&id, answer);
                }
            }
            Ok(None) => return,
            Err(e) => tracing::warn!(
                error = %e,
                "the approvals page could not reach the store to share its questions; retrying"
            ),
        }
        tokio::time::sleep(SYNC).await;
    }
}

/// The keys this replica has on the boards.
#[derive(Default)]
struct Posted {
    questions: HashSet<String>,
    running: HashSet<String>,
}

/// One round: post `local`, take down what ended, read the others' posts and this replica's
/// answers. `None` when the store shares no boards.
#[allow(clippy::type_complexity)]
fn sync(
    store: &dyn Store,
    replica: &str,
    local: &Snapshot,
    posted: &mut Posted,
) -> Result<Option<(Remote, Vec<(String, Answer)>)>, StoreError> {
    if !store.put_live(REPLICAS, replica, "", RUNNING_TTL)? {
        return Ok(None);
    }
    let now = now_ms();
    for q in &local.questions {
        let left = Duration::from_millis(q.expires_at.saturating_sub(now).max(1));
        store.put_live(QUESTIONS, &q.id, &to_json(q), left)?;
    }
    for r in &local.running {
        store.put_live(RUNNING, &r.call_id, &to_json(r), RUNNING_TTL)?;
    }
    let asked: HashSet<String> = local.questions.iter().map(|q| q.id.clone()).collect();
    let runs: HashSet<String> = local.running.iter().map(|r| r.call_id.clone()).collect();
    for gone in posted.questions.difference(&asked) {
        store.take_live(QUESTIONS, gone)?;
    }
    for gone in posted.running.difference(&runs) {
        store.take_live(RUNNING, gone)?;
    }
    (posted.questions, posted.running) = (asked.clone(), runs.clone());

    let remote = Remote {
        questions: read(store, QUESTIONS, &asked)?,
        running: read(store, RUNNING, &runs)?,
    };
    let mut answers = Vec::new();
    for (id, _) in store.list_live(ANSWERS)? {
        if !asked.contains(&id) {
            continue;
        }
        // one replica asked it, so one takes its answer
        if let Some(answer) = store.take_live(ANSWERS, &id)?
            && let Ok(answer) = serde_json::from_str::<Answer>(&answer)
        {
            answers.push((id, answer));
        }
    }
    Ok(Some((remote, answers)))
}

/// Leaves `answer` to question `id` for the replica that asked it, until `until`.
pub(crate) fn hand_over(
    store: &dyn Store,
    id: &str,
    answer: &Answer,
    until: Duration,
) -> Result<bool, StoreError> {
    store.put_live(ANSWERS, id, &to_json(answer), until)
}

/// The entries of `board` that are not this replica's; an entry that does not read is skipped.
fn read<T: DeserializeOwned>(
    store: &dyn Store,
    board: &str,
    own: &HashSet<String>,
) -> Result<Vec<T>, StoreError> {
    Ok(store
        .list_live(board)?
        .into_iter()
        .filter(|(key, _)| !own.contains(key))
        .filter_map(|(_, entry)| serde_json::from_str(&entry).ok())
        .collect())
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("a view serializes")
}

impl Live {
    /// Keeps what the other replicas show, and tells the page's streams when it changed.
    fn set_remote(&self, remote: Remote) {
        let changed = {
            let mut kept = self.remote.lock().unwrap_or_else(|e| e.into_inner());
            let changed = *kept != remote;
            *kept = remote;
            changed
        };
        if changed {
            self.touch();
        }
    }
}
