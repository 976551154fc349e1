//! Agent runs and their leases: one row per run. Every change of a lease is one immediate
//! transaction, which SQLite serialises across connections and processes, so two claimants of
//! an expired lease cannot both win.

use std::time::Duration;

use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};

use super::{SqliteStore, err, sql_int};
use crate::store::runs::{lease_ms, now_ms};
use crate::store::{RunLease, RunQuery, StoreError, StoredRun};

const COLUMNS: &str =
    "id, status, session, created_ms, updated_ms, checkpoint, lease_owner, lease_until";

/// A row as a run, its lease shown only while it holds at `now`.
fn run_of(r: &Row<'_>, now: u64) -> rusqlite::Result<StoredRun> {
    let owner: Option<String> = r.get(6)?;
    let until: i64 = r.get(7)?;
    Ok(StoredRun {
        id: r.get(0)?,
        status: r.get(1)?,
        session: r.get(2)?,
        created_ms: r.get::<_, i64>(3)? as u64,
        updated_ms: r.get::<_, i64>(4)? as u64,
        checkpoint: r.get(5)?,
        lease: owner.filter(|_| until as u64 > now).map(|owner| RunLease {
            owner,
            expires_ms: until as u64,
        }),
    })
}

impl SqliteStore {
    pub(super) fn save_run_row(
        &self,
        run: &StoredRun,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut conn = self.writer()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let current: Option<(Option<String>, i64, i64)> = tx
            .query_row(
                "SELECT lease_owner, lease_until, created_ms FROM runs WHERE id = ?1",
                [&run.id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(err)?;
        let created = match current {
            Some((Some(held), until, created)) if held == owner && until as u64 > now => created,
            Some(_) => return Ok(false),
            None => sql_int(run.created_ms),
        };
        tx.execute(
            "INSERT OR REPLACE INTO runs (id, status, session, created_ms, updated_ms, checkpoint, \
             lease_owner, lease_until) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run.id,
                run.status,
                run.session,
                created,
                sql_int(run.updated_ms),
                run.checkpoint,
                owner,
                sql_int(now + lease_ms(ttl)),
            ],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(true)
    }

    pub(super) fn claim_run_row(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<StoredRun>, StoreError> {
        let now = now_ms();
        let mut conn = self.writer()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let changed = tx
            .execute(
                "UPDATE runs SET lease_owner = ?2, lease_until = ?3 WHERE id = ?1 \
                 AND (lease_owner IS NULL OR lease_owner = ?2 OR lease_until <= ?4)",
                params![id, owner, sql_int(now + lease_ms(ttl)), sql_int(now)],
            )
            .map_err(err)?;
        if changed == 0 {
            return Ok(None);
        }
        let run = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                |r| run_of(r, now),
            )
            .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(Some(run))
    }

    pub(super) fn release_run_row(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.writer()?
            .execute(
                "UPDATE runs SET lease_owner = NULL, lease_until = 0 \
                 WHERE id = ?1 AND lease_owner = ?2",
                params![id, owner],
            )
            .map_err(err)?;
        Ok(())
    }

    pub(super) fn prune_run_rows(
        &self,
        statuses: &[&str],
        saved_before_ms: u64,
    ) -> Result<usize, StoreError> {
        let now = now_ms();
        let conn = self.writer()?;
        let mut removed = 0;
        for status in statuses {
            removed += conn
                .execute(
                    "DELETE FROM runs WHERE status = ?1 AND updated_ms < ?2 \
                     AND (lease_owner IS NULL OR lease_until <= ?3)",
                    params![status, sql_int(saved_before_ms), sql_int(now)],
                )
                .map_err(err)?;
        }
        if removed > 0 {
            // a removed run's start marks go with it
            conn.execute(
                "DELETE FROM call_starts WHERE run_id NOT IN (SELECT id FROM runs)",
                [],
            )
            .map_err(err)?;
        }
        Ok(removed)
    }

    pub(super) fn get_run_row(&self, id: &str) -> Result<Option<StoredRun>, StoreError> {
        let now = now_ms();
        self.conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                |r| run_of(r, now),
            )
            .optional()
            .map_err(err)
    }

    pub(super) fn list_run_rows(&self, q: &RunQuery) -> Result<Vec<StoredRun>, StoreError> {
        let now = now_ms();
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM runs WHERE (?1 IS NULL OR status = ?1) \
                 AND (?2 IS NULL OR session = ?2) ORDER BY updated_ms DESC, id DESC LIMIT ?3"
            ))
            .map_err(err)?;
        let rows = stmt
            .query_map(params![q.status, q.session, sql_int(q.cap())], |r| {
                run_of(r, now)
            })
            .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }
}
