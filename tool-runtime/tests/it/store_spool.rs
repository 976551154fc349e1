//! The SQLite store's audit spool (`<file>-audit`): the records of read-only calls are appended
//! to it and moved into the trail, each exactly once, whatever the processes sharing the file do.
//! Records a killed process left there, a record cut short, several stores appending and moving
//! at once, and a file emptied by a store whose commit of that was lost.
//!
//! Two stores on one file in this process stand for two processes: each opens the spool on its
//! own, and its lock is per open file, as between processes. The killed process is this test
//! binary started again with `STORE_SPOOL_CHILD` set to the database's path.

use crate::executor_support::{change_record, read_only_record};

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use tool_runtime::executor::ActivityQuery;
use tool_runtime::store::{SqliteStore, Store};

const CHILD: &str = "STORE_SPOOL_CHILD";

fn spool_of(db: &Path) -> PathBuf {
    PathBuf::from(format!("{}-audit", db.display()))
}

fn spool_len(db: &Path) -> u64 {
    std::fs::metadata(spool_of(db)).unwrap().len()
}

/// How many rows of the `audit` table each call id has, read from the file without a store.
fn rows_per_call(db: &Path) -> HashMap<String, usize> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT json_extract(data, '$.call_id') FROM audit")
        .unwrap();
    let mut per_call = HashMap::new();
    for id in stmt.query_map([], |r| r.get::<_, String>(0)).unwrap() {
        *per_call.entry(id.unwrap()).or_insert(0) += 1;
    }
    per_call
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// A store on a new file in a directory of its own (kept while the store is used).
fn fresh() -> (tempfile::TempDir, PathBuf, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.sqlite3");
    let store = SqliteStore::open(&db).unwrap();
    (dir, db, store)
}

/// The call ids of the trail, newest first.
fn trail_ids(store: &SqliteStore) -> Vec<String> {
    (store.query_audit(&ActivityQuery::default()).unwrap())
        .iter()
        .map(|r| r.call_id.to_string())
        .collect()
}

/// Appends the records of `ids` in place, as the executor does, each one answered at once.
fn append_all(store: &SqliteStore, ids: &[String]) {
    for id in ids {
        assert!(
            matches!(store.try_append_audit(&read_only_record(id)), Some(Ok(()))),
            "{id} spooled at once"
        );
    }
}

/// The part of the killed process: its records spooled while another connection holds the
/// file's write lock (so that nothing moves them), a record cut short between them, then it
/// says so and waits to be killed.
#[test]
fn child() {
    let Ok(db) = std::env::var(CHILD) else {
        return;
    };
    let db = PathBuf::from(db);
    let store = SqliteStore::open(&db).unwrap();
    let other = rusqlite::Connection::open(&db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    append_all(&store, &ids("before-", 10));
    // a write cut short: the start of a record, without its end
    let mut spool = std::fs::OpenOptions::new()
        .append(true)
        .open(spool_of(&db))
        .unwrap();
    spool
        .write_all(b"\x1e{\"call_id\":\"torn\",\"tool\":")
        .unwrap();
    append_all(&store, &ids("after-", 10));
    println!("SPOOLED");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(60));
}

#[test]
fn records_a_killed_process_left_in_the_spool_reach_the_trail_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.sqlite3");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "store_spool::child", "--nocapture"])
        .env(CHILD, &db)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let spooled = stdout.lines().map_while(Result::ok).any(|l| l == "SPOOLED");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(spooled, "the child spooled its records");
    assert!(spool_len(&db) > 0, "the records are in the spool");
    assert!(rows_per_call(&db).is_empty(), "and not in the table");

    // the next store alone on the file moves them as it opens, and empties the spool
    let store = SqliteStore::open(&db).unwrap();
    assert_eq!(spool_len(&db), 0);
    let trail = store.query_audit(&ActivityQuery::default()).unwrap();
    let mut want = ids("before-", 10);
    want.extend(ids("after-", 10));
    let got: Vec<String> = trail.iter().rev().map(|r| r.call_id.to_string()).collect();
    assert_eq!(got, want, "every whole record once, in the order written");
    let seqs: Vec<u64> = trail.iter().rev().map(|r| r.seq.unwrap()).collect();
    assert_eq!(seqs, (1..=20).collect::<Vec<u64>>());
}

#[test]
fn a_record_cut_short_is_skipped_and_the_next_one_kept() {
    let (_dir, db, store) = fresh();
    append_all(&store, &ids("a-", 1));
    std::fs::OpenOptions::new()
        .append(true)
        .open(spool_of(&db))
        .unwrap()
        .write_all(b"\x1e{\"call_id\":\"torn\"")
        .unwrap();
    append_all(&store, &ids("b-", 1));
    assert_eq!(trail_ids(&store), ["b-0", "a-0"]);
}

/// Two stores (as two processes) append from several threads while both move the spool, on
/// their checkpointing threads and before queries: each record reaches the trail exactly once.
/// Neither empties the spool while the other has it open, but what is moved gives its room on
/// the disk back; the last one to close empties it.
#[test]
fn two_stores_on_one_file_put_each_record_in_the_trail_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.sqlite3");
    let stores = [
        Arc::new(SqliteStore::open(&db).unwrap()),
        Arc::new(SqliteStore::open(&db).unwrap()),
    ];
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = stores[t % 2].clone();
            std::thread::spawn(move || {
                for (i, id) in ids(&format!("t{t}-"), 250).iter().enumerate() {
                    let record = read_only_record(id);
                    match store.try_append_audit(&record) {
                        Some(Ok(())) => {}
                        // declined while the spool is emptied: the full path takes it
                        None => store.append_audit(&record).unwrap(),
                        Some(Err(e)) => panic!("{id}: {e}"),
                    }
                    if i % 50 == 0 {
                        store.query_audit(&ActivityQuery::default()).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let all = ActivityQuery {
        limit: Some(2_000),
        ..ActivityQuery::default()
    };
    for store in &stores {
        assert_eq!(store.query_audit(&all).unwrap().len(), 1_000);
    }
    let len = spool_len(&db);
    assert!(len > 0, "not emptied while the other store has it");
    // what was moved gives its blocks back at the next turn of a checkpointing thread (ext4,
    // xfs, btrfs and tmpfs make holes)
    std::thread::sleep(std::time::Duration::from_millis(600));
    let taken = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(spool_of(&db)).unwrap().blocks() * 512
    };
    assert!(
        taken < len / 2,
        "{taken} bytes on the disk for a spool of {len}, all of it moved"
    );
    drop(stores);

    let per_call = rows_per_call(&db);
    assert_eq!(per_call.len(), 1_000);
    assert!(per_call.values().all(|&n| n == 1), "{per_call:?}");
    assert_eq!(spool_len(&db), 0, "the last store out emptied it");
}

/// The spool emptied by a store whose commit of that was lost (the process stopped between the
/// two): the file is shorter than what the database says was moved, and what it holds now is
/// all new.
#[test]
fn a_spool_shorter_than_what_was_moved_is_moved_from_its_start() {
    let (_dir, db, store) = fresh();
    let other = rusqlite::Connection::open(&db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    append_all(&store, &ids("new-", 3));
    other
        .execute_batch(
            "INSERT INTO audit_spool (id, moved) VALUES (1, 1000000) \
             ON CONFLICT (id) DO UPDATE SET moved = 1000000; COMMIT",
        )
        .unwrap();
    assert_eq!(trail_ids(&store), ["new-2", "new-1", "new-0"]);
}

/// A change's record goes into the table itself; the trail still keeps the order the records
/// were written in, spooled or not.
#[test]
fn the_trail_keeps_the_order_records_were_written_in() {
    let (_dir, _db, store) = fresh();
    append_all(&store, &ids("read-", 2));
    assert!(matches!(
        store.try_append_audit(&change_record("change-0")),
        Some(Ok(()))
    ));
    append_all(&store, &ids("read-after-", 1));
    store.append_audit(&change_record("change-1")).unwrap();
    assert_eq!(
        trail_ids(&store),
        ["change-1", "read-after-0", "change-0", "read-1", "read-0"]
    );
}
