//! A tool the macro refuses still names a type that implements `Tool`, so its uses elsewhere
//! add nothing to the macro's own error.
use tool_runtime::{CallContext, ToolError, ToolSet, tool, toolset, tool::Run};

/// A name no provider accepts.
#[tool(read_only, name = "has space")]
fn broken() -> u8 {
    1
}

/// Fine.
#[tool(read_only)]
fn other() -> u8 {
    2
}

#[tool(read_only)]
struct NoDescription {
    id: u64,
}

impl Run for NoDescription {
    type Output = u64;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<u64, ToolError> {
        Ok(self.id)
    }
}

/// An option the macro does not know.
#[tool(read_only, colour = "blue")]
fn unknown_option() -> u8 {
    3
}

fn main() {
    let _ = toolset![broken, other, NoDescription, unknown_option];
    let _ = ToolSet::new().with::<broken>();
}
