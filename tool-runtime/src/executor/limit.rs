//! Sliding-window rate limits per tool and per category, shared by
//! every task that holds the same [`RateLimiter`], and by every process on the same store when
//! the store keeps shared limits (Redis: [`crate::store::Store::acquire_rate`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::definition::ToolDefinition;

use super::config::RateLimitConfig;
use crate::records::Window;

/// Remembers recent calls. Clones share their state; [`RateLimiter::global`] is the one instance
/// of the process, for several executors that must respect one budget.
#[derive(Debug, Clone, Default)]
pub struct RateLimiter {
    calls: Arc<Mutex<HashMap<String, VecDeque<Instant>>>>,
}

static GLOBAL: LazyLock<RateLimiter> = LazyLock::new(RateLimiter::default);

/// Whether any window applies to a call of `def`: what `!windows(def, cfg).is_empty()` says,
/// without making the keys (every call asks this; few are limited).
#[inline]
pub(crate) fn limited(def: &ToolDefinition, cfg: &RateLimitConfig) -> bool {
    cfg.categories.keys().any(|c| *c == def.safety)
        || (!cfg.tools.is_empty() && cfg.tools.contains_key(def.name.as_ref()))
}

/// The windows that apply to a call of `def`, by key (`tool:NAME`, `category:NAME`).
pub(crate) fn windows(def: &ToolDefinition, cfg: &RateLimitConfig) -> Vec<(String, Window)> {
    // most tools have no limit: no allocation and no hashing for them
    let mut keys: Vec<(String, Window)> = Vec::new();
    if cfg.tools.is_empty() && cfg.categories.is_empty() {
        return keys;
    }
    if let Some(w) = cfg.tools.get(def.name.as_ref()) {
        keys.push((format!("tool:{}", def.name), *w));
    }
    // a handful of categories at most: a scan, without hashing the category, finds it sooner
    if let Some((_, w)) = cfg.categories.iter().find(|(c, _)| **c == def.safety) {
        keys.push((format!("category:{}", def.safety.as_str()), *w));
    }
    keys
}

impl RateLimiter {
    /// A limiter with no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// The process-wide limiter.
    pub fn global() -> Self {
        GLOBAL.clone()
    }

    /// Records a call of `def` if every window that applies has room; otherwise records nothing
    /// and says how long until the fullest window has room again.
    pub fn acquire(&self, def: &ToolDefinition, cfg: &RateLimitConfig) -> Result<(), Duration> {
        let keys = windows(def, cfg);
        if keys.is_empty() {
            return Ok(());
        }
        self.acquire_keys(&keys, Instant::now())
    }

    fn acquire_keys(&self, keys: &[(String, Window)], now: Instant) -> Result<(), Duration> {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let mut wait = Duration::ZERO;
        for (key, w) in keys {
            let log = calls.entry(key.clone()).or_default();
            while log
                .front()
                .is_some_and(|t| now.duration_since(*t) >= w.duration())
            {
                log.pop_front();
            }
            if log.len() >= w.max_calls as usize {
                // the window has room again when the oldest call in it leaves
                let oldest = log.front().copied().unwrap_or(now);
                let free_at = oldest + w.duration();
                wait = wait.max(
                    free_at
                        .saturating_duration_since(now)
                        .max(Duration::from_millis(1)),
                );
            }
        }
        if wait > Duration::ZERO {
            return Err(wait);
        }
        for (key, _) in keys {
            calls.get_mut(key).expect("inserted above").push_back(now);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_slides_and_all_limits_must_have_room() {
        let l = RateLimiter::new();
        let w = Window {
            max_calls: 2,
            window_ms: 1000,
        };
        let keys = [("a".to_owned(), w)];
        let t0 = Instant::now();
        assert!(l.acquire_keys(&keys, t0).is_ok());
        assert!(
            l.acquire_keys(&keys, t0 + Duration::from_millis(400))
                .is_ok()
        );
        let wait = l
            .acquire_keys(&keys, t0 + Duration::from_millis(500))
            .unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert!(
            l.acquire_keys(&keys, t0 + Duration::from_millis(1000))
                .is_ok()
        );
        // a refused call consumes nothing from the other window
        let both = [
            ("a".to_owned(), w),
            (
                "b".to_owned(),
                Window {
                    max_calls: 5,
                    window_ms: 1000,
                },
            ),
        ];
        assert!(
            l.acquire_keys(&both, t0 + Duration::from_millis(1100))
                .is_err()
        );
        assert_eq!(l.calls.lock().unwrap().get("b").map(|v| v.len()), Some(0));
    }
}
