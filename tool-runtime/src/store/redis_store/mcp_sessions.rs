//! MCP sessions in Redis: one string key per session (`mcp_session:<id>`), expired by Redis.

use std::time::Duration;

use super::RedisStore;
use crate::store::StoreError;
use crate::store::runs::lease_ms;

impl RedisStore {
    pub(super) fn put_mcp_session_key(
        &self,
        id: &str,
        state: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let key = self.key(&["mcp_session", id]);
        self.with(|c| {
            redis::cmd("SET")
                .arg(&key)
                .arg(state)
                .arg("PX")
                .arg(lease_ms(ttl))
                .query::<()>(c)
        })
    }

    pub(super) fn get_mcp_session_key(&self, id: &str) -> Result<Option<String>, StoreError> {
        let key = self.key(&["mcp_session", id]);
        self.with(|c| redis::cmd("GET").arg(&key).query(c))
    }

    pub(super) fn delete_mcp_session_key(&self, id: &str) -> Result<(), StoreError> {
        let key = self.key(&["mcp_session", id]);
        self.with(|c| redis::cmd("DEL").arg(&key).query::<()>(c))
    }
}
