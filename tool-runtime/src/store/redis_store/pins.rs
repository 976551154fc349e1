//! Definition pins in Redis: every pin in one hash (`pins`, field: the tool), its hash beside it
//! in another (`pin_hashes`), so that the compare-and-set is one script that reads no JSON.

use super::{RedisStore, from_json, to_json};
use crate::store::{StoreError, ToolPin};

/// Writes pin ARGV[3] with hash ARGV[2] for tool ARGV[1] into KEYS[1] (pins) and KEYS[2]
/// (hashes) if the tool's current hash is ARGV[4] (empty: no pin). Returns 1 if written.
const PUT: &str = r"
local cur = redis.call('HGET', KEYS[2], ARGV[1]) or ''
if cur ~= ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
";

impl RedisStore {
    pub(super) fn put_pin_key(
        &self,
        pin: &ToolPin,
        replaces: Option<&str>,
    ) -> Result<bool, StoreError> {
        let (pins, hashes, data) = (
            self.key(&["pins"]),
            self.key(&["pin_hashes"]),
            to_json(pin)?,
        );
        let written: i64 = self.with(|c| {
            redis::cmd("EVAL")
                .arg(PUT)
                .arg(2)
                .arg(&pins)
                .arg(&hashes)
                .arg(&pin.tool)
                .arg(&pin.hash)
                .arg(&data)
                .arg(replaces.unwrap_or(""))
                .query(c)
        })?;
        Ok(written == 1)
    }

    pub(super) fn get_pin_key(&self, tool: &str) -> Result<Option<ToolPin>, StoreError> {
        let key = self.key(&["pins"]);
        let data: Option<String> =
            self.with(|c| redis::cmd("HGET").arg(&key).arg(tool).query(c))?;
        data.as_deref().map(from_json).transpose()
    }

    pub(super) fn list_pin_keys(&self) -> Result<Vec<ToolPin>, StoreError> {
        let key = self.key(&["pins"]);
        let all: Vec<(String, String)> = self.with(|c| redis::cmd("HGETALL").arg(&key).query(c))?;
        let mut pins = all
            .iter()
            .map(|(_, data)| from_json::<ToolPin>(data))
            .collect::<Result<Vec<_>, _>>()?;
        pins.sort_by(|a, b| a.tool.cmp(&b.tool));
        Ok(pins)
    }
}
