//! MCP sessions: one row per session with its expiry. Expired rows are never read, and are
//! removed by the next write, which is rare (a session's opening and its renewals).

use std::time::Duration;

use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, err};
use crate::store::StoreError;
use crate::store::runs::{lease_ms, now_ms};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS mcp_sessions (
    id TEXT PRIMARY KEY,
    expires_ms INTEGER NOT NULL,
    state TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS mcp_sessions_expiry ON mcp_sessions(expires_ms);
";

impl SqliteStore {
    pub(super) fn put_mcp_session_row(
        &self,
        id: &str,
        state: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let now = now_ms() as i64;
        let conn = self.writer()?;
        conn.execute("DELETE FROM mcp_sessions WHERE expires_ms <= ?1", [now])
            .map_err(err)?;
        conn.execute(
            "INSERT OR REPLACE INTO mcp_sessions (id, expires_ms, state) VALUES (?1, ?2, ?3)",
            params![id, now.saturating_add(lease_ms(ttl) as i64), state],
        )
        .map_err(err)?;
        Ok(())
    }

    pub(super) fn get_mcp_session_row(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.conn()
            .query_row(
                "SELECT state FROM mcp_sessions WHERE id = ?1 AND expires_ms > ?2",
                params![id, now_ms() as i64],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)
    }

    pub(super) fn delete_mcp_session_row(&self, id: &str) -> Result<(), StoreError> {
        self.writer()?
            .execute("DELETE FROM mcp_sessions WHERE id = ?1", [id])
            .map_err(err)?;
        Ok(())
    }
}
