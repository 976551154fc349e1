//! A tool's question in the terminal: the executor whose confirmations go to the terminal gives
//! every call the terminal as its host, so `CallContext::ask` is answered there field by field,
//! in turn with the confirmation boxes. What the person types goes to the tool, never through the
//! model's arguments.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_runtime::executor::{Executor, Outcome, TerminalConfirmer};
use tool_runtime::host::Reply;
use tool_runtime::{CallContext, ToolCall, ToolError, ToolSet, tool};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Large,
}

fn large() -> Size {
    Size::Large
}

/// An order of coffee.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Order {
    /// Who it is for.
    name: String,
    #[serde(default = "large")]
    size: Size,
    /// How many cups.
    #[schemars(range(min = 1, max = 4))]
    cups: u8,
}

/// Orders coffee for the person.
#[tool(create, intent = "Order coffee")]
async fn order(cx: &CallContext) -> Result<String, ToolError> {
    Ok(match cx.ask::<Order>("What would you like?").await? {
        Reply::Accepted(o) => format!("{} x{} {:?}", o.name, o.cups, o.size),
        other => other.action().to_owned(),
    })
}

#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `order` with `typed` as the terminal's input: the outcome's text and the screen.
async fn run(typed: &'static str) -> (String, String) {
    let screen = Screen::default();
    let terminal = TerminalConfirmer::new(typed.as_bytes(), screen.clone());
    let executor = Executor::builder(ToolSet::new().with::<order>().unwrap())
        .confirmation(terminal)
        .build()
        .unwrap();
    let call = ToolCall::new("c1", "order", json!({}));
    let outcome = executor.call(&call, CallContext::new("c1")).await.outcome;
    let text = match outcome {
        Outcome::Success { value, .. } => value.as_str().unwrap().to_owned(),
        other => panic!("{other:?}"),
    };
    let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
    (text, shown)
}

#[tokio::test]
async fn the_person_at_the_terminal_answers_a_tools_question_field_by_field() {
    // yes to the call, then: a name, the default size, a count out of range and again
    let (text, screen) = run("y\nAda\n\n9\n2\n").await;
    assert_eq!(text, "Ada x2 Large");
    assert!(
        screen.contains("A tool asks:\n  What would you like?"),
        "{screen}"
    );
    assert!(
        screen.contains("size (one of 1) small, 2) large; default large): "),
        "{screen}"
    );
    assert!(screen.contains("  Who it is for.\nname: "), "{screen}");
    assert!(
        screen.contains("Please answer between 1 and 4."),
        "{screen}"
    );
    let asked = screen.find("A tool asks").unwrap();
    let confirmed = screen.find("Proceed?").unwrap();
    assert!(
        confirmed < asked,
        "the call is confirmed before it runs: {screen}"
    );
}

#[tokio::test]
async fn the_person_can_refuse_and_a_closed_input_dismisses_the_question() {
    let (text, _) = run("y\n!decline\n").await;
    assert_eq!(text, "declined");
    let (text, _) = run("y\nAda\n").await;
    assert_eq!(text, "cancelled");
}
