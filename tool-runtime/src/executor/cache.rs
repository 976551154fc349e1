//! The TTL cache of read-only results, keyed by the tool and its canonical arguments.
//!
//! A call that may have changed something (any tool that is not read-only, once its body ran)
//! empties the cache: a read after a `git_commit` or a `write_file` must see the change, and the
//! executor cannot know which reads a change touches (two servers may share a directory). A
//! read still running across such a call stores its result under the generation it began in,
//! which no later lookup uses.
//!
//! Replicas that share a store (processes on one SQLite file or one Redis server, executors on
//! one [`MemoryStore`](crate::store::MemoryStore)) each keep their own cache, and a change may
//! run through any of them. The store counts the changes it records ([`Store::changes`]); every
//! key carries the count its result was made under, and a result is answered from the cache
//! only after the store's count is read and found unchanged. A change recorded anywhere since
//! then empties the cache instead. Only a hit reads the count (and the first lookup, which
//! learns it): a miss runs the body anyway, under the count last seen, which is never newer
//! than the store's, so a result made across a change elsewhere is dropped by the next hit.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Executor;
use crate::definition::ToolDefinition;
use crate::store::{Store, StoreError};

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

#[derive(Debug)]
pub(crate) struct TtlCache {
    entries: Mutex<HashMap<String, (Instant, Value)>>,
    /// How many times the cache was emptied by a change; part of every key made after the first.
    generation: AtomicU64,
    /// The store's count of changes ([`Store::changes`]) the entries were made under, or
    /// [`UNSEEN`] until the first lookup reads it; part of every key once it is not zero.
    seen: AtomicU64,
}

/// [`TtlCache::seen`] before the store's count was first read.
const UNSEEN: u64 = u64::MAX;

impl Default for TtlCache {
    fn default() -> Self {
        TtlCache {
            entries: Mutex::default(),
            generation: AtomicU64::new(0),
            seen: AtomicU64::new(UNSEEN),
        }
    }
}

impl TtlCache {
    /// The key of `tool` called with `arguments` in the current generation: [`cache_key`], then
    /// the generation when the cache was ever emptied, and the store's count of changes it was
    /// made under when that is known and not zero.
    pub(crate) fn key(&self, tool: &str, arguments: &Value) -> (String, u64) {
        let mut key = cache_key(tool, arguments);
        let generation = self.generation.load(Ordering::Acquire);
        let seen = self.seen.load(Ordering::Acquire);
        if generation != 0 || (seen != 0 && seen != UNSEEN) {
            key.push('\u{0}');
            let _ = write!(key, "{generation}");
        }
        if seen != 0 && seen != UNSEEN {
            key.push('\u{0}');
            let _ = write!(key, "{seen}");
        }
        (key, seen)
    }

    /// Forgets every result: something may have changed what they read. Keys made before this
    /// call belong to the previous generation, so a read that was running stores nothing a
    /// later lookup finds. The store counts the change too, so its count is read again by the
    /// next lookup.
    pub(crate) fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.seen.store(UNSEEN, Ordering::Release);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.clear();
    }

    /// Whether the store's count of changes was read yet: until it is, a lookup reads it.
    pub(crate) fn knows_changes(&self) -> bool {
        self.seen.load(Ordering::Acquire) != UNSEEN
    }

    /// Takes in the store's count of changes `count`, read after a key was made under `seen`:
    /// whether results cached under that key are still current. A count other than the one the
    /// entries were made under empties the cache; later keys carry the new count.
    pub(crate) fn current(&self, seen: u64, count: u64) -> bool {
        if count == seen {
            return true;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        // counts only grow; a reader that read an older count than another's leaves the newer
        if self
            .seen
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now == UNSEEN || now < count).then_some(count)
            })
            .is_ok()
        {
            entries.clear();
        }
        false
    }

    /// Whether an entry is kept for `key`, fresh or not.
    pub(crate) fn holds(&self, key: &str) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.contains_key(key)
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

/// What a lookup in the cache found.
pub(super) enum Lookup {
    /// The tool's results are not cached.
    Off,
    /// A current result.
    Hit(Value),
    /// No current result: the body runs, and its result is kept under this key.
    Miss(String),
}

impl Lookup {
    /// The key to keep the body's result under, when it is kept.
    pub(super) fn into_key(self) -> Option<String> {
        match self {
            Lookup::Miss(key) => Some(key),
            Lookup::Off | Lookup::Hit(_) => None,
        }
    }
}

impl Executor {
    /// Whether the results of `def` are cached.
    pub(super) fn caches(&self, def: &ToolDefinition) -> bool {
        def.safety.is_read_only() && self.inner.config.cache.enabled
    }

    /// Whether looking `def` up with `arguments` needs the store's count of changes from a store
    /// that blocks (a result to check, or a count not read yet): the call then takes the path
    /// that may wait ([`Executor::look_up`]).
    pub(super) fn cache_waits(&self, def: &ToolDefinition, arguments: &Value) -> bool {
        let cache = &self.inner.cache;
        self.caches(def)
            && self.inner.store.blocks()
            && (!cache.knows_changes() || cache.holds(&cache.key(&def.name, arguments).0))
    }

    /// The lookup, without waiting: where [`Executor::cache_waits`] says it needs no store that
    /// blocks. A result kept since then is not answered (its count would have to be read): the
    /// body runs instead.
    pub(super) fn look_up_now(&self, def: &ToolDefinition, arguments: &Value) -> Lookup {
        if !self.caches(def) {
            return Lookup::Off;
        }
        let cache = &self.inner.cache;
        let (key, seen) = cache.key(&def.name, arguments);
        let hit = cache.get(&key, self.cache_ttl());
        if (hit.is_none() && cache.knows_changes()) || self.inner.store.blocks() {
            return Lookup::Miss(key);
        }
        let count = self.store_now("changes", |store| store.changes());
        self.settle(def, arguments, key, seen, hit, count)
    }

    /// The lookup: a result is answered only once the store's count of changes says nothing
    /// changed since it was made, through this executor or any other sharing the store.
    pub(super) async fn look_up(&self, def: &ToolDefinition, arguments: &Value) -> Lookup {
        if !self.caches(def) {
            return Lookup::Off;
        }
        let cache = &self.inner.cache;
        let (key, seen) = cache.key(&def.name, arguments);
        let hit = cache.get(&key, self.cache_ttl());
        if hit.is_none() && cache.knows_changes() {
            return Lookup::Miss(key);
        }
        let count = self
            .with_store("changes", |store: &dyn Store| store.changes())
            .await;
        self.settle(def, arguments, key, seen, hit, count)
    }

    /// A lookup's result once the store's count of changes is read.
    fn settle(
        &self,
        def: &ToolDefinition,
        arguments: &Value,
        key: String,
        seen: u64,
        hit: Option<Value>,
        count: Result<Option<u64>, StoreError>,
    ) -> Lookup {
        let cache = &self.inner.cache;
        // a store that does not count changes reports none: each executor then empties its
        // cache for the changes it runs itself
        match count.map(Option::unwrap_or_default) {
            Ok(count) if cache.current(seen, count) => match hit {
                Some(value) => Lookup::Hit(value),
                None => Lookup::Miss(key),
            },
            Ok(_) => Lookup::Miss(cache.key(&def.name, arguments).0),
            Err(e) => {
                // unknown whether anything changed: the result is not answered, the body runs
                tracing::warn!(tool = %def.name, error = %e, "the store's count of changes could not be read; the cached result is not used");
                Lookup::Miss(key)
            }
        }
    }

    /// How long a cached result stays fresh.
    pub(super) fn cache_ttl(&self) -> Duration {
        Duration::from_millis(self.inner.config.cache.ttl_ms)
    }

    /// Keeps `value`, the result of a body a lookup missed, under the lookup's key.
    pub(super) fn keep(&self, key: Option<String>, value: &Value) {
        if let Some(key) = key {
            let cfg = &self.inner.config.cache;
            self.inner
                .cache
                .put(key, value.clone(), self.cache_ttl(), cfg.max_entries);
        }
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
        let before = cache.key("status", &args).0;
        cache.put(before.clone(), json!("clean"), ttl, 8);
        assert_eq!(cache.get(&before, ttl), Some(json!("clean")));
        // a read that began before the change finishes after it
        let running = cache.key("status", &args).0;
        cache.changed();
        assert_eq!(cache.get(&before, ttl), None, "emptied by the change");
        cache.put(running, json!("clean"), ttl, 8);
        let after = cache.key("status", &args).0;
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
