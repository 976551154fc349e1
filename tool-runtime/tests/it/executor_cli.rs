//! `tools call|pending|approve|deny` through the `tools` command line, across "processes" that
//! share the SQLite store named in the configuration file.

use crate::executor_support;

use std::path::Path;

use executor_support::*;
use serde_json::{Value, json};
use tool_runtime::cli::{Cli, Exit, Output};
use tool_runtime::executor::cli::ExecutorCli;
use tool_runtime::executor::{Change, ExecutorBuilder, Previewer};
use tool_runtime::{ToolSet, definition::Safety};

fn cli(counter: &Counter) -> Cli {
    let mut set = ToolSet::new();
    let mut d = def("delete_note", Safety::Modify);
    d.intent = Some("Delete the note {text}".into());
    echo(&mut set, d, counter);
    echo(&mut set, def("search", Safety::ReadOnly), counter);
    let mut login = def("login", Safety::ReadOnly);
    login.parameters = serde_json::value::RawValue::from_string(
        json!({"type": "object", "properties": {
            "user": {"type": "string"},
            "password": {"type": "string", "minLength": 20}}})
        .to_string(),
    )
    .unwrap();
    echo(&mut set, login, counter);
    // the change a deletion makes, as `tools pending` lists it under the operation
    let preview: Previewer = std::sync::Arc::new(|args: Value, _| {
        Box::pin(async move {
            let id = args["text"].as_str().unwrap_or_default().to_owned();
            Ok(Change::new()
                .removed(format!("note {id}"), "as it was\u{202e}")
                .touches(2, "links to it will be removed"))
        })
    });
    let setup = std::sync::Arc::new(move |b: ExecutorBuilder| {
        b.preview_with("delete_note", preview.clone())
    });
    ExecutorCli::with_setup(setup).install(Cli::new(set))
}

async fn run(cli: &Cli, args: &[&str]) -> (Exit, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = {
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json: false,
        };
        let mut argv = vec!["tools"];
        argv.extend_from_slice(args);
        cli.run(argv, &mut output).await
    };
    (
        exit,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn config(dir: &Path, deferred: bool) -> String {
    let path = dir.join("tools.toml");
    let mode = if deferred { "deferred" } else { "inline" };
    std::fs::write(
        &path,
        format!(
            "confirmation = \"{mode}\"\n[store]\npath = {:?}\n",
            dir.join("state.sqlite3")
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

#[tokio::test]
async fn call_with_yes_runs_and_prints_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), false);
    let counter = Counter::default();
    let cli = cli(&counter);
    let (exit, out, err) = run(
        &cli,
        &[
            "call",
            "delete_note",
            "--args",
            r#"{"text":"n1"}"#,
            "--yes",
            "--config",
            &cfg,
        ],
    )
    .await;
    assert_eq!(exit, Exit::Success, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v, json!({"echo": {"text": "n1"}}));
    assert_eq!(counter.get(), 1);

    let (exit, out, _) = run(
        &cli,
        &[
            "--json",
            "call",
            "search",
            "--args",
            r#"{"n":1}"#,
            "--config",
            &cfg,
        ],
    )
    .await;
    assert_eq!(exit, Exit::Success);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"]["status"], "success");
    assert_eq!(v["tool"], "search");

    let (exit, _, err) = run(&cli, &["call", "nope", "--config", &cfg]).await;
    assert_eq!(exit, Exit::Refused);
    assert!(err.contains("UNKNOWN_TOOL"), "{err}");
}

#[tokio::test]
async fn deferred_calls_are_listed_then_approved_or_denied_from_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), true);
    let counter = Counter::default();
    let (exit, out, _) = run(
        &cli(&counter),
        &[
            "call",
            "delete_note",
            "--args",
            r#"{"text":"n1"}"#,
            "--config",
            &cfg,
        ],
    )
    .await;
    assert_eq!(exit, Exit::Success);
    assert!(out.starts_with("pending op-"), "{out}");
    let id = out
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_owned();
    run(
        &cli(&counter),
        &[
            "call",
            "delete_note",
            "--args",
            r#"{"text":"n2"}"#,
            "--config",
            &cfg,
        ],
    )
    .await;
    assert_eq!(counter.get(), 0);

    // another process: list, approve one, deny the other
    let other = cli(&counter);
    let (exit, out, _) = run(&other, &["--json", "pending", "--config", &cfg]).await;
    assert_eq!(exit, Exit::Success);
    let ops: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[0]["id"], id.as_str());
    assert_eq!(
        ops[0]["preview"]["intent"],
        "Delete the note \u{201c}n1\u{201d}"
    );
    let second = ops[1]["id"].as_str().unwrap().to_owned();
    // as a person reads it: a line per operation, its change as lines under it
    let (_, out, _) = run(&other, &["pending", "--config", &cfg]).await;
    let listed = format!(
        "{id}  delete_note  [modify]  Delete the note \u{201c}n1\u{201d}  {{\"text\":\"n1\"}}\n    \
         - note n1: \u{201c}as it was\\u{{202e}}\u{201d}\n    ! 2 links to it will be removed\n"
    );
    assert!(out.starts_with(&listed), "{out}");

    let (exit, out, err) = run(&other, &["approve", &id, "--config", &cfg]).await;
    assert_eq!(exit, Exit::Success, "{err}");
    assert!(out.contains("\"n1\""), "{out}");
    assert_eq!(counter.get(), 1);
    let (exit, _, err) = run(&other, &["approve", &id, "--config", &cfg]).await;
    assert_eq!(exit, Exit::Refused);
    assert!(err.contains("ALREADY_RESOLVED"), "{err}");

    let (exit, out, _) = run(
        &other,
        &["deny", &second, "--reason", "keep it", "--config", &cfg],
    )
    .await;
    assert_eq!(exit, Exit::Success);
    assert!(out.contains("denied (user): keep it"), "{out}");
    let (_, out, _) = run(&other, &["pending", "--config", &cfg]).await;
    assert_eq!(out.trim(), "no pending operations");
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn a_bad_configuration_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "auto_confirm = maybe").unwrap();
    let (exit, _, err) = run(
        &cli(&Counter::default()),
        &["pending", "--config", path.to_str().unwrap()],
    )
    .await;
    assert_eq!(exit, Exit::Usage);
    assert!(err.contains("bad.toml"), "{err}");
}

/// A store that refuses the audit record (here a trigger that fails every insert, as a full disk
/// would): the call has run, and `tools call` says on stderr that its record is missing and
/// exits 1, because auditing is required by default; with `audit_required = false` it warns
/// and exits 0.
#[tokio::test]
async fn a_lost_audit_record_is_reported_and_fails_the_command_when_auditing_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), false);
    let db = dir.path().join("state.sqlite3");
    drop(tool_runtime::store::SqliteStore::open(&db).unwrap());
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER no_audit BEFORE INSERT ON audit \
             BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END;",
        )
        .unwrap();
    let counter = Counter::default();
    let cli = cli(&counter);
    let args = [
        "call",
        "delete_note",
        "--args",
        r#"{"text":"n1"}"#,
        "--yes",
        "--config",
        &cfg,
    ];
    let (exit, out, err) = run(&cli, &args).await;
    assert_eq!(exit, Exit::Refused, "{err}");
    assert_eq!(counter.get(), 1, "the tool ran");
    assert!(out.contains("n1"), "the result is still printed: {out}");
    assert!(
        err.contains("error: the audit record of call") && err.contains("disk is full"),
        "{err}"
    );

    let relaxed = dir.path().join("relaxed.toml");
    std::fs::write(
        &relaxed,
        format!(
            "audit_required = false\n{}",
            std::fs::read_to_string(&cfg).unwrap()
        ),
    )
    .unwrap();
    let mut args = args;
    args[6] = relaxed.to_str().unwrap();
    let (exit, _, err) = run(&cli, &args).await;
    assert_eq!(exit, Exit::Success, "{err}");
    assert!(err.contains("warning: the audit record of call"), "{err}");
    assert_eq!(counter.get(), 2);
}

/// A configuration that weakens the policy is announced on stderr, setting by setting, with the
/// file it came from; one that other users could have written is refused before anything runs.
#[tokio::test]
async fn weakening_configuration_is_announced_and_an_untrusted_file_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), false);
    let weak = dir.path().join("weak.toml");
    std::fs::write(
        &weak,
        format!(
            "require_first_time_gate = false\nlog_tool_calls = false\n{}",
            std::fs::read_to_string(&cfg).unwrap()
        ),
    )
    .unwrap();
    let counter = Counter::default();
    let cli = cli(&counter);
    let weak = weak.to_str().unwrap();
    let args = |cfg: &str| {
        [
            "call",
            "delete_note",
            "--args",
            r#"{"text":"n1"}"#,
            "--yes",
            "--config",
            cfg,
        ]
        .map(str::to_owned)
    };
    let (exit, _, err) = run(&cli, &args(weak).each_ref().map(String::as_str)).await;
    assert_eq!(exit, Exit::Success, "{err}");
    assert!(
        err.contains(&format!("note: {weak}: require_first_time_gate = false"))
            && err.contains(&format!("note: {weak}: log_tool_calls = false")),
        "{err}"
    );
    let (_, _, err) = run(&cli, &args(&cfg).each_ref().map(String::as_str)).await;
    assert!(
        !err.contains("note:"),
        "the defaults are not announced: {err}"
    );

    std::fs::set_permissions(weak, std::fs::Permissions::from_mode(0o666)).unwrap();
    let before = counter.get();
    let (exit, _, err) = run(&cli, &args(weak).each_ref().map(String::as_str)).await;
    assert_eq!(exit, Exit::Usage, "{err}");
    assert!(
        err.contains("refusing the configuration") && err.contains("chmod go-w"),
        "{err}"
    );
    assert_eq!(counter.get(), before, "nothing ran");
}

/// One corrupt row in the pending table hides nothing else: `tools pending` lists the readable
/// operations and names the bad one on stderr, the others are approved as usual, the bad one is
/// refused with an error that names it, and `tools abandon` closes it without running anything.
#[tokio::test]
async fn a_corrupt_pending_row_is_named_and_closed_without_hiding_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), true);
    let counter = Counter::default();
    let mut ids = Vec::new();
    for text in ["n1", "n2"] {
        let args = format!(r#"{{"text":"{text}"}}"#);
        let (exit, out, err) = run(
            &cli(&counter),
            &["call", "delete_note", "--args", &args, "--config", &cfg],
        )
        .await;
        assert_eq!(exit, Exit::Success, "{err}");
        ids.push(
            out.split_whitespace()
                .nth(1)
                .unwrap()
                .trim_end_matches(':')
                .to_owned(),
        );
    }
    let (good, bad) = (&ids[0], &ids[1]);
    rusqlite::Connection::open(dir.path().join("state.sqlite3"))
        .unwrap()
        .execute(
            "UPDATE pending SET data = '{\"id\": truncated' WHERE id = ?1",
            [bad],
        )
        .unwrap();

    let other = cli(&counter);
    let (exit, out, err) = run(&other, &["--json", "pending", "--config", &cfg]).await;
    assert_eq!(exit, Exit::Success, "{err}");
    let ops: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["id"], good.as_str());
    assert!(
        err.contains(&format!("warning: {bad} (pending) cannot be read"))
            && err.contains(&format!("tools abandon {bad}")),
        "{err}"
    );

    let (exit, _, err) = run(&other, &["approve", bad, "--config", &cfg]).await;
    assert_eq!(exit, Exit::Refused);
    assert!(err.contains(bad.as_str()), "the error names the row: {err}");
    let (exit, _, err) = run(&other, &["approve", good, "--config", &cfg]).await;
    assert_eq!(exit, Exit::Success, "{err}");
    assert_eq!(counter.get(), 1);

    let (exit, out, err) = run(&other, &["abandon", bad, "--config", &cfg]).await;
    assert_eq!(exit, Exit::Success, "{err}");
    assert!(format!("{out}{err}").contains("UNREADABLE"), "{out}{err}");
    assert_eq!(counter.get(), 1, "nothing ran");
    let (exit, out, err) = run(&other, &["pending", "--config", &cfg]).await;
    assert_eq!(exit, Exit::Success);
    assert_eq!(out.trim(), "no pending operations");
    assert!(!err.contains("cannot be read"), "closed: {err}");
    // closing twice finds nothing to close
    let (exit, _, _) = run(&other, &["abandon", bad, "--config", &cfg]).await;
    assert_eq!(exit, Exit::Refused);
}

/// A validation error about a secret does not print the secret: the message names the field
/// and what is wrong with it, never the value.
#[tokio::test]
async fn a_validation_error_about_a_secret_does_not_print_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), false);
    let counter = Counter::default();
    let args = r#"{"user": "ada", "password": "hunter2-secret"}"#;
    for json_output in [false, true] {
        let mut argv = vec!["call", "login", "--args", args, "--config", &cfg];
        if json_output {
            argv.insert(0, "--json");
        }
        let (exit, out, err) = run(&cli(&counter), &argv).await;
        assert_eq!(exit, Exit::Refused, "{out}{err}");
        let printed = format!("{out}{err}");
        assert!(printed.contains("INVALID_ARGUMENTS"), "{printed}");
        assert!(!printed.contains("hunter2"), "{printed}");
    }
    assert_eq!(counter.get(), 0);
}
