//! A crash between approval and completion, across real processes: `tools call` parks a
//! modification, `tools approve` runs it in another process that dies right after the tool took
//! effect, and later processes see the operation in doubt, never run it again (at most once),
//! and close it with `tools abandon`.
//!
//! The `tools` program is `confirm_probe` run through a link named `tools` (see that binary).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

struct App {
    dir: tempfile::TempDir,
}

impl App {
    fn new() -> App {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(
            env!("CARGO_BIN_EXE_confirm_probe"),
            dir.path().join("tools"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("tools.toml"),
            format!(
                "confirmation = \"deferred\"\n[store]\npath = {:?}\n",
                dir.path().join("state.sqlite3")
            ),
        )
        .unwrap();
        App { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `tools ARGS --config tools.toml` as a process of its own.
    fn tools(&self, args: &[&str]) -> Output {
        Command::new(self.path("tools"))
            .args(args)
            .arg("--config")
            .arg(self.path("tools.toml"))
            .current_dir(self.dir.path())
            .output()
            .expect("the tools program runs")
    }

    fn deleted(&self) -> String {
        std::fs::read_to_string(self.path("deleted.log")).unwrap_or_default()
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn park(app: &App, title: &str) -> String {
    let args = format!(r#"{{"title": "{title}"}}"#);
    let o = app.tools(&["call", "delete_note", "--args", &args]);
    assert!(o.status.success(), "{}", text(&o));
    let out = stdout(&o);
    assert!(out.starts_with("pending op-"), "{out}");
    out.split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_owned()
}

fn unfinished(app: &App) -> Vec<Value> {
    let o = app.tools(&["--json", "pending"]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn an_approved_operation_whose_process_crashed_is_in_doubt_never_rerun_and_abandoned_once() {
    let app = App::new();
    let crash = park(&app, "crash after deleting");
    let other = park(&app, "Gadamer draft");
    assert_eq!(app.deleted(), "", "nothing runs before approval");

    // the approving process dies right after the tool took effect
    let o = app.tools(&["approve", &crash]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        std::os::unix::process::ExitStatusExt::signal(&o.status).is_some(),
        "killed by a signal: {}",
        text(&o)
    );
    assert_eq!(app.deleted(), "crash after deleting\n");

    // later processes: still listed, as approved and unfinished, next to the waiting one
    let ops = unfinished(&app);
    let states: Vec<(String, String)> = ops
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().to_owned(),
                o["state"]["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            (other.clone(), "pending".to_owned()),
            (crash.clone(), "approved".to_owned())
        ]
    );
    let listing = stdout(&app.tools(&["pending"]));
    let line = listing
        .lines()
        .find(|l| l.starts_with(&crash))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(line.contains("not completed"), "{listing}");
    assert!(listing.contains("tools abandon ID"), "{listing}");

    // at most once: approving it again runs nothing
    let o = app.tools(&["approve", &crash]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("ALREADY_RESOLVED"), "{}", text(&o));
    assert_eq!(app.deleted(), "crash after deleting\n");

    // a person checked and closes it, once
    let o = app.tools(&["abandon", &crash, "--reason", "the note is gone"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("INTERRUPTED"), "{}", text(&o));
    let o = app.tools(&["abandon", &crash]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("ALREADY_RESOLVED"), "{}", text(&o));
    let ops = unfinished(&app);
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["id"], other.as_str());

    // the other operation is unaffected and runs normally
    let o = app.tools(&["approve", &other]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(app.deleted(), "crash after deleting\nGadamer draft\n");
    assert!(unfinished(&app).is_empty());
    assert!(Path::new(&app.path("state.sqlite3")).exists());
}
