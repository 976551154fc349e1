//! The audit spool: the records of read-only calls, appended to a file beside the database with
//! one `write` each, and moved into the trail's table in batches.
//!
//! A commit of one record into the `audit` table writes four pages to SQLite's log (the row,
//! its two indexes, the sequence counter) with a dozen system calls around them, on every call
//! the executor answers. Appending the record to the spool costs one system call, and it is as
//! durable as that commit: with the store's `synchronous=NORMAL` neither waits for the disk, and
//! both survive the process being killed once the call returns. The records are moved into the
//! table a few times a second by the store's checkpointing thread, in one transaction per batch,
//! and before any query of the trail by any store on the file ([`AuditSpool::settle`]), so a
//! query sees every record appended before it. A record gets its sequence number
//! ([`AuditRecord::seq`](crate::records::AuditRecord::seq)) when it enters the table.
//!
//! Records that count as changes ([`AuditRecord::is_change`]) are not spooled: the count of
//! changes other replicas read must move in the same commit as their record.
//!
//! The file is a JSON text sequence (RFC 7464): each record is `RS`, its JSON and `LF`, written
//! with one `write` to the file opened for appending, so records from several threads and
//! processes never interleave. A write cut short (a full disk, a process killed in the middle)
//! leaves a text without its `LF`, which can never be read as a record: the caller writes that
//! record into the table instead, and the move skips the fragment. How far the file has been
//! moved is kept in the database (`audit_spool.moved`), in the transaction that inserts the rows,
//! so a record is moved exactly once whoever moves it and wherever a process stops.
//!
//! Every store that has the spool open holds a shared `flock` on it. The file is emptied only by
//! a store that can take the lock exclusively, so that no other process can be appending: when it
//! opens, and on the checkpointing thread's turns when it is alone on the file. While other
//! stores have it open, the part already moved is given back to the disk as a hole (Linux), so
//! the file's length grows but the room it takes does not.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{err, from_json};
use crate::records::AuditRecord;
use crate::store::StoreError;

/// The start of each record (ASCII record separator, as RFC 7464 has it).
const RS: u8 = 0x1e;
/// The end of each record. serde_json writes no raw line feed inside a JSON text.
const LF: u8 = b'\n';

/// How much of the spool one pass reads at a time.
const CHUNK: u64 = 1 << 20;

/// The spool of one store.
pub(super) struct AuditSpool {
    file: File,
    path: PathBuf,
    /// Held shared by each append of this process and exclusively while the file is emptied:
    /// no append of this process lands between the last read of the file and its truncation.
    appends: RwLock<()>,
}

/// The spool beside the database at `db`.
fn path_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-audit");
    PathBuf::from(name)
}

impl AuditSpool {
    /// Opens (creating) the spool beside the database at `db`, whose connection `conn` is. A
    /// store alone on the file first moves what an earlier process left in it and empties it.
    /// `None` when the spool cannot be used (the file cannot be opened or locked, or what it
    /// holds cannot be moved now): the store then writes every record into the table.
    pub(super) fn open(db: &Path, conn: &Connection) -> Option<AuditSpool> {
        let path = path_of(db);
        let opened = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path);
        let file = match opened {
            Ok(file) => file,
            Err(e) => {
                tracing::warn!(spool = %path.display(), error = %e,
                    "the audit spool cannot be opened: every record is written into the SQLite file");
                return None;
            }
        };
        let spool = AuditSpool {
            file,
            path,
            appends: RwLock::new(()),
        };
        match spool.file.try_lock() {
            Ok(()) => {
                // alone on the file: whatever it holds was left by a process that stopped
                if let Err(e) = spool.empty(conn) {
                    tracing::warn!(spool = %spool.path.display(), error = %e.message,
                        "the audit spool left by an earlier process cannot be moved into the trail now: \
                         every record is written into the SQLite file");
                    return None;
                }
                spool.file.lock_shared().ok()?;
            }
            Err(TryLockError::WouldBlock) => spool.file.lock_shared().ok()?,
            Err(TryLockError::Error(e)) => {
                tracing::warn!(spool = %spool.path.display(), error = %e,
                    "the audit spool cannot be locked: every record is written into the SQLite file");
                return None;
            }
        }
        Some(spool)
    }

    /// Appends the record whose JSON text is `json`. An error means that it is not in the
    /// spool (a fragment of it may be, which is never read as a record).
    pub(super) fn append(&self, json: &str) -> std::io::Result<()> {
        let _appending = self.appends.read().unwrap_or_else(|p| p.into_inner());
        self.write(json)
    }

    /// [`AuditSpool::append`] unless the spool is being emptied, which it would wait for: an
    /// error then, with nothing written.
    pub(super) fn try_append(&self, json: &str) -> std::io::Result<()> {
        let _appending = match self.appends.try_read() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                return Err(std::io::ErrorKind::WouldBlock.into());
            }
        };
        self.write(json)
    }

    fn write(&self, json: &str) -> std::io::Result<()> {
        let mut frame = Vec::with_capacity(json.len() + 2);
        frame.push(RS);
        frame.extend_from_slice(json.as_bytes());
        frame.push(LF);
        // one write: a second one could land after another process's record
        let written = (&self.file).write(&frame)?;
        if written == frame.len() {
            Ok(())
        } else {
            Err(std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                format!(
                    "the audit spool took {written} of the record's {} bytes",
                    frame.len()
                ),
            ))
        }
    }

    /// Moves every whole record in the spool into the trail, with `conn`, in immediate
    /// transactions (one per chunk read). A record being written by another thread or process
    /// as this reads is left for the next move.
    pub(super) fn settle(&self, conn: &Connection) -> Result<(), StoreError> {
        if moved(conn)? == self.len()? {
            return Ok(());
        }
        loop {
            let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
                .map_err(err)?;
            let (stored, len) = (moved(&tx)?, self.len()?);
            // shorter than what was moved: emptied by a store whose commit of that was lost
            let from = if stored > len { 0 } else { stored };
            let to = self.move_chunk(&tx, from, len)?;
            if to != stored {
                set_moved(&tx, to)?;
            }
            tx.commit().map_err(err)?;
            if to == from || to >= len {
                return Ok(());
            }
        }
    }

    /// Empties the spool if this store is alone on it (no other process has it open), after
    /// moving what it holds. Called on the checkpointing thread's turns.
    pub(super) fn empty_if_alone(&self, conn: &Connection) -> Result<(), StoreError> {
        self.settle(conn)?;
        if self.len()? == 0 {
            return Ok(());
        }
        let _held = self.appends.write().unwrap_or_else(|p| p.into_inner());
        if self.file.try_lock().is_err() {
            // converting the lock let go of the shared one: take it again (an exclusive holder
            // is emptying the file, which does not take long)
            self.file.lock_shared().map_err(io_err)?;
            // another store has the file open: it cannot be emptied, but what was moved need
            // not take room on the disk
            self.free_moved(moved(conn)?);
            return Ok(());
        }
        let emptied = self.empty(conn);
        let shared = self.file.lock_shared().map_err(io_err);
        emptied.and(shared)
    }

    /// Moves what the spool holds and truncates it; the caller holds the file's lock
    /// exclusively and this process's appends, so nobody writes to it meanwhile. A record left
    /// without its end was cut short by a process that stopped: it is dropped, with a warning.
    fn empty(&self, conn: &Connection) -> Result<(), StoreError> {
        self.settle(conn)?;
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
            .map_err(err)?;
        let (from, len) = (moved(&tx)?, self.len()?);
        if from < len {
            tracing::warn!(
                spool = %self.path.display(),
                bytes = len - from,
                "a record cut short in the audit spool by a process that stopped was dropped"
            );
        }
        // truncated before the commit that says so: if the commit is lost, the next move sees
        // a file shorter than what was moved and starts it from the beginning
        self.file.set_len(0).map_err(io_err)?;
        set_moved(&tx, 0)?;
        tx.commit().map_err(err)
    }

    /// Inserts the whole records of the spool's bytes `from..len` (at most a chunk of them)
    /// into the table, in the caller's transaction: where the move got to.
    fn move_chunk(&self, conn: &Connection, from: u64, len: u64) -> Result<u64, StoreError> {
        let mut size = (len - from).min(CHUNK);
        let (bytes, end) = loop {
            let mut bytes = vec![0; usize::try_from(size).unwrap_or(usize::MAX)];
            self.file.read_exact_at(&mut bytes, from).map_err(io_err)?;
            // the bytes after the last LF may be a record still being written
            if let Some(end) = memchr::memrchr(LF, &bytes) {
                break (bytes, end);
            }
            if from + size == len {
                return Ok(from);
            }
            // a record longer than the chunk
            size = (size * 2).min(len - from);
        };
        for text in bytes[..=end].split(|&b| b == RS) {
            match text.split_last() {
                None => {}
                Some((&LF, json)) => self.insert(conn, json, from)?,
                // cut short: the next record starts after it
                Some(_) => tracing::warn!(spool = %self.path.display(), offset = from,
                    "a record cut short in the audit spool was skipped"),
            }
        }
        Ok(from + end as u64 + 1)
    }

    fn insert(&self, conn: &Connection, json: &[u8], at: u64) -> Result<(), StoreError> {
        let record = std::str::from_utf8(json)
            .map_err(|e| StoreError::new(e.to_string()))
            .and_then(|text| Ok((text, from_json::<AuditRecord>(text)?)));
        match record {
            Ok((text, record)) => super::audit::AuditRow::with_text(&record, text.to_owned())?
                .insert_row(conn, &record),
            Err(e) => {
                // never the text itself: what the spool holds is the trail's to show
                tracing::error!(spool = %self.path.display(), offset = at, error = %e.message,
                    "an unreadable record in the audit spool was skipped");
                Ok(())
            }
        }
    }

    /// Gives the disk back the blocks of the spool's first `moved` bytes, keeping its length
    /// (a hole reads as zeros, which is never read again: moves start after it). Linux only;
    /// elsewhere, and on file systems without holes, the spool keeps its blocks until emptied.
    fn free_moved(&self, moved: u64) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let Ok(until) = libc::off_t::try_from(moved & !4095) else {
                return;
            };
            if until == 0 {
                return;
            }
            // SAFETY: `fallocate` on a descriptor this spool owns, over a range of its file;
            // it touches no memory of this process.
            let freed = unsafe {
                libc::fallocate(
                    self.file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    0,
                    until,
                )
            };
            if freed != 0 {
                tracing::debug!(error = %std::io::Error::last_os_error(),
                    "the moved part of the audit spool keeps its blocks");
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = moved;
    }

    fn len(&self) -> Result<u64, StoreError> {
        self.file.metadata().map(|m| m.len()).map_err(io_err)
    }
}

/// How many bytes of the spool are in the trail.
fn moved(conn: &Connection) -> Result<u64, StoreError> {
    let moved: Option<i64> = conn
        .prepare_cached("SELECT moved FROM audit_spool WHERE id = 1")
        .and_then(|mut read| read.query_row([], |row| row.get(0)).optional())
        .map_err(err)?;
    Ok(moved.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
}

fn set_moved(conn: &Connection, to: u64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO audit_spool (id, moved) VALUES (1, ?1) \
         ON CONFLICT (id) DO UPDATE SET moved = ?1",
    )
    .and_then(|mut set| set.execute(params![super::sql_int(to)]))
    .map(|_| ())
    .map_err(err)
}

fn io_err(e: std::io::Error) -> StoreError {
    StoreError::new(format!("the audit spool: {e}"))
}
