//! What the SQLite and Redis stores share: the audit backlog and reading stored rows.

use super::{JournalEntry, PendingOperation, StoreError, UnreadableOperation};
use crate::records::AuditRecord;

/// Audit records a store could not write (locked, unreachable, out of space), kept in this
/// process and written, oldest first, before the next record or query once the store accepts
/// writes again: a passing fault delays records, it does not lose them. Up to
/// [`AUDIT_BACKLOG_MAX`] are kept; a process that stops first loses its backlog, which is why the
/// execution reports each record that could not be written at once
/// ([`Execution::audit_failure`](crate::executor::Execution::audit_failure)).
#[derive(Default)]
pub(super) struct AuditBacklog(std::sync::Mutex<std::collections::VecDeque<AuditRecord>>);

/// How many unwritten audit records a store keeps at most; beyond that the oldest is dropped.
pub(super) const AUDIT_BACKLOG_MAX: usize = 10_000;

type WriteAudit<'a> = &'a dyn Fn(&AuditRecord) -> Result<(), StoreError>;

impl AuditBacklog {
    /// Writes the records kept, then `record`, with `write`. When a write fails, `record` is
    /// kept and the error says so.
    pub(super) fn append(
        &self,
        record: &AuditRecord,
        write: WriteAudit<'_>,
    ) -> Result<(), StoreError> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Err(e) = Self::drain(&mut kept, write).and_then(|()| write(record)) else {
            return Ok(());
        };
        if kept.len() >= AUDIT_BACKLOG_MAX {
            kept.pop_front();
            tracing::error!(
                kept = AUDIT_BACKLOG_MAX,
                "too many audit records wait for the store: the oldest is dropped"
            );
        }
        kept.push_back(record.clone());
        Err(StoreError {
            message: format!(
                "{}; the record is kept in this process and written once the store accepts \
                 writes again ({} waiting)",
                e.message,
                kept.len()
            ),
            ..e
        })
    }

    /// Runs `write`, the write of one record, when no record is kept and no other append is
    /// under way: `None` otherwise (`write` not run), or when `write` answers `None` (nothing
    /// written).
    pub(super) fn try_append(&self, write: impl FnOnce() -> Option<()>) -> Option<()> {
        let kept = match self.0.try_lock() {
            Ok(kept) => kept,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        if !kept.is_empty() {
            return None;
        }
        write()
    }

    /// Writes the records kept, oldest first, until one fails.
    pub(super) fn flush(&self, write: WriteAudit<'_>) -> Result<(), StoreError> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Self::drain(&mut kept, write)
    }

    fn drain(
        kept: &mut std::collections::VecDeque<AuditRecord>,
        write: WriteAudit<'_>,
    ) -> Result<(), StoreError> {
        while let Some(r) = kept.front() {
            write(r)?;
            kept.pop_front();
        }
        Ok(())
    }
}

/// Reads a stored operation; the error names the operation and what to do about it.
pub(super) fn read_operation(id: &str, data: &str) -> Result<PendingOperation, StoreError> {
    serde_json::from_str(data).map_err(|e| {
        StoreError::new(format!(
            "operation {id:?} cannot be read ({e}); it is left out of listings, and `tools abandon {id}` closes it"
        ))
    })
}

/// The readable operations of `(id, data)` rows, in order; unreadable ones are left out, with a
/// warning, so that one bad row does not hide the others.
pub(super) fn readable_operations(
    rows: impl IntoIterator<Item = (String, String)>,
) -> Vec<PendingOperation> {
    rows.into_iter()
        .filter_map(|(id, data)| match read_operation(&id, &data) {
            Ok(op) => Some(op),
            Err(e) => {
                tracing::warn!(operation_id = %id, error = %e, "unreadable operation left out");
                None
            }
        })
        .collect()
}

/// The unreadable operations of `(id, state, data)` rows.
pub(super) fn unreadable_operations(
    rows: impl IntoIterator<Item = (String, String, String)>,
) -> Vec<UnreadableOperation> {
    rows.into_iter()
        .filter_map(|(id, state, data)| {
            serde_json::from_str::<PendingOperation>(&data)
                .err()
                .map(|e| UnreadableOperation {
                    id,
                    state,
                    error: e.to_string(),
                })
        })
        .collect()
}

/// Entries written before entries had ids are named by their call id.
pub(super) fn with_id(mut entry: JournalEntry) -> JournalEntry {
    if entry.id.is_empty() {
        entry.id = entry.call_id.clone();
    }
    entry
}
