//! Log entries a tool writes while it runs ([`CallContext::log`](crate::CallContext::log)): they
//! go to `tracing` always, and to the call's host (an MCP client gets `notifications/message`
//! at the level it set with `logging/setLevel`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// How severe an entry is: the eight levels of syslog (RFC 5424), which MCP uses, least severe
/// first, so that `level >= threshold` says whether an entry passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for whoever debugs the tool.
    Debug,
    /// What the tool is doing.
    Info,
    /// Normal but worth noticing.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A part of the system failed.
    Critical,
    /// Someone must act now.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level's name as MCP and syslog write it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of a tool's log, as its host receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// How severe it is.
    pub level: LogLevel,
    /// What it says.
    pub message: String,
}

/// Writes `message` as a `tracing` event at the closest of its levels, with the call's id, so
/// that an application's subscriber sees what the host sees.
pub(crate) fn trace(level: LogLevel, call_id: &str, message: &dyn fmt::Display) {
    match level {
        LogLevel::Debug => {
            tracing::debug!(target: "tool_runtime::tool_log", call_id, "{message}")
        }
        LogLevel::Info | LogLevel::Notice => {
            tracing::info!(target: "tool_runtime::tool_log", call_id, level = level.as_str(), "{message}")
        }
        LogLevel::Warning => {
            tracing::warn!(target: "tool_runtime::tool_log", call_id, "{message}")
        }
        LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
            tracing::error!(target: "tool_runtime::tool_log", call_id, level = level.as_str(), "{message}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_from_least_severe_and_speak_mcp() {
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Error < LogLevel::Emergency);
        assert_eq!(
            serde_json::to_value(LogLevel::Warning).unwrap(),
            serde_json::json!("warning")
        );
        let parsed: LogLevel = serde_json::from_str("\"notice\"").unwrap();
        assert_eq!(parsed, LogLevel::Notice);
    }
}
