//! The default store: one embedded SQLite file (WAL mode), shareable between processes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::persisted::{
    AuditBacklog, read_operation, readable_operations, unreadable_operations, with_id,
};
use super::{
    GateScope, JournalEntry, PendingCount, PendingOperation, PendingState, Resolve, Scrubbed,
    Store, StoreError, UnreadableOperation, scrubbed,
};
use crate::records::{ActivityQuery, AuditRecord, Outcome};
use crate::tool::Credential;

/// A [`Store`] in a SQLite file. Open the same file from several handles or processes: the
/// compare-and-set operations run in immediate transactions, which SQLite serialises.
///
/// Beside the file `PATH` the store keeps SQLite's `PATH-wal` and `PATH-shm`, and on Unix its
/// audit spool `PATH-audit`: the records of read-only calls, appended with one write each and
/// moved into the `audit` table a few times a second and before every query of the trail (a
/// query always sees them). Copy, move or delete the four together: a spool left beside another
/// database would be moved into that one's trail.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    backlog: AuditBacklog,
    /// The file it was opened on, and which file that was, to refuse writes once it is deleted or
    /// replaced (`None` in memory).
    file: Option<(PathBuf, FileId)>,
    /// Checkpoints the write-ahead log off the writers' path (`None` in memory).
    checkpointer: Option<checkpoint::Checkpointer>,
    /// Where the records of read-only calls are appended (`None` in memory, or when the file
    /// beside the database cannot be used).
    spool: Option<std::sync::Arc<spool::AuditSpool>>,
    /// How long a write waits for another connection's lock ([`SqliteStore::with_busy_timeout`]).
    busy_timeout: Duration,
}

/// Which file a path names (device and inode on Unix), to notice it deleted or replaced.
type FileId = (u64, u64);

mod audit;
mod checkpoint;
mod mcp_sessions;
mod migrate;
mod pins;
mod runs;
#[cfg_attr(not(unix), path = "spool_none.rs")]
mod spool;
mod starts;

fn file_id(path: &Path) -> Option<FileId> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pending (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    data TEXT NOT NULL,
    session TEXT,
    credential TEXT
);
CREATE INDEX IF NOT EXISTS pending_state ON pending(state, created_ms);
CREATE TABLE IF NOT EXISTS gates (
    scope TEXT NOT NULL,
    tool TEXT NOT NULL,
    PRIMARY KEY (scope, tool)
);
CREATE TABLE IF NOT EXISTS undo_journal (
    id TEXT PRIMARY KEY,
    call_id TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    undone INTEGER NOT NULL DEFAULT 0,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS undo_journal_call ON undo_journal(call_id, created_ms);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ts INTEGER NOT NULL,
    tool TEXT NOT NULL,
    correlation_id TEXT NOT NULL,
    initiator TEXT NOT NULL,
    session TEXT,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_ts ON audit(ts);
CREATE INDEX IF NOT EXISTS audit_correlation ON audit(correlation_id);
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    count INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_spool (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    moved INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    session TEXT,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    checkpoint TEXT NOT NULL,
    lease_owner TEXT,
    lease_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_updated ON runs(updated_ms);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status, updated_ms);
";

/// How long a connection waits for another connection's lock before giving up (see
/// [`SqliteStore::with_busy_timeout`]).
const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A SQLite failure as a store error that says what happened to the file and whether waiting
/// can help: a lock held beyond the busy timeout passes (retryable); a read-only, full, corrupt
/// or deleted file needs a person (not retryable).
fn err(e: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::ErrorCode as C;
    let (code, extended) = match &e {
        rusqlite::Error::SqliteFailure(f, _) => (f.code, f.extended_code),
        _ => return StoreError::new(e.to_string()),
    };
    let what = match code {
        C::DatabaseBusy | C::DatabaseLocked => {
            return StoreError::unavailable(format!(
                "the SQLite file is locked by another connection or process for longer than the \
                 busy timeout; nothing was changed ({e})"
            ));
        }
        C::ReadOnly if extended == rusqlite::ffi::SQLITE_READONLY_DBMOVED => {
            return StoreError::new(format!("the SQLite file was {MOVED} ({e})"));
        }
        C::ReadOnly => {
            "the SQLite file cannot be written (read-only file or directory, read-only file \
             system, or opened read-only); nothing was changed"
        }
        C::DiskFull => {
            "the disk holding the SQLite file is full (or a file-size limit was reached); nothing \
             was changed"
        }
        C::SystemIoFailure => {
            "the SQLite file could not be read or written (I/O error: a full disk, a file-size \
             limit, a failing device, or the file was changed underneath); nothing was changed"
        }
        C::NotADatabase | C::DatabaseCorrupt => {
            "the SQLite file is corrupt or is not a SQLite database; restore it from a backup or \
             move it aside"
        }
        C::CannotOpen => "the SQLite file cannot be opened",
        _ => return StoreError::new(e.to_string()),
    };
    StoreError::new(format!("{what} ({e})"))
}

/// A connection whose busy timeout is zero until the guard is dropped, which restores it (a
/// panic in between included).
struct NoWaiting<'a>(&'a Connection, Duration);

impl<'a> NoWaiting<'a> {
    fn on(conn: &'a Connection, restore: Duration) -> Option<Self> {
        conn.busy_timeout(Duration::ZERO).ok()?;
        Some(NoWaiting(conn, restore))
    }
}

impl Drop for NoWaiting<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.0.busy_timeout(self.1) {
            tracing::error!(error = %e, "the SQLite store's busy timeout could not be restored");
        }
    }
}

const MOVED: &str = "deleted or moved while open: nothing more is written to it (it would be \
                     lost), and a restart starts from a new, empty file unless it is put back";

fn json_err(e: serde_json::Error) -> StoreError {
    StoreError::new(e.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, with its parent directory.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::new(format!("cannot create {}: {e}", dir.display())))?;
        }
        let opened = Connection::open(path).map_err(err).and_then(Self::init);
        let mut store = opened.map_err(|e| StoreError {
            message: format!("cannot open {}: {}", path.display(), e.message),
            ..e
        })?;
        if file_id(path).is_some() {
            let spool = spool::AuditSpool::open(path, &store.conn()).map(std::sync::Arc::new);
            let checkpointer = checkpoint::Checkpointer::start(path, &store.conn(), spool.clone());
            // without the thread that moves it, nothing is spooled
            store.spool = spool.filter(|_| checkpointer.is_some());
            store.checkpointer = checkpointer;
        }
        // a path that names no file (a `file:` URI) is not watched
        store.file = file_id(path).map(|id| {
            (
                std::path::absolute(path).unwrap_or_else(|_| path.to_owned()),
                id,
            )
        });
        Ok(store)
    }

    /// Sets how long a write waits for another connection's or process's lock before it fails
    /// with a retryable [`STORE_UNAVAILABLE`](super::STORE_UNAVAILABLE) error (default 10 s).
    /// The waiting blocks the calling thread; the executor makes its calls on tokio's blocking
    /// pool ([`Store::blocks`]), so the runtime runs on meanwhile.
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Result<Self, StoreError> {
        self.conn().busy_timeout(timeout).map_err(err)?;
        self.busy_timeout = timeout;
        Ok(self)
    }

    /// A private in-memory database (same code paths as a file, nothing on disk).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory().map_err(err)?)
    }

    fn init(conn: Connection) -> Result<Self, StoreError> {
        // several processes share the file: wait for each other instead of failing at once
        conn.busy_timeout(DEFAULT_BUSY_TIMEOUT).map_err(err)?;
        let _: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(err)?;
        // secure_delete: a decided operation's arguments are rewritten redacted, and the bytes
        // they leave behind (freed cells and pages) are zeroed rather than kept in the file
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON;")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        conn.execute_batch(pins::SCHEMA).map_err(err)?;
        conn.execute_batch(starts::SCHEMA).map_err(err)?;
        conn.execute_batch(mcp_sessions::SCHEMA).map_err(err)?;
        migrate::migrate_journal(&conn)?;
        migrate::migrate_pending_counts(&conn)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            backlog: AuditBacklog::default(),
            file: None,
            checkpointer: None,
            spool: None,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // rusqlite leaves the connection usable after a panic elsewhere
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection, to write: refused once the file it was opened on is deleted or replaced.
    /// SQLite (in WAL mode) goes on writing into a deleted file, and everything written there
    /// (a decision, an outcome, an audit record) would vanish with the process.
    fn writer(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
        self.still_the_file()?;
        Ok(self.conn())
    }

    /// Refuses writes once the file the store was opened on is deleted or replaced (see
    /// [`SqliteStore::writer`]).
    fn still_the_file(&self) -> Result<(), StoreError> {
        if let Some((path, id)) = &self.file
            && file_id(path).as_ref() != Some(id)
        {
            return Err(StoreError::new(format!(
                "the SQLite file {} was {MOVED}; nothing was changed",
                path.display()
            )));
        }
        Ok(())
    }

    /// Runs `write` on the connection if it can be had and used without waiting: `None`, with
    /// `write` not run, when another thread holds the connection or when a commit could wait
    /// for the disk (without the checkpointing thread, the commit that fills the log copies it
    /// back into the file, with its fsyncs); `None` too when `write` fails, which SQLite undoes
    /// whole (one statement in autocommit), so that the caller's full path, which waits, reports
    /// it. SQLite's busy timeout is zero meanwhile: another connection's or process's lock makes
    /// the statement fail at once with nothing written, instead of waiting for the lock.
    fn write_now(&self, write: impl FnOnce(&Connection) -> Result<(), StoreError>) -> Option<()> {
        self.checkpointer.as_ref()?;
        let conn = match self.conn.try_lock() {
            Ok(conn) => conn,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        self.still_the_file().ok()?;
        let waiting = NoWaiting::on(&conn, self.busy_timeout)?;
        let written = write(waiting.0);
        drop(waiting);
        written.ok()
    }

    /// Pending operations in one `state` column value, oldest first.
    /// Moves operation `id` to the state `next` gives for it, in one immediate transaction:
    /// `NotFound` when there is no such operation, `AlreadyResolved` when `next` declines (its
    /// state does not allow the move), else `Won` with the operation as it was.
    fn change_op(
        &self,
        id: &str,
        next: impl FnOnce(&PendingOperation) -> Option<PendingState>,
    ) -> Result<Resolve, StoreError> {
        self.rewrite_op(id, |op| {
            next(op).map(|state| PendingOperation {
                state,
                ..op.clone()
            })
        })
    }

    /// [`Self::change_op`] for any change of the operation: `next` gives it as it is to be
    /// stored, or `None` to leave it.
    fn rewrite_op(
        &self,
        id: &str,
        next: impl FnOnce(&PendingOperation) -> Option<PendingOperation>,
    ) -> Result<Resolve, StoreError> {
        let mut conn = self.writer()?;
        // A decision is what lets a tool run, so it reaches the disk before the tool does: with
        // the file's usual `synchronous=NORMAL` a commit survives a killed process but not a
        // power loss, after which an approval could roll back to pending and the tool run twice.
        // One fsync per decision (people decide; calls are not slowed).
        conn.execute_batch("PRAGMA synchronous=FULL").map_err(err)?;
        let result = Self::rewrite_in(&mut conn, id, next);
        let restored = conn.execute_batch("PRAGMA synchronous=NORMAL").map_err(err);
        let resolve = result?;
        restored?;
        Ok(resolve)
    }

    fn rewrite_in(
        conn: &mut Connection,
        id: &str,
        next: impl FnOnce(&PendingOperation) -> Option<PendingOperation>,
    ) -> Result<Resolve, StoreError> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let data: Option<String> = tx
            .query_row("SELECT data FROM pending WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(err)?;
        let Some(data) = data else {
            return Ok(Resolve::NotFound);
        };
        let before = read_operation(id, &data)?;
        let Some(op) = next(&before) else {
            return Ok(Resolve::AlreadyResolved(before.state));
        };
        tx.execute(
            "UPDATE pending SET state = ?1, data = ?2 WHERE id = ?3",
            params![op.state.name(), to_json(&op)?, id],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(Resolve::Won(Box::new(before)))
    }

    fn list_in_state(&self, state: &str) -> Result<Vec<PendingOperation>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id, data FROM pending WHERE state = ?1 ORDER BY created_ms, id")
            .map_err(err)?;
        let rows = stmt
            .query_map([state], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err)?
            .collect::<Result<Vec<(String, String)>, _>>()
            .map_err(err)?;
        Ok(readable_operations(rows))
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(json_err)
}

fn journal_row(undone: bool, data: &str) -> Result<JournalEntry, StoreError> {
    let mut e = with_id(from_json(data)?);
    // the column is authoritative: claim_undo changes only the column
    e.undone = undone;
    Ok(e)
}

fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::new(format!("corrupt row: {e}")))
}

impl Store for SqliteStore {
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        self.writer()?
            .execute(
                "INSERT OR REPLACE INTO pending (id, state, created_ms, data, session, \
                 credential) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    op.id,
                    op.state.name(),
                    op.created_ms as i64,
                    to_json(op)?,
                    op.session,
                    op.credential.as_ref().map(Credential::as_str)
                ],
            )
            .map_err(err)?;
        Ok(())
    }

    fn count_pending(
        &self,
        session: Option<&str>,
        credential: Option<&Credential>,
    ) -> Result<PendingCount, StoreError> {
        // each count reads one range of an index, without the rows' data; a NULL credential
        // matches no row (`=`, not `IS`), so "not asked" counts 0
        let (total, of_session, of_credential): (i64, i64, i64) = self
            .conn()
            .query_row(
                "SELECT (SELECT count(*) FROM pending WHERE state = 'pending'), \
                        (SELECT count(*) FROM pending WHERE state = 'pending' AND session IS ?1), \
                        (SELECT count(*) FROM pending WHERE state = 'pending' AND credential = ?2)",
                params![session, credential.map(Credential::as_str)],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(err)?;
        Ok(PendingCount {
            total: total as usize,
            session: of_session as usize,
            credential: of_credential as usize,
        })
    }

    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError> {
        let data: Option<String> = self
            .conn()
            .query_row("SELECT data FROM pending WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(err)?;
        data.map(|d| read_operation(id, &d)).transpose()
    }

    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.list_in_state("pending")
    }

    fn list_pending_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<PendingOperation>, StoreError> {
        // only the page's rows are read, by the index on (state, created_ms)
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT id, data FROM pending WHERE state = 'pending' \
                 ORDER BY created_ms, id LIMIT ?1 OFFSET ?2",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([sql_int(limit), sql_int(offset)], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(err)?
            .collect::<Result<Vec<(String, String)>, _>>()
            .map_err(err)?;
        Ok(readable_operations(rows))
    }

    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        self.change_op(id, |op| {
            if op.state != PendingState::Pending {
                return None;
            }
            Some(to.clone())
        })
    }

    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        self.change_op(id, |_| {
            Some(PendingState::Completed {
                outcome: Box::new(outcome.clone()),
            })
        })
        .map(drop)
    }

    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.list_in_state("approved")
    }

    fn scrub_decided(&self, id: &str, with: &Scrubbed) -> Result<bool, StoreError> {
        let won = matches!(
            self.rewrite_op(id, |op| scrubbed(op.clone(), with))?,
            Resolve::Won(_)
        );
        if won {
            // the versions of the row written before the scrub (parked, decided) are still in
            // the write-ahead log: copy the scrubbed one into the file and empty the log. A
            // reader of another connection can hold the log's end for a while; the next scrub
            // empties it then.
            let busy: i64 = self
                .conn()
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
                .map_err(err)?;
            if busy != 0 {
                tracing::warn!(
                    operation_id = id,
                    "the write-ahead log could not be emptied after redacting a decided \
                     operation (another connection is reading); it is emptied at a later one"
                );
            }
        }
        Ok(won)
    }

    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT id, state, data FROM pending WHERE state IN ('pending', 'approved') ORDER BY created_ms, id",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(err)?
            .collect::<Result<Vec<(String, String, String)>, _>>()
            .map_err(err)?;
        Ok(unreadable_operations(rows))
    }

    fn close_unreadable(&self, id: &str) -> Result<bool, StoreError> {
        let mut conn = self.writer()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let row: Option<(String, String)> = tx
            .query_row(
                "SELECT state, data FROM pending WHERE id = ?1 AND state IN ('pending', 'approved')",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(err)?;
        let Some((state, data)) = row else {
            return Ok(false);
        };
        if unreadable_operations([(id.to_owned(), state, data)]).is_empty() {
            return Ok(false);
        }
        tx.execute(
            "UPDATE pending SET state = 'unreadable' WHERE id = ?1",
            [id],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(true)
    }

    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError> {
        self.change_op(id, |op| {
            matches!(op.state, PendingState::Approved { .. }).then(|| PendingState::Completed {
                outcome: Box::new(outcome.clone()),
            })
        })
    }

    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError> {
        self.writer()?
            .execute(
                "INSERT OR IGNORE INTO gates (scope, tool) VALUES (?1, ?2)",
                params![scope.key(), tool],
            )
            .map_err(err)?;
        Ok(())
    }

    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError> {
        self.conn()
            .query_row(
                "SELECT 1 FROM gates WHERE scope = ?1 AND tool = ?2",
                params![scope.key(), tool],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(err)
    }

    fn put_pin(&self, pin: &super::ToolPin, replaces: Option<&str>) -> Result<bool, StoreError> {
        self.put_pin_row(pin, replaces)
    }

    fn get_pin(&self, tool: &str) -> Result<Option<super::ToolPin>, StoreError> {
        self.get_pin_row(tool)
    }

    fn list_pins(&self) -> Result<Vec<super::ToolPin>, StoreError> {
        self.list_pin_rows()
    }

    fn mark_started(&self, run_id: &str, start: &super::CallStart) -> Result<(), StoreError> {
        self.insert_start(run_id, start)
    }

    fn started_calls(&self, run_id: &str) -> Result<Vec<super::CallStart>, StoreError> {
        self.start_rows(run_id)
    }

    fn forget_starts(&self, run_id: &str) -> Result<(), StoreError> {
        self.delete_starts(run_id)
    }

    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        self.writer()?
            .execute(
                "INSERT INTO undo_journal (id, call_id, created_ms, undone, data) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    entry.id,
                    entry.call_id,
                    entry.created_ms as i64,
                    entry.undone,
                    to_json(entry)?
                ],
            )
            .map_err(err)?;
        Ok(())
    }

    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError> {
        let row: Option<(bool, String)> = self
            .conn()
            .query_row(
                "SELECT undone, data FROM undo_journal WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(err)?;
        row.map(|(undone, data)| journal_row(undone, &data))
            .transpose()
    }

    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT undone, data FROM undo_journal WHERE call_id = ?1 ORDER BY created_ms, id",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([call_id], |r| {
                Ok((r.get::<_, bool>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(err)?;
        rows.map(|r| {
            let (undone, data) = r.map_err(err)?;
            journal_row(undone, &data)
        })
        .collect()
    }

    fn claim_undo(&self, id: &str) -> Result<bool, StoreError> {
        let n = self
            .conn()
            .execute(
                "UPDATE undo_journal SET undone = 1 WHERE id = ?1 AND undone = 0",
                [id],
            )
            .map_err(err)?;
        Ok(n == 1)
    }

    fn release_undo(&self, id: &str) -> Result<(), StoreError> {
        self.writer()?
            .execute("UPDATE undo_journal SET undone = 0 WHERE id = ?1", [id])
            .map_err(err)?;
        Ok(())
    }

    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        self.backlog.append(record, &|r| self.write_audit(r))
    }

    fn try_append_audit(&self, record: &AuditRecord) -> Option<Result<(), StoreError>> {
        // records kept from a failed write go in first, on the full path
        self.backlog
            .try_append(|| self.try_write_audit(record))
            .map(Ok)
    }

    fn query_audit(&self, q: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        // records kept through a passing fault go in first; if the store still refuses them, the
        // query shows what is written
        let _ = self.backlog.flush(&|r| self.write_audit(r));
        self.settle_spool();
        self.query_written(q)
    }

    fn changes(&self) -> Result<Option<u64>, StoreError> {
        // changes kept through a passing fault are counted first: a count without them would
        // let another replica answer from results they made stale
        self.backlog.flush(&|r| self.write_audit(r))?;
        self.change_count().map(Some)
    }

    fn save_run(
        &self,
        run: &super::StoredRun,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<bool, StoreError> {
        self.save_run_row(run, owner, ttl)
    }

    fn claim_run(
        &self,
        id: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<Option<super::StoredRun>, StoreError> {
        self.claim_run_row(id, owner, ttl)
    }

    fn release_run(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.release_run_row(id, owner)
    }

    fn prune_runs(&self, statuses: &[&str], saved_before_ms: u64) -> Result<usize, StoreError> {
        self.prune_run_rows(statuses, saved_before_ms)
    }

    fn get_run(&self, id: &str) -> Result<Option<super::StoredRun>, StoreError> {
        self.get_run_row(id)
    }

    fn list_runs(&self, query: &super::RunQuery) -> Result<Vec<super::StoredRun>, StoreError> {
        self.list_run_rows(query)
    }

    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn put_mcp_session(&self, id: &str, state: &str, ttl: Duration) -> Result<(), StoreError> {
        self.put_mcp_session_row(id, state, ttl)
    }

    fn get_mcp_session(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.get_mcp_session_row(id)
    }

    fn delete_mcp_session(&self, id: &str) -> Result<(), StoreError> {
        self.delete_mcp_session_row(id)
    }
}

/// A count or a time as SQLite's integer: SQLite has no unsigned 64-bit type, and a value past
/// `i64::MAX` would be bound as a float, which `LIMIT` and `OFFSET` refuse. Beyond `i64::MAX`
/// nothing is stored anyway.
fn sql_int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
