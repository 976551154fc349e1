//! Agent runs in Redis: the run under `run:{id}`, its lease under `run_lease:{id}` (the
//! worker's name, expiring by itself on the server's clock), and an index of runs by when they
//! were last saved. Saving and claiming are scripts, so the lease is checked and written in one
//! step on the server.

use std::time::Duration;

use super::{RedisStore, from_json, to_json};
use crate::store::runs::{lease_ms, now_ms};
use crate::store::{RunLease, RunQuery, StoreError, StoredRun};

/// Writes a run (KEYS[1], data ARGV[3]) and gives its lease (KEYS[2]) to ARGV[1] for ARGV[2]
/// ms, if the run is new and nobody holds a lease on its id, or ARGV[1] holds the lease; indexes
/// it (KEYS[3]) by ARGV[4] (when saved) under its id ARGV[5]. Returns 1 if written, else 0.
const SAVE: &str = r"
local cur = redis.call('GET', KEYS[2])
if redis.call('EXISTS', KEYS[1]) == 1 then
  if cur ~= ARGV[1] then return 0 end
elseif cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
return 1
";

/// Gives the lease (KEYS[2]) of an existing run (KEYS[1]) to ARGV[1] for ARGV[2] ms if nobody
/// else holds it (an expired lease is gone by itself). Returns the run's data, or nil.
const CLAIM: &str = r"
local d = redis.call('GET', KEYS[1])
if not d then return false end
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= ARGV[1] then return false end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return d
";

/// Deletes the lease KEYS[1] if ARGV[1] holds it.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
";

/// Deletes run KEYS[1] (id ARGV[1]) and its entry in the index KEYS[3] if nobody holds its lease
/// (KEYS[2]), it was last saved before ARGV[2] ms and its status is one of ARGV[3..]. Returns 1
/// if deleted, else 0; an index entry whose run is gone is dropped.
const PRUNE: &str = r"
local d = redis.call('GET', KEYS[1])
if not d then
  redis.call('ZREM', KEYS[3], ARGV[1])
  return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local run = cjson.decode(d)
if tonumber(run.updated_ms) >= tonumber(ARGV[2]) then return 0 end
for i = 3, #ARGV do
  if run.status == ARGV[i] then
    redis.call('DEL', KEYS[1])
    redis.call('ZREM', KEYS[3], ARGV[1])
    return 1
  end
end
return 0
";

/// How many run ids one listing reads from the index at a time.
const PAGE: isize = 256;

impl RedisStore {
    fn run_keys(&self, id: &str) -> (String, String) {
        (self.key(&["run", id]), self.key(&["run_lease", id]))
    }

    pub(super) fn save_run_key(
        &self,
        run: &StoredRun,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let (key, lease) = self.run_keys(&run.id);
        // the first save's creation time is kept; the script fences the write itself
        let created_ms = match self.get_raw(&key)? {
            Some(d) => from_json::<StoredRun>(&d)?.created_ms,
            None => run.created_ms,
        };
        let data = to_json(&StoredRun {
            created_ms,
            lease: None,
            ..run.clone()
        })?;
        let index = self.key(&["runs"]);
        let written: i64 = self.with(|c| {
            redis::cmd("EVAL")
                .arg(SAVE)
                .arg(3)
                .arg(&key)
                .arg(&lease)
                .arg(&index)
                .arg(owner)
                .arg(lease_ms(ttl))
                .arg(&data)
                .arg(run.updated_ms)
                .arg(&run.id)
                .query(c)
        })?;
        Ok(written == 1)
    }

    pub(super) fn claim_run_key(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<StoredRun>, StoreError> {
        let (key, lease) = self.run_keys(id);
        let ms = lease_ms(ttl);
        let data: Option<String> = self.with(|c| {
            redis::cmd("EVAL")
                .arg(CLAIM)
                .arg(2)
                .arg(&key)
                .arg(&lease)
                .arg(owner)
                .arg(ms)
                .query(c)
        })?;
        data.map(|d| {
            let mut run: StoredRun = from_json(&d)?;
            run.lease = Some(RunLease {
                owner: owner.to_owned(),
                expires_ms: now_ms() + ms,
            });
            Ok(run)
        })
        .transpose()
    }

    pub(super) fn release_run_key(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        let (_, lease) = self.run_keys(id);
        self.with(|c| {
            redis::cmd("EVAL")
                .arg(RELEASE)
                .arg(1)
                .arg(&lease)
                .arg(owner)
                .query::<i64>(c)
        })
        .map(drop)
    }

    pub(super) fn get_run_key(&self, id: &str) -> Result<Option<StoredRun>, StoreError> {
        let (key, lease) = self.run_keys(id);
        let (data, owner, left): (Option<String>, Option<String>, i64) = self.with(|c| {
            redis::pipe()
                .cmd("GET")
                .arg(&key)
                .cmd("GET")
                .arg(&lease)
                .cmd("PTTL")
                .arg(&lease)
                .query(c)
        })?;
        data.map(|d| {
            let mut run: StoredRun = from_json(&d)?;
            run.lease = owner.filter(|_| left > 0).map(|owner| RunLease {
                owner,
                expires_ms: now_ms() + left as u64,
            });
            Ok(run)
        })
        .transpose()
    }

    pub(super) fn prune_run_keys(
        &self,
        statuses: &[&str],
        saved_before_ms: u64,
    ) -> Result<usize, StoreError> {
        if statuses.is_empty() {
            return Ok(0);
        }
        let index = self.key(&["runs"]);
        // the index is scored by when each run was last saved: only those before the limit
        let ids: Vec<String> = self.with(|c| {
            redis::cmd("ZRANGEBYSCORE")
                .arg(&index)
                .arg("-inf")
                .arg(format!("({saved_before_ms}"))
                .query(c)
        })?;
        let mut removed = 0;
        for id in ids {
            let (key, lease) = self.run_keys(&id);
            let gone: i64 = self.with(|c| {
                let mut cmd = redis::cmd("EVAL");
                cmd.arg(PRUNE)
                    .arg(3)
                    .arg(&key)
                    .arg(&lease)
                    .arg(&index)
                    .arg(&id)
                    .arg(saved_before_ms);
                for status in statuses {
                    cmd.arg(*status);
                }
                cmd.query(c)
            })?;
            if gone > 0 {
                // a removed run's start marks go with it
                self.drop_starts(&id)?;
            }
            removed += gone as usize;
        }
        Ok(removed)
    }

    pub(super) fn list_run_keys(&self, q: &RunQuery) -> Result<Vec<StoredRun>, StoreError> {
        let index = self.key(&["runs"]);
        let mut out = Vec::new();
        let mut start = 0isize;
        while out.len() < q.cap() {
            let ids: Vec<String> = self.with(|c| {
                redis::cmd("ZREVRANGE")
                    .arg(&index)
                    .arg(start)
                    .arg(start + PAGE - 1)
                    .query(c)
            })?;
            if ids.is_empty() {
                break;
            }
            start += PAGE;
            for id in ids {
                if let Some(run) = self.get_run_key(&id)?
                    && q.matches(&run)
                {
                    out.push(run);
                    if out.len() >= q.cap() {
                        break;
                    }
                }
            }
        }
        Ok(out)
    }
}
