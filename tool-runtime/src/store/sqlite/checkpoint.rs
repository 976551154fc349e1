//! Checkpoints of the write-ahead log on a thread of their own.
//!
//! SQLite copies the log back into the file (a checkpoint, with its fsyncs) on the commit that
//! takes the log past 1,000 pages: in the middle of whichever call's audit record that was, a
//! few milliseconds every few hundred calls. The store turns that off on its connection and
//! checkpoints from this thread instead, on its own connection, a few times a second: a call's
//! commit only appends to the log. A passive checkpoint waits for nobody and blocks nobody; with
//! nothing new in the log it does nothing.
//!
//! The same thread moves the audit spool's records into the trail before each checkpoint, and
//! empties the spool when its store is alone on it (see the spool's module docs).

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::spool::AuditSpool;

/// How often the log is copied back (and the spool moved): at a few hundred commits a second,
/// the log stays within what one automatic checkpoint would have let it reach.
const EVERY: Duration = Duration::from_millis(200);

/// How long the last move of the spool, when the store is dropped, waits for another
/// connection's lock. What it cannot move stays in the spool for the next store on the file.
const LAST_MOVE_WAITS: Duration = Duration::from_secs(2);

/// The checkpointing thread of one store. Dropped with the store, it checkpoints what is left
/// and closes its connection before the drop returns, as closing SQLite's last connection does:
/// once a store is dropped, nothing of it touches the file any more.
#[derive(Debug)]
pub(super) struct Checkpointer {
    alive: Option<Sender<()>>,
    /// Only joined on drop, so a panic elsewhere leaves nothing of it half-observed: the store
    /// is `UnwindSafe`.
    thread: Option<AssertUnwindSafe<JoinHandle<()>>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.alive.take());
        if let Some(AssertUnwindSafe(thread)) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Checkpointer {
    /// Starts checkpointing the file at `path`, whose writing connection `writer` stops
    /// checkpointing on commit. `None` (and the automatic checkpoints kept) when no second
    /// connection or thread can be had: the store then works as SQLite does by default.
    pub(super) fn start(
        path: &Path,
        writer: &Connection,
        spool: Option<Arc<AuditSpool>>,
    ) -> Option<Checkpointer> {
        let conn = Connection::open(path).ok()?;
        // a checkpoint that finds the file locked tries again at the next turn
        conn.busy_timeout(Duration::ZERO).ok()?;
        let (alive, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
                    move_spool(spool.as_deref(), &conn);
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    {
                        tracing::debug!(error = %e, "a checkpoint of the SQLite log was put off");
                    }
                }
                // the store is gone: its spooled records go into the trail, and what its last
                // commits left in the log goes into the file
                if conn.busy_timeout(LAST_MOVE_WAITS).is_ok() {
                    move_spool(spool.as_deref(), &conn);
                }
                let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            })
            .ok()?;
        let checkpointer = Checkpointer {
            alive: Some(alive),
            thread: Some(AssertUnwindSafe(thread)),
        };
        // without it, dropping `checkpointer` stops the thread and commits checkpoint as usual
        writer.execute_batch("PRAGMA wal_autocheckpoint=0").ok()?;
        Some(checkpointer)
    }
}

/// Moves the spool's records into the trail and empties it if this store is alone on it; a
/// lock held elsewhere puts that off to the next turn.
fn move_spool(spool: Option<&AuditSpool>, conn: &Connection) {
    if let Some(spool) = spool
        && let Err(e) = spool.empty_if_alone(conn)
    {
        tracing::debug!(error = %e.message, "moving the audit spool was put off");
    }
}
