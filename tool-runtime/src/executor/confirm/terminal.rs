//! The terminal confirmation: a box with the intent, the parameters, the category, whether the
//! action can be undone and the change preview; then `Y/n/e` with a timeout.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::Mutex;

use super::lines::{self, LineFeed};
use super::{Answer, ConfirmationHandler, ConfirmationRequest};
use crate::display::{self, visible, visible_lines, width};
use crate::error::ToolError;
use crate::host::{CallHost, Form, Host, Reply};

/// Width of the box, borders included.
const WIDTH: usize = 72;

/// Asks in a terminal. Prompts are serialised: concurrent calls wait their turn rather than
/// interleave their boxes.
///
/// It is also the host of the calls it confirms ([`ConfirmationHandler::host`]): a tool's
/// question ([`CallContext::ask`](crate::CallContext::ask)) is asked field by field in the same
/// terminal, in turn with the confirmations.
pub struct TerminalConfirmer {
    io: Arc<Mutex<Io>>,
}

pub(super) struct Io {
    input: Input,
    pub(super) output: Box<dyn Write + Send>,
}

enum Input {
    /// Standard input, through the process's one reader thread (see [`lines`]).
    Stdin,
    /// A reader whose reads can be cancelled (tests, an embedding application's channel).
    Async(Box<dyn AsyncBufRead + Send + Unpin>),
}

impl TerminalConfirmer {
    /// Reads answers from standard input and draws on standard error (standard output stays free
    /// for the command's result).
    ///
    /// Standard input is read by one thread for the whole process, never by a task: a question
    /// that times out leaves no read behind that would keep the process from exiting, and a
    /// line typed after the timeout goes to the next question, where it is dropped as an answer
    /// to the question that is gone (see [`super::read_stdin_line`] for applications that read
    /// standard input themselves).
    pub fn stdio() -> Self {
        TerminalConfirmer {
            io: Arc::new(Mutex::new(Io {
                input: Input::Stdin,
                output: Box::new(std::io::stderr()),
            })),
        }
    }

    /// Reads from `input` and draws on `output`. The reads must be cancellable (a timeout drops
    /// them); for a blocking reader such as standard input use [`TerminalConfirmer::stdio`].
    pub fn new(
        input: impl AsyncBufRead + Send + Unpin + 'static,
        output: impl Write + Send + 'static,
    ) -> Self {
        TerminalConfirmer {
            io: Arc::new(Mutex::new(Io {
                input: Input::Async(Box::new(input)),
                output: Box::new(output),
            })),
        }
    }
}

impl ConfirmationHandler for TerminalConfirmer {
    fn confirm<'a>(&'a self, request: &'a ConfirmationRequest) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let deadline = Instant::now() + request.timeout;
            let mut io = self.io.lock().await;
            io.drop_late_lines().await;
            let _ = io.output.write_all(render(request).as_bytes());
            ask(&mut io, deadline, request)
                .await
                .unwrap_or(Answer::Timeout)
        })
    }

    fn host(&self) -> Option<Host> {
        Some(Host::new(TerminalHost(self.io.clone())))
    }
}

/// The terminal as the host of a call: it asks the tool's questions.
struct TerminalHost(Arc<Mutex<Io>>);

impl CallHost for TerminalHost {
    fn ask<'a>(&'a self, form: &'a Form) -> BoxFuture<'a, Result<Reply<Value>, ToolError>> {
        Box::pin(async move {
            let deadline = Instant::now() + form.timeout;
            let mut io = self.0.lock().await;
            io.drop_late_lines().await;
            Ok(super::question::ask(&mut io, deadline, form)
                .await
                .unwrap_or(Reply::TimedOut))
        })
    }
}

impl Io {
    /// Drops the lines typed for a question that timed out, and says so.
    async fn drop_late_lines(&mut self) {
        if let Input::Stdin = self.input {
            let dropped = lines::stdin().discard_abandoned().await;
            if dropped > 0 {
                let _ = writeln!(
                    self.output,
                    "\n(Ignored {dropped} line(s) typed after the previous question timed out.)"
                );
            }
        }
    }
}

/// Runs the dialogue; `None` when the deadline passed.
async fn ask(io: &mut Io, deadline: Instant, request: &ConfirmationRequest) -> Option<Answer> {
    loop {
        let secs = deadline.saturating_duration_since(Instant::now()).as_secs();
        let line = read_line(io, deadline, &format!("Proceed? [Y/n/e] ({secs}s) ")).await?;
        let Some(line) = line else {
            return Some(no("no answer: the terminal input is closed"));
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "" | "y" | "yes" => return Some(Answer::Yes),
            "n" | "no" => {
                let reason = read_line(io, deadline, "Reason (optional): ").await?;
                let reason = reason
                    .map(|r| r.trim().to_owned())
                    .filter(|r| !r.is_empty());
                return Some(Answer::No { reason });
            }
            "e" | "edit" => {
                let current = visible(&request.preview.arguments.to_string()).into_owned();
                let _ = writeln!(io.output, "Current arguments: {current}");
                loop {
                    let text =
                        read_line(io, deadline, "New arguments (JSON, empty to cancel edit): ")
                            .await?;
                    let Some(text) = text else {
                        return Some(no("no answer: the terminal input is closed"));
                    };
                    if text.trim().is_empty() {
                        break;
                    }
                    match serde_json::from_str::<Value>(text.trim()) {
                        Ok(arguments) if arguments.is_object() => {
                            return Some(Answer::Edit { arguments });
                        }
                        Ok(_) => {
                            let _ = writeln!(io.output, "The arguments must be a JSON object.");
                        }
                        Err(e) => {
                            let _ = writeln!(io.output, "That is not JSON: {e}");
                        }
                    }
                }
            }
            "?" | "l" | "learn more" if request.preview.first_use.is_some() => {
                let _ = io.output.write_all(learn_more(request).as_bytes());
            }
            other => {
                let _ = writeln!(io.output, "Please answer y, n or e (not {other:?}).");
            }
        }
    }
}

fn no(reason: &str) -> Answer {
    Answer::No {
        reason: Some(reason.to_owned()),
    }
}

/// Says so when a question is given up, whether by its own deadline or because the executor's
/// timeout dropped the dialogue first (whichever fires first, the person is told, and lines
/// typed for the question are not taken as answers to the next one).
struct Unanswered<'a> {
    output: &'a mut (dyn Write + Send),
    gone: &'static str,
    feed: Option<&'static LineFeed>,
    answered: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let _ = writeln!(self.output, "\nNo answer in time: {}", self.gone);
        let _ = self.output.flush();
        if let Some(feed) = self.feed {
            feed.abandon();
        }
    }
}

/// One line, or `Some(None)` at end of input, or `None` when the deadline passed.
async fn read_line(io: &mut Io, deadline: Instant, prompt: &str) -> Option<Option<String>> {
    read_line_or(io, deadline, prompt, "the call is cancelled.").await
}

/// [`read_line`], telling the person `gone` when the deadline passes.
pub(super) async fn read_line_or(
    io: &mut Io,
    deadline: Instant,
    prompt: &str,
    gone: &'static str,
) -> Option<Option<String>> {
    let _ = io.output.write_all(prompt.as_bytes());
    let _ = io.output.flush();
    let feed = matches!(io.input, Input::Stdin).then(lines::stdin);
    let mut waiting = Unanswered {
        output: &mut *io.output,
        gone,
        feed,
        answered: false,
    };
    let read = match &mut io.input {
        Input::Stdin => {
            let feed = lines::stdin();
            tokio::time::timeout_at(deadline.into(), feed.next_line()).await
        }
        Input::Async(input) => {
            let mut line = String::new();
            tokio::time::timeout_at(deadline.into(), input.read_line(&mut line))
                .await
                .map(|r| match r {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line),
                })
        }
    };
    let line = read.ok()?;
    waiting.answered = true;
    Some(line.map(|l| l.trim_end_matches(['\r', '\n']).to_owned()))
}

/// The box, as text.
pub(crate) fn render(request: &ConfirmationRequest) -> String {
    let p = &request.preview;
    let inner = WIDTH - 4;
    let mut out = String::new();
    let rule = |l: char, r: char| format!("{l}{}{r}\n", "─".repeat(WIDTH - 2));
    // everything in the box is made visible first (the arguments, the tool's name, the intent
    // and the change all come from the model or a tool), and measured in columns, so no
    // content can move the cursor, overwrite a line or push the border out of place
    let line = |out: &mut String, text: &str| {
        for piece in wrap(&visible_lines(text), inner) {
            let pad = inner.saturating_sub(width(&piece));
            out.push_str(&format!("│ {piece}{} │\n", " ".repeat(pad)));
        }
    };
    out.push('\n');
    out.push_str(&rule('┌', '┐'));
    line(&mut out, &format!("Tool: {}", visible(&p.tool)));
    line(
        &mut out,
        &format!("Category: {}", p.category.as_str().to_uppercase()),
    );
    out.push_str(&rule('├', '┤'));
    line(&mut out, &visible(&p.intent));
    if let Some(first) = &p.first_use {
        line(&mut out, "");
        line(&mut out, &first.message);
    }
    if let Some(args) = p.arguments.as_object().filter(|a| !a.is_empty()) {
        line(&mut out, "");
        line(&mut out, "Parameters:");
        for (k, v) in args {
            // one line per argument: a line break inside a value is shown, not followed, so
            // a value cannot draw lines of its own that look like the box's
            let v = match v {
                Value::String(s) => visible(s).into_owned(),
                v => visible(&v.to_string()).into_owned(),
            };
            line(&mut out, &format!("  {}: {v}", visible(k)));
        }
    }
    if let Some(change) = p.change.as_ref().filter(|c| !c.is_empty()) {
        line(&mut out, "");
        line(&mut out, "Changes:");
        // already visible: the change renderer escapes every value it writes
        for l in display::change_lines(change) {
            line(&mut out, &format!("  {l}"));
        }
    }
    line(&mut out, "");
    if p.reversible {
        line(&mut out, "This action can be undone.");
    } else {
        line(&mut out, "WARNING: this action cannot be undone.");
    }
    if let Some(problem) = &request.problem {
        line(&mut out, "");
        line(&mut out, &format!("Your edit was not accepted: {problem}"));
    }
    out.push_str(&rule('├', '┤'));
    if p.first_use.is_some() {
        line(
            &mut out,
            "[Y] Proceed  [n] Cancel  [e] Edit the arguments  [?] Learn more",
        );
    } else {
        line(&mut out, "[Y] Proceed  [n] Cancel  [e] Edit the arguments");
    }
    out.push_str(&rule('└', '┘'));
    out
}

/// What `?` shows at a first-time gate: what the service is (the tool's own description) and
/// exactly what would leave the system, value by value.
fn learn_more(request: &ConfirmationRequest) -> String {
    let p = &request.preview;
    let Some(first) = &p.first_use else {
        return String::new();
    };
    let mut out = format!(
        "\nAbout {}: {}\n",
        visible(&p.tool),
        visible_lines(&first.service)
    );
    if first.data_leaving.is_empty() {
        out.push_str("Nothing from this call leaves the system.\n");
    } else {
        out.push_str("What leaves the system if you proceed:\n");
        for key in &first.data_leaving {
            let value = match p.arguments.get(key) {
                Some(Value::String(s)) => visible(s).into_owned(),
                Some(v) => visible(&v.to_string()).into_owned(),
                None => String::new(),
            };
            out.push_str(&format!("  {}: {value}\n", visible(key)));
        }
    }
    out.push_str("Approving passes the gate for this session; later calls ask as usual.\n");
    out
}

/// Splits `text` into lines of at most `width` characters, at spaces where possible.
fn wrap(text: &str, width: usize) -> Vec<String> {
    if text.is_empty() {
        return vec![String::new()];
    }
    let mut lines = Vec::new();
    for para in text.split('\n') {
        // keep a paragraph's indentation on each of its lines
        let body = para.trim_start_matches(' ');
        let indent = " ".repeat((para.len() - body.len()).min(width / 2));
        let width = width - indent.len();
        let start = lines.len();
        let mut cur = String::new();
        for word in body.split(' ') {
            let mut word = word.to_owned();
            while display::width(&word) > width {
                if !cur.is_empty() {
                    lines.push(std::mem::take(&mut cur));
                }
                // the longest head that fits, at least one character so that the loop ends
                let (mut cols, mut cut) = (0, 0);
                for (i, c) in word.char_indices() {
                    let w = display::char_width(c);
                    if cols + w > width && i > 0 {
                        break;
                    }
                    cols += w;
                    cut = i + c.len_utf8();
                }
                let rest = word.split_off(cut);
                lines.push(std::mem::replace(&mut word, rest));
            }
            let extra = usize::from(!cur.is_empty());
            if display::width(&cur) + extra + display::width(&word) > width {
                lines.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(&word);
        }
        lines.push(cur);
        for l in &mut lines[start..] {
            l.insert_str(0, &indent);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::Safety;
    use crate::executor::Preview;
    use serde_json::json;
    use std::sync::{Arc, Mutex as StdMutex};
    use std::time::Duration;
    use tokio::io::BufReader;

    #[derive(Clone, Default)]
    struct Shared(Arc<StdMutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn request() -> ConfirmationRequest {
        ConfirmationRequest {
            preview: Preview {
                call_id: "c1".into(),
                tool: "delete_note".into(),
                intent: "Delete the note \"Ricoeur\"".into(),
                category: Safety::Modify,
                arguments: json!({"note_id": "n1"}),
                reversible: false,
                change: Some(
                    crate::executor::Change::new()
                        .removed("note n1", "Ricoeur on distanciation")
                        .touches(2, "links to it will be removed"),
                ),
                first_use: None,
            },
            problem: None,
            timeout: Duration::from_secs(5),
        }
    }

    async fn answer(input: &'static str) -> (Answer, String) {
        let out = Shared::default();
        let t = TerminalConfirmer::new(BufReader::new(input.as_bytes()), out.clone());
        let a = t.confirm(&request()).await;
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        (a, text)
    }

    #[tokio::test]
    async fn the_box_shows_intent_parameters_category_and_undo_ability() {
        let (a, text) = answer("\n").await;
        assert_eq!(a, Answer::Yes);
        assert!(text.contains("Tool: delete_note"));
        assert!(text.contains("Category: MODIFY"));
        assert!(text.contains("Delete the note \"Ricoeur\""));
        assert!(text.contains("│   note_id: n1 "), "{text}");
        assert!(text.contains("cannot be undone"));
        assert!(
            text.contains("│   - note n1: “Ricoeur on distanciation”"),
            "{text}"
        );
        assert!(
            text.contains("│   ! 2 links to it will be removed"),
            "{text}"
        );
        for l in text.lines().filter(|l| l.starts_with('│')) {
            assert_eq!(l.chars().count(), WIDTH, "{l:?}");
        }
    }

    /// Content cannot rewrite the box: escape sequences, carriage returns, line breaks and wide
    /// characters in the arguments, the tool's name and the intent are shown as escapes and
    /// measured in columns, so every line keeps the border and the category is the real one.
    #[test]
    fn hostile_content_cannot_break_the_box_or_fake_its_lines() {
        let mut r = request();
        r.preview.category = Safety::External;
        r.preview.tool = "send\u{1b}[1A\rmail".into();
        r.preview.intent = "Send \u{1b}[2K\rCategory: READ_ONLY".into();
        r.preview.arguments = json!({
            "to": "a@b.c\u{1b}[1A\u{1b}[2K\r│ Category: READ_ONLY",
            "body": "line one\nCategory: READ_ONLY\n\u{202e}txt.exe",
            "note": "中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文中文"
        });
        let text = render(&r);
        assert!(!text.contains('\u{1b}') && !text.contains('\r') && !text.contains('\u{202e}'));
        assert!(text.contains("Category: EXTERNAL"));
        // the only line that starts with the category is the box's own
        let categories: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start_matches("│ ").starts_with("Category:"))
            .collect();
        assert_eq!(categories.len(), 1, "{text}");
        assert!(text.contains("\\u{1b}[1A\\u{1b}[2K\\r"), "{text}");
        assert!(
            text.contains("line one\\nCategory: READ_ONLY\\n\\u{202e}txt.exe"),
            "{text}"
        );
        for l in text.lines().filter(|l| l.starts_with('│')) {
            assert_eq!(display::width(l), WIDTH, "{l:?}");
            assert!(l.ends_with('│'), "{l:?}");
        }
    }

    #[tokio::test]
    async fn no_with_reason_edit_and_closed_input() {
        assert_eq!(
            answer("n\nkeep it\n").await.0,
            Answer::No {
                reason: Some("keep it".into())
            }
        );
        assert_eq!(answer("no\n\n").await.0, Answer::No { reason: None });
        let (a, text) = answer("maybe\ne\nnot json\n{\"note_id\":\"n2\"}\n").await;
        assert_eq!(
            a,
            Answer::Edit {
                arguments: json!({"note_id": "n2"})
            }
        );
        assert!(text.contains("Please answer y, n or e"));
        assert!(text.contains("That is not JSON"));
        assert!(matches!(answer("").await.0, Answer::No { .. }));
    }

    #[tokio::test]
    async fn learn_more_at_a_first_time_gate_says_what_the_service_is_and_what_leaves() {
        let mut r = request();
        r.preview.category = Safety::External;
        r.preview.tool = "gnorm_annotate".into();
        r.preview.arguments = json!({"text": "Augustine of Hippo"});
        r.preview.first_use = Some(crate::executor::FirstUse {
            service: "Named-entity annotation by the GNORM service.".into(),
            data_leaving: vec!["text".into()],
            message: "This is the first time gnorm_annotate is used in this session.".into(),
        });
        let out = Shared::default();
        let t = TerminalConfirmer::new(BufReader::new("?\ny\n".as_bytes()), out.clone());
        assert_eq!(t.confirm(&r).await, Answer::Yes);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(text.contains("[?] Learn more"), "{text}");
        assert!(
            text.contains("About gnorm_annotate: Named-entity annotation"),
            "{text}"
        );
        assert!(text.contains("  text: Augustine of Hippo"), "{text}");
        // without a gate, `?` is not an answer
        let (a, text) = answer("?\ny\n").await;
        assert_eq!(a, Answer::Yes);
        assert!(text.contains("Please answer y, n or e"), "{text}");
    }

    #[tokio::test]
    async fn silence_is_a_timeout() {
        let (_keep_open, rx) = tokio::io::duplex(64);
        let t = TerminalConfirmer::new(BufReader::new(rx), std::io::sink());
        let mut req = request();
        req.timeout = Duration::from_millis(50);
        assert_eq!(t.confirm(&req).await, Answer::Timeout);
    }
}
