//! Numbers are read exactly or not at all.
//!
//! JSON has one number type, and `serde_json` reads any literal with a fraction or an exponent as
//! a 64-bit float: `10.0`, `1e1` and `-0` become floats, which a typed `u32` refuses although the
//! schema's `"integer"` accepts them, and which a dynamic tool receives as `10.0`; and a literal
//! whose digits say it is not an integer can still read as one (`1e-999` underflows to `0`,
//! `1.00000000000000000001` rounds to `1`), so that a fraction passes as an integer. Before the
//! slow path reads the arguments, every literal whose value is an integer is written as that
//! integer (the same for typed and dynamic tools), and a literal that is not an integer but
//! would read as one is refused with a pointer to it, as is an integer written in plain digits
//! that no 64-bit integer holds (a float would read `18446744073709551617` as its neighbour
//! `18446744073709551616`, silently). The fast path needs none of this: it
//! reads a typed integer only from an integer literal, so a float there sends the call here;
//! a typed float field it fills reads such a literal as the float it rounds to, as IEEE 754
//! does.
//!
//! Arguments that arrive as an object (Anthropic, Gemini, Ollama, MCP) were read by the HTTP
//! layer already: their integral floats are converted the same way, but the digits of an
//! inexact literal are gone by then and cannot be checked.

use serde_json::{Map, Number, Value};

use crate::error::{ErrorCode, ToolError, Violation};

/// `text` with its integer-valued literals written as integers, or `None` when none needs it
/// (the common case, which allocates nothing); a refusal when a literal is not an integer but
/// would read as one. Text that is not well-formed JSON is returned unchanged for the parser
/// to refuse.
pub(crate) fn exact_text(text: &str) -> Result<Option<String>, ToolError> {
    if !maybe_float(text.as_bytes()) {
        return Ok(None);
    }
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
        path: Vec::new(),
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    if scan.value(&mut edits)?.is_none() || edits.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, replacement) in edits {
        out.push_str(&text[last..start]);
        out.push_str(&replacement);
        last = end;
    }
    out.push_str(&text[last..]);
    Ok(Some(out))
}

/// `value` with its integral floats as integers, or `None` when it has none.
pub(crate) fn exact_value(value: &Value) -> Option<Value> {
    // deeper than the scan goes, the value is left to the depth limit that refuses it
    fn has(v: &Value, depth: usize) -> bool {
        match v {
            Value::Number(n) => n.is_f64() && as_integer(n).is_some(),
            _ if depth > MAX_SCAN_DEPTH => false,
            Value::Array(items) => items.iter().any(|v| has(v, depth + 1)),
            Value::Object(map) => map.values().any(|v| has(v, depth + 1)),
            _ => false,
        }
    }
    fn convert(v: &Value) -> Value {
        match v {
            Value::Number(n) => Value::Number(as_integer(n).unwrap_or_else(|| n.clone())),
            Value::Array(items) => Value::Array(items.iter().map(convert).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), convert(v)))
                    .collect::<Map<_, _>>(),
            ),
            other => other.clone(),
        }
    }
    has(value, 0).then(|| convert(value))
}

/// The integer a float holds exactly, when it is one that fits `i64` or `u64`.
fn as_integer(n: &Number) -> Option<Number> {
    let f = n.as_f64().filter(|_| n.is_f64())?;
    if !f.is_finite() || f.fract() != 0.0 {
        return None;
    }
    // a float with no fraction is an exact integer; the range checks keep the cast exact
    if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
        Some(Number::from(f as u64))
    } else if (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
        Some(Number::from(f as i64))
    } else {
        None
    }
}

/// Whether `bytes` may hold a literal that needs rewriting or refusing. Only the places where a
/// literal can be other than a plain integer are looked at (a `.`, `e` or `E` after a digit, and
/// `-0`), and the run of number characters around each is classified on its own, without the
/// structure: a run inside a string can match too, and the exact scan sorts that out. Ordinary
/// fractions (`0.25`) are decided here, so arguments holding them are not scanned twice.
fn maybe_float(bytes: &[u8]) -> bool {
    let after_digit = memchr::memchr3_iter(b'.', b'e', b'E', bytes)
        .filter(|&at| at > 0 && bytes[at - 1].is_ascii_digit());
    let minus_zero =
        memchr::memchr_iter(b'-', bytes).filter(|&at| bytes.get(at + 1) == Some(&b'0'));
    any_run_needs_work(bytes, after_digit)
        || any_run_needs_work(bytes, minus_zero)
        || has_digit_run(bytes, 19)
}

/// Whether `bytes` hold `len` digits in a row: a plain integer that long may not fit 64 bits.
fn has_digit_run(bytes: &[u8], len: usize) -> bool {
    let mut run = 0;
    bytes.iter().any(|b| {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        run >= len
    })
}

/// Whether the run of number characters around any of the `candidates` (ascending) needs
/// rewriting or refusing. Each run is classified once, however many candidates it holds, so a
/// long run costs its length and no more.
fn any_run_needs_work(bytes: &[u8], candidates: impl Iterator<Item = usize>) -> bool {
    let number_byte = |b: u8| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E');
    let mut classified_until = 0;
    for at in candidates {
        if at < classified_until {
            continue;
        }
        let start = bytes[classified_until..at]
            .iter()
            .rposition(|&b| !number_byte(b))
            .map_or(classified_until, |p| classified_until + p + 1);
        let end = bytes[at..]
            .iter()
            .position(|&b| !number_byte(b))
            .map_or(bytes.len(), |n| at + n);
        classified_until = end;
        // the run is ASCII
        let literal = std::str::from_utf8(&bytes[start..end]).unwrap_or_default();
        if !matches!(classify(literal), Literal::Kept | Literal::Malformed) {
            return true;
        }
    }
    false
}

/// One step of the path to the literal being read, for the pointer of a refusal.
enum Step {
    Key(std::ops::Range<usize>),
    Index(usize),
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    path: Vec<Step>,
}

/// Deeper than this, the scan leaves the text to the parser and its depth limit.
const MAX_SCAN_DEPTH: usize = 512;

impl Scan<'_> {
    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    /// Reads one value; `None` when the text is not JSON here (the parser will say why).
    fn value(&mut self, edits: &mut Vec<(usize, usize, String)>) -> Result<Option<()>, ToolError> {
        self.skip_space();
        let Some(&b) = self.bytes.get(self.at) else {
            return Ok(None);
        };
        if self.path.len() > MAX_SCAN_DEPTH {
            return Ok(None);
        }
        match b {
            b'{' => {
                if self.open(b'}') {
                    return Ok(Some(()));
                }
                loop {
                    self.skip_space();
                    let Some(key) = self.string() else {
                        return Ok(None);
                    };
                    self.skip_space();
                    if self.bytes.get(self.at) != Some(&b':') {
                        return Ok(None);
                    }
                    self.at += 1;
                    if self.member(Step::Key(key), edits)?.is_none() {
                        return Ok(None);
                    }
                    match self.separator(b'}') {
                        Some(true) => {}
                        closed => return Ok(closed.map(drop)),
                    }
                }
            }
            b'[' => {
                if self.open(b']') {
                    return Ok(Some(()));
                }
                for index in 0.. {
                    if self.member(Step::Index(index), edits)?.is_none() {
                        return Ok(None);
                    }
                    match self.separator(b']') {
                        Some(true) => {}
                        closed => return Ok(closed.map(drop)),
                    }
                }
                Ok(None)
            }
            b'"' => Ok(self.string().map(drop)),
            b'-' | b'0'..=b'9' => self.number(edits),
            _ => {
                // true, false, null
                let start = self.at;
                while self.bytes.get(self.at).is_some_and(u8::is_ascii_alphabetic) {
                    self.at += 1;
                }
                Ok((self.at > start).then_some(()))
            }
        }
    }

    /// Steps over an opening bracket; `true` when `close` follows at once (an empty container).
    fn open(&mut self, close: u8) -> bool {
        self.at += 1;
        self.skip_space();
        let empty = self.bytes.get(self.at) == Some(&close);
        if empty {
            self.at += 1;
        }
        empty
    }

    /// Reads one member of a container, with `step` on the path while it is read.
    fn member(
        &mut self,
        step: Step,
        edits: &mut Vec<(usize, usize, String)>,
    ) -> Result<Option<()>, ToolError> {
        self.path.push(step);
        let read = self.value(edits);
        self.path.pop();
        read
    }

    /// After a member: `Some(true)` for a comma (another member follows), `Some(false)` for
    /// `close` (the container ended), `None` for anything else.
    fn separator(&mut self, close: u8) -> Option<bool> {
        self.skip_space();
        let more = match self.bytes.get(self.at) {
            Some(b',') => true,
            Some(&b) if b == close => false,
            _ => return None,
        };
        self.at += 1;
        Some(more)
    }

    /// Reads a string; the range of its contents, quotes excluded.
    fn string(&mut self) -> Option<std::ops::Range<usize>> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let mut i = start;
        loop {
            match self.bytes.get(i)? {
                b'"' => {
                    self.at = i + 1;
                    return Some(start..i);
                }
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
    }

    fn number(&mut self, edits: &mut Vec<(usize, usize, String)>) -> Result<Option<()>, ToolError> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        {
            self.at += 1;
        }
        // the bytes matched are ASCII
        let literal = std::str::from_utf8(&self.bytes[start..self.at]).unwrap_or_default();
        match classify(literal) {
            Literal::Kept => {}
            Literal::Integer(digits) => edits.push((start, self.at, digits)),
            Literal::Inexact(read_as) => {
                let message = format!(
                    "{} is not an integer, but a 64-bit float would read it as {read_as}: send \
                     the number with the digits it really has",
                    shortened(literal)
                );
                return Err(self.refusal(message));
            }
            Literal::Beyond64 => {
                let message = format!(
                    "{} is an integer beyond the 64-bit range, which cannot be read exactly: \
                     send a smaller integer, or write it with an exponent if an approximate \
                     float is meant",
                    shortened(literal)
                );
                return Err(self.refusal(message));
            }
            Literal::Malformed => return Ok(None),
        }
        Ok(Some(()))
    }

    fn refusal(&self, message: String) -> ToolError {
        let mut pointer = String::new();
        for step in &self.path {
            pointer.push('/');
            match step {
                Step::Index(i) => pointer.push_str(&i.to_string()),
                Step::Key(range) => {
                    let raw = &self.bytes[range.start - 1..range.end + 1];
                    let key: String = serde_json::from_slice(raw).unwrap_or_default();
                    pointer.push_str(&tool_wire::escape(&key));
                }
            }
        }
        ToolError::new(
            ErrorCode::INVALID_ARGUMENTS,
            format!(
                "the arguments hold a number that cannot be read exactly: {pointer}: {message}"
            ),
        )
        .retryable(true)
        .recover("send integers without a fraction or an exponent, and fractions as they are")
        .with_violations([Violation::new(pointer, message)])
    }
}

/// A literal as a message shows it: its first 24 characters.
fn shortened(literal: &str) -> String {
    let shown: String = literal.chars().take(24).collect();
    if literal.len() > shown.len() {
        format!("{shown}...")
    } else {
        shown
    }
}

/// What a number literal is.
#[derive(Debug, PartialEq)]
enum Literal {
    /// Read as it is: a plain integer, or a fraction that reads as a fraction.
    Kept,
    /// An integer written otherwise (`10.0`, `1e1`, `-0`): these digits instead.
    Integer(String),
    /// Not an integer, but a 64-bit float would read it as this integer.
    Inexact(f64),
    /// An integer written as plain digits that neither `i64` nor `u64` holds: a 64-bit float
    /// would read it as a neighbouring integer, or not at all.
    Beyond64,
    /// Not a JSON number: left for the parser to refuse.
    Malformed,
}

/// Whether the integer `digits` (with its sign) fits `i64` or `u64`.
fn fits_64_bits(negative: bool, digits: &str) -> bool {
    if negative {
        digits
            .parse::<u64>()
            .is_ok_and(|v| v <= i64::MIN.unsigned_abs())
    } else {
        digits.parse::<u64>().is_ok()
    }
}

fn classify(literal: &str) -> Literal {
    let (negative, body) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    // `1e0` is written as a float although its exponent is zero: only digits alone are kept
    let plain = frac.is_none() && exponent.is_none();
    let digits_only = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits_only(int) || frac.is_some_and(|f| !digits_only(f)) {
        return Literal::Malformed;
    }
    if int.len() > 1 && int.starts_with('0') {
        return Literal::Malformed;
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => {
            let e_digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if !digits_only(e_digits) {
                return Literal::Malformed;
            }
            // saturate: an exponent this large decides the outcome whatever its exact value
            let magnitude: i64 = e_digits.parse().unwrap_or(i64::MAX / 4).min(i64::MAX / 4);
            if e.starts_with('-') {
                -magnitude
            } else {
                magnitude
            }
        }
    };
    // the usual fraction (`0.25`, `12.5`): a non-zero fractional digit and few enough digits
    // that a float keeps it a fraction
    if let (Some(f), 0) = (frac, exponent)
        && int.len() + f.len() <= 15
        && f.bytes().any(|b| b != b'0')
    {
        return Literal::Kept;
    }
    if plain {
        // a plain integer; `-0` alone reads as the float -0.0
        return if negative && int.bytes().all(|b| b == b'0') {
            Literal::Integer("0".to_owned())
        } else if int.len() >= 19 && !fits_64_bits(negative, int) {
            Literal::Beyond64
        } else {
            Literal::Kept
        };
    }
    // the value is `significant` × 10^`scale`
    let frac = frac.unwrap_or("");
    let all = format!("{int}{frac}");
    let significant = all.trim_start_matches('0');
    if significant.is_empty() {
        return Literal::Integer("0".to_owned());
    }
    let trimmed = significant.trim_end_matches('0');
    let scale = exponent
        .saturating_sub(frac.len() as i64)
        .saturating_add((significant.len() - trimmed.len()) as i64);
    if scale >= 0 {
        // an integer: written out when it fits 64 bits, else left as the float it reads as
        if scale > 19 || trimmed.len() as i64 + scale > 20 {
            return Literal::Kept;
        }
        let digits = format!("{trimmed}{}", "0".repeat(scale as usize));
        let fits = if negative {
            digits.parse::<i128>().is_ok_and(|v| -v >= i64::MIN as i128)
        } else {
            digits.parse::<u64>().is_ok()
        };
        return match (fits, negative) {
            (false, _) => Literal::Kept,
            (true, true) => Literal::Integer(format!("-{digits}")),
            (true, false) => Literal::Integer(digits),
        };
    }
    // a fraction: refused only when it would read as an integer
    match literal.parse::<f64>() {
        Ok(f) if f.is_finite() && f.fract() == 0.0 => Literal::Inexact(f),
        _ => Literal::Kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_are_classified_by_their_digits() {
        let integer = |s: &str| Literal::Integer(s.to_owned());
        assert_eq!(classify("10"), Literal::Kept);
        assert_eq!(classify("-7"), Literal::Kept);
        assert_eq!(classify("2.5"), Literal::Kept);
        assert_eq!(classify("0.1"), Literal::Kept);
        assert_eq!(classify("1e400"), Literal::Kept, "too large for 64 bits");
        assert_eq!(classify("10.0"), integer("10"));
        assert_eq!(classify("1e2"), integer("100"));
        assert_eq!(classify("1.5E1"), integer("15"));
        assert_eq!(classify("-0"), integer("0"));
        assert_eq!(classify("-0.0e5"), integer("0"));
        assert_eq!(classify("-2.50e1"), integer("-25"));
        assert_eq!(classify("1e-999"), Literal::Inexact(0.0));
        assert_eq!(classify("1.00000000000000000001"), Literal::Inexact(1.0));
        assert_eq!(classify("1e-2"), Literal::Kept);
        assert_eq!(classify("18446744073709551615"), Literal::Kept, "u64::MAX");
        assert_eq!(classify("-9223372036854775808"), Literal::Kept, "i64::MIN");
        assert_eq!(classify("18446744073709551616"), Literal::Beyond64);
        assert_eq!(classify("-9223372036854775809"), Literal::Beyond64);
        assert_eq!(classify(&"9".repeat(10_000)), Literal::Beyond64);
        // a zero exponent still makes the literal a float to serde_json
        assert_eq!(classify("1e0"), integer("1"));
        assert_eq!(classify("-3E+0"), integer("-3"));
        assert_eq!(classify("20e-0"), integer("20"));
        assert_eq!(classify("2.5e0"), Literal::Kept);
        assert_eq!(classify("01"), Literal::Malformed);
        assert_eq!(classify("1.e3"), Literal::Malformed);
    }

    #[test]
    fn text_is_rewritten_only_where_needed_and_refusals_point_at_the_literal() {
        assert_eq!(
            exact_text(r#"{"a":"10.0","b":2.5,"c":[1,2]}"#).unwrap(),
            None
        );
        assert_eq!(
            exact_text(r#"{"a" : 10.0, "b": [1e1, -0], "s": "1e1"}"#).unwrap(),
            Some(r#"{"a" : 10, "b": [10, 0], "s": "1e1"}"#.to_owned())
        );
        assert_eq!(
            exact_text(r#"{"a": 1e0, "b": [-3E+0]}"#).unwrap(),
            Some(r#"{"a": 1, "b": [-3]}"#.to_owned())
        );
        let tiny = format!(r#"{{"x": {{"a/b": [0, 0.{}1]}}}}"#, "0".repeat(10_000));
        let e = exact_text(&tiny).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_ARGUMENTS);
        assert_eq!(e.violations[0].pointer, "/x/a~1b/1");
        assert!(e.message.len() < 300, "{}", e.message);
        assert_eq!(
            exact_text("{\"a\": 1.0,").unwrap(),
            None,
            "the parser refuses it"
        );
    }

    #[test]
    fn a_long_run_of_number_characters_is_classified_once() {
        // half a million candidates in one megabyte-long run: one classification
        let run = "1.".repeat(500_000);
        assert!(!maybe_float(run.as_bytes()));
        assert!(maybe_float(b"[1.5, 2.0]"));
        assert!(!maybe_float(b"[1.5, 2.25, \"e\", -1]"));
    }

    #[test]
    fn integral_floats_in_values_become_integers() {
        let v = json!({"a": 10.0, "b": [2.5, -0.0, 3], "c": "x"});
        assert_eq!(
            exact_value(&v),
            Some(json!({"a": 10, "b": [2.5, 0, 3], "c": "x"}))
        );
        assert_eq!(exact_value(&json!({"a": 1, "b": 0.5})), None);
    }
}
