//! The audit trail's table: records written with their store-assigned sequence number, and the
//! activity feed's queries over it.

use rusqlite::{Connection, OptionalExtension, params};

use super::spool::AuditSpool;
use super::{SqliteStore, err, from_json, json_err, sql_int, to_json};
use crate::records::{ActivityQuery, AuditRecord};
use crate::store::StoreError;

impl SqliteStore {
    /// Writes `r` into the spool when it goes there ([`SqliteStore::spool_append`]) and the
    /// spool takes it, else into the table.
    pub(super) fn write_audit(&self, r: &AuditRecord) -> Result<(), StoreError> {
        match self.spool_append(r, AuditSpool::append) {
            Some(Ok(())) => return Ok(()),
            Some(Err(e)) if e.retryable => tracing::warn!(error = %e.message,
                "the audit spool refused a record: it is written into the SQLite file"),
            Some(Err(e)) => return Err(e),
            None => {}
        }
        let row = AuditRow::of(r)?;
        let conn = self.writer()?;
        // a lock that stops the move stops the insert too, which reports it
        let _ = self.settle_before(&conn);
        row.insert(&conn, r)
    }

    /// [`SqliteStore::write_audit`] if it needs no waiting (the spool's append, or
    /// [`SqliteStore::write_now`]): `None`, with nothing written, otherwise.
    pub(super) fn try_write_audit(&self, r: &AuditRecord) -> Option<()> {
        if let Some(spooled) = self.spool_append(r, AuditSpool::try_append) {
            return spooled.ok();
        }
        let row = AuditRow::of(r).ok()?;
        self.write_now(|conn| {
            self.settle_before(conn)?;
            row.insert(conn, r)
        })
    }

    /// Moves the spool into the table before a record is inserted there, so that the trail
    /// keeps the order records were written in: what was spooled first gets the lower number.
    fn settle_before(&self, conn: &Connection) -> Result<(), StoreError> {
        self.spool
            .as_ref()
            .map_or(Ok(()), |spool| spool.settle(conn))
    }

    /// Appends `r` to the spool with `append` if it goes there (a record that is not a change,
    /// in a store whose spool is open; see the spool's module docs): `None` when it does not.
    /// A spool that did not take it is a retryable error (the table may); a file deleted or
    /// replaced while open is not, as for the table.
    fn spool_append(
        &self,
        r: &AuditRecord,
        append: fn(&AuditSpool, &str) -> std::io::Result<()>,
    ) -> Option<Result<(), StoreError>> {
        let spool = self.spool.as_deref().filter(|_| !r.is_change())?;
        Some(self.still_the_file().and_then(|()| {
            append(spool, &to_json(r)?)
                .map_err(|e| StoreError::unavailable(format!("the audit spool: {e}")))
        }))
    }

    /// Moves what the spool holds into the table, so that a query sees it; a spool that cannot
    /// be moved now leaves the query with what the table holds.
    pub(super) fn settle_spool(&self) {
        let Some(spool) = &self.spool else { return };
        let Ok(conn) = self.writer() else { return };
        if let Err(e) = spool.settle(&conn) {
            tracing::debug!(error = %e.message, "the audit spool could not be moved before a query");
        }
    }

    /// How many changes the trail has recorded ([`Store::changes`](crate::store::Store::changes)).
    pub(super) fn change_count(&self) -> Result<u64, StoreError> {
        let conn = self.conn();
        let count: Option<i64> = conn
            .prepare_cached("SELECT count FROM changes WHERE id = 1")
            .and_then(|mut read| read.query_row([], |row| row.get(0)).optional())
            .map_err(err)?;
        Ok(count.unwrap_or(0) as u64)
    }

    pub(super) fn query_written(&self, q: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        let mut sql = String::from("SELECT seq, data FROM audit WHERE 1 = 1");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        let mut push = |clause: &str, v: rusqlite::types::Value| {
            args.push(v);
            sql.push_str(&format!(" {clause} ?{}", args.len()));
        };
        if let Some(t) = &q.tool {
            push("AND tool =", t.clone().into());
        }
        if let Some(c) = &q.correlation_id {
            push("AND correlation_id =", c.clone().into());
        }
        if let Some(i) = q.initiator {
            let s = serde_json::to_value(i).map_err(json_err)?;
            push(
                "AND initiator =",
                s.as_str().unwrap_or_default().to_owned().into(),
            );
        }
        if let Some(s) = &q.session {
            push("AND session =", s.clone().into());
        }
        if let Some(t) = q.since_ms {
            push("AND ts >=", sql_int(t).into());
        }
        if let Some(after) = q.after {
            push("AND seq >", sql_int(after).into());
        }
        let order = if q.oldest_first() { "ASC" } else { "DESC" };
        push(
            &format!("ORDER BY seq {order} LIMIT"),
            sql_int(q.limit()).into(),
        );
        push("OFFSET", sql_int(q.offset()).into());
        let conn = self.writer()?;
        let mut stmt = conn.prepare(&sql).map_err(err)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(err)?;
        rows.map(|r| {
            let (seq, data) = r.map_err(err)?;
            let mut record: AuditRecord = from_json(&data)?;
            record.seq = u64::try_from(seq).ok();
            Ok(record)
        })
        .collect()
    }
}

/// The columns of a record made outside the connection's lock.
pub(super) struct AuditRow {
    initiator: serde_json::Value,
    data: String,
}

impl AuditRow {
    fn of(r: &AuditRecord) -> Result<Self, StoreError> {
        Self::with_text(r, to_json(r)?)
    }

    /// The row of `r`, whose JSON text is `data`.
    pub(super) fn with_text(r: &AuditRecord, data: String) -> Result<Self, StoreError> {
        Ok(AuditRow {
            initiator: serde_json::to_value(r.initiator).map_err(json_err)?,
            data,
        })
    }

    fn insert(&self, conn: &Connection, r: &AuditRecord) -> Result<(), StoreError> {
        if !r.is_change() {
            return self.insert_row(conn, r);
        }
        // the record and its count commit together: a replica that reads the count sees the
        // change exactly when the trail has it
        let tx = conn.unchecked_transaction().map_err(err)?;
        self.insert_row(&tx, r)?;
        // the row is made by the first change: opening a file writes nothing to it
        tx.prepare_cached(
            "INSERT INTO changes (id, count) VALUES (1, 1) \
             ON CONFLICT (id) DO UPDATE SET count = count + 1",
        )
        .and_then(|mut bump| bump.execute([]))
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    pub(super) fn insert_row(&self, conn: &Connection, r: &AuditRecord) -> Result<(), StoreError> {
        // every call writes one: the statement is parsed once per connection, not per record
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO audit (ts, tool, correlation_id, initiator, session, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(err)?;
        insert
            .execute(params![
                r.timestamp_ms as i64,
                r.tool,
                r.correlation_id.as_str(),
                self.initiator.as_str().unwrap_or_default(),
                r.session,
                self.data
            ])
            .map_err(err)?;
        Ok(())
    }
}
