//! Call starts: one row per mark, read by run. Each mark is one insert, which SQLite makes
//! durable before the tool's body runs (the executor waits for it).

use rusqlite::params;

use super::{SqliteStore, err};
use crate::store::{CallStart, StoreError};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS call_starts (
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    started_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS call_starts_run ON call_starts(run_id);
";

impl SqliteStore {
    pub(super) fn insert_start(&self, run_id: &str, start: &CallStart) -> Result<(), StoreError> {
        self.writer()?
            .execute(
                "INSERT INTO call_starts (run_id, call_id, tool, started_ms) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![run_id, start.call_id, start.tool, start.started_ms as i64],
            )
            .map_err(err)?;
        Ok(())
    }

    pub(super) fn start_rows(&self, run_id: &str) -> Result<Vec<CallStart>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT call_id, tool, started_ms FROM call_starts WHERE run_id = ?1 \
                 ORDER BY rowid",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(CallStart {
                    call_id: r.get(0)?,
                    tool: r.get(1)?,
                    started_ms: r.get::<_, i64>(2)? as u64,
                })
            })
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    pub(super) fn delete_starts(&self, run_id: &str) -> Result<(), StoreError> {
        self.writer()?
            .execute("DELETE FROM call_starts WHERE run_id = ?1", [run_id])
            .map_err(err)?;
        Ok(())
    }
}
