//! What the pending listing says of an operation: enough to draw its card (bounded, whatever
//! the model sent), without its arguments, which `GET /api/v1/pending/{id}` gives whole.

use std::io;

use serde_json::{Value, json};
use tool_runtime::store::PendingOperation;

/// The most characters of an intent or a session name a summary carries.
pub(crate) const MAX_TEXT_CHARS: usize = 500;

/// The summary of one operation: `id`, `tool`, `intent` (at most [`MAX_TEXT_CHARS`]) and
/// `intent_chars`, `category`, `reversible`, `first_use`, `initiator`, `session`, `created_ms`,
/// `arguments_bytes` (their size as JSON) and `hidden`: whether its intent, arguments, change
/// or session hold characters that hide or reorder text, so the card says so before it is
/// opened.
pub(crate) fn summary(op: &PendingOperation) -> Value {
    let pv = &op.preview;
    let hidden = has_hidden(&op.arguments)
        || pv
            .change
            .as_ref()
            .is_some_and(|c| serde_json::to_value(c).is_ok_and(|v| has_hidden(&v)))
        || hides(&pv.intent)
        || op.session.as_deref().is_some_and(hides);
    json!({
        "id": op.id,
        "tool": bounded(&op.tool),
        "intent": bounded(&pv.intent),
        "intent_chars": pv.intent.chars().count(),
        "category": pv.category,
        "reversible": pv.reversible,
        "first_use": pv.first_use.is_some(),
        "initiator": op.initiator,
        "session": op.session.as_deref().map(bounded),
        "created_ms": op.created_ms,
        "arguments_bytes": json_size(&op.arguments),
        "hidden": hidden,
    })
}

fn bounded(text: &str) -> &str {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// The size of `value` written as compact JSON, counted without writing it anywhere.
fn json_size(value: &Value) -> u64 {
    struct Count(u64);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Whether any key or string in `value` holds a character [`hides`] finds.
pub(crate) fn has_hidden(value: &Value) -> bool {
    match value {
        Value::String(s) => hides(s),
        Value::Array(items) => items.iter().any(has_hidden),
        Value::Object(map) => map.iter().any(|(k, v)| hides(k) || has_hidden(v)),
        _ => false,
    }
}

/// Whether `text` holds a character that a person would not see or that reorders what is
/// around it: a control character other than a line break or a tab, a format character
/// (zero-width characters, direction marks, embeddings, overrides and isolates, the byte-order
/// mark, tags, ...) or a line or paragraph separator. The approvals page marks the same
/// characters where it shows them.
pub(crate) fn hides(text: &str) -> bool {
    text.chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || is_format(c))
}

/// Unicode's format characters (general category Cf) and the line and paragraph separators.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}'
        | '\u{890}'..='\u{891}' | '\u{8e2}' | '\u{180e}' | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206f}'
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{110bd}' | '\u{110cd}'
        | '\u{13430}'..='\u{1343f}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0001}' | '\u{e0020}'..='\u{e007f}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_that_hide_or_reorder_text_are_found_and_layout_is_not() {
        for hidden in [
            "DE00 \u{202e}9999 8888 7777\u{202c}",
            "ignore\u{200b} previous",
            "\u{feff}bom",
            "tag\u{e0041}",
            "esc\u{1b}[2J",
            "cr\r",
            "next\u{85}line",
            "sep\u{2028}",
            "isolate\u{2067}",
        ] {
            assert!(hides(hidden), "{hidden:?}");
        }
        for plain in ["plain", "two\nlines", "a\ttab", "é 中文 עברית", ""] {
            assert!(!hides(plain), "{plain:?}");
        }
        assert!(has_hidden(&json!({"a": [1, {"b": "x\u{200d}"}]})));
        assert!(has_hidden(&json!({"k\u{202e}": 1})));
        assert!(!has_hidden(&json!({"a": [1, "two\nlines", null]})));
    }

    #[test]
    fn long_text_is_cut_at_a_character() {
        let long = "é".repeat(MAX_TEXT_CHARS + 10);
        assert_eq!(bounded(&long).chars().count(), MAX_TEXT_CHARS);
        assert_eq!(bounded("short"), "short");
        assert_eq!(json_size(&json!({"a": "é"})), r#"{"a":"é"}"#.len() as u64);
    }
}
