//! BERT's uncased WordPiece tokenizer, read from a Hugging Face `tokenizer.json`.
//!
//! Written here rather than taken from the `tokenizers` crate because BERT's pipeline is small
//! (clean, isolate CJK characters, strip accents, lowercase, split on whitespace and punctuation,
//! greedy longest-match word pieces) and the crate would add far more to the build than this
//! file does. Each step follows `tokenizers`' `BertNormalizer` and `BertPreTokenizer`, with the
//! same Unicode definitions (canonical decomposition, general categories), so ids match the
//! reference tokenizer also outside ASCII; `tests/it/select_minilm.rs` checks them against it.

// Loading fails with the project's ToolError, large by design (it carries recovery advice).
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use serde::Deserialize;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use crate::error::{ErrorCode, ToolError};

/// A loaded WordPiece vocabulary with BERT's special tokens.
#[derive(Debug)]
pub struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
    prefix: String,
    max_chars: usize,
    lowercase: bool,
    strip_accents: bool,
}

#[derive(Deserialize)]
struct File {
    model: Model,
    #[serde(default)]
    normalizer: Option<Normalizer>,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type")]
    kind: String,
    vocab: HashMap<String, u32>,
    unk_token: String,
    #[serde(default = "default_prefix")]
    continuing_subword_prefix: String,
    #[serde(default = "default_max_chars")]
    max_input_chars_per_word: usize,
}

#[derive(Deserialize)]
struct Normalizer {
    #[serde(default)]
    lowercase: Option<bool>,
    /// `null` (the usual value) means "as `lowercase`", BERT's uncased convention.
    #[serde(default)]
    strip_accents: Option<bool>,
}

fn default_prefix() -> String {
    "##".into()
}

fn default_max_chars() -> usize {
    100
}

impl WordPiece {
    /// Parses `tokenizer.json`; only WordPiece models with `[CLS]`/`[SEP]` are accepted.
    pub fn from_json(json: &str) -> Result<Self, ToolError> {
        let bad = |why: String| ToolError::new(ErrorCode::INVALID_ARGUMENTS, why);
        let file: File =
            serde_json::from_str(json).map_err(|e| bad(format!("tokenizer.json: {e}")))?;
        if file.model.kind != "WordPiece" {
            return Err(bad(format!(
                "tokenizer.json: a WordPiece model was expected, found {}",
                file.model.kind
            )));
        }
        let id = |t: &str| {
            file.model
                .vocab
                .get(t)
                .copied()
                .ok_or_else(|| bad(format!("tokenizer.json: the vocabulary has no {t}")))
        };
        let lowercase = file
            .normalizer
            .as_ref()
            .and_then(|n| n.lowercase)
            .unwrap_or(true);
        let strip_accents = file
            .normalizer
            .as_ref()
            .and_then(|n| n.strip_accents)
            .unwrap_or(lowercase);
        Ok(WordPiece {
            unk: id(&file.model.unk_token)?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            prefix: file.model.continuing_subword_prefix,
            max_chars: file.model.max_input_chars_per_word,
            lowercase,
            strip_accents,
            vocab: file.model.vocab,
        })
    }

    /// Token ids of `text` framed as `[CLS] ... [SEP]`, at most `max_len` ids in all.
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let budget = max_len.max(2) - 1;
        'words: for word in pre_tokenize(&self.normalize(text)) {
            for id in self.word_pieces(&word) {
                if ids.len() >= budget {
                    break 'words;
                }
                ids.push(id);
            }
        }
        ids.push(self.sep);
        ids
    }

    /// BERT's normaliser: drop NUL, U+FFFD and control/format/unassigned/private-use
    /// characters, turn whitespace into spaces, put spaces around CJK ideographs, strip accents
    /// (canonical decomposition, then drop non-spacing marks), lowercase character by character.
    fn normalize(&self, text: &str) -> String {
        let mut cleaned = String::with_capacity(text.len());
        for c in text.chars() {
            if c == '\0' || c == '\u{fffd}' || is_control(c) {
                continue;
            }
            if is_whitespace(c) {
                cleaned.push(' ');
            } else if is_cjk(c) {
                cleaned.push(' ');
                cleaned.push(c);
                cleaned.push(' ');
            } else {
                cleaned.push(c);
            }
        }
        let stripped: String = if self.strip_accents {
            cleaned
                .nfd()
                .filter(|&c| get_general_category(c) != GeneralCategory::NonspacingMark)
                .collect()
        } else {
            cleaned
        };
        if !self.lowercase {
            return stripped;
        }
        // Per character, as the reference does (`str::to_lowercase` would turn a word-final
        // capital sigma into ς, which BERT's vocabulary does not expect).
        stripped.chars().flat_map(char::to_lowercase).collect()
    }

    fn word_pieces(&self, word: &str) -> Vec<u32> {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > self.max_chars {
            return vec![self.unk];
        }
        let mut out = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                let mut piece: String = chars[start..end].iter().collect();
                if start > 0 {
                    piece.insert_str(0, &self.prefix);
                }
                if let Some(&id) = self.vocab.get(&piece) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => return vec![self.unk],
            }
        }
        out
    }
}

/// Splits on whitespace, and makes every punctuation character a word of its own (BERT's
/// pre-tokenizer).
fn pre_tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
        } else if is_punctuation(c) {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            words.push(c.to_string());
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// BERT's punctuation: ASCII punctuation (which includes symbols such as `$` and `+`) and every
/// Unicode punctuation category (P*); other symbols (`€`, `½`, `℃`) stay inside words.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            GeneralCategory::ConnectorPunctuation
                | GeneralCategory::DashPunctuation
                | GeneralCategory::OpenPunctuation
                | GeneralCategory::ClosePunctuation
                | GeneralCategory::InitialPunctuation
                | GeneralCategory::FinalPunctuation
                | GeneralCategory::OtherPunctuation
        )
}

/// Tab, newline and carriage return count as whitespace, not control characters.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// What BERT's cleaning removes: control (Cc), format (Cf, e.g. zero-width spaces), unassigned
/// (Cn) and private-use (Co) characters, except the whitespace controls.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r')
        && matches!(
            get_general_category(c),
            GeneralCategory::Control
                | GeneralCategory::Format
                | GeneralCategory::Unassigned
                | GeneralCategory::PrivateUse
        )
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> WordPiece {
        let vocab: Vec<&str> = vec![
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "get", "the", "weather", "##s", "un", "##aff",
            "##able", ",", "cafe", "!",
        ];
        let vocab: serde_json::Map<String, serde_json::Value> = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), serde_json::json!(i)))
            .collect();
        let json = serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "lowercase": true},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": vocab}
        });
        WordPiece::from_json(&json.to_string()).unwrap()
    }

    #[test]
    fn greedy_longest_match_with_prefix_and_unknowns() {
        let t = tiny();
        // [CLS] get the weather ##s , unaffable ! café→cafe xyz→[UNK] [SEP]
        assert_eq!(
            t.encode("Get the Weathers, unaffable! Café xyz", 64),
            [2, 4, 5, 6, 7, 11, 8, 9, 10, 13, 12, 1, 3]
        );
    }

    #[test]
    fn accents_are_stripped_by_decomposition_not_by_a_table() {
        let t = tiny();
        // Precomposed and decomposed accents alike; a zero-width space is dropped; a letter
        // without a decomposition (ø) is kept as it is, so the word is unknown.
        assert_eq!(
            t.encode("CAFÉ cafe\u{301} ca\u{200b}fe gøt", 64),
            [2, 12, 12, 12, 1, 3]
        );
        // Unicode punctuation splits words; other symbols do not.
        assert_eq!(t.encode("get«the»weather", 64), [2, 4, 1, 5, 1, 6, 3]);
        assert_eq!(t.encode("get€", 64), [2, 1, 3]);
    }

    #[test]
    fn truncates_keeping_the_frame() {
        let t = tiny();
        assert_eq!(t.encode("get get get get", 4), [2, 4, 4, 3]);
    }

    #[test]
    fn rejects_other_models() {
        let err = WordPiece::from_json(r#"{"model":{"type":"BPE","vocab":{},"unk_token":"x"}}"#)
            .unwrap_err();
        assert!(err.message.contains("WordPiece"), "{}", err.message);
    }
}
