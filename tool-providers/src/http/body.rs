//! A request body whose tool declarations stay pre-serialized.
//!
//! The declaration cache keeps every tool's declaration as ready JSON text. Putting that text
//! into a `serde_json::Value` body would parse every schema again and serialize it again on each
//! request; a [`RequestBody`] instead holds the text as is and splices it into the bytes it
//! writes, next to the ordinary fields (messages, system prompt) it serializes.

use serde_json::{Map, Value};

/// A JSON object to send: pre-serialized fields first, then ordinary fields.
///
/// The bytes it writes are the compact serialization of the object it describes, exactly what
/// serializing the same fields as one `serde_json::Value` (with `preserve_order`) would give,
/// without rebuilding the pre-serialized part.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestBody {
    /// The text of a JSON object (`{"tools":[...],"tool_choice":"auto"}`), or empty.
    raw: String,
    fields: Map<String, Value>,
}

impl RequestBody {
    /// An empty body.
    pub fn new() -> Self {
        Self::default()
    }

    /// A body of ordinary fields only.
    pub fn from_fields(fields: Map<String, Value>) -> Self {
        RequestBody {
            raw: String::new(),
            fields,
        }
    }

    /// Adds pre-serialized fields, written first and never parsed: `object` is the compact text of
    /// a JSON object, as [`crate::codec::DeclarationCache::encode_tools_text`] gives it. Its keys
    /// must differ from the ordinary fields' and from the transport fields the client fills in
    /// (`model`, `stream`, `stream_options`, `max_tokens`): nothing checks them, since checking
    /// would mean parsing the text this type exists to avoid parsing.
    ///
    /// # Panics
    ///
    /// If `object` does not start with `{` and end with `}`.
    pub fn with_raw_object(mut self, object: String) -> Self {
        let t = object.trim();
        assert!(
            t.starts_with('{') && t.ends_with('}'),
            "pre-serialized fields must be the text of one JSON object"
        );
        self.raw = if t.len() == object.len() {
            object
        } else {
            t.to_owned()
        };
        self
    }

    /// Sets an ordinary field (keeping its position if it was already there).
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.fields.insert(key.into(), value)
    }

    /// An ordinary field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// The ordinary fields.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The pre-serialized fields: the inner text of their object (no braces), possibly empty.
    pub fn raw_fields(&self) -> &str {
        inner(&self.raw)
    }

    /// The body's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw.len() + 256);
        write_object(self.raw_fields(), &self.fields, &[], &mut out);
        out
    }

    /// The body as a JSON value (parses the pre-serialized part: for tests and logs, not for
    /// sending).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.to_bytes()).expect("a request body is valid JSON")
    }
}

impl From<Map<String, Value>> for RequestBody {
    fn from(fields: Map<String, Value>) -> Self {
        RequestBody::from_fields(fields)
    }
}

/// A transport field the client adds to a body.
#[derive(Debug)]
pub(crate) struct Extra {
    pub(crate) key: &'static str,
    pub(crate) value: Value,
    /// Replace the field when the body has it (else only fill it in when missing).
    pub(crate) replace: bool,
}

fn inner(object: &str) -> &str {
    if object.len() < 2 {
        return "";
    }
    object[1..object.len() - 1].trim()
}

/// Writes `{raw, fields (with replaced extras), missing extras}` compactly, in that order: the
/// order a `preserve_order` map would have after inserting the same fields in the same order.
pub(crate) fn write_object(
    raw: &str,
    fields: &Map<String, Value>,
    extras: &[Extra],
    out: &mut Vec<u8>,
) {
    out.push(b'{');
    let mut first = raw.is_empty();
    out.extend_from_slice(raw.as_bytes());
    let mut field = |out: &mut Vec<u8>, k: &str, v: &Value| {
        if !first {
            out.push(b',');
        }
        first = false;
        // Writing JSON into a Vec cannot fail: map keys are strings and values are JSON.
        serde_json::to_writer(&mut *out, k).expect("a string serializes");
        out.push(b':');
        serde_json::to_writer(&mut *out, v).expect("a JSON value serializes");
    };
    for (k, v) in fields {
        let v = extras
            .iter()
            .find(|e| e.replace && e.key == k)
            .map_or(v, |e| &e.value);
        field(out, k, v);
    }
    for e in extras {
        if !fields.contains_key(e.key) {
            field(out, e.key, &e.value);
        }
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn raw_fields_are_spliced_before_the_ordinary_ones_as_one_object() {
        let mut b = RequestBody::new().with_raw_object(r#"{"tools":[{"a":1}],"x":true}"#.into());
        b.insert(
            "messages",
            json!([{"role": "user", "content": "hi \"you\""}]),
        );
        let bytes = b.to_bytes();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"tools":[{"a":1}],"x":true,"messages":[{"role":"user","content":"hi \"you\""}]}"#
        );
        // The same bytes as serializing the parsed value again.
        assert_eq!(serde_json::to_vec(&b.to_value()).unwrap(), bytes);
        assert_eq!(RequestBody::new().to_bytes(), b"{}");
        assert_eq!(
            RequestBody::new().with_raw_object("{}".into()).to_bytes(),
            b"{}"
        );
    }

    #[test]
    fn extras_replace_in_place_or_are_appended() {
        let mut fields = Map::new();
        fields.insert("stream".into(), json!(true));
        fields.insert("model".into(), json!("mine"));
        let extras = [
            Extra {
                key: "model",
                value: json!("default"),
                replace: false,
            },
            Extra {
                key: "stream",
                value: json!(false),
                replace: true,
            },
            Extra {
                key: "max_tokens",
                value: json!(5),
                replace: false,
            },
        ];
        let mut out = Vec::new();
        write_object("", &fields, &extras, &mut out);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"stream":false,"model":"mine","max_tokens":5}"#
        );
    }

    #[test]
    #[should_panic(expected = "one JSON object")]
    fn raw_fields_must_be_an_object() {
        let _ = RequestBody::new().with_raw_object("[1]".into());
    }
}
