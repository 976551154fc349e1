use std::collections::HashMap;

use tool_runtime::tool;

/// Every property's type disagrees with its parameter's Rust type.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {
        "order_no": {"type": "string"},
        "quantity": {"type": "number"},
        "express": {"type": "string", "enum": ["yes", "no"]},
        "note": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "prices": {"type": "object", "additionalProperties": {"type": "string"}},
        "gift": {"type": ["boolean", "string"]},
        "priority": {"enum": [1, 2, 2.5]}
    }, "required": ["order_no", "quantity", "express", "note", "tags", "prices", "gift", "priority"]}"#
)]
fn place_order(
    order_no: u64,
    quantity: u32,
    express: bool,
    note: String,
    tags: Vec<String>,
    prices: HashMap<String, f64>,
    gift: Option<bool>,
    priority: i8,
) -> usize {
    let _ = (order_no, quantity, express, note, tags, prices, gift, priority);
    0
}

/// The struct form is checked the same way, through serde renames.
#[tool(
    read_only,
    parameters = r#"{"type": "object", "properties": {"pageSize": {"type": "boolean"}}, "required": ["pageSize"]}"#
)]
#[serde(rename_all = "camelCase")]
struct ListNotes {
    /// Page size.
    page_size: Option<u32>,
}

fn main() {}
