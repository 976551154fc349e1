//! The terminal confirmation, tested for real: `confirm_probe` runs in a tmux pane, the test reads
//! the screen with `tmux capture-pane` and answers with `tmux send-keys`. Skipped (with the
//! reason printed) when tmux is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A tmux server of our own (private socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(name: &str, out: &Path, timeout_ms: Option<u64>) -> Option<Tmux> {
        if !Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            eprintln!("SKIPPED: tmux is not installed (apt-get install tmux)");
            return None;
        }
        let socket = format!("confirm-{}-{name}", std::process::id());
        let mut cmd = format!(
            "{} {}",
            shell_quote(env!("CARGO_BIN_EXE_confirm_probe")),
            shell_quote(out.to_str().unwrap())
        );
        if let Some(t) = timeout_ms {
            cmd.push_str(&format!(" {t}"));
        }
        // keep the pane after the probe exits, so the final screen can still be read
        let t = Tmux { socket };
        t.tmux(&[
            "new-session",
            "-d",
            "-s",
            "probe",
            "-x",
            "100",
            "-y",
            "50",
            &cmd,
        ]);
        t.tmux(&["set-option", "-t", "probe", "remain-on-exit", "on"]);
        Some(t)
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "probe", "-S", "-100"])
    }

    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?} never appeared; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn type_line(&self, text: &str) {
        if !text.is_empty() {
            self.tmux(&["send-keys", "-t", "probe", "-l", text]);
        }
        self.tmux(&["send-keys", "-t", "probe", "Enter"]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn result(out: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !out.exists() {
        assert!(Instant::now() < deadline, "the probe wrote no result");
        std::thread::sleep(Duration::from_millis(50));
    }
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

fn out_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("outcome.json")
}

#[test]
fn yes_runs_the_call_after_showing_the_box() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_file(&dir);
    let Some(t) = Tmux::start("yes", &out, None) else {
        return;
    };
    let screen = t.wait_for("Proceed? [Y/n/e]");
    assert!(screen.contains("Tool: delete_note"), "{screen}");
    assert!(screen.contains("Category: MODIFY"), "{screen}");
    assert!(
        screen.contains("Delete your note \"Ricoeur outline\""),
        "{screen}"
    );
    assert!(screen.contains("│   title: Ricoeur outline"), "{screen}");
    assert!(screen.contains("cannot be undone"), "{screen}");
    t.type_line("y");
    let v = result(&out);
    assert_eq!(v["outcome"]["status"], "success", "{v}");
    assert_eq!(v["outcome"]["value"]["deleted"], "Ricoeur outline");
}

#[test]
fn no_with_a_reason_is_a_denial_carrying_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_file(&dir);
    let Some(t) = Tmux::start("no", &out, None) else {
        return;
    };
    t.wait_for("Proceed? [Y/n/e]");
    t.type_line("n");
    t.wait_for("Reason (optional):");
    t.type_line("I still need that note");
    let v = result(&out);
    assert_eq!(v["outcome"]["status"], "denied", "{v}");
    assert_eq!(v["outcome"]["reason"], "I still need that note");
    assert_eq!(v["outcome"]["by"], "user");
}

#[test]
fn edit_runs_the_edited_arguments_after_validating_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_file(&dir);
    let Some(t) = Tmux::start("edit", &out, None) else {
        return;
    };
    t.wait_for("Proceed? [Y/n/e]");
    t.type_line("e");
    t.wait_for("New arguments (JSON");
    // valid JSON that the schema refuses: asked again, with the reason
    t.type_line(r#"{"title": 7}"#);
    let screen = t.wait_for("Your edit was not accepted");
    assert!(screen.contains("/title"), "{screen}");
    // the box still shows the arguments a "yes" would run
    let last_box = &screen[screen.rfind("Tool: delete_note").unwrap()..];
    assert!(last_box.contains("title: Ricoeur outline"), "{screen}");
    t.wait_for("Proceed? [Y/n/e] (");
    t.type_line("e");
    t.type_line(r#"{"title": "Gadamer draft"}"#);
    let v = result(&out);
    assert_eq!(v["outcome"]["status"], "success", "{v}");
    assert_eq!(v["outcome"]["value"]["deleted"], "Gadamer draft");
}

#[test]
fn silence_is_a_denial_by_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_file(&dir);
    let Some(t) = Tmux::start("timeout", &out, Some(1_500)) else {
        return;
    };
    t.wait_for("Proceed? [Y/n/e]");
    let v = result(&out);
    assert_eq!(v["outcome"]["status"], "denied", "{v}");
    assert_eq!(v["outcome"]["by"], "timeout");
    t.wait_for("No answer in time");
}
