//! The audit trail in Redis: one list appended to (a record's position is its sequence number),
//! read in pages by the activity feed's queries.

use super::{RedisStore, from_json, to_json};
use crate::records::{ActivityQuery, AuditRecord};
use crate::store::StoreError;

impl RedisStore {
    pub(super) fn write_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        let (key, data) = (self.key(&["audit"]), to_json(record)?);
        if !record.is_change() {
            return self.with(|c| redis::cmd("RPUSH").arg(&key).arg(&data).query::<()>(c));
        }
        // the record and its count go in one transaction: a replica that reads the count sees
        // the change exactly when the trail has it
        let changes = self.key(&["changes"]);
        self.with(|c| {
            redis::pipe()
                .atomic()
                .cmd("RPUSH")
                .arg(&key)
                .arg(&data)
                .ignore()
                .cmd("INCR")
                .arg(&changes)
                .ignore()
                .query::<()>(c)
        })
    }

    /// How many changes the trail has recorded ([`Store::changes`](crate::store::Store::changes)).
    pub(super) fn change_count(&self) -> Result<u64, StoreError> {
        let changes = self.key(&["changes"]);
        let count: Option<u64> = self.with(|c| redis::cmd("GET").arg(&changes).query(c))?;
        Ok(count.unwrap_or(0))
    }
}

/// How many audit records one `LRANGE` reads while a query looks for its matches.
const AUDIT_PAGE: u64 = 512;

/// The matching records of a query as its pages go by, past its offset, up to its limit.
struct Matches<'q> {
    query: &'q ActivityQuery,
    skip: usize,
    out: Vec<AuditRecord>,
}

impl<'q> Matches<'q> {
    fn new(query: &'q ActivityQuery) -> Self {
        Matches {
            query,
            skip: query.offset(),
            out: Vec::new(),
        }
    }

    fn full(&self) -> bool {
        self.out.len() >= self.query.limit()
    }

    /// Takes the record at `seq` if it matches; `false` once the limit is reached.
    fn offer(&mut self, seq: u64, data: &str) -> Result<bool, StoreError> {
        let mut r: AuditRecord = from_json(data)?;
        if self.query.matches(&r) {
            if self.skip > 0 {
                self.skip -= 1;
            } else {
                r.seq = Some(seq);
                self.out.push(r);
            }
        }
        Ok(!self.full())
    }
}

impl RedisStore {
    /// The audit trail is one list that only grows (`RPUSH`), so a record's place in it, counted
    /// from 1, is its sequence number: fixed by the write that appended it, and never reused.
    pub(super) fn audit_after(
        &self,
        key: &str,
        query: &ActivityQuery,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let mut m = Matches::new(query);
        let mut start = query.after.unwrap_or(0);
        while !m.full() {
            let page = self.audit_range(key, start, start.saturating_add(AUDIT_PAGE - 1))?;
            for (i, data) in page.iter().enumerate() {
                if !m.offer(start + i as u64 + 1, data)? {
                    break;
                }
            }
            if (page.len() as u64) < AUDIT_PAGE {
                break;
            }
            start += AUDIT_PAGE;
        }
        Ok(m.out)
    }

    pub(super) fn audit_newest(
        &self,
        key: &str,
        query: &ActivityQuery,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let mut m = Matches::new(query);
        let mut end: u64 = self.with(|c| redis::cmd("LLEN").arg(key).query(c))?;
        while end > 0 && !m.full() {
            let start = end.saturating_sub(AUDIT_PAGE);
            let page = self.audit_range(key, start, end - 1)?;
            for (i, data) in page.iter().enumerate().rev() {
                if !m.offer(start + i as u64 + 1, data)? {
                    break;
                }
            }
            end = start;
        }
        Ok(m.out)
    }

    /// The records at indices `start..=stop` of the list (fewer past its end).
    fn audit_range(&self, key: &str, start: u64, stop: u64) -> Result<Vec<String>, StoreError> {
        // Redis indices are signed: past `i64::MAX` there is nothing to read
        let (Ok(start), Ok(stop)) = (i64::try_from(start), i64::try_from(stop)) else {
            return Ok(Vec::new());
        };
        self.with(|c| redis::cmd("LRANGE").arg(key).arg(start).arg(stop).query(c))
    }
}
