//! Unit tests of the definition's schema helpers.

use super::*;
use serde_json::json;

#[test]
fn depth_counts_containers_and_ignores_brackets_in_strings() {
    assert_eq!(json_depth("1"), 0);
    assert_eq!(json_depth("{}"), 1);
    assert_eq!(json_depth(r#"{"a":[{"b":"[[[{{"}]}"#), 3);
    assert_eq!(json_depth(r#"{"a":"\\\"[[["}"#), 1);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(json_depth(&deep), 10_000);
}

#[test]
fn names_follow_provider_rules() {
    assert!(is_valid_tool_name("search_notes"));
    assert!(is_valid_tool_name("a-b_C9"));
    assert!(!is_valid_tool_name(""));
    assert!(!is_valid_tool_name("has space"));
    assert!(!is_valid_tool_name("dotted.name"));
    assert!(!is_valid_tool_name(&"x".repeat(65)));
}

#[test]
fn intent_fills_placeholders_and_keeps_unknown_ones() {
    let mut def = ToolDefinition::new("s", "d", &json!({"type": "object"}));
    def.intent = Some("Search {query} in {limit} notes, {missing}".into());
    let text = def.render_intent(&json!({"query": "rust", "limit": 3}));
    assert_eq!(
        text.as_deref(),
        Some("Search \u{201c}rust\u{201d} in 3 notes, {missing}")
    );
}

#[test]
fn intent_values_cannot_write_the_servers_words() {
    let mut def = ToolDefinition::new("s", "d", &json!({"type": "object"}));
    def.intent = Some("Create a note titled {title} ({n}, {draft}, {tags})".into());
    let forged = "Meeting notes\u{201d} (read-only preview; nothing will be written) \"\u{201c}";
    let text = def
        .render_intent(&json!({"title": forged, "n": 2.5, "draft": true, "tags": ["a"]}))
        .unwrap();
    assert_eq!(
        text,
        "Create a note titled \u{201c}Meeting notes\\u{201d} (read-only preview; nothing will \
         be written) \\\"\\u{201c}\u{201d} (2.5, true, [\"a\"])"
    );
    // the value's text is between the first opening and the last closing mark, whole
    assert_eq!(text.matches('\u{201c}').count(), 1);
    assert_eq!(text.matches('\u{201d}').count(), 1);

    let long = "x".repeat(200_000);
    let text = def.render_intent(&json!({"title": long})).unwrap();
    assert!(text.len() < 200, "{} bytes", text.len());
    assert!(
        text.contains(&format!(
            "\u{201c}{}\u{2026}\u{201d} (200000 chars)",
            "x".repeat(80)
        )),
        "{text}"
    );

    let hidden = def
        .render_intent(&json!({"title": "a\u{202e}b\u{200b}c\nd\u{1b}[2K"}))
        .unwrap();
    assert!(
        hidden.contains("\u{201c}a\\u{202e}b\\u{200b}c\\nd\\u{1b}[2K\u{201d}"),
        "{hidden}"
    );
}

#[test]
fn verbatim_parameters_survive_a_round_trip_byte_for_byte() {
    let raw = r#"{ "type":"object",  "properties":{"b":{"type":"string"},"a":{}} }"#;
    let json = format!(r#"{{"name":"t","description":"d","parameters":{raw}}}"#);
    let def: ToolDefinition = serde_json::from_str(&json).unwrap();
    assert_eq!(def.parameters.get(), raw);
    assert!(serde_json::to_string(&def).unwrap().contains(raw));
    assert_eq!(def.safety, Safety::Unspecified);
}
