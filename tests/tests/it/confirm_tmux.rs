//! The terminal confirmation, tested for real: a program runs in a tmux pane, the test reads the
//! screen with `tmux capture-pane`, answers with `tmux send-keys`, and checks that the program
//! exits. Two programs: `confirm_probe`, an executor whose handler is the terminal, and the same
//! binary linked as `tools`, an application's `tools` command line, for `tools call` of a
//! modifying tool without `--yes`.
//!
//! Without tmux the tests are skipped with the reason printed, except under CI (`CI` set), where
//! a missing tmux is a failure: CI installs it, so its absence means the tests did not run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A tmux server of our own (private socket), killed when dropped.
struct Tmux {
    socket: String,
    /// Where the shell running the program writes the program's exit status once it exits.
    status: PathBuf,
}

/// Whether tmux can run here; `false` skips the test, except under CI, where it fails.
fn have_tmux() -> bool {
    if Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    assert!(
        !test_support::in_ci(),
        "tmux is not installed, and CI is set: the terminal confirmation tests must run in CI \
         (apt-get install tmux)"
    );
    eprintln!("SKIPPED: tmux is not installed (apt-get install tmux)");
    false
}

impl Tmux {
    /// Runs `confirm_probe OUT [TIMEOUT_MS]` in a pane.
    fn start(name: &str, out: &Path, timeout_ms: Option<u64>) -> Option<Tmux> {
        let mut cmd = format!(
            "{} {}",
            shell_quote(env!("CARGO_BIN_EXE_confirm_probe")),
            shell_quote(out.to_str().unwrap())
        );
        if let Some(t) = timeout_ms {
            cmd.push_str(&format!(" {t}"));
        }
        Self::run(name, &cmd, &out.with_extension("status"))
    }

    /// Runs a shell command in a pane that stays after the command exits, so that its final
    /// screen can still be read. The shell around it writes its exit status to `status`: that
    /// the shell's wait returned is the proof that the program exited (tmux's own
    /// `pane_dead_status` is not reliable: tmux 3.3 sometimes leaves a program that had a thread
    /// blocked reading the terminal unreaped).
    fn run(name: &str, cmd: &str, status: &Path) -> Option<Tmux> {
        if !have_tmux() {
            return None;
        }
        let socket = format!("confirm-{}-{name}", std::process::id());
        let t = Tmux {
            socket,
            status: status.to_owned(),
        };
        let tmp = status.with_extension("status.tmp");
        let cmd = format!(
            "{cmd}; echo $? > {tmp} && mv {tmp} {status}",
            tmp = shell_quote(tmp.to_str().unwrap()),
            status = shell_quote(status.to_str().unwrap()),
        );
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

    /// Waits for the program in the pane to exit and returns its exit status. Fails if it is
    /// still running after 30 s: nothing in these dialogues takes more than a few seconds, so a
    /// program still running is one waiting for input that will never come.
    fn exit_status(&self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(text) = std::fs::read_to_string(&self.status) {
                return text.trim().parse().expect("the shell wrote a status");
            }
            assert!(
                Instant::now() < deadline,
                "the program did not exit; the screen:\n{}",
                self.screen()
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

/// The box's "Changes" section: the previewer's change as `-`, `~` and `!` lines, a long text
/// cut with its length, every line inside the border.
fn assert_change_lines(screen: &str) {
    let rows: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.contains("│ Changes:"))
        .take_while(|l| !l.contains("cannot be undone"))
        .collect();
    for row in &rows {
        assert!(
            row.starts_with('│') && row.trim_end().ends_with('│'),
            "{row:?} is outside the box:\n{screen}"
        );
    }
    let text = rows.join("\n");
    for line in [
        "│   - note: “Ricoeur outline”",
        "│   - its text: “Distanciation and critical distance in Ricoeur's",
        "…” (504 chars)",
        "│   ~ notes in your library: 12 → 11",
        "│   ! 2 links to it will be removed",
        "│     This will modify your existing work.",
    ] {
        assert!(text.contains(line), "{line:?} is not shown:\n{screen}");
    }
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
        screen.contains("Delete your note “Ricoeur outline”"),
        "{screen}"
    );
    assert!(screen.contains("│   title: Ricoeur outline"), "{screen}");
    assert!(screen.contains("cannot be undone"), "{screen}");
    assert_change_lines(&screen);
    t.type_line("y");
    let v = result(&out);
    assert_eq!(v["outcome"]["status"], "success", "{v}");
    assert_eq!(v["outcome"]["value"]["deleted"], "Ricoeur outline");
    assert_eq!(t.exit_status(), 0);
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
    // nobody presses Enter: the probe must exit anyway, not wait for the abandoned read
    assert_eq!(t.exit_status(), 0, "{}", t.screen());
}

/// `tools call delete_note` without `--yes`, in a directory of its own: the `tools` link to the
/// probe, its configuration (confirmation timeout, SQLite store) and the tool's `deleted.log`.
struct ToolsCall {
    dir: tempfile::TempDir,
    tmux: Tmux,
}

impl ToolsCall {
    fn start(name: &str, confirmation_timeout_ms: u64) -> Option<ToolsCall> {
        Self::start_with(
            name,
            confirmation_timeout_ms,
            r#"{"title": "Ricoeur outline"}"#,
        )
    }

    /// `tools call delete_note --args ARGUMENTS`.
    fn start_with(name: &str, confirmation_timeout_ms: u64, arguments: &str) -> Option<ToolsCall> {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("tools");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_confirm_probe"), &tools).unwrap();
        let config = dir.path().join("tools.toml");
        std::fs::write(
            &config,
            format!(
                "confirmation_timeout_ms = {confirmation_timeout_ms}\n[store]\npath = {:?}\n",
                dir.path().join("state.sqlite3")
            ),
        )
        .unwrap();
        let cmd = format!(
            "{} call delete_note --args {} --config {}",
            shell_quote(tools.to_str().unwrap()),
            shell_quote(arguments),
            shell_quote(config.to_str().unwrap()),
        );
        let tmux = Tmux::run(name, &cmd, &dir.path().join("exit.status"))?;
        Some(ToolsCall { dir, tmux })
    }

    /// The titles the tool deleted, i.e. whether it ran.
    fn deleted(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("deleted.log")).unwrap_or_default()
    }
}

#[test]
fn tools_call_yes_runs_the_tool_prints_the_result_and_exits() {
    let Some(c) = ToolsCall::start("call-yes", 60_000) else {
        return;
    };
    let screen = c.tmux.wait_for("Proceed? [Y/n/e]");
    assert!(screen.contains("Category: MODIFY"), "{screen}");
    assert!(
        screen.contains("Delete your note “Ricoeur outline”"),
        "{screen}"
    );
    assert_change_lines(&screen);
    assert_eq!(c.deleted(), "", "nothing runs before the answer");
    c.tmux.type_line("y");
    assert_eq!(c.tmux.exit_status(), 0, "{}", c.tmux.screen());
    assert!(
        c.tmux.screen().contains(r#""deleted": "Ricoeur outline""#),
        "{}",
        c.tmux.screen()
    );
    assert_eq!(c.deleted(), "Ricoeur outline\n");
}

#[test]
fn tools_call_no_is_a_denial_with_the_reason_and_exits() {
    let Some(c) = ToolsCall::start("call-no", 60_000) else {
        return;
    };
    c.tmux.wait_for("Proceed? [Y/n/e]");
    c.tmux.type_line("n");
    c.tmux.wait_for("Reason (optional):");
    c.tmux.type_line("I still need it");
    // a denial is the person's choice, but the command did not do what it was asked: exit 1
    assert_eq!(c.tmux.exit_status(), 1, "{}", c.tmux.screen());
    assert!(
        c.tmux.screen().contains("denied (user): I still need it"),
        "{}",
        c.tmux.screen()
    );
    assert_eq!(c.deleted(), "", "the tool did not run");
}

#[test]
fn tools_call_exits_after_a_confirmation_timeout_without_waiting_for_enter() {
    let Some(c) = ToolsCall::start("call-timeout", 1_500) else {
        return;
    };
    c.tmux.wait_for("Proceed? [Y/n/e]");
    // nobody answers, and nobody presses Enter afterwards either
    c.tmux.wait_for("No answer in time");
    assert_eq!(c.tmux.exit_status(), 1, "{}", c.tmux.screen());
    assert!(
        c.tmux.screen().contains("denied (timeout)"),
        "{}",
        c.tmux.screen()
    );
    assert_eq!(c.deleted(), "", "the tool did not run");
}

/// Arguments that carry terminal escape sequences, carriage returns and line breaks (here moving
/// the cursor up, erasing lines and printing a fake category) are shown as escapes: the screen
/// the person reads has the real category, once, and the text the model sent, visibly.
#[test]
fn escape_sequences_in_arguments_cannot_rewrite_the_confirmation_box() {
    let hostile = r#"{"title": "x\u001b[3A\u001b[2K\r\u2502 Category: READ_ONLY\u001b[K\nCategory: READ_ONLY"}"#;
    let Some(c) = ToolsCall::start_with("call-hostile", 60_000, hostile) else {
        return;
    };
    let screen = c.tmux.wait_for("Proceed? [Y/n/e]");
    assert!(screen.contains("Category: MODIFY"), "{screen}");
    let fake = screen
        .lines()
        .filter(|l| {
            l.trim_start_matches("│ ")
                .starts_with("Category: READ_ONLY")
        })
        .count();
    assert_eq!(
        fake, 0,
        "a line of the screen shows the fake category:\n{screen}"
    );
    assert!(
        screen.contains(r"title: x\u{1b}[3A\u{1b}[2K\r│ Category:"),
        "{screen}"
    );
    assert!(
        screen.contains(r"READ_ONLY\u{1b}[K\nCategory: READ_ONLY"),
        "{screen}"
    );
    c.tmux.type_line("n");
    c.tmux.wait_for("Reason (optional):");
    c.tmux.type_line("");
    assert_eq!(c.deleted(), "", "denied: nothing ran");
    c.tmux.exit_status();
}
