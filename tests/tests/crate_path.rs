//! `#[tool(crate = ..)]` and `#[tool_args(crate = ..)]`: the runtime named otherwise than
//! `tool_runtime`, as a renamed dependency or a framework's re-export names it.
//!
//! Cargo refuses one package as two dependencies of one crate, so `extern crate .. as` renames it.
//! `tool_runtime` then names `core`, where an expansion that wrote `::tool_runtime::..` finds
//! nothing: only the paths given in `crate = ..` can make this compile. That renaming reaches
//! `::` paths only from a crate's root, which is why this is a test binary of its own rather than
//! a module of `it`.
extern crate core as tool_runtime;
pub extern crate tool_runtime as renamed_runtime;

use renamed_runtime::__private::TestHooks as _;
use renamed_runtime::tool::Run;
use renamed_runtime::{CallContext, State, Tool, ToolArgs, ToolError, ToolSet, tool, toolset};

/// Adds two numbers.
#[tool(read_only, crate = renamed_runtime)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Says hello, with the path written as serde writes its own.
#[tool(read_only, crate = "renamed_runtime", timeout = "5s")]
async fn hello(
    /// Whom to greet
    name: String,
    cx: &CallContext,
) -> Result<String, ToolError> {
    let _ = cx;
    Ok(format!("hello {name}"))
}

/// A re-export of the runtime inside the crate, as a framework built on it would have.
mod framework {
    pub use super::renamed_runtime as tools;
}

/// A nested argument type.
#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema, ToolArgs)]
#[tool_args(crate = self::framework::tools)]
struct Window {
    start: u32,
    days: Option<u32>,
}

/// A unit enum.
#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema, ToolArgs)]
#[tool_args(crate = renamed_runtime)]
enum Order {
    Newest,
    Oldest,
}

/// Lists events; `#[derive(ToolArgs)]` on it takes the path from `#[tool(crate = ..)]`.
#[tool(read_only, crate = self::framework::tools)]
#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema, ToolArgs)]
struct ListEvents {
    /// The window.
    window: Window,
    /// The order.
    order: Order,
}

impl Run for ListEvents {
    type Output = String;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<String, ToolError> {
        Ok(format!("{self:?}"))
    }
}

/// A struct tool whose derives the macro adds.
#[tool(modify, crate = renamed_runtime)]
struct DeleteNote {
    /// The note's id
    id: u64,
    #[arg(default = 3, min = 1)]
    retries: u8,
}

impl Run for DeleteNote {
    type Output = bool;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<bool, ToolError> {
        Ok(self.id > u64::from(self.retries))
    }
}

/// Forwards whatever it receives, without a schema.
#[tool(external, allow_no_schema, no_schema_mode = human_approval, crate = renamed_runtime)]
struct Forward(serde_json::Value);

impl Run for Forward {
    type Output = serde_json::Value;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<serde_json::Value, ToolError> {
        Ok(self.0)
    }
}

/// Echoes its text, under an inline verbatim schema.
#[tool(
    read_only,
    crate = renamed_runtime,
    parameters = r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#
)]
fn echo(text: String) -> String {
    text
}

/// Adds a step to a value of the application's state, on a blocking thread.
#[tool(read_only, crate = renamed_runtime)]
fn counted(step: u32, State(base): State<u32>) -> u32 {
    base + step
}

#[test]
fn runs() {
    assert_eq!(add(1, 2), 3);
    assert_eq!(<add as Tool>::NAME, "add");
    assert_eq!(<hello as Tool>::definition().name, "hello");
    assert_eq!(
        <Forward as Tool>::definition().no_schema_mode(),
        Some(renamed_runtime::definition::NoSchemaMode::HumanApproval)
    );
    assert!(<echo as Tool>::SCHEMA_JSON.is_some());
    assert_eq!(counted(1, State(2)), 3);
    assert_eq!(<counted as Tool>::required_state().len(), 1);
    let set: ToolSet =
        toolset![add, hello, ListEvents, DeleteNote, Forward, echo].expect("unique names");
    assert_eq!(set.len(), 6);
    assert!(set.has_generated_reader("list_events"));
    let args = r#"{"window":{"start":3},"order":"Oldest"}"#;
    assert!(set.hydrate_fast_only("list_events", args).is_some());
    assert!(
        set.hydrate_fast_only("delete_note", r#"{"id":4}"#)
            .is_some()
    );
}
