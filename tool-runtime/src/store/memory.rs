//! The in-memory store: everything behind one mutex, gone when the process ends.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::{GateScope, JournalEntry, PendingOperation, PendingState, Resolve, Store, StoreError};
use crate::executor::{ActivityQuery, AuditRecord, Outcome};

/// A [`Store`] in memory. Share it between executors with an `Arc`.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    pending: HashMap<String, PendingOperation>,
    gates: HashSet<(String, String)>,
    journal: HashMap<String, JournalEntry>,
    audit: Vec<AuditRecord>,
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
}

impl Store for MemoryStore {
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        self.lock().pending.insert(op.id.clone(), op.clone());
        Ok(())
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

    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        self.lock()
            .journal
            .insert(entry.call_id.clone(), entry.clone());
        Ok(())
    }

    fn get_journal(&self, call_id: &str) -> Result<Option<JournalEntry>, StoreError> {
        Ok(self.lock().journal.get(call_id).cloned())
    }

    fn claim_undo(&self, call_id: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        match inner.journal.get_mut(call_id) {
            Some(e) if !e.undone => {
                e.undone = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn release_undo(&self, call_id: &str) -> Result<(), StoreError> {
        if let Some(e) = self.lock().journal.get_mut(call_id) {
            e.undone = false;
        }
        Ok(())
    }

    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        self.lock().audit.push(record.clone());
        Ok(())
    }

    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        Ok(self
            .lock()
            .audit
            .iter()
            .rev()
            .filter(|r| query.matches(r))
            .take(query.limit())
            .cloned()
            .collect())
    }
}
