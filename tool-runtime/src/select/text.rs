//! Text analysis shared by the lexical scorers: splitting identifiers into words, lowercasing,
//! stop words and stemming.
//!
//! The same analyzer runs over tool metadata at index time and over the user's input at query
//! time, so a query word and a catalog word meet only if they analyze to the same term.

use rust_stemmers::{Algorithm, Stemmer};

/// English function words that carry no signal about which tool is meant. Kept short on purpose:
/// words like "get", "set", "list" or "find" are verbs that distinguish tools and are kept.
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "been", "being", "below", "between", "both", "but", "by", "can", "could", "did",
    "do", "does", "doing", "during", "each", "either", "else", "etc", "for", "from", "further",
    "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "itself", "just", "me", "might", "more", "most", "must", "my",
    "myself", "no", "nor", "not", "of", "on", "once", "only", "or", "other", "our", "ours", "out",
    "over", "own", "please", "same", "shall", "she", "should", "so", "some", "such", "than",
    "that", "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those",
    "through", "to", "too", "under", "until", "up", "us", "very", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your", "yours", "yourself",
];

/// Turns text into index terms: identifier-aware word splitting, lowercase, stop-word removal and
/// English (Porter2/Snowball) stemming. Deterministic; cheap to construct.
pub struct Analyzer {
    stemmer: Stemmer,
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }
}

impl Clone for Analyzer {
    /// Another analyzer of the same language: it keeps no state of its own.
    fn clone(&self) -> Self {
        Analyzer::default()
    }
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Analyzer(english)")
    }
}

impl Analyzer {
    /// Calls `sink(original_word, term)` for every term of `text`, in order, duplicates included.
    pub fn for_each_term(&self, text: &str, mut sink: impl FnMut(&str, String)) {
        for_each_word(text, |word| {
            let lower = word.to_lowercase();
            if lower.len() < 2 && !lower.chars().all(|c| c.is_ascii_digit()) {
                return;
            }
            if is_stop_word(&lower) {
                return;
            }
            let term = self.stemmer.stem(&lower).into_owned();
            sink(word, term);
        });
    }

    /// Every term of `text`, in order, duplicates included.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_term(text, |_, t| out.push(t));
        out
    }
}

/// Whether `lowercase_word` is one of the stop words.
pub fn is_stop_word(lowercase_word: &str) -> bool {
    STOP_WORDS.binary_search(&lowercase_word).is_ok()
}

/// Splits text into words: on anything that is not a letter or digit (so `snake_case`,
/// `dotted.names` and `kebab-case` split), and inside identifiers on case changes
/// (`camelCase`, `HTTPServer` → `HTTP`, `Server`) and letter/digit boundaries (`sha256` →
/// `sha`, `256`).
pub fn for_each_word(text: &str, mut sink: impl FnMut(&str)) {
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        if chunk.is_empty() {
            continue;
        }
        split_identifier(chunk, &mut sink);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Class {
    Upper,
    Lower,
    Digit,
}

fn class(c: char) -> Class {
    if c.is_numeric() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else {
        Class::Lower
    }
}

fn split_identifier(chunk: &str, sink: &mut impl FnMut(&str)) {
    let chars: Vec<(usize, char)> = chunk.char_indices().collect();
    let mut start = 0;
    for i in 1..chars.len() {
        let prev = class(chars[i - 1].1);
        let cur = class(chars[i].1);
        let next = chars.get(i + 1).map(|&(_, c)| class(c));
        let boundary = match (prev, cur) {
            (Class::Lower, Class::Upper) => true,
            (Class::Digit, Class::Upper | Class::Lower)
            | (Class::Upper | Class::Lower, Class::Digit) => true,
            // "HTTPServer": the last capital of a run starts the next word.
            (Class::Upper, Class::Upper) => next == Some(Class::Lower),
            _ => false,
        };
        if boundary {
            sink(&chunk[chars[start].0..chars[i].0]);
            start = i;
        }
    }
    sink(&chunk[chars[start].0..]);
}

/// Words of a tool name, for display and for the scorers that embed text (`get_weather` →
/// `get weather`).
pub fn name_words(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for_each_word(name, |w| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&w.to_lowercase());
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        let mut v = Vec::new();
        for_each_word(s, |w| v.push(w.to_owned()));
        v
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(words("get_weather"), ["get", "weather"]);
        assert_eq!(words("math.factorial"), ["math", "factorial"]);
        assert_eq!(words("getWeatherForecast"), ["get", "Weather", "Forecast"]);
        assert_eq!(words("HTTPServer-v2"), ["HTTP", "Server", "v", "2"]);
        assert_eq!(words("sha256sum"), ["sha", "256", "sum"]);
        assert_eq!(words("Ünïcode wörds"), ["Ünïcode", "wörds"]);
    }

    #[test]
    fn analysis_stems_and_drops_stop_words() {
        let a = Analyzer::default();
        assert_eq!(
            a.terms("What is the weather forecasts for the cities?"),
            ["weather", "forecast", "citi"]
        );
        assert_eq!(
            a.terms("calculating calculate calculation"),
            ["calcul", "calcul", "calcul"]
        );
    }
}
