//! Loading an [`ExecutorConfig`] from a TOML file and the environment.
//!
//! Environment variables override the file: `TOOLS_<KEY>` for top-level keys and
//! `TOOLS_<SECTION>__<KEY>` for nested ones, values written as TOML literals
//! (`TOOLS_AUTO_CONFIRM_CREATE=true`, `TOOLS_DENY='["rm"]'`, `TOOLS_RETRY__MAX_ATTEMPTS=5`); a
//! value that is not a TOML literal is taken as a string (`TOOLS_STORE__PATH=/var/lib/t.db`).

use std::path::{Path, PathBuf};

use super::ExecutorConfig;

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
    "max_pending_per_credential",
    "max_pending",
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
        let mut keys = Vec::new();
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
            keys.push((name, path, parse_literal(&raw)));
        }
        if keys.is_empty() {
            return Ok(self);
        }
        // a whole value before the keys inside it, whatever the environment's order:
        // `TOOLS_STORE=redis://...` and then `TOOLS_STORE__PREFIX`
        keys.sort_by_key(|(_, path, _)| path.len());
        for (name, path, value) in keys {
            if set_path(&mut table, &path, value.clone()).is_ok() {
                continue;
            }
            // a section given in its string form (`TOOLS_STORE=redis://...`) takes a key inside
            // it once it is written as its table
            let invalid = |message: String| ConfigError::Invalid {
                origin: Some(name.clone()),
                message,
            };
            let config: ExecutorConfig = table
                .try_into()
                .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
            table = toml::Table::try_from(&config).map_err(|e| invalid(e.to_string()))?;
            set_path(&mut table, &path, value).map_err(invalid)?;
        }
        table
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Invalid {
                origin: Some("environment".into()),
                message: e.to_string(),
            })
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
    use super::super::{ConfirmationMode, StoreKind, Window};
    use super::*;
    use crate::definition::Safety;

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
        assert_eq!(cfg.max_pending, 1_000, "unset limits keep defaults");
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
                ("TOOLS_MAX_PENDING".into(), "250".into()),
            ])
            .unwrap();
        assert_eq!(cfg.max_pending, 250);
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
        // the URL as a whole and the prefix as a key of it, in either order
        for vars in [
            [("TOOLS_STORE", "redis://r/"), ("TOOLS_STORE__PREFIX", "x:")],
            [("TOOLS_STORE__PREFIX", "x:"), ("TOOLS_STORE", "redis://r/")],
        ] {
            assert_eq!(
                env(&vars).kind(),
                StoreKind::Redis {
                    url: "redis://r/",
                    prefix: "x:"
                }
            );
        }
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
