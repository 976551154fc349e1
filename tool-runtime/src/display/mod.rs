//! Text from a model or a tool, made safe to show in a terminal.
//!
//! A terminal obeys what it prints: an escape sequence can move the cursor and rewrite a line
//! already shown, a carriage return can print over the start of the current one, and Unicode
//! direction overrides can make text read differently from what it is. Text a model controls
//! (arguments, call ids, tool names, its answers) and text a tool returns must therefore never
//! reach a terminal as it is: a confirmation box could show a category or an argument that is not
//! the one that runs. Every such string goes through [`visible`] (one line) or [`visible_lines`]
//! (prose that may span lines), which show each control character as an escape (`\u{1b}`,
//! `\r`), so what the person reads is what the program holds.
//!
//! [`width`] is the number of terminal columns a visible string takes, for layouts (the
//! confirmation box) that pad to a fixed width.
//!
//! [`quoted`] is how a value is shown inside the server's own words (an intent sentence, a line
//! of a change): quoted so that it cannot close its quotation, cut with its length shown.
//! [`change_lines`] draws a [`Change`](crate::executor::Change) as `+`, `-` and `~` lines, for
//! every surface that shows text (the terminal box, `tools pending`, the MCP elicitation
//! message).

use std::borrow::Cow;
use std::fmt::Write;

use serde_json::Value;
use unicode_general_category::{GeneralCategory, get_general_category};

mod change;

pub use change::{CHANGE_VALUE_CHARS, change_lines, change_text};

/// `text` with every character that a terminal would act on, or that would hide or reorder
/// text, written as an escape instead: C0 and C1 controls (newline and tab included), DEL,
/// every format character (direction overrides and isolates, zero-width characters, the
/// byte-order mark, tag characters) and the line and paragraph separators. Text without any is
/// returned as it is, without copying.
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// [`visible`] of at most the first `max_chars` characters of `text`, followed by `... (N
/// bytes)` when there were more: for names and ids, which a model may make arbitrarily long.
pub fn visible_prefix(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}... ({} bytes)", visible(&text[..end]), text.len()),
        None => visible(text).into_owned(),
    }
}

/// Like [`visible`], but line breaks (`\n`) are kept, so that prose keeps its lines; a carriage
/// return, which would let a later part of a line overwrite an earlier one, is still escaped.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let hidden = |c: char| is_hidden(c) && !(keep_newlines && c == '\n');
    let Some(first) = text.find(hidden) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if !hidden(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// `value` as the server's words show it: a string between `“` and `”` with any quotation mark
/// inside it escaped (it cannot end the quotation early), numbers, booleans and null as they
/// are, arrays and objects as compact JSON; [visible] and cut after `max_chars`
/// characters, followed by its full length (`“Meeting…” (200000 chars)`). `chars` is the whole
/// length when `value` is already the start of a longer text.
pub fn quoted(value: &Value, max_chars: usize, chars: Option<u64>) -> String {
    let (text, quote) = match value {
        Value::String(s) => (Cow::Borrowed(s.as_str()), true),
        other => (Cow::Owned(other.to_string()), false),
    };
    let whole = |held: usize| chars.map_or(held, |c| (c as usize).max(held));
    let (shown, total) = match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], Some(whole(text.chars().count()))),
        None => {
            let held = text.chars().count();
            (&*text, Some(whole(held)).filter(|&t| t > held))
        }
    };
    let mut out = String::with_capacity(shown.len() + 16);
    push_quoted(&mut out, shown, quote, false, total.is_some());
    if let Some(total) = total {
        let _ = write!(out, " ({total} chars)");
    }
    out
}

/// Writes `shown` made visible, between `“` and `”` when `quote` (inner quotation marks
/// escaped), with `…` before it when `lead` and after it when `trail`.
pub(crate) fn push_quoted(out: &mut String, shown: &str, quote: bool, lead: bool, trail: bool) {
    let shown = visible(shown);
    if quote {
        out.push('\u{201c}');
    }
    if lead {
        out.push('\u{2026}');
    }
    if quote {
        for c in shown.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' | '\u{2033}' | '\u{2036}'
                | '\u{ab}' | '\u{bb}' | '\u{301d}' | '\u{301e}' | '\u{301f}' | '\u{ff02}' => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
    } else {
        out.push_str(&shown);
    }
    if trail {
        out.push('\u{2026}');
    }
    if quote {
        out.push('\u{201d}');
    }
}

/// Whether a terminal would act on `c`, or `c` would hide or reorder the text around it: the
/// controls (general category Cc), every format character (Cf: direction marks, embeddings,
/// overrides and isolates, zero-width characters, the byte-order mark, the soft hyphen, tag
/// characters), and the line and paragraph separators.
fn is_hidden(c: char) -> bool {
    c.is_control() || is_format(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Whether `c` is a format character (general category Cf): invisible, yet it changes how the
/// text around it reads (direction, joining) or hides a break between letters.
pub(crate) fn is_format(c: char) -> bool {
    !c.is_ascii() && get_general_category(c) == GeneralCategory::Format
}

/// How many terminal columns `text` takes once made [`visible`]: two for East Asian wide and
/// full-width characters and most emoji, none for combining marks, one otherwise.
pub fn width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// The columns one visible character takes (see [`width`]).
pub fn char_width(c: char) -> usize {
    match c {
        '\u{300}'..='\u{36f}'
        | '\u{1ab0}'..='\u{1aff}'
        | '\u{1dc0}'..='\u{1dff}'
        | '\u{20d0}'..='\u{20ff}'
        | '\u{fe00}'..='\u{fe0f}'
        | '\u{fe20}'..='\u{fe2f}' => 0,
        '\u{1100}'..='\u{115f}'
        | '\u{2e80}'..='\u{303e}'
        | '\u{3041}'..='\u{33ff}'
        | '\u{3400}'..='\u{4dbf}'
        | '\u{4e00}'..='\u{9fff}'
        | '\u{a000}'..='\u{a4cf}'
        | '\u{ac00}'..='\u{d7a3}'
        | '\u{f900}'..='\u{faff}'
        | '\u{fe30}'..='\u{fe4f}'
        | '\u{ff00}'..='\u{ff60}'
        | '\u{ffe0}'..='\u{ffe6}'
        | '\u{1f300}'..='\u{1f64f}'
        | '\u{1f900}'..='\u{1f9ff}'
        | '\u{20000}'..='\u{3fffd}' => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_cut_at_a_character_and_says_how_long_the_whole_was() {
        assert_eq!(visible_prefix("search", 64), "search");
        assert_eq!(visible_prefix("ééé\u{1b}", 2), "éé... (7 bytes)");
        assert_eq!(visible_prefix("a\u{1b}b", 64), "a\\u{1b}b");
    }

    #[test]
    fn controls_are_shown_as_escapes_and_plain_text_is_not_copied() {
        assert!(matches!(visible("plain text, é 中文"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\u{1b}[2K\rCategory: READ_ONLY\u{7}"),
            "a\\u{1b}[2K\\rCategory: READ_ONLY\\u{7}"
        );
        assert_eq!(visible("x\ny\tz"), "x\\ny\\tz");
        assert_eq!(visible_lines("x\ny\r"), "x\ny\\r");
        // C1 CSI, a right-to-left override, a zero-width space
        assert_eq!(
            visible("\u{9b}2J \u{202e}exe.txt \u{200b}"),
            "\\u{9b}2J \\u{202e}exe.txt \\u{200b}"
        );
        // format characters beyond the usual few: a Mongolian vowel separator, an interlinear
        // annotation anchor, a tag letter (invisible text that a model reads)
        assert_eq!(
            visible("a\u{180e}b\u{fff9}c\u{e0041}"),
            "a\\u{180e}b\\u{fff9}c\\u{e0041}"
        );
    }

    #[test]
    fn width_counts_columns() {
        assert_eq!(width("abc"), 3);
        assert_eq!(width("中文"), 4);
        assert_eq!(width("e\u{301}"), 1);
    }
}
