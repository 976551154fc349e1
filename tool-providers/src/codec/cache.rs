//! The declaration cache: each tool's provider declaration is built once and kept pre-serialized,
//! so a request with 100 tools splices 100 ready strings instead of rebuilding and re-serializing
//! 100 schemas.
//!
//! Entries are keyed by provider, the codec's view settings ([`Codec::view_key`]) and the tool
//! name, and carry a fingerprint of the definition (name, description, schema bytes, output schema,
//! strict flag, safety, flags): a definition that changes under the same name (an MCP server's
//! `tools/list_changed`) is rebuilt, never served stale. The fingerprint hashes the schema's bytes,
//! which costs a fraction of parsing and re-serializing them.
//!
//! Tools whose whole schema `#[tool]` knew at compile time carry their default declarations as
//! constants ([`PrebuiltDeclarations`]); for a codec with default settings ([`Codec::prebuilt_view`])
//! those are spliced as they are, so such a tool costs no building, serializing or hashing at all.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::sync::{Arc, RwLock};

use serde_json::Value;
use serde_json::value::RawValue;
use tool_runtime::__private::PrebuiltDeclarations;
use tool_runtime::definition::ToolDefinition;

use super::{Codec, CodecError, ToolConfig, assemble, select_tools};

#[derive(Debug)]
struct Slot {
    fingerprint: u64,
    declaration: Arc<str>,
}

type Views = HashMap<(super::Provider, u64), HashMap<String, Slot>>;

/// Pre-serialized provider declarations, shared across requests and threads.
#[derive(Debug, Default)]
pub struct DeclarationCache {
    views: RwLock<Views>,
}

impl DeclarationCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// `def`'s declaration for `codec`, serialized; built on first use and whenever the definition
    /// changed.
    pub fn declaration(
        &self,
        codec: &dyn Codec,
        def: &ToolDefinition,
    ) -> Result<Arc<str>, CodecError> {
        let key = (codec.provider(), codec.view_key());
        let fp = fingerprint(def);
        {
            let views = self.views.read().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = views.get(&key).and_then(|v| v.get(def.name.as_ref()))
                && slot.fingerprint == fp
            {
                return Ok(slot.declaration.clone());
            }
        }
        let declaration: Arc<str> = match prebuilt(codec, def) {
            Some(text) => text.into(),
            None => codec.declare(def)?.to_string().into(),
        };
        let mut views = self.views.write().unwrap_or_else(|e| e.into_inner());
        views.entry(key).or_default().insert(
            def.name.to_string(),
            Slot {
                fingerprint: fp,
                declaration: declaration.clone(),
            },
        );
        Ok(declaration)
    }

    /// The request fragment declaring `tools` under `config` (same JSON as
    /// [`Codec::encode_tools`]) as a [`RawValue`], assembled from cached declarations, to embed in
    /// a serde request struct or parse. `RawValue` insists on a validating parse of the text;
    /// [`DeclarationCache::encode_tools_text`] skips it.
    pub fn encode_tools(
        &self,
        codec: &dyn Codec,
        tools: &[&ToolDefinition],
        config: &ToolConfig,
    ) -> Result<Box<RawValue>, CodecError> {
        let text = self.encode_tools_text(codec, tools, config)?;
        RawValue::from_string(text).map_err(|e| CodecError::Assembly(e.to_string()))
    }

    /// The same fragment as the text of one JSON object, for splicing its fields straight into a
    /// request body being written as text.
    pub fn encode_tools_text(
        &self,
        codec: &dyn Codec,
        tools: &[&ToolDefinition],
        config: &ToolConfig,
    ) -> Result<String, CodecError> {
        let choice = codec.encode_choice(config)?;
        let selected = select_tools(tools, &choice, config)?;
        let mut joined = String::new();
        for (i, def) in selected.iter().enumerate() {
            if i > 0 {
                joined.push(',');
            }
            match prebuilt(codec, def) {
                Some(text) => joined.push_str(text),
                None => joined.push_str(&self.declaration(codec, def)?),
            }
        }
        Ok(assemble(codec, &joined, &choice.fields))
    }

    /// Number of cached declarations, over every provider.
    pub fn len(&self) -> usize {
        let views = self.views.read().unwrap_or_else(|e| e.into_inner());
        views.values().map(HashMap::len).sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `def`'s compile-time declaration for `codec`'s settings, if it has one and the definition still
/// has the fields it was built from (checked by comparing them, which costs far less than building:
/// no parsing, no allocation).
pub fn prebuilt(codec: &dyn Codec, def: &ToolDefinition) -> Option<&'static str> {
    let view = codec.prebuilt_view()?;
    let p: &PrebuiltDeclarations = def.prebuilt?;
    let unchanged = def.name == p.name
        && def.description == p.description
        && def.parameters.get() == p.parameters
        && def.strict == p.strict
        && def.safety == p.safety
        && def.idempotent == p.idempotent
        && def.reversible == p.reversible;
    if !unchanged {
        return None;
    }
    if tool_wire::declare::uses_output_schema(view) {
        let same = match (p.output_schema?, &def.output_schema) {
            (None, None) => true,
            (Some(text), Some(schema)) => serializes_to(schema, text),
            _ => false,
        };
        if !same {
            return None;
        }
    }
    p.views.iter().find(|(v, _)| *v == view).map(|(_, d)| *d)
}

/// Whether `value` serializes to exactly `text`, compared as it is written (no allocation).
fn serializes_to(value: &Value, text: &str) -> bool {
    struct Expect<'a>(&'a [u8]);
    impl io::Write for Expect<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            match self.0.strip_prefix(buf) {
                Some(rest) => {
                    self.0 = rest;
                    Ok(buf.len())
                }
                None => Err(io::Error::other("differs")),
            }
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut expect = Expect(text.as_bytes());
    serde_json::to_writer(&mut expect, value).is_ok() && expect.0.is_empty()
}

/// What a declaration depends on. In-process only, so `std`'s hasher is fine here.
fn fingerprint(def: &ToolDefinition) -> u64 {
    let mut h = DefaultHasher::new();
    def.name.hash(&mut h);
    def.description.hash(&mut h);
    def.parameters.get().hash(&mut h);
    def.strict.hash(&mut h);
    def.safety.hash(&mut h);
    def.idempotent.hash(&mut h);
    def.reversible.hash(&mut h);
    if let Some(o) = &def.output_schema {
        hash_value(o, &mut h);
    }
    h.finish()
}

fn hash_value(v: &Value, h: &mut DefaultHasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => b.hash(h),
        Value::Number(n) => n.to_string().hash(h),
        Value::String(s) => s.hash(h),
        Value::Array(a) => {
            a.len().hash(h);
            a.iter().for_each(|x| hash_value(x, h));
        }
        Value::Object(m) => {
            m.len().hash(h);
            for (k, x) in m {
                k.hash(h);
                hash_value(x, h);
            }
        }
    }
}
