//! Rich results: images, audio, embedded resources and resource links a tool returns instead of
//! (or beside) text.
//!
//! A tool returns them as its output type: [`Content`] for one block, `Vec<Content>` for mixed
//! content.
//!
//! ```
//! use tool_runtime::{content::Content, tool};
//!
//! /// A chart of the week's readings.
//! #[tool(read_only)]
//! fn chart() -> Vec<Content> {
//!     let png: Vec<u8> = vec![0x89, b'P', b'N', b'G'];
//!     vec![Content::text("Readings of the week"), Content::image(png, "image/png")]
//! }
//! ```
//!
//! # How a rich result travels
//!
//! A result is recognised as rich by its type, where the tool's output is made: a tool whose
//! output type is [`Content`] or `Vec<Content>` has its blocks wrapped in the result envelope
//! `{"$content": [block, ...]}`, each block in MCP's content-block shape (binary data base64).
//! That comparison of types is decided when the tool is compiled, so a tool returning any other
//! type serializes its output exactly as it would without this module, at the same cost.
//!
//! From there the result is a JSON value like any other, so everything that keeps results keeps
//! it unchanged: the read-only cache, retries, stored pending operations, agent checkpoints, the
//! HTTP API. What reads a result for a destination looks for the envelope once
//! ([`blocks`]: an object with the single member `$content`, a check of a few instructions) and
//! renders the blocks for it: MCP content blocks, a provider's image or file parts, or, for a
//! destination that takes only text, [`stand_in`]: the text blocks as they are and every other
//! block as its type, MIME type and size, never its bytes. The audit trail records the same
//! description ([`describe`]) instead of the result.
//!
//! A result is not cut to `max_result_chars` when it is rich: an image cut in half is no image,
//! and its bytes are not text a model reads.

use std::any::TypeId;
use std::borrow::Cow;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The single member of a rich result's envelope.
pub const CONTENT_KEY: &str = "$content";

/// One block of a rich result. Built with the constructors ([`Content::image`], ...), which take
/// bytes and encode them; its JSON form is MCP's content block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Its bytes.
        data: Base64,
        /// Its MIME type (`image/png`, ...).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A sound.
    Audio {
        /// Its bytes.
        data: Base64,
        /// Its MIME type (`audio/wav`, ...).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource whose contents come with the result.
    Resource {
        /// The resource.
        resource: Resource,
    },
    /// A link to a resource the client may read on its own.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its MIME type, when known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

/// An embedded resource: its URI, MIME type and contents (text or bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type, when known.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its contents.
    #[serde(flatten)]
    pub body: ResourceBody,
}

/// The contents of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceBody {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// Bytes.
    Blob {
        /// The bytes.
        blob: Base64,
    },
}

/// Bytes as standard base64 text, the form every destination of a rich result takes them in.
/// Made from bytes ([`Base64::encode`]), so it is always valid base64 when built in this process.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Base64(String);

impl Base64 {
    /// The bytes, encoded.
    pub fn encode(bytes: impl AsRef<[u8]>) -> Self {
        Base64(STANDARD.encode(bytes))
    }

    /// The base64 text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// How many bytes it encodes, computed from the text's length (nothing is decoded).
    pub fn byte_len(&self) -> usize {
        let s = self.0.trim_end_matches('=');
        s.len() * 3 / 4
    }

    /// The bytes, decoded; `None` if the text is not base64 (a block read from elsewhere).
    pub fn decode(&self) -> Option<Vec<u8>> {
        STANDARD.decode(&self.0).ok()
    }
}

impl std::fmt::Debug for Base64 {
    // the bytes would flood any log they reach; their size says what matters
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Base64({} bytes)", self.byte_len())
    }
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// An image of this MIME type (`image/png`, `image/jpeg`, ...).
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: Base64::encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// A sound of this MIME type (`audio/wav`, `audio/mpeg`, ...).
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: Base64::encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Content::Resource {
            resource: Resource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                body: ResourceBody::Text { text: text.into() },
            },
        }
    }

    /// An embedded binary resource.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl AsRef<[u8]>,
    ) -> Self {
        Content::Resource {
            resource: Resource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                body: ResourceBody::Blob {
                    blob: Base64::encode(bytes),
                },
            },
        }
    }

    /// A link to a resource, with its MIME type when known.
    pub fn resource_link(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: Option<&str>,
    ) -> Self {
        Content::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            mime_type: mime_type.map(str::to_owned),
            description: None,
        }
    }

    /// The block's type as MCP names it: `text`, `image`, `audio`, `resource`, `resource_link`.
    pub fn kind(&self) -> &'static str {
        match self {
            Content::Text { .. } => "text",
            Content::Image { .. } => "image",
            Content::Audio { .. } => "audio",
            Content::Resource { .. } => "resource",
            Content::ResourceLink { .. } => "resource_link",
        }
    }

    /// The MIME type, when the block has one (text blocks do not).
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Content::Text { .. } => None,
            Content::Image { mime_type, .. } | Content::Audio { mime_type, .. } => Some(mime_type),
            Content::Resource { resource } => resource.mime_type.as_deref(),
            Content::ResourceLink { mime_type, .. } => mime_type.as_deref(),
        }
    }

    /// The size of what the block carries, in bytes (UTF-8 for text; 0 for a link, which carries
    /// none).
    pub fn size(&self) -> usize {
        match self {
            Content::Text { text } => text.len(),
            Content::Image { data, .. } | Content::Audio { data, .. } => data.byte_len(),
            Content::Resource { resource } => match &resource.body {
                ResourceBody::Text { text } => text.len(),
                ResourceBody::Blob { blob } => blob.byte_len(),
            },
            Content::ResourceLink { .. } => 0,
        }
    }

    /// The block described by its type, MIME type and size (and a resource's URI), never by what
    /// it carries: what the audit trail records.
    pub fn describe(&self) -> String {
        let mut s = String::from(self.kind());
        match self {
            Content::Resource { resource } => {
                let _ = write!(s, " {}", resource.uri);
            }
            Content::ResourceLink { uri, name, .. } => {
                let _ = write!(s, " {uri} ({name})");
            }
            _ => {}
        }
        if let Some(mime) = self.mime_type() {
            let _ = write!(s, " {mime}");
        }
        if !matches!(self, Content::ResourceLink { .. }) {
            let _ = write!(s, ", {} bytes", self.size());
        }
        s
    }

    /// The block as text for a reader that takes only text: a text block (and an embedded text
    /// resource, after its description) as it is, any other block as `[description]`.
    pub fn stand_in(&self) -> Cow<'_, str> {
        match self {
            Content::Text { text } => Cow::Borrowed(text),
            Content::Resource {
                resource:
                    Resource {
                        body: ResourceBody::Text { text },
                        ..
                    },
            } => Cow::Owned(format!("[{}]\n{text}", self.describe())),
            other => Cow::Owned(format!("[{}]", other.describe())),
        }
    }
}

/// Every block of a result as text for a reader that takes only text ([`Content::stand_in`]),
/// one after another on separate lines.
pub fn stand_in(blocks: &[Content]) -> String {
    let mut out = String::new();
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&b.stand_in());
    }
    out
}

/// Every block of a result by its description ([`Content::describe`]), `; `-separated.
pub fn describe(blocks: &[Content]) -> String {
    blocks
        .iter()
        .map(Content::describe)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The result envelope holding these blocks (see the module's documentation).
pub fn to_value(blocks: &[Content]) -> Value {
    let blocks = serde_json::to_value(blocks).expect("content blocks always serialize");
    let mut map = Map::with_capacity(1);
    map.insert(CONTENT_KEY.to_owned(), blocks);
    Value::Object(map)
}

/// Whether `value` is a rich result's envelope. A few instructions for any other value.
pub fn is_rich(value: &Value) -> bool {
    matches!(value, Value::Object(map) if map.len() == 1 && map.contains_key(CONTENT_KEY))
}

/// The blocks of a rich result, or `None` for any other value (and for an envelope whose blocks
/// are not content blocks, which is then an ordinary object).
pub fn blocks(value: &Value) -> Option<Vec<Content>> {
    if !is_rich(value) {
        return None;
    }
    Vec::<Content>::deserialize(&value[CONTENT_KEY]).ok()
}

/// A tool's output as the result value: the envelope for [`Content`] and `Vec<Content>`, the
/// output's own JSON for anything else. The type comparison is resolved when the tool is
/// compiled, so a tool of any other output type pays nothing for it.
pub(crate) fn output_value<O: Serialize + 'static>(out: O) -> serde_json::Result<Value> {
    if TypeId::of::<O>() == TypeId::of::<Content>() {
        let v = serde_json::to_value(out)?;
        let mut map = Map::with_capacity(1);
        map.insert(CONTENT_KEY.to_owned(), Value::Array(vec![v]));
        return Ok(Value::Object(map));
    }
    if TypeId::of::<O>() == TypeId::of::<Vec<Content>>() {
        let v = serde_json::to_value(out)?;
        let mut map = Map::with_capacity(1);
        map.insert(CONTENT_KEY.to_owned(), v);
        return Ok(Value::Object(map));
    }
    serde_json::to_value(out)
}

/// The marker in the schema of [`Content`], so that a rich result declares no output schema
/// (MCP's `outputSchema` describes structured results, which a rich result is not).
pub(crate) const SCHEMA_MARKER: &str = "x-tool-content";

impl schemars::JsonSchema for Content {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("ToolContent")
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", SCHEMA_MARKER: true})
    }
}

/// Whether a derived output schema is that of [`Content`] or `Vec<Content>`.
pub(crate) fn is_content_schema(schema: &Value) -> bool {
    schema.get(SCHEMA_MARKER).is_some()
        || schema
            .get("items")
            .is_some_and(|items| items.get(SCHEMA_MARKER).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_have_mcp_shapes_and_descriptions_never_hold_bytes() {
        let all = vec![
            Content::text("hello"),
            Content::image([1u8, 2, 3, 4, 5], "image/png"),
            Content::audio([0u8; 10], "audio/wav"),
            Content::resource_text("test://a.txt", "text/plain", "abc"),
            Content::resource_blob("test://b.bin", "application/octet-stream", [7u8; 4]),
            Content::resource_link("test://c", "c", Some("text/plain")),
        ];
        let v = to_value(&all);
        assert!(is_rich(&v));
        assert_eq!(
            v[CONTENT_KEY][1],
            json!({"type": "image", "data": "AQIDBAU=", "mimeType": "image/png"})
        );
        assert_eq!(
            v[CONTENT_KEY][3],
            json!({"type": "resource", "resource": {"uri": "test://a.txt", "mimeType": "text/plain", "text": "abc"}})
        );
        assert_eq!(
            v[CONTENT_KEY][4]["resource"]["blob"],
            json!(STANDARD.encode([7u8; 4]))
        );
        assert_eq!(
            v[CONTENT_KEY][5],
            json!({"type": "resource_link", "uri": "test://c", "name": "c", "mimeType": "text/plain"})
        );
        assert_eq!(blocks(&v).unwrap(), all);
        assert_eq!(
            describe(&all),
            "text, 5 bytes; image image/png, 5 bytes; audio audio/wav, 10 bytes; \
             resource test://a.txt text/plain, 3 bytes; \
             resource test://b.bin application/octet-stream, 4 bytes; \
             resource_link test://c (c) text/plain"
        );
        let text = stand_in(&all);
        assert!(text.starts_with("hello\n[image image/png, 5 bytes]\n"));
        assert!(text.contains("[resource test://a.txt text/plain, 3 bytes]\nabc"));
        assert!(!text.contains("AQIDBAU="));
    }

    #[test]
    fn only_content_types_make_an_envelope() {
        assert!(is_rich(&output_value(Content::text("a")).unwrap()));
        assert!(is_rich(&output_value(vec![Content::text("a")]).unwrap()));
        assert_eq!(
            output_value(json!({"$content": 1})).unwrap(),
            json!({"$content": 1})
        );
        // an object that happens to use the key but holds no blocks is an ordinary result
        assert!(blocks(&json!({"$content": 1})).is_none());
        assert!(blocks(&json!({"$content": [], "other": 1})).is_none());
        assert!(blocks(&json!("text")).is_none());
    }

    #[test]
    fn sizes_are_exact_for_every_padding() {
        for n in 0..10 {
            assert_eq!(Base64::encode(vec![0u8; n]).byte_len(), n);
        }
    }
}
