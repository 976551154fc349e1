//! BERT's uncased WordPiece tokenizer, read from a Hugging Face `tokenizer.json`.
//!
//! Written here rather than taken from the `tokenizers` crate because BERT's pipeline is small
//! (clean, lowercase, strip accents, split on whitespace and punctuation, greedy longest-match
//! word pieces) and the crate would add far more to the build than this file does.

// Loading fails with the project's ToolError, large by design (it carries recovery advice).
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use serde::Deserialize;

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
        Ok(WordPiece {
            unk: id(&file.model.unk_token)?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            prefix: file.model.continuing_subword_prefix,
            max_chars: file.model.max_input_chars_per_word,
            lowercase: file.normalizer.and_then(|n| n.lowercase).unwrap_or(true),
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

    fn normalize(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if c == '\0' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) {
                continue;
            }
            if is_cjk(c) {
                out.push(' ');
                out.push(c);
                out.push(' ');
                continue;
            }
            if self.lowercase {
                for l in c.to_lowercase() {
                    out.push(strip_accent(l));
                }
            } else {
                out.push(c);
            }
        }
        out
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

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_alphanumeric() && !c.is_whitespace() && !c.is_control())
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// The base letter of a lowercase Latin letter with a diacritic (BERT strips accents when it
/// lowercases). Covers Latin-1 and Latin Extended-A, which is what tool metadata uses.
fn strip_accent(c: char) -> char {
    const MAP: &[(&str, char)] = &[
        ("àáâãäåāăą", 'a'),
        ("çćĉċč", 'c'),
        ("ďđ", 'd'),
        ("èéêëēĕėęě", 'e'),
        ("ĝğġģ", 'g'),
        ("ĥħ", 'h'),
        ("ìíîïĩīĭįı", 'i'),
        ("ĵ", 'j'),
        ("ķ", 'k'),
        ("ĺļľŀł", 'l'),
        ("ñńņňŉ", 'n'),
        ("òóôõöøōŏő", 'o'),
        ("ŕŗř", 'r'),
        ("śŝşš", 's'),
        ("ţťŧ", 't'),
        ("ùúûüũūŭůűų", 'u'),
        ("ŵ", 'w'),
        ("ýÿŷ", 'y'),
        ("źżž", 'z'),
    ];
    if c.is_ascii() {
        return c;
    }
    MAP.iter()
        .find(|(set, _)| set.contains(c))
        .map_or(c, |&(_, base)| base)
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
