//! A store in Redis, for several processes (or machines) sharing pending operations, approvals,
//! the journal and the audit trail. Keys live under a prefix (default `tools:`).
//!
//! Resolving a pending operation is one Lua script (membership in the pending index is checked
//! and removed atomically), so exactly one of any number of approvers wins, as with SQLite.

use std::sync::Mutex;
use std::time::Duration;

use super::persisted::{
    AuditBacklog, read_operation, readable_operations, unreadable_operations, with_id,
};
use super::{
    GateScope, JournalEntry, PendingCount, PendingOperation, PendingState, Resolve, Scrubbed,
    Store, StoreError, UnreadableOperation, scrubbed,
};
use crate::records::{ActivityQuery, AuditRecord, Outcome, Window};
use crate::tool::Credential;

mod audit;
mod live;
mod mcp_sessions;
mod pins;
mod runs;
mod starts;

/// A [`Store`] in Redis (synchronous connection, one per handle, reconnected after a failure).
///
/// Every command is bounded by a timeout (default 5 s, [`RedisStore::with_timeout`]): a server
/// that is down, paused or stuck makes calls fail with a retryable `STORE_UNAVAILABLE` error
/// instead of hanging them.
pub struct RedisStore {
    link: RedisLink,
    prefix: String,
    backlog: AuditBacklog,
}

/// How long connecting, sending a command and waiting for its reply may each take.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// One synchronous Redis connection, made when first needed and made again once when a command
/// finds it dropped. Shared by the store and the embedding cache.
pub(crate) struct RedisLink {
    client: redis::Client,
    conn: Mutex<Option<redis::Connection>>,
    timeout: Duration,
}

impl RedisLink {
    /// A link to `url`; nothing is connected until the first command.
    pub(crate) fn new(url: &str) -> redis::RedisResult<Self> {
        Ok(RedisLink {
            client: redis::Client::open(url)?,
            conn: Mutex::new(None),
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// A new connection whose connecting, reads and writes are bounded by the timeout.
    fn open(&self) -> redis::RedisResult<redis::Connection> {
        let conn = self.client.get_connection_with_timeout(self.timeout)?;
        conn.set_read_timeout(Some(self.timeout))?;
        conn.set_write_timeout(Some(self.timeout))?;
        Ok(conn)
    }

    /// Connects now, so that a wrong address is reported when opening.
    pub(crate) fn connect(&self) -> redis::RedisResult<()> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(self.open()?);
        }
        Ok(())
    }

    /// Runs `f` on the connection, reconnecting once if the connection was lost.
    // The embedding cache's Redis backend is the one user of a bare link.
    #[cfg(all(feature = "select", feature = "sqlite"))]
    pub(crate) fn with<T>(
        &self,
        f: impl Fn(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, String> {
        self.try_with(f).map_err(|e| e.message)
    }

    /// [`RedisLink::with`], its failures classified: a server that cannot be reached, is lost,
    /// answers too late or is loading is retryable; anything else is not.
    ///
    /// A command whose reply did not come in time is not sent again (it may still take effect,
    /// and sending it twice could apply it twice); its connection is dropped, so that the late
    /// reply cannot be taken for the answer to a later command.
    pub(crate) fn try_with<T>(
        &self,
        f: impl Fn(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let ms = self.timeout.as_millis();
        for attempt in 0..2 {
            if guard.is_none() {
                *guard = Some(self.open().map_err(|e| {
                    StoreError::unavailable(if e.is_timeout() {
                        format!("redis did not accept a connection within {ms} ms ({e})")
                    } else {
                        format!("redis cannot be reached ({e})")
                    })
                })?);
            }
            let conn = guard.as_mut().expect("connected above");
            match f(conn) {
                Ok(v) => return Ok(v),
                Err(e) if e.is_timeout() => {
                    *guard = None;
                    return Err(StoreError::unavailable(format!(
                        "redis did not answer within {ms} ms; the request may still take effect \
                         there, so check its state before repeating it ({e})"
                    )));
                }
                Err(e) if e.is_io_error() || e.is_connection_dropped() => {
                    *guard = None;
                    if attempt == 1 {
                        return Err(StoreError::unavailable(format!(
                            "the connection to redis was lost ({e})"
                        )));
                    }
                }
                Err(e) => {
                    let passing = matches!(
                        e.code(),
                        Some("LOADING" | "BUSY" | "TRYAGAIN" | "MASTERDOWN" | "CLUSTERDOWN")
                    );
                    return Err(if passing {
                        StoreError::unavailable(format!("redis is not ready ({e})"))
                    } else {
                        StoreError::new(e.to_string())
                    });
                }
            }
        }
        unreachable!("the second attempt returns")
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Sliding-window rate limits shared by every process on the server, in one script so that no
/// two callers can both take a window's last slot. Each window is a sorted set of call times;
/// the server's clock (`TIME`) is the one clock every replica agrees on. Replies 0 when the call
/// was counted in every window, else the milliseconds until the fullest one has room (nothing
/// counted). KEYS: one sorted set per window; ARGV: a unique member, then max calls and window
/// length (ms) per key.
const RATE: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = 0
for i, key in ipairs(KEYS) do
  local max = tonumber(ARGV[2 * i])
  local win = tonumber(ARGV[2 * i + 1])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - win)
  if redis.call('ZCARD', key) >= max then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    local free = tonumber(oldest[2]) + win - now
    if free < 1 then free = 1 end
    if free > wait then wait = free end
  end
end
if wait > 0 then return wait end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, ARGV[1])
  redis.call('PEXPIRE', key, tonumber(ARGV[2 * i + 1]))
end
return 0
"#;

/// Moves an operation out of one state index (KEYS[2]: pending, or approved) and writes its new
/// data if and only if it was in that index, takes it out of its session's and its credential's
/// waiting operations (KEYS[3], KEYS[4]), then, when KEYS[5] is given, adds it to that index
/// (approved) with the score ARGV[3]. Returns "0" (unknown), "1<data>" (not in the state it was expected in) or
/// "2<data before>".
const RESOLVE: &str = r"
local d = redis.call('GET', KEYS[1])
if not d then return '0' end
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return '1' .. d end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
if KEYS[5] then redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1]) end
return '2' .. d
";

/// Writes a journal entry (KEYS[1]) unless one with its id exists, and indexes its id (ARGV[3])
/// under its call id (KEYS[2], score ARGV[2]: when it was made). Returns 1 if written, else 0.
const PUT_JOURNAL: &str = r"
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1
";

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::new(e.to_string())
}

impl RedisStore {
    /// Connects to `url` (`redis://127.0.0.1:6379/0`) with the key prefix `tools:`.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Self::with_prefix(url, "tools:")
    }

    /// Connects with a key prefix of your own (several applications on one server).
    pub fn with_prefix(url: &str, prefix: &str) -> Result<Self, StoreError> {
        let link = RedisLink::new(url).map_err(err)?;
        link.connect().map_err(|e| {
            StoreError::unavailable(format!(
                "cannot connect to {}: {e}",
                super::without_password(url)
            ))
        })?;
        Ok(RedisStore {
            link,
            prefix: prefix.to_owned(),
            backlog: AuditBacklog::default(),
        })
    }

    /// Sets how long connecting, sending a command and waiting for its reply may each take
    /// (default 5 s). A command that takes longer fails with a retryable `STORE_UNAVAILABLE`
    /// error; it is not sent again, and may still take effect on the server.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.link.timeout = timeout;
        let conn = self.link.conn.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = conn.as_ref() {
            let applied = c
                .set_read_timeout(Some(timeout))
                .and_then(|()| c.set_write_timeout(Some(timeout)));
            if applied.is_err() {
                // connected again, with the timeout, when next needed
                *conn = None;
            }
        }
        self
    }

    fn key(&self, parts: &[&str]) -> String {
        let mut k = self.prefix.clone();
        k.push_str(&parts.join(":"));
        k
    }

    /// The sorted set of the operations of `session` that wait (ids by creation time), kept by
    /// the same transaction or script that parks or resolves one, so that counting them is one
    /// `ZCARD` however many wait.
    fn session_key(&self, session: Option<&str>) -> String {
        match session {
            Some(s) => self.key(&["pending_of", "session", s]),
            None => self.key(&["pending_of", "none"]),
        }
    }

    /// The sorted set of the operations of `credential` that wait, kept like the session's. Calls
    /// without a credential are not counted: their key is never written.
    fn credential_key(&self, credential: Option<&Credential>) -> String {
        match credential {
            Some(c) => self.key(&["pending_of", "credential", c.as_str()]),
            None => self.key(&["pending_of", "no_credential"]),
        }
    }

    fn with<T>(
        &self,
        f: impl Fn(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        self.link.try_with(f)
    }

    fn get_json<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StoreError> {
        let data: Option<String> = self.with(|c| redis::cmd("GET").arg(key).query(c))?;
        data.map(|d| {
            serde_json::from_str(&d).map_err(|e| StoreError::new(format!("corrupt value: {e}")))
        })
        .transpose()
    }
}

impl RedisStore {
    /// The operations of a state index (by creation time), as `(id, data)` rows.
    fn index_rows(&self, index: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.index_range(index, 0, -1)
    }

    /// The rows from rank `start` to `stop` (inclusive, negative from the end) of a state index.
    fn index_range(
        &self,
        index: &str,
        start: i64,
        stop: i64,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let index = self.key(&[index]);
        let ids: Vec<String> = self.with(|c| {
            redis::cmd("ZRANGE")
                .arg(&index)
                .arg(start)
                .arg(stop)
                .query(c)
        })?;
        let mut rows = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(data) = self.get_raw(&self.key(&["pending", &id]))? {
                rows.push((id, data));
            }
        }
        Ok(rows)
    }

    /// The readable operations of a state index (by creation time).
    fn list_index(&self, index: &str) -> Result<Vec<PendingOperation>, StoreError> {
        Ok(readable_operations(self.index_rows(index)?))
    }

    fn get_raw(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.with(|c| redis::cmd("GET").arg(key).query(c))
    }

    /// Moves an operation from the state of `from_index` to `to`, atomically (see [`RESOLVE`]);
    /// `into_approved` also adds it to the approved index.
    fn transition(
        &self,
        id: &str,
        from_index: &str,
        to: &PendingState,
        into_approved: bool,
    ) -> Result<Resolve, StoreError> {
        let Some(mut op) = self.get_pending(id)? else {
            return Ok(Resolve::NotFound);
        };
        op.state = to.clone();
        let new = to_json(&op)?;
        let (key, from) = (self.key(&["pending", id]), self.key(&[from_index]));
        let (session, credential, approved) = (
            self.session_key(op.session.as_deref()),
            self.credential_key(op.credential.as_ref()),
            self.key(&["approved_index"]),
        );
        let reply: String = self.with(|c| {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(RESOLVE);
            if into_approved {
                cmd.arg(5).arg(&key).arg(&from).arg(&session);
                cmd.arg(&credential).arg(&approved);
            } else {
                cmd.arg(4)
                    .arg(&key)
                    .arg(&from)
                    .arg(&session)
                    .arg(&credential);
            }
            cmd.arg(id).arg(&new).arg(op.created_ms).query(c)
        })?;
        let (code, data) = reply.split_at(1);
        match code {
            "2" => Ok(Resolve::Won(Box::new(from_json(data)?))),
            "1" => Ok(Resolve::AlreadyResolved(
                from_json::<PendingOperation>(data)?.state,
            )),
            _ => Ok(Resolve::NotFound),
        }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(err)
}

fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::new(format!("corrupt value: {e}")))
}

impl Store for RedisStore {
    fn put_pending(&self, op: &PendingOperation) -> Result<(), StoreError> {
        let data = to_json(op)?;
        let key = self.key(&["pending", &op.id]);
        let index = self.key(&["pending_index"]);
        let session = self.session_key(op.session.as_deref());
        let credential = (op.credential.as_ref()).map(|c| self.credential_key(Some(c)));
        let pending = op.state == PendingState::Pending;
        self.with(|c| {
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("SET").arg(&key).arg(&data).ignore();
            if pending {
                for index in [Some(&index), Some(&session), credential.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    pipe.cmd("ZADD")
                        .arg(index)
                        .arg(op.created_ms)
                        .arg(&op.id)
                        .ignore();
                }
            }
            pipe.query::<()>(c)
        })
    }

    fn count_pending(
        &self,
        session: Option<&str>,
        credential: Option<&Credential>,
    ) -> Result<PendingCount, StoreError> {
        let index = self.key(&["pending_index"]);
        let (session, of_credential) = (self.session_key(session), self.credential_key(credential));
        let (total, of_session, of_credential): (usize, usize, usize) = self.with(|c| {
            redis::pipe()
                .cmd("ZCARD")
                .arg(&index)
                .cmd("ZCARD")
                .arg(&session)
                .cmd("ZCARD")
                .arg(&of_credential)
                .query(c)
        })?;
        Ok(PendingCount {
            total,
            session: of_session,
            credential: if credential.is_some() {
                of_credential
            } else {
                0
            },
        })
    }

    fn get_pending(&self, id: &str) -> Result<Option<PendingOperation>, StoreError> {
        (self.get_raw(&self.key(&["pending", id]))?)
            .map(|data| read_operation(id, &data))
            .transpose()
    }

    fn list_pending(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.list_index("pending_index")
    }

    fn list_pending_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<PendingOperation>, StoreError> {
        // only the page's operations are read: a range of the index by creation time
        if limit == 0 {
            return Ok(Vec::new());
        }
        let start = i64::try_from(offset).unwrap_or(i64::MAX);
        let stop = start.saturating_add(i64::try_from(limit).unwrap_or(i64::MAX) - 1);
        Ok(readable_operations(self.index_range(
            "pending_index",
            start,
            stop,
        )?))
    }

    fn resolve_pending(&self, id: &str, to: &PendingState) -> Result<Resolve, StoreError> {
        let into_approved = matches!(to, PendingState::Approved { .. });
        self.transition(id, "pending_index", to, into_approved)
    }

    fn complete_pending(&self, id: &str, outcome: &Outcome) -> Result<(), StoreError> {
        if let Some(mut op) = self.get_pending(id)? {
            op.state = PendingState::Completed {
                outcome: Box::new(outcome.clone()),
            };
            let (key, data) = (self.key(&["pending", id]), to_json(&op)?);
            let approved = self.key(&["approved_index"]);
            self.with(|c| {
                redis::pipe()
                    .atomic()
                    .cmd("SET")
                    .arg(&key)
                    .arg(&data)
                    .ignore()
                    .cmd("ZREM")
                    .arg(&approved)
                    .arg(id)
                    .ignore()
                    .query::<()>(c)
            })?;
        }
        Ok(())
    }

    fn list_approved(&self) -> Result<Vec<PendingOperation>, StoreError> {
        self.list_index("approved_index")
    }

    fn scrub_decided(&self, id: &str, with: &Scrubbed) -> Result<bool, StoreError> {
        let Some(op) = self.get_pending(id)? else {
            return Ok(false);
        };
        let Some(op) = scrubbed(op, with) else {
            return Ok(false);
        };
        // a decided operation changes no more, so nothing can be lost between the read and
        // this write
        let key = self.key(&["pending", id]);
        let data = to_json(&op)?;
        self.with(|c| {
            redis::cmd("SET")
                .arg(&key)
                .arg(&data)
                .arg("XX")
                .query::<()>(c)
        })?;
        Ok(true)
    }

    fn list_unreadable(&self) -> Result<Vec<UnreadableOperation>, StoreError> {
        let mut found = Vec::new();
        for (index, state) in [("pending_index", "pending"), ("approved_index", "approved")] {
            let rows = self.index_rows(index)?;
            found.extend(unreadable_operations(
                rows.into_iter()
                    .map(|(id, data)| (id, state.to_owned(), data)),
            ));
        }
        Ok(found)
    }

    fn close_unreadable(&self, id: &str) -> Result<bool, StoreError> {
        let Some(data) = self.get_raw(&self.key(&["pending", id]))? else {
            return Ok(false);
        };
        if read_operation(id, &data).is_ok() {
            return Ok(false);
        }
        // its session and credential, if that much of it can be read, to stop counting it as
        // waiting there
        let value = serde_json::from_str::<serde_json::Value>(&data).ok();
        let field = |name: &str| Some(value.as_ref()?.get(name)?.as_str()?.to_owned());
        let credential = field("credential").map(Credential::new);
        let waiting_in = [
            self.session_key(field("session").as_deref()),
            self.credential_key(credential.as_ref()),
        ];
        let mut closed = false;
        for index in [self.key(&["pending_index"]), self.key(&["approved_index"])] {
            let removed: i64 = self.with(|c| redis::cmd("ZREM").arg(&index).arg(id).query(c))?;
            closed |= removed == 1;
        }
        for set in &waiting_in {
            self.with(|c| redis::cmd("ZREM").arg(set).arg(id).query::<()>(c))?;
        }
        Ok(closed)
    }

    fn settle_approved(&self, id: &str, outcome: &Outcome) -> Result<Resolve, StoreError> {
        let to = PendingState::Completed {
            outcome: Box::new(outcome.clone()),
        };
        self.transition(id, "approved_index", &to, false)
    }

    fn approve_gate(&self, scope: GateScope<'_>, tool: &str) -> Result<(), StoreError> {
        let key = self.key(&["gates"]);
        let member = format!("{}|{tool}", scope.key());
        self.with(|c| redis::cmd("SADD").arg(&key).arg(&member).query::<()>(c))
    }

    fn is_gate_approved(&self, scope: GateScope<'_>, tool: &str) -> Result<bool, StoreError> {
        let key = self.key(&["gates"]);
        let member = format!("{}|{tool}", scope.key());
        self.with(|c| redis::cmd("SISMEMBER").arg(&key).arg(&member).query(c))
    }

    fn put_pin(&self, pin: &super::ToolPin, replaces: Option<&str>) -> Result<bool, StoreError> {
        self.put_pin_key(pin, replaces)
    }

    fn get_pin(&self, tool: &str) -> Result<Option<super::ToolPin>, StoreError> {
        self.get_pin_key(tool)
    }

    fn list_pins(&self) -> Result<Vec<super::ToolPin>, StoreError> {
        self.list_pin_keys()
    }

    fn mark_started(&self, run_id: &str, start: &super::CallStart) -> Result<(), StoreError> {
        self.push_start(run_id, start)
    }

    fn started_calls(&self, run_id: &str) -> Result<Vec<super::CallStart>, StoreError> {
        self.start_list(run_id)
    }

    fn forget_starts(&self, run_id: &str) -> Result<(), StoreError> {
        self.drop_starts(run_id)
    }

    fn put_journal(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        let (key, data) = (self.key(&["journal", &entry.id]), to_json(entry)?);
        let index = self.key(&["journal_of", &entry.call_id]);
        let written: i64 = self.with(|c| {
            redis::cmd("EVAL")
                .arg(PUT_JOURNAL)
                .arg(2)
                .arg(&key)
                .arg(&index)
                .arg(&data)
                .arg(entry.created_ms)
                .arg(&entry.id)
                .query(c)
        })?;
        if written == 0 {
            return Err(StoreError::new(format!(
                "journal entry {:?} already exists",
                entry.id
            )));
        }
        Ok(())
    }

    fn get_journal(&self, id: &str) -> Result<Option<JournalEntry>, StoreError> {
        let Some(e) = self.get_json::<JournalEntry>(&self.key(&["journal", id]))? else {
            return Ok(None);
        };
        let mut e = with_id(e);
        let undone = self.key(&["journal_undone", id]);
        // the flag key is authoritative: claim_undo changes only the flag
        e.undone = self.with(|c| redis::cmd("EXISTS").arg(&undone).query(c))?;
        Ok(Some(e))
    }

    fn journal_of_call(&self, call_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let index = self.key(&["journal_of", call_id]);
        let ids: Vec<String> =
            self.with(|c| redis::cmd("ZRANGE").arg(&index).arg(0).arg(-1).query(c))?;
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            found.extend(self.get_journal(&id)?);
        }
        Ok(found)
    }

    fn claim_undo(&self, id: &str) -> Result<bool, StoreError> {
        let journal = self.key(&["journal", id]);
        if !self.with(|c| redis::cmd("EXISTS").arg(&journal).query::<bool>(c))? {
            return Ok(false);
        }
        let undone = self.key(&["journal_undone", id]);
        let set: Option<String> =
            self.with(|c| redis::cmd("SET").arg(&undone).arg(1).arg("NX").query(c))?;
        Ok(set.is_some())
    }

    fn release_undo(&self, id: &str) -> Result<(), StoreError> {
        let undone = self.key(&["journal_undone", id]);
        self.with(|c| redis::cmd("DEL").arg(&undone).query::<()>(c))
    }

    fn acquire_rate(
        &self,
        windows: &[(String, Window)],
    ) -> Result<Option<Result<(), Duration>>, StoreError> {
        if windows.is_empty() {
            return Ok(Some(Ok(())));
        }
        let keys: Vec<String> = windows
            .iter()
            .map(|(k, _)| self.key(&["rate", k]))
            .collect();
        let member = crate::store::new_operation_id();
        let wait_ms: u64 = self.with(|c| {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(RATE).arg(keys.len());
            for k in &keys {
                cmd.arg(k);
            }
            cmd.arg(&member);
            for (_, w) in windows {
                cmd.arg(w.max_calls).arg(w.window_ms);
            }
            cmd.query(c)
        })?;
        Ok(Some(if wait_ms == 0 {
            Ok(())
        } else {
            Err(Duration::from_millis(wait_ms))
        }))
    }

    fn append_audit(&self, record: &AuditRecord) -> Result<(), StoreError> {
        self.backlog.append(record, &|r| self.write_audit(r))
    }

    fn query_audit(&self, query: &ActivityQuery) -> Result<Vec<AuditRecord>, StoreError> {
        // records kept through a passing fault go in first; if the server still refuses them,
        // the query shows what is written
        let _ = self.backlog.flush(&|r| self.write_audit(r));
        let key = self.key(&["audit"]);
        if query.oldest_first() {
            self.audit_after(&key, query)
        } else {
            self.audit_newest(&key, query)
        }
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
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.save_run_key(run, owner, ttl)
    }

    fn claim_run(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<super::StoredRun>, StoreError> {
        self.claim_run_key(id, owner, ttl)
    }

    fn release_run(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        self.release_run_key(id, owner)
    }

    fn prune_runs(&self, statuses: &[&str], saved_before_ms: u64) -> Result<usize, StoreError> {
        self.prune_run_keys(statuses, saved_before_ms)
    }

    fn get_run(&self, id: &str) -> Result<Option<super::StoredRun>, StoreError> {
        self.get_run_key(id)
    }

    fn list_runs(&self, query: &super::RunQuery) -> Result<Vec<super::StoredRun>, StoreError> {
        self.list_run_keys(query)
    }

    fn kind(&self) -> &'static str {
        "redis"
    }

    fn put_mcp_session(&self, id: &str, state: &str, ttl: Duration) -> Result<(), StoreError> {
        self.put_mcp_session_key(id, state, ttl)
    }

    fn get_mcp_session(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.get_mcp_session_key(id)
    }

    fn delete_mcp_session(&self, id: &str) -> Result<(), StoreError> {
        self.delete_mcp_session_key(id)
    }

    fn put_live(
        &self,
        board: &str,
        key: &str,
        entry: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.put_live_entry(board, key, entry, ttl).map(|()| true)
    }

    fn list_live(&self, board: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.list_live_entries(board)
    }

    fn take_live(&self, board: &str, key: &str) -> Result<Option<String>, StoreError> {
        self.take_live_entry(board, key)
    }
}
