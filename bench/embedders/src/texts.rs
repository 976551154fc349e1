//! The texts every implementation embeds: tool texts as `EmbeddingScorer` builds them
//! (`tool_runtime::select::tool_text`), generated ones and the BFCL functions.

use serde_json::json;
use tool_runtime::definition::ToolDefinition;
use tool_runtime::select::tool_text;

// the shared loader also reads the questions, which throughput does not need
#[allow(dead_code)]
#[path = "../../../test-support/src/bfcl.rs"]
mod bfcl;

const VERBS: [&str; 12] = [
    "get",
    "list",
    "create",
    "update",
    "delete",
    "search",
    "compute",
    "send",
    "convert",
    "find",
    "schedule",
    "translate",
];
const OBJECTS: [&str; 16] = [
    "weather",
    "invoice",
    "calendar_event",
    "email",
    "flight",
    "stock_price",
    "exchange_rate",
    "recipe",
    "ticket",
    "file",
    "user_profile",
    "order",
    "route",
    "playlist",
    "document",
    "sensor",
];
const ADJECTIVES: [&str; 8] = [
    "current",
    "latest",
    "scheduled",
    "archived",
    "pending",
    "shared",
    "daily",
    "detailed",
];
const CONTEXTS: [&str; 10] = [
    "in a city",
    "for a customer account",
    "between two dates",
    "for the given region",
    "in the user's workspace",
    "on a project board",
    "from the billing system",
    "for a list of identifiers",
    "in the requested language",
    "at a given location",
];
const CLAUSES: [&str; 10] = [
    "Results are sorted by relevance and limited to the first page.",
    "Fails when the caller lacks permission to read the resource.",
    "Returns an empty list when nothing matches the filters.",
    "Times are given in UTC unless a time zone is passed.",
    "The response includes a summary and the raw records.",
    "Use this before making any change to check the current state.",
    "Amounts are rounded to two decimal places.",
    "Only the fields that are set are changed.",
    "Large results are paginated with a cursor.",
    "Units default to metric.",
];
const TAGS: [&str; 10] = [
    "weather", "finance", "travel", "email", "files", "calendar", "search", "admin", "music",
    "math",
];
const PARAMS: [&str; 12] = [
    "city",
    "unit",
    "start_date",
    "end_date",
    "account_id",
    "query",
    "limit",
    "language",
    "currency",
    "recipient",
    "file_path",
    "time_zone",
];

/// `n` tool texts of roughly 10 to 40 words, deterministic.
pub fn generated(n: usize) -> Vec<String> {
    // xorshift: reproducible without a dependency
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as usize
    };
    (0..n)
        .map(|_| {
            let verb = VERBS[next(VERBS.len())];
            let object = OBJECTS[next(OBJECTS.len())];
            let mut description = format!(
                "{}{} the {} {} {}.",
                verb[..1].to_uppercase(),
                &verb[1..],
                ADJECTIVES[next(ADJECTIVES.len())],
                object.replace('_', " "),
                CONTEXTS[next(CONTEXTS.len())]
            );
            for _ in 0..next(3) {
                description.push(' ');
                description.push_str(CLAUSES[next(CLAUSES.len())]);
            }
            let properties: serde_json::Map<String, serde_json::Value> = (0..next(4))
                .map(|_| {
                    (
                        PARAMS[next(PARAMS.len())].to_owned(),
                        json!({"type": "string"}),
                    )
                })
                .collect();
            let mut def = ToolDefinition::new(
                format!("{verb}_{object}"),
                description,
                &json!({"type": "object", "properties": properties}),
            );
            def.tags = (0..next(3))
                .map(|_| TAGS[next(TAGS.len())].into())
                .collect();
            tool_text(&def)
        })
        .collect()
}

/// The text of every distinct BFCL function, or why there is none.
pub fn bfcl() -> Result<Vec<String>, String> {
    // the support file resolves its default data folder relative to a crate one level below
    // the checkout, so hand it the path one level up
    let dir = bfcl::data_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let (tools, _) = bfcl::load(&dir)?;
    Ok(tools.iter().map(tool_text).collect())
}
