//! The injection check of arguments, offered for other text a model will read: the descriptions
//! and schemas of tools that come from somebody else (a catalog, an MCP server).

use serde_json::Value;

use super::injection;

/// Text that reads like an instruction to the model rather than data: where it is, what kind of
/// pattern it matched and the phrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspicion {
    /// The JSON pointer of the string, within the value checked.
    pub pointer: String,
    /// The kind of pattern (e.g. "an instruction to the model", "a shell command").
    pub kind: &'static str,
    /// The phrase found.
    pub phrase: &'static str,
}

/// The first string in `value` (depth first, in document order) that the executor's injection
/// check would refuse in a call's arguments (`check_injection`), if any.
pub fn find_suspicious(value: &Value) -> Option<Suspicion> {
    injection::find(value).map(|(pointer, kind, phrase)| Suspicion {
        pointer,
        kind,
        phrase,
    })
}

/// [`find_suspicious`] over the members of `object`, with pointers relative to it: for a
/// schema held as a map, without making a `Value` of it first.
pub fn find_suspicious_in_object(object: &serde_json::Map<String, Value>) -> Option<Suspicion> {
    injection::find_in_object(object).map(|(pointer, kind, phrase)| Suspicion {
        pointer,
        kind,
        phrase,
    })
}

/// [`find_suspicious`] for one text (a description); the pointer is empty.
pub fn find_suspicious_text(text: &str) -> Option<Suspicion> {
    injection::find_in_text(text).map(|(pointer, kind, phrase)| Suspicion {
        pointer,
        kind,
        phrase,
    })
}
