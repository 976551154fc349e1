//! The in-memory store: everything behind one mutex, gone when the process ends.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use super::runs::{lease_ms, now_ms};
use super::{
    GateScope, JournalEntry, PendingCount, PendingOperation, PendingState, Resolve, RunLease,
    RunQuery, Scrubbed, Store, StoreError, StoredRun, UnreadableOperation, scrubbed,
};
use crate::records::{ActivityQuery, AuditRecord, Outcome};
use crate::tool::Credential;

/// A [`Store`] in memory. Share it between executors with an `Arc`.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    /// MCP sessions (state, expiry in ms since the epoch), apart from the rest: they are
    /// read once per request that moves a session here.
    mcp_sessions: Mutex<HashMap<String, (String, u64)>>,
}

#[derive(Debug, Default)]
struct Inner {
    pending: HashMap<String, PendingOperation>,
    /// How many operations wait, by session, by credential and in all, kept with every change
    /// of `pending`.
    waiting: HashMap<Option<String>, usize>,
    waiting_by_credential: HashMap<Credential, usize>,
    waiting_total: usize,
    gates: HashSet<(String, String)>,
    pins: std::collections::BTreeMap<String, super::ToolPin>,
    journal: HashMap<String, JournalEntry>,
    audit: Vec<AuditRecord>,
    /// How many of `audit` are changes ([`AuditRecord::is_change`]).
    changes: u64,
    runs: HashMap<String, StoredRun>,
    starts: HashMap<String, Vec<super::CallStart>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // a panic while holding the lock cannot leave the maps half-updated (every update is a
        // single insert), so a poisoned lock is still consistent
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mcp_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, u64)>> {
        // every update is a single insert or removal
        self.mcp_sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    /// Counts `op` in (`by` 1) or out (`by` -1) of the waiting operations, if it waits.
    fn count(&mut self, op: &PendingOperation, by: isize) {
        if op.state != PendingState::Pending {
            return;
        }
        self.waiting_total = self.waiting_total.saturating_add_signed(by);
        let n = self.waiting.entry(op.session.clone()).or_default();
        *n = n.saturating_add_signed(by);
        if *n == 0 {
            self.waiting.remove(&op.session);
        }
        if let Some(credential) = &op.credential {
            let n = (self.waiting_by_credential)
                .entry(credential.clone())
                .or_default();
            *n = n.saturating_add_signed(by);
            if *n == 0 {
                self.waiting_by_credential.remove(credential);
            }
        }
    }
}

impl Store for MemoryStore {
    fn blocks(&self) -> bool {
        // one short critical section per call, no I/O: a thread hop would cost more
        false
    }

    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(old) = inner.pending.insert(op.id.clone(), op.clone()) {
            inner.count(&old, -1);
        }
        inner.count(op, 1);
        Ok(())
    }

    fn count_pending(
        &self,
        session: Option<&str>,
        credential: Option<&Credential>,
    ) -> Result<PendingCount, StoreError> {
        let inner = self.lock();
        Ok(PendingCount {
            total: inner.waiting_total,
            session: (inner.waiting.get(&session.map(str::to_owned)))
                .copied()
                .unwrap_or(0),
            credential: credential
                .and_then(|c| inner.waiting_by_credential.get(c))
                .copied()
                .unwrap_or(0),
        })
    }

    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError> {
        Ok(self.lock().pending.get(id).cloned())
    }

    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError> {
        let mut ops: Vec<_> = self
            .lock()
            .pending
            .values()
            .filter(|o| o.state == PendingState::Pending)
            .cloned()
            .collect();
        ops.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then(a.id.cmp(&b.id)));
        Ok(ops)
    }

    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        let mut inner = self.lock();
        let Some(op) = inner.pending.get_mut(id) else {
            return Ok(Resolve::NotFound);
        };
        if op.state != PendingState::Pending {
            return Ok(Resolve::AlreadyResolved(op.state.clone()));
        }
        let before = op.clone();
        op.state = to.clone();
        inner.count(&before, -1);
        Ok(Resolve::Won(Box::new(before)))
    }

    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        if let Some(op) = self.lock().pending.get_mut(id) {
            op.state = PendingState::Completed {
                outcome: Box::new(outcome.clone()),
            };
        }
        Ok(())
    }

    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError> {
        let mut ops: Vec<_> = self
            .lock()
            .pending
            .values()
            .filter(|o| matches!(o.state, PendingState::Approved { .. }))
            .cloned()
            .collect();
        ops.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then(a.id.cmp(&b.id)));
        Ok(ops)
    }

    fn scrub_decided(&self, id: &str, with: &Scrubbed) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let Some(op) = inner.pending.get(id).cloned() else {
            return Ok(false);
        };
        let Some(op) = scrubbed(op, with) else {
            return Ok(false);
        };
        inner.pending.insert(id.to_owned(), op);
        Ok(true)
    }

    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError> {
        // operations are kept as values: none can be unreadable
        Ok(Vec::new())
    }

    fn close_unreadable(&self, _id: &str) -> Result<bool, StoreError> {
        Ok(false)
    }

    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError> {
        let mut inner = self.lock();
        let Some(op) = inner.pending.get_mut(id) else {
            return Ok(Resolve::NotFound);
        };
        if !matches!(op.state, PendingState::Approved { .. }) {
            return Ok(Resolve::AlreadyResolved(op.state.clone()));
        }
        let before = op.clone();
        op.state = PendingState::Completed {
            outcome: Box::new(outcome.clone()),
        };
        Ok(Resolve::Won(Box::new(before)))
    }

    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError> {
        self.lock()
            .gates
            .insert((scope.key().to_owned(), tool.to_owned()));
        Ok(())
    }

    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError> {
        Ok(self
            .lock()
            .gates
            .contains(&(scope.key().to_owned(), tool.to_owned())))
    }

    fn put_pin(&self, pin: &super::ToolPin, replaces: Option<&str>) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        if inner.pins.get(&pin.tool).map(|p| p.hash.as_str()) != replaces {
            return Ok(false);
        }
        inner.pins.insert(pin.tool.clone(), pin.clone());
        Ok(true)
    }

    fn get_pin(&self, tool: &str) -> Result<Option<super::ToolPin>, StoreError> {
        Ok(self.lock().pins.get(tool).cloned())
    }

    fn list_pins(&self) -> Result<Vec<super::ToolPin>, StoreError> {
        Ok(self.lock().pins.values().cloned().collect())
    }

    fn mark_started(&self, run_id: &str, start: &super::CallStart) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner
            .starts
            .entry(run_id.to_owned())
            .or_default()
            .push(start.clone());
        Ok(())
    }

    fn started_calls(&self, run_id: &str) -> Result<Vec<super::CallStart>, StoreError> {
        Ok(self.lock().starts.get(run_id).cloned().unwrap_or_default())
    }

    fn forget_starts(&self, run_id: &str) -> Result<(), StoreError> {
        self.lock().starts.remove(run_id);
        Ok(())
    }

    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        match self.lock().journal.entry(entry.id.clone()) {
            Entry::Occupied(_) => Err(StoreError::new(format!(
                "journal entry {:?} already exists",
                entry.id
            ))),
            Entry::Vacant(slot) => {
                slot.insert(entry.clone());
                Ok(())
            }
        }
    }

    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError> {
        Ok(self.lock().journal.get(id).cloned())
    }

    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let mut found: Vec<JournalEntry> = (self.lock().journal.values())
            .filter(|e| e.call_id == call_id)
            .cloned()
            .collect();
        found.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        Ok(found)
    }

    fn claim_undo(&self, id: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        match inner.journal.get_mut(id) {
            Some(e) if !e.undone => {
                e.undone = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn release_undo(&self, id: &str) -> Result<(), StoreError> {
        if let Some(e) = self.lock().journal.get_mut(id) {
            e.undone = false;
        }
        Ok(())
    }

    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.changes += u64::from(record.is_change());
        inner.audit.push(record.clone());
        Ok(())
    }

    fn changes(&self) -> Result<Option<u64>, StoreError> {
        Ok(Some(self.lock().changes))
    }

    fn try_append_audit(&self, record: &AuditRecord) -> Option<Result<(), StoreError>> {
        // a push under a lock held only for such short sections: never worth a thread hop
        Some(self.append_audit(record))
    }

    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        let inner = self.lock();
        // a record's sequence number is its place in the trail, counted from 1
        let numbered = inner
            .audit
            .iter()
            .enumerate()
            .map(|(i, r)| (r, i as u64 + 1));
        let in_order: Box<dyn Iterator<Item = _>> = match query.after {
            Some(after) => Box::new(numbered.skip(usize::try_from(after).unwrap_or(usize::MAX))),
            None => Box::new(numbered.rev()),
        };
        Ok(in_order
            .filter(|(r, _)| query.matches(r))
            .skip(query.offset())
            .take(query.limit())
            .map(|(r, seq)| AuditRecord {
                seq: Some(seq),
                ..r.clone()
            })
            .collect())
    }

    fn save_run(&self, run: &StoredRun, owner: &str, ttl: Duration) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut inner = self.lock();
        let created_ms = match inner.runs.get(&run.id) {
            Some(old) if !held_by(old, owner, now) => return Ok(false),
            Some(old) => old.created_ms,
            None => run.created_ms,
        };
        let stored = StoredRun {
            created_ms,
            lease: Some(RunLease {
                owner: owner.to_owned(),
                expires_ms: now + lease_ms(ttl),
            }),
            ..run.clone()
        };
        inner.runs.insert(run.id.clone(), stored);
        Ok(true)
    }

    fn claim_run(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<StoredRun>, StoreError> {
        let now = now_ms();
        let mut inner = self.lock();
        let Some(run) = inner.runs.get_mut(id) else {
            return Ok(None);
        };
        if run
            .lease
            .as_ref()
            .is_some_and(|l| l.owner != owner && l.expires_ms > now)
        {
            return Ok(None);
        }
        run.lease = Some(RunLease {
            owner: owner.to_owned(),
            expires_ms: now + lease_ms(ttl),
        });
        Ok(Some(run.clone()))
    }

    fn release_run(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(run) = inner.runs.get_mut(id)
            && run.lease.as_ref().is_some_and(|l| l.owner == owner)
        {
            run.lease = None;
        }
        Ok(())
    }

    fn prune_runs(&self, statuses: &[&str], saved_before_ms: u64) -> Result<usize, StoreError> {
        let now = now_ms();
        let mut inner = self.lock();
        let before = inner.runs.len();
        inner.runs.retain(|_, r| {
            let leased = r.lease.as_ref().is_some_and(|l| l.expires_ms > now);
            leased || r.updated_ms >= saved_before_ms || !statuses.contains(&r.status.as_str())
        });
        // a removed run's start marks go with it
        let Inner { runs, starts, .. } = &mut *inner;
        starts.retain(|id, _| runs.contains_key(id));
        Ok(before - inner.runs.len())
    }

    fn get_run(&self, id: &str) -> Result<Option<StoredRun>, StoreError> {
        let now = now_ms();
        Ok(self.lock().runs.get(id).map(|r| current(r.clone(), now)))
    }

    fn list_runs(&self, query: &RunQuery) -> Result<Vec<StoredRun>, StoreError> {
        let now = now_ms();
        let inner = self.lock();
        let mut runs: Vec<StoredRun> = inner
            .runs
            .values()
            .filter(|r| query.matches(r))
            .map(|r| current(r.clone(), now))
            .collect();
        runs.sort_by(|a, b| (b.updated_ms, &b.id).cmp(&(a.updated_ms, &a.id)));
        runs.truncate(query.cap());
        Ok(runs)
    }

    fn kind(&self) -> &'static str {
        "memory"
    }

    fn put_mcp_session(&self, id: &str, state: &str, ttl: Duration) -> Result<(), StoreError> {
        let now = now_ms();
        let mut sessions = self.mcp_sessions();
        sessions.retain(|_, (_, expires)| *expires > now);
        sessions.insert(
            id.to_owned(),
            (state.to_owned(), now.saturating_add(lease_ms(ttl))),
        );
        Ok(())
    }

    fn get_mcp_session(&self, id: &str) -> Result<Option<String>, StoreError> {
        let now = now_ms();
        Ok(self
            .mcp_sessions()
            .get(id)
            .filter(|(_, expires)| *expires > now)
            .map(|(state, _)| state.clone()))
    }

    fn delete_mcp_session(&self, id: &str) -> Result<(), StoreError> {
        self.mcp_sessions().remove(id);
        Ok(())
    }
}

/// Whether `owner` holds `run`'s lease at `now`.
fn held_by(run: &StoredRun, owner: &str, now: u64) -> bool {
    run.lease
        .as_ref()
        .is_some_and(|l| l.owner == owner && l.expires_ms > now)
}

/// `run` with an expired lease shown as none.
fn current(mut run: StoredRun, now: u64) -> StoredRun {
    if run.lease.as_ref().is_some_and(|l| l.expires_ms <= now) {
        run.lease = None;
    }
    run
}
