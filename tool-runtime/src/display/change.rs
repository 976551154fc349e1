//! A change as lines of text: the one renderer of the terminal box, `tools pending` and the MCP
//! elicitation message.

use std::fmt::Write;

use serde_json::Value;

use super::{push_quoted, quoted, visible};
use crate::records::{Change, ChangeEntry};

/// The most characters of one value a change line shows; a longer value is cut there and
/// followed by its full length.
pub const CHANGE_VALUE_CHARS: usize = 120;
/// The most characters of a label, a note or a line of plain JSON.
const TEXT_CHARS: usize = 200;
/// How much unchanged text a replaced long text shows before its first difference.
const CONTEXT_CHARS: usize = 30;

/// `change` as lines, one per entry (plain JSON takes a line per line of its pretty form):
///
/// ```text
/// + label: “added value”
/// - label: “removed value”
/// ~ label: “old value” → “new value”
/// ! 12 relationships will be removed
///   a note for the person
/// ```
///
/// Every value is [quoted](super::quoted) (a string cannot close its quotation, so it cannot
/// write what reads as another line's words) and cut after [`CHANGE_VALUE_CHARS`] characters
/// with its length; a missing value (`null`) reads `(none)`. When a long text is replaced, both
/// sides start a little before their first difference, so the difference is shown wherever it
/// is. Labels, notes and JSON are made [visible](super::visible): no line holds a control or
/// format character, so none can hide, reorder or rewrite what the person reads.
pub fn change_lines(change: &Change) -> Vec<String> {
    let mut lines = Vec::with_capacity(change.entries().len());
    for entry in change.entries() {
        match entry {
            ChangeEntry::Add {
                label,
                value,
                chars,
            } => lines.push(format!("+ {}: {}", cut(label), shown(value, *chars))),
            ChangeEntry::Remove {
                label,
                value,
                chars,
            } => lines.push(format!("- {}: {}", cut(label), shown(value, *chars))),
            ChangeEntry::Replace { label, old, new } => {
                lines.push(format!("~ {}: {}", cut(label), replaced(old, new)));
            }
            ChangeEntry::Touch { count, what } => lines.push(format!("! {count} {}", cut(what))),
            ChangeEntry::Note { text } => lines.push(format!("  {}", cut(text))),
            ChangeEntry::Json { value } => json_lines(value, &mut lines),
        }
    }
    lines
}

/// [`change_lines`] as one text, each line indented by two spaces and ended by a line break,
/// for a message that must stay short: once `max_chars` characters are written the rest is
/// counted (`  … and 40 more lines`), never cut mid-line.
pub fn change_text(change: &Change, max_chars: usize) -> String {
    let lines = change_lines(change);
    let mut out = String::new();
    let mut written = 0;
    for (i, line) in lines.iter().enumerate() {
        let n = line.chars().count() + 3;
        if written + n > max_chars && i > 0 {
            let _ = writeln!(out, "  \u{2026} and {} more lines", lines.len() - i);
            break;
        }
        written += n;
        let _ = writeln!(out, "  {line}");
    }
    out
}

fn shown(value: &Value, chars: Option<u64>) -> String {
    match value {
        Value::Null => "(none)".to_owned(),
        v => quoted(v, CHANGE_VALUE_CHARS, chars),
    }
}

fn replaced(old: &Value, new: &Value) -> String {
    let (Value::String(a), Value::String(b)) = (old, new) else {
        return format!("{} → {}", shown(old, None), shown(new, None));
    };
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len() <= CHANGE_VALUE_CHARS && b.len() <= CHANGE_VALUE_CHARS {
        return format!("{} → {}", shown(old, None), shown(new, None));
    }
    // both sides from shortly before the first character that differs: cut at the same
    // place, a long text whose change lies past the cut would read as unchanged
    let same = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let start = match same.saturating_sub(CONTEXT_CHARS) {
        // a few characters are not worth an ellipsis
        s if s <= 3 => 0,
        s => s,
    };
    let mut out = String::new();
    for (i, side) in [&a, &b].into_iter().enumerate() {
        if i == 1 {
            out.push_str(" → ");
        }
        let end = (start + CHANGE_VALUE_CHARS).min(side.len());
        let text: String = side[start.min(end)..end].iter().collect();
        push_quoted(&mut out, &text, true, start > 0, end < side.len());
    }
    let _ = write!(out, " ({} → {} chars)", a.len(), b.len());
    out
}

/// `text` made visible on one line, cut after [`TEXT_CHARS`] characters with its length.
fn cut(text: &str) -> String {
    match text.char_indices().nth(TEXT_CHARS) {
        Some((end, _)) => format!(
            "{}\u{2026} ({} chars)",
            visible(&text[..end]),
            text.chars().count()
        ),
        None => visible(text).into_owned(),
    }
}

fn json_lines(value: &Value, lines: &mut Vec<String>) {
    let text = match value {
        Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    };
    for line in text.lines() {
        // pretty JSON's indentation is kept; the line itself is one visible line
        let body = line.trim_start_matches(' ');
        let indent = &line[..line.len() - body.len()];
        lines.push(format!("  {indent}{}", cut(body)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_read_as_plus_minus_and_tilde_lines() {
        let change = Change::new()
            .added("Section 3.4", "Distanciation and Critical Distance")
            .removed("note n2", json!({"id": "n2"}))
            .replaced("confidence", 0.4, 0.9)
            .replaced("notes", Value::Null, "checked")
            .touches(12, "relationships will be removed")
            .note("This will modify your existing work.");
        assert_eq!(
            change_lines(&change),
            [
                "+ Section 3.4: “Distanciation and Critical Distance”",
                "- note n2: {\"id\":\"n2\"}",
                "~ confidence: 0.4 → 0.9",
                "~ notes: (none) → “checked”",
                "! 12 relationships will be removed",
                "  This will modify your existing work.",
            ]
        );
    }

    #[test]
    fn long_values_are_cut_with_their_length_and_a_sample_says_how_long_the_whole_was() {
        let long = "word ".repeat(1000);
        let lines = change_lines(&Change::new().removed("body", long.as_str()));
        let expected = format!(
            "- body: “{}\u{2026}” (5000 chars)",
            &long[..CHANGE_VALUE_CHARS]
        );
        assert_eq!(lines, std::slice::from_ref(&expected));
        let lines = change_lines(&Change::new().removed_sample("body", &long));
        assert_eq!(lines, [expected]);
    }

    #[test]
    fn a_replaced_long_text_is_shown_where_it_differs() {
        let head = "a".repeat(4000);
        let old = format!("{head} Paris is in Germany. {}", "z".repeat(500));
        let new = format!("{head} Paris is in France. {}", "z".repeat(500));
        let lines = change_lines(&Change::new().replaced("content", old.as_str(), new.as_str()));
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert!(line.starts_with("~ content: “…aaaa"), "{line}");
        assert!(line.contains(" Paris is in Germany. zz"), "{line}");
        assert!(line.contains("→ “…aaa"), "{line}");
        assert!(line.contains(" Paris is in France. zz"), "{line}");
        assert!(line.ends_with("…” (4522 → 4521 chars)"), "{line}");
    }

    #[test]
    fn a_bounded_text_counts_the_lines_it_leaves_out() {
        let mut change = Change::new();
        for i in 0..100 {
            change = change.removed(format!("node n{i}"), "a concept");
        }
        let text = change_text(&change, 300);
        assert!(text.starts_with("  - node n0: “a concept”\n"), "{text}");
        assert!(text.ends_with("  \u{2026} and 89 more lines\n"), "{text}");
        assert_eq!(change_text(&Change::new().note("x"), 300), "    x\n");
    }

    #[test]
    fn hidden_characters_are_escaped_and_quotes_cannot_be_closed() {
        let change = Change::new()
            .added("iban\u{202e}", "DE00 \u{202e}9999\u{202c}")
            .replaced("title", "a", "b” → “forged")
            .note("two\nlines\u{200b}")
            .and(Change::json(json!({"memo": "x\u{200b}y\u{1b}[2K"})));
        let lines = change_lines(&change);
        for l in &lines {
            assert!(
                !l.contains(['\u{202e}', '\u{202c}', '\u{200b}', '\u{1b}', '\n']),
                "{l:?}"
            );
        }
        assert_eq!(lines[0], "+ iban\\u{202e}: “DE00 \\u{202e}9999\\u{202c}”");
        assert_eq!(lines[1], "~ title: “a” → “b\\u{201d} → \\u{201c}forged”");
        assert_eq!(lines[2], "  two\\nlines\\u{200b}");
        assert_eq!(lines[3], "  {");
        assert_eq!(lines[4], "    \"memo\": \"x\\u{200b}y\\u001b[2K\"");
    }
}
