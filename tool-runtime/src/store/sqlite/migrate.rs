//! Files written by earlier versions of the store, brought to the current schema when opened.

use rusqlite::{Connection, OptionalExtension};

use super::err;
use crate::store::StoreError;

/// Files written when the journal was keyed by call id keep their entries: each moves to the
/// keyed table under its call id, which then names it.
pub(super) fn migrate_journal(conn: &Connection) -> Result<(), StoreError> {
    let old: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'journal'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(err)?;
    if old.is_some() {
        conn.execute_batch(
            "BEGIN IMMEDIATE;
             INSERT OR IGNORE INTO undo_journal (id, call_id, created_ms, undone, data)
                 SELECT call_id, call_id, 0, undone, data FROM journal;
             DROP TABLE journal;
             COMMIT;",
        )
        .map_err(err)?;
    }
    Ok(())
}

/// Files written before waiting operations were counted by session or by credential get the
/// column, filled from the data of the operations that wait, and the index that counts them.
pub(super) fn migrate_pending_counts(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch("BEGIN IMMEDIATE").map_err(err)?;
    let migrated = (|| {
        for column in ["session", "credential"] {
            let has: i64 = conn
                .query_row(
                    "SELECT count(*) FROM pragma_table_info('pending') WHERE name = ?1",
                    [column],
                    |r| r.get(0),
                )
                .map_err(err)?;
            if has == 0 {
                conn.execute_batch(&format!(
                    "ALTER TABLE pending ADD COLUMN {column} TEXT;
                     UPDATE pending SET {column} = json_extract(data, '$.{column}')
                         WHERE state = 'pending' AND json_valid(data);"
                ))
                .map_err(err)?;
            }
            conn.execute_batch(&format!(
                "CREATE INDEX IF NOT EXISTS pending_{column} \
                 ON pending(state, {column}, created_ms)"
            ))
            .map_err(err)?;
        }
        Ok(())
    })();
    let end = if migrated.is_ok() {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    let ended = conn.execute_batch(end).map_err(err);
    migrated.and(ended)
}
