//! The executor's configuration: one typed struct with the confirmation, audit and rate-limit
//! options, timeouts, retries and caching, loadable from a TOML file and the environment.
//!
//! Environment variables override the file: `TOOLS_<KEY>` for top-level keys and
//! `TOOLS_<SECTION>__<KEY>` for nested ones, values written as TOML literals
//! (`TOOLS_AUTO_CONFIRM_CREATE=true`, `TOOLS_DENY='["rm"]'`, `TOOLS_RETRY__MAX_ATTEMPTS=5`); a
//! value that is not a TOML literal is taken as a string (`TOOLS_STORE__PATH=/var/lib/t.db`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::definition::Safety;

/// Every option of the executor. `Default` is the safe configuration: read-only tools run
/// without asking, every other category asks first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecutorConfig {
    /// Read-only tools run without asking.
    pub auto_confirm_read_only: bool,
    /// Create (note-taking) tools run without asking.
    pub auto_confirm_create: bool,
    /// External tools run without asking once their first-time gate is passed.
    pub auto_confirm_external: bool,
    /// How long a person has to answer a confirmation; no answer is a denial.
    pub confirmation_timeout_ms: u64,
    /// External tools pass a first-time gate per session.
    pub require_first_time_gate: bool,
    /// A passed first-time gate is remembered across sessions (in the store).
    pub persist_first_time_approvals: bool,
    /// How calls that need a person are confirmed.
    ///
    /// - unset (the default): by the handler the program gives the builder, or parked as
    ///   pending operations when it gives none; `tools call` asks in the terminal;
    /// - `"inline"`: answered now, by the program's handler, which the builder then requires
    ///   (`tools call`: the terminal);
    /// - `"deferred"`: always parked as pending operations, whatever handler the program gave
    ///   (an operator's switch for unattended runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<ConfirmationMode>,
    /// Only these tools may run, when set.
    pub allow: Option<Vec<String>>,
    /// These tools never run.
    pub deny: Vec<String>,
    /// Timeout for tools that do not declare one.
    pub default_timeout_ms: u64,
    /// Retries of retryable failures.
    pub retry: RetryConfig,
    /// Rate limits.
    pub rate_limits: RateLimitConfig,
    /// The TTL cache of read-only results.
    pub cache: CacheConfig,
    /// How many calls of one model turn run at the same time.
    pub max_concurrency: usize,
    /// Results longer than this (as JSON text) are summarised for the model.
    pub max_result_chars: usize,
    /// Write an audit record for every call.
    pub log_tool_calls: bool,
    /// Whether a call whose audit record cannot be written counts as failed (default): it is
    /// logged as an error and the `tools` command line exits 1. Off, it is a warning. Either
    /// way the execution says so ([`Execution::audit_failure`](crate::Execution::audit_failure)).
    pub audit_required: bool,
    /// Record confirmation prompts and answers as tracing events.
    pub log_confirmations: bool,
    /// What the audit trail keeps of the arguments.
    pub audit_mode: AuditMode,
    /// The most operations one session may have waiting for a decision (session-less calls
    /// count as one session). Past it, a call that would wait is refused with
    /// `TOO_MANY_PENDING` instead of parked, so one client cannot flood the approvers.
    pub max_pending_per_session: usize,
    /// Keep the arguments of decided operations (denied, completed, abandoned) in the store as
    /// they were. Off (the default), they are replaced by their redacted form once the
    /// operation is decided: the approval needed them, nothing after it does.
    pub keep_decided_arguments: bool,
    /// Refuse a call of a tool that changes things (create, modify, external, unspecified) when
    /// a string in its arguments reads as instructions to a model, a chat-template marker, or
    /// script, SQL or shell meant to run elsewhere (`POTENTIAL_INJECTION`, with the argument's
    /// pointer), before anyone is asked. On by default.
    pub check_injection: bool,
    /// Where state lives.
    pub store: StoreConfig,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            auto_confirm_read_only: true,
            auto_confirm_create: false,
            auto_confirm_external: false,
            confirmation_timeout_ms: 30_000,
            require_first_time_gate: true,
            persist_first_time_approvals: true,
            confirmation: None,
            allow: None,
            deny: Vec::new(),
            default_timeout_ms: 30_000,
            retry: RetryConfig::default(),
            rate_limits: RateLimitConfig::default(),
            cache: CacheConfig::default(),
            max_concurrency: 8,
            max_result_chars: 16_000,
            log_tool_calls: true,
            audit_required: true,
            log_confirmations: true,
            audit_mode: AuditMode::Redacted,
            max_pending_per_session: 100,
            keep_decided_arguments: false,
            check_injection: true,
            store: StoreConfig::default(),
        }
    }
}

/// Inline confirmation (a handler awaits the answer) or deferred (a pending operation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationMode {
    /// Ask now and wait.
    Inline,
    /// Return a pending operation, approved or denied later by id.
    Deferred,
}

/// What the audit trail keeps of the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditMode {
    /// The arguments with secrets redacted.
    Redacted,
    /// No arguments and no result summary: ids, tool, decision, timing and status only
    /// (for deployments that must not log content).
    MetadataOnly,
}

/// Retries with exponential backoff and full jitter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts in total, the first included (1 disables retries).
    pub max_attempts: u32,
    /// The first backoff; doubled each retry.
    pub base_delay_ms: u64,
    /// The longest backoff.
    pub max_delay_ms: u64,
    /// Tools that are neither read-only nor idempotent but may be retried anyway.
    pub opt_in: Vec<String>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 3,
            base_delay_ms: 100,
            max_delay_ms: 5_000,
            opt_in: Vec::new(),
        }
    }
}

/// A sliding window: at most `max_calls` in any `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// Calls allowed in the window.
    pub max_calls: u32,
    /// The window's length.
    #[serde(default = "minute")]
    pub window_ms: u64,
}

fn minute() -> u64 {
    60_000
}

impl Window {
    /// `max_calls` per minute.
    pub fn per_minute(max_calls: u32) -> Self {
        Window {
            max_calls,
            window_ms: 60_000,
        }
    }

    /// The window's length.
    pub fn duration(&self) -> Duration {
        Duration::from_millis(self.window_ms)
    }
}

/// Rate limits per tool and per category. By default only the external category is limited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Per category (`read_only`, `create`, `modify`, `external`, `unspecified`).
    pub categories: HashMap<Safety, Window>,
    /// Per tool name.
    pub tools: BTreeMap<String, Window>,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            categories: HashMap::from([(Safety::External, Window::per_minute(10))]),
            tools: BTreeMap::new(),
        }
    }
}

/// The TTL cache of read-only results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// Whether read-only results are cached.
    pub enabled: bool,
    /// How long a result stays fresh.
    pub ttl_ms: u64,
    /// The most entries kept; the oldest go first.
    pub max_entries: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            ttl_ms: 300_000,
            max_entries: 1_024,
        }
    }
}

/// Where pending operations, approvals, the journal and the audit trail are kept.
///
/// In TOML, either a string naming the store or a table:
///
/// ```toml
/// store = "memory"                         # nothing kept after the process ends
/// store = "redis://127.0.0.1:6379/0"       # Redis (also rediss://, redis+unix://)
/// store = "sqlite:/var/lib/app/tools.db"   # SQLite (a plain path means SQLite too)
///
/// [store]                                  # or the table form
/// path = ".tools/state.sqlite3"            # SQLite file (the default)
/// url = "redis://127.0.0.1:6379/0"         # Redis; takes precedence over `path`
/// prefix = "myapp:"                        # Redis key prefix (default "tools:")
/// ```
///
/// From the environment: `TOOLS_STORE=redis://...`, `TOOLS_STORE=memory`, or one key at a time
/// (`TOOLS_STORE__URL`, `TOOLS_STORE__PATH`, `TOOLS_STORE__PREFIX`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoreConfig {
    /// The SQLite file (the default store); `None` (and no `url`) keeps everything in memory.
    pub path: Option<PathBuf>,
    /// A Redis URL; when set, Redis is the store and `path` is not used.
    pub url: Option<String>,
    /// The prefix of every Redis key (several applications on one server).
    pub prefix: String,
}

/// The store a [`StoreConfig`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind<'a> {
    /// In memory.
    Memory,
    /// A SQLite file.
    Sqlite(&'a Path),
    /// A Redis server.
    Redis {
        /// Its URL.
        url: &'a str,
        /// The key prefix.
        prefix: &'a str,
    },
}

/// The Redis key prefix used unless configured.
pub const DEFAULT_REDIS_PREFIX: &str = "tools:";

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            path: Some(PathBuf::from(".tools/state.sqlite3")),
            url: None,
            prefix: DEFAULT_REDIS_PREFIX.to_owned(),
        }
    }
}

impl StoreConfig {
    /// Everything in memory.
    pub fn memory() -> Self {
        StoreConfig {
            path: None,
            ..Default::default()
        }
    }

    /// A SQLite file.
    pub fn sqlite(path: impl Into<PathBuf>) -> Self {
        StoreConfig {
            path: Some(path.into()),
            ..Default::default()
        }
    }

    /// A Redis server, with the default key prefix.
    pub fn redis(url: impl Into<String>) -> Self {
        StoreConfig {
            path: None,
            url: Some(url.into()),
            ..Default::default()
        }
    }

    /// Parses the string form (`memory`, a Redis URL, `sqlite:PATH` or a path).
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err(
                "the store is empty; use \"memory\", a redis:// URL or a SQLite path".into(),
            );
        }
        if t.eq_ignore_ascii_case("memory") || t.eq_ignore_ascii_case("memory:") {
            return Ok(Self::memory());
        }
        if ["redis://", "rediss://", "redis+unix://", "unix://"]
            .iter()
            .any(|s| t.len() >= s.len() && t[..s.len()].eq_ignore_ascii_case(s))
        {
            return Ok(Self::redis(t));
        }
        let path = t
            .strip_prefix("sqlite://")
            .or_else(|| t.strip_prefix("sqlite:"))
            .unwrap_or(t);
        if path.is_empty() {
            return Err(format!("{text:?} names no SQLite file"));
        }
        if let Some((scheme, _)) = path.split_once("://") {
            return Err(format!(
                "unknown store scheme {scheme:?} in {text:?}; use \"memory\", redis:// or a SQLite path"
            ));
        }
        Ok(Self::sqlite(path))
    }

    /// Which store this is: Redis when `url` is set, else SQLite at `path`, else memory.
    pub fn kind(&self) -> StoreKind<'_> {
        match (&self.url, &self.path) {
            (Some(url), _) => StoreKind::Redis {
                url,
                prefix: &self.prefix,
            },
            (None, Some(path)) => StoreKind::Sqlite(path),
            (None, None) => StoreKind::Memory,
        }
    }

    /// Opens the store.
    pub fn open(
        &self,
    ) -> Result<std::sync::Arc<dyn crate::store::Store>, crate::store::StoreError> {
        use crate::store::{MemoryStore, RedisStore, SqliteStore};
        Ok(match self.kind() {
            StoreKind::Memory => std::sync::Arc::new(MemoryStore::new()),
            StoreKind::Sqlite(path) => std::sync::Arc::new(SqliteStore::open(path)?),
            StoreKind::Redis { url, prefix } => {
                std::sync::Arc::new(RedisStore::with_prefix(url, prefix)?)
            }
        })
    }
}

impl Serialize for StoreConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // memory has no table form (an absent `path` means the default file), so it is written
        // as the string; everything else as the table
        if self.kind() == StoreKind::Memory {
            return s.serialize_str("memory");
        }
        let mut t = s.serialize_struct("StoreConfig", 3)?;
        if let Some(path) = &self.path {
            t.serialize_field("path", path)?;
        }
        if let Some(url) = &self.url {
            t.serialize_field("url", url)?;
        }
        t.serialize_field("prefix", &self.prefix)?;
        t.end()
    }
}

/// The table form, with unknown keys refused.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct StoreTable {
    path: Option<PathBuf>,
    url: Option<String>,
    prefix: String,
}

impl Default for StoreTable {
    fn default() -> Self {
        let d = StoreConfig::default();
        StoreTable {
            path: d.path,
            url: d.url,
            prefix: d.prefix,
        }
    }
}

impl<'de> Deserialize<'de> for StoreConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = StoreConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("\"memory\", a redis:// URL, a SQLite path, or a [store] table")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<StoreConfig, E> {
                StoreConfig::parse(v).map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<StoreConfig, A::Error> {
                let t = StoreTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                if let Some(url) = &t.url
                    && !matches!(StoreConfig::parse(url).map(|c| c.url.is_some()), Ok(true))
                {
                    return Err(serde::de::Error::custom(format!(
                        "store.url {url:?} is not a redis:// URL"
                    )));
                }
                Ok(StoreConfig {
                    path: t.path,
                    url: t.url,
                    prefix: t.prefix,
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could have been written by another user, and a configuration decides what
    /// runs without asking.
    #[error("refusing the configuration {path}: {why}")]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// Why it is not trusted.
        why: String,
    },
    /// The TOML (file or environment) does not fit the configuration.
    #[error("invalid configuration{}: {message}", origin.as_deref().map(|o| format!(" in {o}")).unwrap_or_default())]
    Invalid {
        /// The file or variable at fault, when known.
        origin: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// Refuses a configuration file another user could have written (see
/// [`ExecutorConfig::from_file`]).
#[cfg(unix)]
fn trusted_file(path: &Path) -> Result<(), ConfigError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let refuse = |why: String| ConfigError::Untrusted {
        path: path.to_owned(),
        why,
    };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(refuse(format!(
            "it is owned by user {}, not by you (user {me}) or root",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "its permissions ({:o}) let other users change it; run `chmod go-w {}`",
            meta.mode() & 0o777,
            path.display()
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn trusted_file(_: &Path) -> Result<(), ConfigError> {
    Ok(())
}

/// The prefix of environment variables.
pub const ENV_PREFIX: &str = "TOOLS_";

/// The top-level keys of [`ExecutorConfig`], which `TOOLS_*` variables may set.
const TOP_LEVEL_KEYS: &[&str] = &[
    "auto_confirm_read_only",
    "auto_confirm_create",
    "auto_confirm_external",
    "confirmation_timeout_ms",
    "require_first_time_gate",
    "persist_first_time_approvals",
    "confirmation",
    "allow",
    "deny",
    "default_timeout_ms",
    "retry",
    "rate_limits",
    "cache",
    "max_concurrency",
    "max_result_chars",
    "max_pending_per_session",
    "keep_decided_arguments",
    "check_injection",
    "log_tool_calls",
    "audit_required",
    "log_confirmations",
    "audit_mode",
    "store",
];

impl ExecutorConfig {
    /// Parses TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Invalid {
            origin: None,
            message: e.to_string(),
        })
    }

    /// Reads a TOML file. On Unix, a file that another user could have written (owned by
    /// someone other than the user running the program or root, or writable by its group or by
    /// everyone) is refused: a configuration can switch off confirmations and the audit trail,
    /// so it must come from the person whose policy it is.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        trusted_file(path)?;
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text).map_err(|e| match e {
            ConfigError::Invalid { message, .. } => ConfigError::Invalid {
                origin: Some(path.display().to_string()),
                message,
            },
            other => other,
        })
    }

    /// The settings in which this configuration is weaker than the defaults: what a person
    /// should be told at start, because calls will run with less confirmation or less record
    /// than they would expect (`key = value: what it means`).
    pub fn weakenings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut weaker = |on: bool, key: &str, value: &str, meaning: &str| {
            if on {
                out.push(format!("{key} = {value}: {meaning}"));
            }
        };
        weaker(
            self.auto_confirm_create,
            "auto_confirm_create",
            "true",
            "tools that create things run without asking",
        );
        weaker(
            self.auto_confirm_external,
            "auto_confirm_external",
            "true",
            "tools that talk to outside services run without asking",
        );
        weaker(
            !self.require_first_time_gate,
            "require_first_time_gate",
            "false",
            "external tools run the first time without the first-use question",
        );
        weaker(
            !self.log_tool_calls,
            "log_tool_calls",
            "false",
            "calls are not recorded in the audit trail",
        );
        weaker(
            self.keep_decided_arguments,
            "keep_decided_arguments",
            "true",
            "decided operations keep their arguments, secrets included, in the store",
        );
        weaker(
            !self.audit_required,
            "audit_required",
            "false",
            "a call whose audit record is lost still counts as done",
        );
        weaker(
            !self.check_injection,
            "check_injection",
            "false",
            "free text sent to tools that change things is not checked for injected instructions",
        );
        weaker(
            !self.log_confirmations,
            "log_confirmations",
            "false",
            "confirmation questions and answers are not logged",
        );
        out
    }

    /// The defaults, overlaid with the file (when given) and then with `TOOLS_*` variables.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let base = match path {
            Some(p) => Self::from_file(p)?,
            None => Self::default(),
        };
        base.with_env_vars(std::env::vars())
    }

    /// Overlays variables named `TOOLS_<KEY>` / `TOOLS_<SECTION>__<KEY>` (see the module docs).
    /// Takes the variables as an iterator so that tests need not touch the process environment.
    pub fn with_env_vars(
        self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut table = toml::Table::try_from(&self).map_err(|e| ConfigError::Invalid {
            origin: None,
            message: e.to_string(),
        })?;
        let mut touched = false;
        for (name, raw) in vars {
            let Some(key) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            let path: Vec<String> = key.split("__").map(|k| k.to_ascii_lowercase()).collect();
            // variables of other programs sharing the prefix (and TOOLS_CONFIG, the file) are not
            // configuration keys: skip them rather than refuse to start
            if !TOP_LEVEL_KEYS.contains(&path[0].as_str()) {
                tracing::debug!(variable = %name, "not an executor configuration key; ignored");
                continue;
            }
            let value = parse_literal(&raw);
            set_path(&mut table, &path, value).map_err(|message| ConfigError::Invalid {
                origin: Some(name.clone()),
                message,
            })?;
            touched = true;
        }
        if !touched {
            return Ok(self);
        }
        table
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Invalid {
                origin: Some("environment".into()),
                message: e.to_string(),
            })
    }

    /// The default tool timeout.
    pub fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.default_timeout_ms)
    }

    /// The confirmation timeout.
    pub fn confirmation_timeout(&self) -> Duration {
        Duration::from_millis(self.confirmation_timeout_ms)
    }
}

fn parse_literal(raw: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.to_owned())),
        Err(_) => toml::Value::String(raw.to_owned()),
    }
}

fn set_path(table: &mut toml::Table, path: &[String], value: toml::Value) -> Result<(), String> {
    let (last, parents) = path.split_last().expect("split of a non-empty key");
    let mut cur = table;
    for p in parents {
        let entry = cur
            .entry(p.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        cur = entry
            .as_table_mut()
            .ok_or_else(|| format!("{p} is not a section"))?;
    }
    cur.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_file_and_environment_overlay_the_defaults() {
        let cfg = ExecutorConfig::from_toml(
            r#"
            auto_confirm_create = true
            deny = ["rm_rf"]
            [retry]
            max_attempts = 5
            [rate_limits.tools.search_web]
            max_calls = 2
            window_ms = 1000
            [rate_limits.categories.external]
            max_calls = 3
            "#,
        )
        .unwrap();
        assert!(cfg.auto_confirm_create);
        assert_eq!(cfg.retry.max_attempts, 5);
        assert_eq!(cfg.retry.base_delay_ms, 100, "unset keys keep defaults");
        assert_eq!(cfg.rate_limits.tools["search_web"].max_calls, 2);
        assert_eq!(
            cfg.rate_limits.categories[&Safety::External],
            Window::per_minute(3)
        );
        let cfg = cfg
            .with_env_vars([
                ("TOOLS_AUTO_CONFIRM_CREATE".into(), "false".into()),
                ("TOOLS_RETRY__MAX_ATTEMPTS".into(), "7".into()),
                ("TOOLS_STORE__PATH".into(), "/tmp/x.db".into()),
                ("TOOLS_ALLOW".into(), r#"["a", "b"]"#.into()),
                ("HOME".into(), "/root".into()),
                ("TOOLS_CONFIG".into(), "/etc/tools.toml".into()),
                ("TOOLS_SOMETHING_ELSE".into(), "x".into()),
            ])
            .unwrap();
        assert!(!cfg.auto_confirm_create);
        assert_eq!(cfg.retry.max_attempts, 7);
        assert_eq!(cfg.store.path.as_deref(), Some(Path::new("/tmp/x.db")));
        assert_eq!(cfg.allow, Some(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn every_top_level_key_can_be_set_from_the_environment() {
        let table = toml::Table::try_from(ExecutorConfig {
            allow: Some(vec![]),
            confirmation: Some(ConfirmationMode::Inline),
            ..Default::default()
        })
        .unwrap();
        let mut keys: Vec<&str> = table.keys().map(String::as_str).collect();
        keys.sort();
        let mut known = TOP_LEVEL_KEYS.to_vec();
        known.sort();
        assert_eq!(keys, known);
    }

    #[test]
    fn unknown_or_mistyped_keys_are_refused_with_their_origin() {
        let err = ExecutorConfig::from_toml("auto_confirm_creat = true").unwrap_err();
        assert!(err.to_string().contains("auto_confirm_creat"), "{err}");
        let err = ExecutorConfig::default()
            .with_env_vars([("TOOLS_MAX_CONCURRENCY".into(), "many".into())])
            .unwrap_err();
        assert!(err.to_string().contains("environment"), "{err}");
    }

    #[test]
    fn the_store_is_chosen_by_a_string_a_table_or_the_environment() {
        let kind = |toml: &str| ExecutorConfig::from_toml(toml).map(|c| c.store);
        assert_eq!(
            kind("").unwrap().kind(),
            StoreKind::Sqlite(Path::new(".tools/state.sqlite3")),
            "SQLite by default"
        );
        assert_eq!(
            kind(r#"store = "memory""#).unwrap().kind(),
            StoreKind::Memory
        );
        assert_eq!(
            kind(r#"store = "redis://10.0.0.1:6379/2""#).unwrap().kind(),
            StoreKind::Redis {
                url: "redis://10.0.0.1:6379/2",
                prefix: "tools:"
            }
        );
        assert_eq!(
            kind(r#"store = "sqlite:/var/lib/t.db""#).unwrap().kind(),
            StoreKind::Sqlite(Path::new("/var/lib/t.db"))
        );
        assert_eq!(
            kind(r#"store = "state/t.db""#).unwrap().kind(),
            StoreKind::Sqlite(Path::new("state/t.db"))
        );
        let table = kind("[store]\nurl = \"rediss://h/0\"\nprefix = \"app:\"").unwrap();
        assert_eq!(
            table.kind(),
            StoreKind::Redis {
                url: "rediss://h/0",
                prefix: "app:"
            },
            "the url wins over the default path"
        );
        for (bad, why) in [
            (r#"store = "postgres://h/db""#, "unknown store scheme"),
            ("store = ''", "the store is empty"),
            ("[store]\nurl = \"/tmp/x.db\"", "is not a redis:// URL"),
            ("[store]\nkind = \"redis\"", "unknown field `kind`"),
        ] {
            let err = kind(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let env = |vars: &[(&str, &str)]| {
            ExecutorConfig::default()
                .with_env_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
                .unwrap()
                .store
        };
        assert_eq!(
            env(&[("TOOLS_STORE", "redis://127.0.0.1:6379/")]).kind(),
            StoreKind::Redis {
                url: "redis://127.0.0.1:6379/",
                prefix: "tools:"
            }
        );
        assert_eq!(env(&[("TOOLS_STORE", "memory")]).kind(), StoreKind::Memory);
        assert_eq!(
            env(&[
                ("TOOLS_STORE__URL", "redis://r/"),
                ("TOOLS_STORE__PREFIX", "x:")
            ])
            .kind(),
            StoreKind::Redis {
                url: "redis://r/",
                prefix: "x:"
            }
        );
        // the string form survives a round trip through the environment overlay
        let cfg = ExecutorConfig::from_toml(r#"store = "memory""#)
            .unwrap()
            .with_env_vars([("TOOLS_MAX_CONCURRENCY".to_string(), "2".to_string())])
            .unwrap();
        assert_eq!(cfg.store.kind(), StoreKind::Memory);
        assert_eq!(cfg.max_concurrency, 2);
    }
}
