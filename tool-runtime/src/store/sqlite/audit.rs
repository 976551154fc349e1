//! The audit trail's table: records written with their store-assigned sequence number, and the
//! activity feed's queries over it.

use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, err, from_json, json_err, sql_int, to_json};
use crate::records::{ActivityQuery, AuditRecord};
use crate::store::StoreError;

impl SqliteStore {
    pub(super) fn write_audit(&self, r: &AuditRecord) -> Result<(), StoreError> {
        let initiator = serde_json::to_value(r.initiator).map_err(json_err)?;
        let data = to_json(r)?;
        let conn = self.writer()?;
        let insert = |conn: &rusqlite::Connection| {
            // every call writes one: the statement is parsed once per connection, not per record
            conn.prepare_cached(
                "INSERT INTO audit (ts, tool, correlation_id, initiator, session, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                r.timestamp_ms as i64,
                r.tool,
                r.correlation_id.as_str(),
                initiator.as_str().unwrap_or_default(),
                r.session,
                data
            ])
            .map(drop)
        };
        if !r.is_change() {
            return insert(&conn).map_err(err);
        }
        // the record and its count commit together: a replica that reads the count sees the
        // change exactly when the trail has it
        let tx = conn.unchecked_transaction().map_err(err)?;
        insert(&tx).map_err(err)?;
        // the row is made by the first change: opening a file writes nothing to it
        tx.prepare_cached(
            "INSERT INTO changes (id, count) VALUES (1, 1) \
             ON CONFLICT (id) DO UPDATE SET count = count + 1",
        )
        .and_then(|mut bump| bump.execute([]))
        .map_err(err)?;
        tx.commit().map_err(err)
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
