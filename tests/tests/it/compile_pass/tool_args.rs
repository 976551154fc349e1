//! `#[derive(ToolArgs)]` on nested argument types, and on a `#[tool]` struct itself (whose reader
//! then comes from the derive).
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_runtime::__private::TestHooks as _;
use tool_runtime::{CallContext, Tool, ToolArgs, ToolError, ToolSet, tool, tool::Run};

/// Order.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Order {
    NewestFirst,
    #[serde(rename = "old")]
    OldestFirst,
}

/// A window.
#[derive(Debug, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Window {
    start_day: u32,
    #[serde(default)]
    days: Option<u32>,
}

/// Lists events.
#[tool(read_only)]
#[derive(Debug, Deserialize, Serialize, JsonSchema, ToolArgs)]
struct ListEvents {
    /// The window.
    window: Window,
    /// The order.
    order: Order,
    /// More windows.
    others: Vec<Window>,
}

impl Run for ListEvents {
    type Output = String;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<String, ToolError> {
        Ok(format!("{self:?}"))
    }
}

#[test]
fn runs() {
    let set = ToolSet::new().with::<ListEvents>().unwrap();
    assert!(set.has_generated_reader("list_events"));
    // the reader reads every call, so the guard is not compiled for this tool at all
    assert!(<ListEvents as Tool>::__READER.is_some());
    assert!(<ListEvents as Tool>::__GUARD.is_none());
    let args =
        r#"{"window":{"startDay":3},"order":"NEWEST_FIRST","others":[{"startDay":1,"days":2}]}"#;
    assert!(set.hydrate_fast_only("list_events", args).is_some());
    assert!(
        set.hydrate_fast_only(
            "list_events",
            r#"{"window":{"startDay":3},"order":"old","others":[]}"#
        )
        .is_some()
    );
    // what the schema refuses, the reader refuses
    assert!(
        set.hydrate_fast_only(
            "list_events",
            r#"{"window":{"startDay":3,"x":1},"order":"old","others":[]}"#
        )
        .is_none()
    );
    assert!(
        set.hydrate_fast_only(
            "list_events",
            r#"{"window":{"startDay":3},"order":"OLDEST_FIRST","others":[]}"#
        )
        .is_none()
    );
}
