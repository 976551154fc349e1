//! Definition pins in every built-in store (memory, SQLite, Redis when
//! `TOOL_RUNTIME_TEST_REDIS_URL` names a server): a pin is written only over the hash it
//! replaces, one of two racing writers wins, and a second handle on one SQLite file (another
//! process) sees the same pins.

use std::sync::{Arc, Barrier};

use serde_json::json;
use tool_runtime::store::{MemoryStore, RedisStore, SqliteStore, Store, ToolPin};

fn pin(tool: &str, hash: &str, description: &str) -> ToolPin {
    ToolPin {
        tool: tool.into(),
        server: "fs".into(),
        hash: hash.into(),
        definition: json!({"name": tool, "description": description}),
        pinned_ms: 1,
    }
}

/// The behaviour every store must have, run on `store`.
fn conformance(store: &dyn Store) {
    assert_eq!(store.get_pin("fs__read").unwrap(), None);
    assert!(store.list_pins().unwrap().is_empty());
    // the first pin needs no pin before it
    assert!(
        !store
            .put_pin(&pin("fs__read", "sha256:a", "reads"), Some("sha256:x"))
            .unwrap()
    );
    assert!(
        store
            .put_pin(&pin("fs__read", "sha256:a", "reads"), None)
            .unwrap()
    );
    // a second "first" pin loses: the tool is pinned already
    assert!(
        !store
            .put_pin(&pin("fs__read", "sha256:b", "evil"), None)
            .unwrap()
    );
    assert_eq!(store.get_pin("fs__read").unwrap().unwrap().hash, "sha256:a");
    // a change replaces only the hash it was approved over
    assert!(
        !store
            .put_pin(&pin("fs__read", "sha256:c", "x"), Some("sha256:b"))
            .unwrap()
    );
    assert!(
        store
            .put_pin(&pin("fs__read", "sha256:c", "reads more"), Some("sha256:a"))
            .unwrap()
    );
    let got = store.get_pin("fs__read").unwrap().unwrap();
    assert_eq!(got.definition["description"], "reads more");
    assert!(
        store
            .put_pin(&pin("fs__a_first", "sha256:d", "first"), None)
            .unwrap()
    );
    let names: Vec<String> = store
        .list_pins()
        .unwrap()
        .into_iter()
        .map(|p| p.tool)
        .collect();
    assert_eq!(names, ["fs__a_first", "fs__read"], "by tool name");
}

fn one_writer_wins(store: Arc<dyn Store>) {
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let p = pin("race__t", &format!("sha256:{i}"), "racer");
                store.put_pin(&p, None).unwrap()
            })
        })
        .collect();
    let won = handles.into_iter().map(|h| h.join().unwrap());
    assert_eq!(won.filter(|w| *w).count(), 1);
}

#[test]
fn the_memory_store_keeps_pins() {
    conformance(&MemoryStore::new());
    one_writer_wins(Arc::new(MemoryStore::new()));
}

#[test]
fn the_sqlite_store_keeps_pins_across_handles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite");
    conformance(&SqliteStore::open(&path).unwrap());
    let other = SqliteStore::open(&path).unwrap();
    assert_eq!(other.get_pin("fs__read").unwrap().unwrap().hash, "sha256:c");
    assert!(
        !other
            .put_pin(&pin("fs__read", "sha256:e", "x"), Some("sha256:a"))
            .unwrap()
    );
    one_writer_wins(Arc::new(
        SqliteStore::open(dir.path().join("race.sqlite")).unwrap(),
    ));
}

#[test]
fn the_redis_store_keeps_pins() {
    let Some(url) = test_support::redis_url() else {
        return;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("tools-test:{}:{nanos}:pins:", std::process::id());
    conformance(&RedisStore::with_prefix(&url, &prefix).unwrap());
    let race = format!("{prefix}race:");
    one_writer_wins(Arc::new(RedisStore::with_prefix(&url, &race).unwrap()));
}
