//! The executor's configuration: one typed struct with the confirmation, audit and rate-limit
//! options, timeouts, retries and caching. With the `config` feature it is also read from a TOML
//! file and `TOOLS_*` environment variables (`ExecutorConfig::load`).

#[cfg(feature = "config")]
mod load;

#[cfg(feature = "config")]
pub use load::{ConfigError, ENV_PREFIX};

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::records::Window;

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
    /// way the execution says so ([`Execution::audit_failure`](crate::executor::Execution::audit_failure)).
    pub audit_required: bool,
    /// Record confirmation prompts and answers as tracing events.
    pub log_confirmations: bool,
    /// What the audit trail keeps of the arguments.
    pub audit_mode: AuditMode,
    /// The most operations one session may have waiting for a decision (session-less calls
    /// count as one session). Past it, a call that would wait is refused with
    /// `TOO_MANY_PENDING` instead of parked, so one client cannot flood the approvers.
    pub max_pending_per_session: usize,
    /// The most operations the calls of one credential ([`CallContext::credential`]) may have
    /// waiting, all their sessions together. Below `max_pending`, so that a client choosing a
    /// new session for every call fills its own share and the store still has room for the
    /// others' calls (the person's own, an MCP host's). Calls without a credential are bounded
    /// only by the other two limits.
    ///
    /// [`CallContext::credential`]: crate::CallContext::credential
    pub max_pending_per_credential: usize,
    /// The most operations the store may have waiting for a decision, all sessions together.
    /// Past it, a call that would wait is refused with `TOO_MANY_PENDING` instead of parked, so
    /// that a client opening a new session per call cannot flood the approvers either.
    pub max_pending: usize,
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
    /// MCP servers whose tools are imported beside the application's own (a file's tables
    /// only: no `TOOLS_*` variable sets them).
    #[serde(skip_serializing_if = "McpConfig::is_empty")]
    pub mcp: McpConfig,
}

/// The `[mcp]` table: the MCP servers whose tools an MCP client imports (`tool-mcp` reads each
/// `[mcp.servers.NAME]` table as its server configuration: `command`, `args`, `env`, `cwd`,
/// `url`, `headers`, `trust`, `prefix`, `categories`, `allow`, `deny`). The executor itself
/// does not read them; they live here so that one file configures the tools and their policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Each server's table, by the server's name, as written.
    pub servers: BTreeMap<String, serde_json::Value>,
}

impl McpConfig {
    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
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
            max_pending_per_credential: 500,
            max_pending: 1_000,
            keep_decided_arguments: false,
            check_injection: true,
            store: StoreConfig::default(),
            mcp: McpConfig::default(),
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

    /// Opens the store. A store this build has no code for (SQLite without the `sqlite`
    /// feature, Redis without `redis`) is an error that names the feature.
    pub fn open(
        &self,
    ) -> Result<std::sync::Arc<dyn crate::store::Store>, crate::store::StoreError> {
        Ok(match self.kind() {
            StoreKind::Memory => std::sync::Arc::new(crate::store::MemoryStore::new()),
            #[cfg(feature = "sqlite")]
            StoreKind::Sqlite(path) => std::sync::Arc::new(crate::store::SqliteStore::open(path)?),
            #[cfg(not(feature = "sqlite"))]
            StoreKind::Sqlite(path) => {
                return Err(crate::store::StoreError::new(format!(
                    "the configured store is the SQLite file {}, and this build of tool-runtime \
                     has no SQLite: enable its `sqlite` feature, or use the in-memory store \
                     (store = \"memory\", StoreConfig::memory() or ExecutorBuilder::store)",
                    path.display()
                )));
            }
            #[cfg(feature = "redis")]
            StoreKind::Redis { url, prefix } => {
                std::sync::Arc::new(crate::store::RedisStore::with_prefix(url, prefix)?)
            }
            #[cfg(not(feature = "redis"))]
            StoreKind::Redis { url, .. } => {
                return Err(crate::store::StoreError::new(format!(
                    "the configured store is the Redis server {}, and this build of tool-runtime \
                     has no Redis: enable its `redis` feature",
                    crate::store::without_password(url)
                )));
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

impl ExecutorConfig {
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

    /// The default tool timeout.
    pub fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.default_timeout_ms)
    }

    /// The confirmation timeout.
    pub fn confirmation_timeout(&self) -> Duration {
        Duration::from_millis(self.confirmation_timeout_ms)
    }
}
