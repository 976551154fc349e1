use tool_runtime::tool;

/// Two timeouts.
#[tool(read_only, timeout = "5s", timeout_ms = 5000)]
fn both(id: u64) -> u64 {
    id
}

/// A zero timeout.
#[tool(read_only, timeout = "0s")]
fn zero(id: u64) -> u64 {
    id
}

/// A zero timeout in milliseconds.
#[tool(read_only, timeout_ms = 0)]
fn zero_ms(id: u64) -> u64 {
    id
}

/// Milliseconds that do not fit.
#[tool(read_only, timeout_ms = 99999999999999999999999)]
fn huge(id: u64) -> u64 {
    id
}

fn main() {}
