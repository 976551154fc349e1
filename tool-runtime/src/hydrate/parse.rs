//! Step one of hydration: turn what a provider sent into JSON, within limits, with a deterministic
//! and recorded repair of common malformations.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};

/// Arguments as a provider delivers them: a JSON string (OpenAI, Responses) or an object already
/// (Anthropic, Ollama, Gemini, MCP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Arguments {
    /// Arguments encoded as JSON text.
    Text(String),
    /// Arguments as a JSON value.
    Json(Value),
}

impl From<&str> for Arguments {
    fn from(s: &str) -> Self {
        Arguments::Text(s.to_owned())
    }
}

impl From<String> for Arguments {
    fn from(s: String) -> Self {
        Arguments::Text(s)
    }
}

impl From<Value> for Arguments {
    fn from(v: Value) -> Self {
        Arguments::Json(v)
    }
}

impl Arguments {
    /// Arguments read from bytes (a file, a pipe, a socket) at most `limits.max_bytes` long:
    /// more is refused with `PAYLOAD_TOO_LARGE` without reading the rest, so an endless or huge
    /// source costs no more than the limit; bytes that are not UTF-8 are refused with
    /// `INVALID_JSON` and the offset of the first bad byte, since JSON text is UTF-8 (RFC 8259).
    ///
    /// The outer error is the source failing to be read, which is not the arguments' fault.
    pub fn read(
        source: impl std::io::Read,
        limits: &Limits,
    ) -> std::io::Result<Result<Arguments, ToolError>> {
        use std::io::Read;
        let mut bytes = Vec::new();
        let cap = u64::try_from(limits.max_bytes).unwrap_or(u64::MAX);
        source.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() > limits.max_bytes {
            return Ok(Err(ToolError::new(
                ErrorCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the arguments are more than {} bytes, the limit",
                    limits.max_bytes
                ),
            )
            .recover("send smaller arguments, for example fewer or shorter items")
            .with_detail("limit", limits.max_bytes)));
        }
        Ok(Self::from_utf8(bytes))
    }

    /// Arguments from bytes that should be UTF-8 JSON text; anything else is refused with
    /// `INVALID_JSON` and the offset of the first byte that is not UTF-8.
    pub fn from_utf8(bytes: Vec<u8>) -> Result<Arguments, ToolError> {
        String::from_utf8(bytes).map(Arguments::Text).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            ToolError::new(
                ErrorCode::INVALID_JSON,
                format!(
                    "the arguments are not valid UTF-8: the byte at offset {offset} does not \
                     start or continue a character"
                ),
            )
            .retryable(true)
            .recover(
                "send the arguments again as UTF-8 JSON text; escape other characters as \\uXXXX",
            )
            .with_detail("offset", offset)
        })
    }
}

/// Limits on what hydration accepts. Exceeding one is an error, never a truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Maximum size of the argument text in bytes (default 1 MiB).
    pub max_bytes: usize,
    /// Maximum nesting depth of arrays and objects (default 64).
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 1 << 20,
            max_depth: 64,
        }
    }
}

/// A repair applied to the arguments before they parsed. Recorded on the instance and in the
/// audit trail so that it is never silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Repair {
    /// An empty string was read as `{}` (a tool without parameters).
    EmptyAsObject,
    /// The arguments were a JSON string containing JSON; decoded once more.
    DoubleEncoded,
    /// A Markdown code fence around the JSON was removed.
    CodeFence,
    /// Trailing commas before `}` or `]` were removed.
    TrailingCommas,
}

/// Checks the byte limit and the nesting depth of `text` without parsing it, so that an oversized
/// or hostile payload is refused before any allocation proportional to it.
pub fn check_limits(text: &str, limits: &Limits) -> Result<(), ToolError> {
    check_size(text, limits)?;
    // Nesting deeper than the limit needs more opening brackets than the limit; counting them is
    // a branch-free pass the compiler vectorizes, so typical arguments skip the exact scan.
    let openers = text
        .as_bytes()
        .iter()
        .filter(|&&b| b == b'{' || b == b'[')
        .count();
    if openers <= limits.max_depth {
        return Ok(());
    }
    if crate::definition::json_depth(text) > limits.max_depth {
        return Err(too_deep(limits));
    }
    Ok(())
}

/// The byte limit alone.
#[inline]
pub(crate) fn check_size(text: &str, limits: &Limits) -> Result<(), ToolError> {
    if text.len() > limits.max_bytes {
        return Err(too_large(text.len(), limits));
    }
    Ok(())
}

fn too_large(bytes: usize, limits: &Limits) -> ToolError {
    ToolError::new(
        ErrorCode::PAYLOAD_TOO_LARGE,
        format!(
            "the arguments are {bytes} bytes; the limit is {} bytes",
            limits.max_bytes
        ),
    )
    .recover("send smaller arguments, for example fewer or shorter items")
    .with_detail("bytes", bytes)
    .with_detail("limit", limits.max_bytes)
}

fn too_deep(limits: &Limits) -> ToolError {
    ToolError::new(
        ErrorCode::NESTING_TOO_DEEP,
        format!("the arguments nest deeper than {} levels", limits.max_depth),
    )
    .recover("flatten the arguments")
}

/// Checks limits on arguments that arrived as a value (Anthropic, Ollama, Gemini, MCP): the same
/// limits, with the same errors, as for text. The size is that of the value written as compact
/// JSON, which is what the provider sent give or take whitespace.
pub fn check_value_limits(v: &Value, limits: &Limits) -> Result<(), ToolError> {
    // Arguments are mostly far below the byte limit. A bound that costs the same for a number
    // or a string of any length clears them (and checks the depth); only a value it cannot
    // clear is measured exactly, which formats every number and scans every string.
    let bound = json_size(v, 1, limits, Measure::Bound).ok_or_else(|| too_deep(limits))?;
    if bound <= limits.max_bytes {
        return Ok(());
    }
    let bytes = json_size(v, 1, limits, Measure::Exact).ok_or_else(|| too_deep(limits))?;
    if bytes > limits.max_bytes {
        return Err(too_large(bytes, limits));
    }
    Ok(())
}

/// How [`json_size`] counts strings and numbers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Measure {
    /// As serde_json writes them.
    Exact,
    /// At least that: a string as if every byte were written `\u00XX`, a number at the longest
    /// serde_json writes (24 bytes: `-1.7976931348623157e308`; an integer has at most 20).
    Bound,
}

/// The length of `v` as compact JSON (`serde_json::to_string`), computed without writing it,
/// exactly or as a bound; `None` as soon as arrays and objects nest deeper than the limit, so a
/// hostile value never makes this recurse further than that.
fn json_size(v: &Value, depth: usize, limits: &Limits, measure: Measure) -> Option<usize> {
    let string = |s: &str| match measure {
        Measure::Exact => string_size(s),
        Measure::Bound => s.len().saturating_mul(6).saturating_add(2),
    };
    Some(match v {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => match measure {
            Measure::Exact => number_size(n),
            Measure::Bound => 24,
        },
        Value::String(s) => string(s),
        Value::Array(items) => {
            if depth > limits.max_depth {
                return None;
            }
            let mut size = 2 + items.len().saturating_sub(1);
            for item in items {
                size = size.saturating_add(json_size(item, depth + 1, limits, measure)?);
            }
            size
        }
        Value::Object(map) => {
            if depth > limits.max_depth {
                return None;
            }
            // a colon per entry, a comma between entries
            let mut size = 2 + map.len() + map.len().saturating_sub(1);
            for (key, value) in map {
                size = size.saturating_add(string(key)).saturating_add(json_size(
                    value,
                    depth + 1,
                    limits,
                    measure,
                )?);
            }
            size
        }
    })
}

fn number_size(n: &serde_json::Number) -> usize {
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    // serde_json writes a number exactly as its Display does
    let _ = std::fmt::Write::write_fmt(&mut count, format_args!("{n}"));
    count.0
}

/// A string's length once quoted and escaped as serde_json escapes it.
fn string_size(s: &str) -> usize {
    2 + s.len()
        + s.bytes()
            .map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
                0x00..=0x1f => 5,
                _ => 0,
            })
            .sum::<usize>()
}

/// The deterministic local repair: returns the repaired text and what was done, or `None` when no
/// rule applies. Applied at most once, and only after a strict parse failed.
pub fn repair(text: &str) -> Option<(String, Vec<Repair>)> {
    let mut applied = Vec::new();
    let mut s = text.trim().to_owned();
    if let Some(inner) = strip_code_fence(&s) {
        s = inner;
        applied.push(Repair::CodeFence);
    }
    let without_commas = remove_trailing_commas(&s);
    if without_commas != s {
        s = without_commas;
        applied.push(Repair::TrailingCommas);
    }
    (!applied.is_empty()).then_some((s, applied))
}

fn strip_code_fence(s: &str) -> Option<String> {
    let rest = s.strip_prefix("```")?;
    let rest = rest.trim_end().strip_suffix("```")?;
    // drop an info string such as `json` on the opening line
    let body = match rest.find('\n') {
        Some(nl) if rest[..nl].trim().chars().all(|c| c.is_ascii_alphanumeric()) => &rest[nl + 1..],
        _ => rest,
    };
    Some(body.trim().to_owned())
}

fn remove_trailing_commas(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, ch) in s.char_indices() {
        if in_string {
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            out.push(ch);
            continue;
        }
        if ch == '"' {
            in_string = true;
        }
        if ch == ',' {
            let next = bytes[i + 1..]
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .copied();
            if matches!(next, Some(b'}') | Some(b']')) {
                continue;
            }
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_refuse_large_and_deep_payloads() {
        let limits = Limits {
            max_bytes: 10,
            max_depth: 2,
        };
        assert_eq!(
            check_limits(&"x".repeat(11), &limits).unwrap_err().code,
            ErrorCode::PAYLOAD_TOO_LARGE
        );
        assert_eq!(
            check_limits("[[[1]]]", &limits).unwrap_err().code,
            ErrorCode::NESTING_TOO_DEEP
        );
        // brackets inside strings do not count
        let roomy = Limits {
            max_bytes: 100,
            max_depth: 2,
        };
        assert!(check_limits(r#"{"a":"[[[[\"]]"}"#, &roomy).is_ok());
    }

    #[test]
    fn the_size_of_a_value_is_its_compact_json_length() {
        let roomy = Limits::default();
        for v in [
            serde_json::json!({"a": [1, -20, 2.5, 1e300, null, true, false], "b": {}}),
            serde_json::json!({"q\"uote": "back\\slash\n\u{1}\u{1f}é😀", "e": [], "n": u64::MAX}),
            serde_json::json!("plain"),
            serde_json::json!([[[]], {"x": {"y": -0.0}}]),
        ] {
            let written = serde_json::to_string(&v).unwrap().len();
            assert_eq!(
                json_size(&v, 1, &roomy, Measure::Exact),
                Some(written),
                "{v}"
            );
            // the bound that clears most values never says less than the exact size
            assert!(
                json_size(&v, 1, &roomy, Measure::Bound).unwrap() >= written,
                "{v}"
            );
        }
        // the longest numbers serde_json writes, and strings that are all escapes
        for v in [
            serde_json::json!([
                -f64::MAX,
                f64::MIN_POSITIVE,
                -1.2345678901234567e-300,
                i64::MIN
            ]),
            serde_json::json!("\u{1}\u{2}\u{1f}"),
        ] {
            let written = serde_json::to_string(&v).unwrap().len();
            assert!(
                json_size(&v, 1, &roomy, Measure::Bound).unwrap() >= written,
                "{v}"
            );
        }
        let tight = Limits {
            max_bytes: 10,
            max_depth: 2,
        };
        let err = check_value_limits(&serde_json::json!({"a": "0123456789"}), &tight).unwrap_err();
        assert_eq!(err.code, ErrorCode::PAYLOAD_TOO_LARGE);
        assert_eq!(err.details["bytes"], 18);
        assert_eq!(
            check_value_limits(&serde_json::json!([[[1]]]), &tight)
                .unwrap_err()
                .code,
            ErrorCode::NESTING_TOO_DEEP
        );
        assert!(check_value_limits(&serde_json::json!([[1]]), &tight).is_ok());
        // exactly at the limit: the bound (3 * 24 + ...) does not clear it, the exact size does
        let at_limit = Limits {
            max_bytes: 10,
            max_depth: 64,
        };
        assert!(check_value_limits(&serde_json::json!([1, 22, 333]), &at_limit).is_ok());
        let err = check_value_limits(&serde_json::json!([1, 22, 3333]), &at_limit).unwrap_err();
        assert_eq!(err.details["bytes"], 11);
    }

    #[test]
    fn repair_strips_fences_and_trailing_commas_but_not_inside_strings() {
        let (text, applied) = repair("```json\n{\"a\": [1, 2,], \"b\": \",}\",}\n```").unwrap();
        assert_eq!(text, "{\"a\": [1, 2], \"b\": \",}\"}");
        assert_eq!(applied, vec![Repair::CodeFence, Repair::TrailingCommas]);
        assert!(repair("{\"a\": 1}").is_none());
    }
}
