//! Boards of short-lived entries in Redis: one hash per board (`live:<board>`, field: the key)
//! with the entries' expiry times in a sorted set beside it (`live_exp:<board>`), so that one
//! entry expires without the others and a listing drops what expired. Each operation is one
//! script, so that a take is seen by one taker only.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::RedisStore;
use crate::store::StoreError;
use crate::store::runs::lease_ms;

/// Writes entry ARGV[2] under ARGV[1] into KEYS[1], expiring at ARGV[3] (ms) in KEYS[2].
const PUT: &str = r"
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
";

/// Drops the entries of KEYS[1]/KEYS[2] expired at ARGV[1] (ms), then returns the rest.
const LIST: &str = r"
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for _, k in ipairs(gone) do redis.call('HDEL', KEYS[1], k) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
return redis.call('HGETALL', KEYS[1])
";

/// Removes entry ARGV[1] of KEYS[1]/KEYS[2]; returns it unless it expired before ARGV[2] (ms).
const TAKE: &str = r"
local entry = redis.call('HGET', KEYS[1], ARGV[1])
local expiry = redis.call('ZSCORE', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if entry and expiry and tonumber(expiry) > tonumber(ARGV[2]) then return entry end
return false
";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl RedisStore {
    fn board_keys(&self, board: &str) -> (String, String) {
        (self.key(&["live", board]), self.key(&["live_exp", board]))
    }

    pub(super) fn put_live_entry(
        &self,
        board: &str,
        key: &str,
        entry: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let (entries, expiries) = self.board_keys(board);
        let expires = now_ms().saturating_add(lease_ms(ttl));
        self.with(|c| {
            redis::cmd("EVAL")
                .arg(PUT)
                .arg(2)
                .arg(&entries)
                .arg(&expiries)
                .arg(key)
                .arg(entry)
                .arg(expires)
                .query::<i64>(c)
        })
        .map(drop)
    }

    pub(super) fn list_live_entries(
        &self,
        board: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let (entries, expiries) = self.board_keys(board);
        self.with(|c| {
            redis::cmd("EVAL")
                .arg(LIST)
                .arg(2)
                .arg(&entries)
                .arg(&expiries)
                .arg(now_ms())
                .query(c)
        })
    }

    pub(super) fn take_live_entry(
        &self,
        board: &str,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        let (entries, expiries) = self.board_keys(board);
        self.with(|c| {
            redis::cmd("EVAL")
                .arg(TAKE)
                .arg(2)
                .arg(&entries)
                .arg(&expiries)
                .arg(key)
                .arg(now_ms())
                .query(c)
        })
    }
}
