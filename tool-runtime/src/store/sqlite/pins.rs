//! Definition pins: one row per tool. Replacing a pin is one immediate transaction, which SQLite
//! serialises across connections and processes, so the compare-and-set on its hash holds
//! between processes.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{SqliteStore, err};
use crate::store::{StoreError, ToolPin};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pins (
    tool TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    data TEXT NOT NULL
);
";

fn pin_of(data: &str) -> Result<ToolPin, StoreError> {
    serde_json::from_str(data).map_err(|e| StoreError::new(format!("corrupt pin: {e}")))
}

impl SqliteStore {
    pub(super) fn put_pin_row(
        &self,
        pin: &ToolPin,
        replaces: Option<&str>,
    ) -> Result<bool, StoreError> {
        let data = serde_json::to_string(pin).map_err(|e| StoreError::new(e.to_string()))?;
        let mut conn = self.writer()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let current: Option<String> = tx
            .query_row("SELECT hash FROM pins WHERE tool = ?1", [&pin.tool], |r| {
                r.get(0)
            })
            .optional()
            .map_err(err)?;
        if current.as_deref() != replaces {
            return Ok(false);
        }
        tx.execute(
            "INSERT OR REPLACE INTO pins (tool, hash, data) VALUES (?1, ?2, ?3)",
            params![pin.tool, pin.hash, data],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(true)
    }

    pub(super) fn get_pin_row(&self, tool: &str) -> Result<Option<ToolPin>, StoreError> {
        let data: Option<String> = self
            .conn()
            .query_row("SELECT data FROM pins WHERE tool = ?1", [tool], |r| {
                r.get(0)
            })
            .optional()
            .map_err(err)?;
        data.as_deref().map(pin_of).transpose()
    }

    pub(super) fn list_pin_rows(&self) -> Result<Vec<ToolPin>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT data FROM pins ORDER BY tool")
            .map_err(err)?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(err)?;
        let mut pins = Vec::new();
        for data in rows {
            pins.push(pin_of(&data.map_err(err)?)?);
        }
        Ok(pins)
    }
}
