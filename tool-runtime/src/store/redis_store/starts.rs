//! Call starts in Redis: a list per run (`call_starts:{run id}`), each mark one `RPUSH` that the
//! server has taken before the tool's body runs.

use super::{RedisStore, from_json, to_json};
use crate::store::{CallStart, StoreError};

impl RedisStore {
    pub(super) fn push_start(&self, run_id: &str, start: &CallStart) -> Result<(), StoreError> {
        let (key, data) = (self.key(&["call_starts", run_id]), to_json(start)?);
        self.with(|c| redis::cmd("RPUSH").arg(&key).arg(&data).query::<i64>(c))?;
        Ok(())
    }

    pub(super) fn start_list(&self, run_id: &str) -> Result<Vec<CallStart>, StoreError> {
        let key = self.key(&["call_starts", run_id]);
        let all: Vec<String> =
            self.with(|c| redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query(c))?;
        all.iter().map(|d| from_json(d)).collect()
    }

    pub(super) fn drop_starts(&self, run_id: &str) -> Result<(), StoreError> {
        let key = self.key(&["call_starts", run_id]);
        self.with(|c| redis::cmd("DEL").arg(&key).query::<i64>(c))?;
        Ok(())
    }
}
