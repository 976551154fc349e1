//! The TTL cache of read-only results, keyed by the tool and its canonical arguments.
//!
//! A call that may have changed something (any tool that is not read-only, once its body ran)
//! empties the cache: a read after a `git_commit` or a `write_file` must see the change, and the
//! executor cannot know which reads a change touches (two servers may share a directory). A
//! read still running across such a call stores its result under the generation it began in,
//! which no later lookup uses.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The cache key: the tool's name and the arguments as canonical JSON (object keys sorted at
/// every depth), so `{"a":1,"b":2}` and `{"b":2,"a":1}` share an entry.
pub fn cache_key(tool: &str, arguments: &Value) -> String {
    let mut key = String::with_capacity(tool.len() + 64);
    key.push_str(tool);
    key.push('\u{0}');
    write_canonical(arguments, &mut key);
    key
}

/// Writes `v` as JSON with object keys sorted.
pub fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[derive(Debug, Default)]
pub(crate) struct TtlCache {
    entries: Mutex<HashMap<String, (Instant, Value)>>,
    /// How many times the cache was emptied by a change; part of every key made after the first.
    generation: AtomicU64,
}

impl TtlCache {
    /// The key of `tool` called with `arguments` in the current generation: [`cache_key`], then
    /// the generation when the cache was ever emptied.
    pub(crate) fn key(&self, tool: &str, arguments: &Value) -> String {
        let mut key = cache_key(tool, arguments);
        let generation = self.generation.load(Ordering::Acquire);
        if generation != 0 {
            key.push('\u{0}');
            let _ = write!(key, "{generation}");
        }
        key
    }

    /// Forgets every result: something may have changed what they read. Keys made before this
    /// call belong to the previous generation, so a read that was running stores nothing a
    /// later lookup finds.
    pub(crate) fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.clear();
    }

    pub(crate) fn get(&self, key: &str, ttl: Duration) -> Option<Value> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(key) {
            Some((at, v)) if at.elapsed() < ttl => Some(v.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    pub(crate) fn put(&self, key: String, value: Value, ttl: Duration, max_entries: usize) {
        if max_entries == 0 {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= max_entries && !entries.contains_key(&key) {
            entries.retain(|_, (at, _)| at.elapsed() < ttl);
            if entries.len() >= max_entries {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(key, (Instant::now(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_empties_the_cache_and_a_read_begun_before_it_is_not_found_after() {
        let cache = TtlCache::default();
        let ttl = Duration::from_secs(60);
        let args = json!({"path": "."});
        let before = cache.key("status", &args);
        cache.put(before.clone(), json!("clean"), ttl, 8);
        assert_eq!(cache.get(&before, ttl), Some(json!("clean")));
        // a read that began before the change finishes after it
        let running = cache.key("status", &args);
        cache.changed();
        assert_eq!(cache.get(&before, ttl), None, "emptied by the change");
        cache.put(running, json!("clean"), ttl, 8);
        let after = cache.key("status", &args);
        assert_ne!(after, before);
        assert_eq!(cache.get(&after, ttl), None, "the stale read is not served");
        cache.put(after.clone(), json!("1 commit"), ttl, 8);
        assert_eq!(cache.get(&after, ttl), Some(json!("1 commit")));
    }

    #[test]
    fn keys_ignore_key_order_but_not_values_or_tool() {
        let a = cache_key(
            "t",
            &json!({"a": 1, "b": {"y": [1, {"q": 1, "p": 2}], "x": 2}}),
        );
        let b = cache_key(
            "t",
            &json!({"b": {"x": 2, "y": [1, {"p": 2, "q": 1}]}, "a": 1}),
        );
        assert_eq!(a, b);
        assert_ne!(
            a,
            cache_key(
                "u",
                &json!({"a": 1, "b": {"x": 2, "y": [1, {"p": 2, "q": 1}]}})
            )
        );
        assert_ne!(
            cache_key("t", &json!({"a": 1})),
            cache_key("t", &json!({"a": "1"}))
        );
    }

    #[test]
    fn entries_expire_and_capacity_evicts_the_oldest() {
        let c = TtlCache::default();
        let ttl = Duration::from_secs(60);
        c.put("a".into(), json!(1), ttl, 2);
        c.put("b".into(), json!(2), ttl, 2);
        c.put("c".into(), json!(3), ttl, 2);
        assert_eq!(c.get("a", ttl), None);
        assert_eq!(c.get("c", ttl), Some(json!(3)));
        assert_eq!(c.get("b", Duration::ZERO), None, "expired");
    }
}
