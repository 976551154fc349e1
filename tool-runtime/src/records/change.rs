//! The change a call will make, as a previewer describes it for the person who decides: what is
//! added, removed and replaced, each with a label, how many other things it touches, and notes;
//! plain JSON where none of that fits.
//!
//! Every surface draws it from this one model: the terminal box, `tools pending` and the MCP
//! elicitation message as lines ([`crate::display::change_lines`]), the approvals page as a
//! marked diff.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// How many characters of a long text [`Change::added_sample`] and [`Change::removed_sample`]
/// keep.
pub const SAMPLE_CHARS: usize = 300;

/// What a call will change, entry by entry, in the order the previewer gave them.
///
/// Built by a previewer ([`ExecutorBuilder::preview`](crate::executor::ExecutorBuilder::preview)):
///
/// ```
/// use tool_runtime::executor::Change;
/// use serde_json::json;
///
/// let change = Change::new()
///     .replaced("content", "The sky is green.", "The sky is blue.")
///     .replaced("confidence", 0.4, 0.9)
///     .touches(12, "relationships keep pointing at it")
///     .note("This will modify your existing work.");
/// assert_eq!(
///     tool_runtime::display::change_lines(&change),
///     [
///         "~ content: “The sky is green.” → “The sky is blue.”",
///         "~ confidence: 0.4 → 0.9",
///         "! 12 relationships keep pointing at it",
///         "  This will modify your existing work.",
///     ]
/// );
///
/// // what fits no entry stays plain JSON
/// let raw = Change::json(json!({"plan": ["a", "b"]}));
/// ```
///
/// Its JSON form is `{"entries": [{"op": "add" | "remove" | "replace" | "touch" | "note" |
/// "json", ...}]}`. Any other JSON read where a change is expected (a preview stored by a
/// previewer that returned plain JSON) is read as [`Change::json`] of it, so such a preview
/// still loads and is shown as it was written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Change {
    entries: Vec<ChangeEntry>,
}

/// One line of a [`Change`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeEntry {
    /// Something that will exist after the call: `label` says what, `value` what it holds.
    Add {
        /// What is added ("title", "reference", "Section 3.4").
        label: String,
        /// Its value; for a sample, the start of the text.
        value: Value,
        /// When `value` is a sample of a longer text: the whole text's length in characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chars: Option<u64>,
    },
    /// Something that will be gone after the call.
    Remove {
        /// What is removed.
        label: String,
        /// Its value as it is now; for a sample, the start of the text.
        value: Value,
        /// When `value` is a sample of a longer text: the whole text's length in characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chars: Option<u64>,
    },
    /// A value that will change: kept whole on both sides, so that the difference can be found
    /// and shown however deep inside a long text it is.
    Replace {
        /// What changes.
        label: String,
        /// The value now.
        old: Value,
        /// The value after the call.
        new: Value,
    },
    /// Other things the call affects, counted: "12 relationships will be removed".
    Touch {
        /// How many.
        count: u64,
        /// What they are and what happens to them, read after the count.
        what: String,
    },
    /// A sentence for the person ("This will modify your existing work.").
    Note {
        /// The sentence.
        text: String,
    },
    /// What fits no other entry, as JSON.
    Json {
        /// The value.
        value: Value,
    },
}

impl Change {
    /// No entries yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The escape hatch: `value` shown as JSON (a string as its text).
    pub fn json(value: Value) -> Self {
        Change::new().push(ChangeEntry::Json { value })
    }

    /// `label` will exist with `value`.
    pub fn added(self, label: impl Into<String>, value: impl Into<Value>) -> Self {
        self.push(ChangeEntry::Add {
            label: label.into(),
            value: value.into(),
            chars: None,
        })
    }

    /// `label`, whose value is `value` now, will be gone.
    pub fn removed(self, label: impl Into<String>, value: impl Into<Value>) -> Self {
        self.push(ChangeEntry::Remove {
            label: label.into(),
            value: value.into(),
            chars: None,
        })
    }

    /// `label` will go from `old` to `new`. Nothing is added when the two are equal: a change
    /// lists only what changes.
    pub fn replaced(
        self,
        label: impl Into<String>,
        old: impl Into<Value>,
        new: impl Into<Value>,
    ) -> Self {
        let (old, new) = (old.into(), new.into());
        if old == new {
            return self;
        }
        self.push(ChangeEntry::Replace {
            label: label.into(),
            old,
            new,
        })
    }

    /// Like [`Change::added`] for a text, keeping only its first [`SAMPLE_CHARS`] characters
    /// and its length, so a long text is not copied into the preview whole.
    pub fn added_sample(self, label: impl Into<String>, text: &str) -> Self {
        let (value, chars) = sample(text);
        self.push(ChangeEntry::Add {
            label: label.into(),
            value,
            chars,
        })
    }

    /// Like [`Change::removed`] for a text, keeping only its first [`SAMPLE_CHARS`] characters
    /// and its length.
    pub fn removed_sample(self, label: impl Into<String>, text: &str) -> Self {
        let (value, chars) = sample(text);
        self.push(ChangeEntry::Remove {
            label: label.into(),
            value,
            chars,
        })
    }

    /// `count` other things are affected; `what` is read after the number ("relationships will
    /// be removed"). Nothing is added for a count of zero.
    pub fn touches(self, count: usize, what: impl Into<String>) -> Self {
        if count == 0 {
            return self;
        }
        self.push(ChangeEntry::Touch {
            count: count as u64,
            what: what.into(),
        })
    }

    /// A sentence for the person.
    pub fn note(self, text: impl Into<String>) -> Self {
        self.push(ChangeEntry::Note { text: text.into() })
    }

    /// Adds `entry` at the end.
    pub fn push(mut self, entry: ChangeEntry) -> Self {
        self.entries.push(entry);
        self
    }

    /// The entries of `other` after these.
    pub fn and(mut self, other: Change) -> Self {
        self.entries.extend(other.entries);
        self
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[ChangeEntry] {
        &self.entries
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Each entry rewritten by `f` (redaction of what a store keeps).
    pub(crate) fn map(self, f: impl FnMut(ChangeEntry) -> ChangeEntry) -> Self {
        Change {
            entries: self.entries.into_iter().map(f).collect(),
        }
    }

    /// A change read from stored JSON: the typed form, or anything else as [`Change::json`].
    pub fn from_json(value: Value) -> Self {
        if let Value::Object(map) = &value
            && map.len() == 1
            && let Some(entries) = map.get("entries")
            && let Ok(entries) = Vec::<ChangeEntry>::deserialize(entries)
        {
            return Change { entries };
        }
        Change::json(value)
    }
}

impl From<Value> for Change {
    fn from(value: Value) -> Self {
        Change::json(value)
    }
}

fn sample(text: &str) -> (Value, Option<u64>) {
    match text.char_indices().nth(SAMPLE_CHARS) {
        Some((end, _)) => (
            Value::String(text[..end].to_owned()),
            Some(text.chars().count() as u64),
        ),
        None => (Value::String(text.to_owned()), None),
    }
}

impl Serialize for Change {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Form<'a> {
            entries: &'a [ChangeEntry],
        }
        Form {
            entries: &self.entries,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Change {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Change::from_json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_typed_form_round_trips_and_plain_json_reads_as_json() {
        let change = Change::new()
            .added("title", "Distanciation")
            .removed_sample("body", &"x".repeat(1000))
            .replaced("confidence", 0.4, 0.9)
            .touches(3, "relationships will be removed")
            .note("This will modify your existing work.")
            .and(Change::json(json!({"k": [1]})));
        let text = serde_json::to_string(&change).unwrap();
        assert!(
            text.starts_with(r#"{"entries":[{"op":"add","label":"title""#),
            "{text}"
        );
        assert!(text.contains(r#""chars":1000"#), "{text}");
        assert_eq!(serde_json::from_str::<Change>(&text).unwrap(), change);

        // what a previewer returning plain JSON stored
        for old in [
            json!({"removes": {"id": "n2", "text": null}}),
            json!("- note n1"),
            json!({"entries": "not a list"}),
            json!({"entries": [{"op": "unknown"}]}),
            json!({"entries": [], "other": 1}),
            json!([1, 2]),
        ] {
            let read: Change = serde_json::from_value(old.clone()).unwrap();
            assert_eq!(read, Change::json(old));
        }
    }

    #[test]
    fn equal_values_and_zero_counts_are_not_listed_and_samples_keep_the_length() {
        let change = Change::new()
            .replaced("title", "same", "same")
            .touches(0, "relationships");
        assert!(change.is_empty());
        let change = Change::new().added_sample("body", &"é".repeat(SAMPLE_CHARS + 1));
        match &change.entries()[0] {
            ChangeEntry::Add { value, chars, .. } => {
                assert_eq!(value.as_str().unwrap().chars().count(), SAMPLE_CHARS);
                assert_eq!(*chars, Some(SAMPLE_CHARS as u64 + 1));
            }
            other => panic!("{other:?}"),
        }
        let short = Change::new().added_sample("body", "short");
        assert_eq!(short, Change::new().added("body", "short"));
    }
}
