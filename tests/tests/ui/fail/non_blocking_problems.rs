use tool_runtime::{CallContext, ToolError, tool, tool::Run};

/// An async fn's body runs in place already.
#[tool(read_only, non_blocking)]
async fn already_in_place(id: u64) -> u64 {
    id
}

/// A struct tool's `Run::run` is a future, polled in place already.
#[tool(read_only, non_blocking)]
struct Lookup {
    /// The id.
    id: u64,
}

impl Run for Lookup {
    type Output = u64;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<u64, ToolError> {
        Ok(self.id)
    }
}

/// A timeout that could not interrupt the body.
#[tool(read_only, non_blocking, timeout = "5s")]
fn timed(id: u64) -> u64 {
    id
}

/// The same in milliseconds.
#[tool(read_only, non_blocking, timeout_ms = 5000)]
fn timed_ms(id: u64) -> u64 {
    id
}

fn main() {}
