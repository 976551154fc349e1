use std::collections::HashMap;
use tool_runtime::tool;

/// A strict tool with a map and a default: neither can be strict.
#[tool(read_only, strict)]
fn tag_notes(tags: HashMap<String, String>, #[arg(default = 5)] limit: u32) -> usize {
    tags.len() + limit as usize
}

fn main() {}
