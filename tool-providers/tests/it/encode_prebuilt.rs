//! Tools whose whole schema `#[tool]` knows at compile time: their default declarations are
//! constants on the definition (`PrebuiltDeclarations`), byte-identical to what the codecs build
//! at run time.

use serde_json::{Value, json};
use tool_providers::codec::openai_chat::{OpenAiChat, StrictPolicy};
use tool_providers::codec::{Codec, CodecError, DeclarationCache, Provider, ToolConfig};
use tool_runtime::{ToolError, definition::ToolDefinition};

/// Fetches a page (verbatim schema with odd spacing, a `$ref` and an open map).
#[tool_runtime::tool(
    read_only,
    parameters = r##"{"type": "object",
      "properties": {"url": {"type": "string", "format": "uri"},
                     "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                     "retry": {"$ref": "#/$defs/Retry"}},
      "required": ["url"],
      "$defs": {"Retry": {"type": "object", "properties": {"times": {"type": "integer", "minimum": 0}}}}}"##
)]
fn fetch_page(
    url: String,
    headers: Option<std::collections::HashMap<String, String>>,
    retry: Option<Value>,
) -> String {
    format!("{url}{headers:?}{retry:?}")
}

/// Converts an amount (primitive arguments: derived schema known at compile time).
#[tool_runtime::tool(external, idempotent)]
fn convert_amount(
    /// The amount
    amount: f64,
    /// ISO code
    #[arg(min_length = 3, max_length = 3)]
    currency: String,
    #[arg(default = 2, min = 0, max = 8)] digits: u8,
    note: Option<String>,
) -> usize {
    (amount as usize) + currency.len() + digits as usize + note.map_or(0, |n| n.len())
}

/// Every primitive kind, with docs, defaults and bounds: the compile-time schema text must be
/// byte-identical to the one schemars derives for the constants to apply.
#[tool_runtime::tool(read_only)]
#[allow(clippy::too_many_arguments)]
fn every_primitive(
    /// A text
    text: String,
    flag: bool,
    small: i8,
    large: i64,
    /// How many
    #[arg(default = 10, min = 1, max = 50)]
    count: u32,
    id: u64,
    #[arg(default)] verbose: bool,
    #[arg(min = -5)] offset: i16,
    /// Maybe a note
    note: Option<String>,
    limit: Option<u16>,
    #[arg(min_length = 2, max_length = 9)] code: String,
    scale: f32,
) -> bool {
    let _ = (
        text, small, large, count, id, verbose, offset, note, limit, code, scale,
    );
    flag
}

/// Books a room (strict verbatim schema).
#[tool_runtime::tool(
    create,
    strict,
    parameters = r#"{"type":"object","properties":{"room":{"type":"string"},"size":{"anyOf":[{"type":"integer"},{"type":"null"}]}},"required":["room","size"],"additionalProperties":false}"#
)]
fn book_room(room: String, size: Option<i64>) {
    let _ = (room, size);
}

/// Strict, but `not` is outside what the strict view accepts: no constant for the OpenAI views.
#[tool_runtime::tool(
    modify,
    strict,
    parameters = r#"{"type":"object","properties":{"code":{"type":"string","not":{"const":"x"}}},"required":["code"],"additionalProperties":false}"#
)]
fn set_code(code: String) -> bool {
    code.is_empty()
}

/// A struct-form tool: its output type is only known through `Run`, so the views that carry the
/// output schema (Gemini, MCP) are built at run time.
#[tool_runtime::tool(
    read_only,
    parameters = r#"{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}"#
)]
struct ReadRecord {
    id: u64,
}

impl tool_runtime::tool::Run for ReadRecord {
    type Output = Value;
    type Error = ToolError;

    async fn run(self, _cx: &tool_runtime::CallContext) -> Result<Value, ToolError> {
        Ok(json!({"id": self.id}))
    }
}

/// A vector argument: its schema is written at compile time, so its declarations are too.
#[tool_runtime::tool(read_only)]
fn count_items(items: Vec<String>) -> usize {
    items.len()
}

/// A map argument: its schema is only known at run time (schemars derives it).
#[tool_runtime::tool(read_only)]
fn count_keys(items: std::collections::BTreeMap<String, u32>) -> usize {
    items.len()
}

const ALL_VIEWS: [&str; 6] = [
    "openai",
    "openai-responses",
    "anthropic",
    "ollama",
    "gemini",
    "mcp",
];

/// Every constant of `def` is byte-identical to what the codec builds at run time, is the one the
/// cache uses, and exactly `views` have one.
fn assert_prebuilt(def: &ToolDefinition, views: &[&str]) {
    let table = def
        .prebuilt
        .unwrap_or_else(|| panic!("{}: no table", def.name));
    let listed: Vec<&str> = table.views.iter().map(|(v, _)| *v).collect();
    assert_eq!(listed, views, "{}", def.name);
    for p in Provider::ALL {
        let codec = p.codec();
        let used = tool_providers::codec::cache::prebuilt(codec.as_ref(), def);
        if views.contains(&p.as_str()) {
            let built = codec.declare(def).unwrap().to_string();
            assert_eq!(used, Some(built.as_str()), "{}: {p}", def.name);
        } else {
            assert_eq!(used, None, "{}: {p}", def.name);
        }
    }
}

#[test]
fn compile_time_declarations_equal_the_runtime_ones_byte_for_byte() {
    use tool_runtime::Tool;
    assert_prebuilt(fetch_page::definition(), &ALL_VIEWS);
    assert_prebuilt(convert_amount::definition(), &ALL_VIEWS);
    assert_prebuilt(every_primitive::definition(), &ALL_VIEWS);
    assert_prebuilt(book_room::definition(), &ALL_VIEWS);
    assert_prebuilt(
        ReadRecord::definition(),
        &["openai", "openai-responses", "anthropic", "ollama"],
    );
    assert_prebuilt(
        set_code::definition(),
        &["anthropic", "ollama", "gemini", "mcp"],
    );
    assert_prebuilt(count_items::definition(), &ALL_VIEWS);
    assert!(count_keys::definition().prebuilt.is_none());

    // the strict constant is the strict view; the refused one is still refused at run time
    let book = Provider::OpenAiChat
        .codec()
        .declare(book_room::definition())
        .unwrap();
    assert_eq!(book["function"]["strict"], true);
    let refused = Provider::OpenAiChat
        .codec()
        .declare(set_code::definition())
        .unwrap_err();
    assert!(
        matches!(&refused, CodecError::Schema { pointer, .. } if pointer == "/properties/code/not"),
        "{refused}"
    );
    // the Ollama constant has the `$ref` inlined, MCP's carries the safety annotations
    let fetch = fetch_page::definition().prebuilt.unwrap();
    let ollama: Value = serde_json::from_str(fetch.views[3].1).unwrap();
    assert_eq!(
        ollama["function"]["parameters"]["properties"]["retry"]["properties"]["times"]["minimum"],
        0
    );
    let mcp: Value =
        serde_json::from_str(convert_amount::definition().prebuilt.unwrap().views[5].1).unwrap();
    assert_eq!(mcp["annotations"]["openWorldHint"], true);
    assert_eq!(mcp["annotations"]["idempotentHint"], true);
}

#[test]
fn prebuilt_tools_are_encoded_without_building_anything() {
    use tool_runtime::Tool;
    let tools = [
        fetch_page::definition(),
        convert_amount::definition(),
        book_room::definition(),
    ];
    let cache = DeclarationCache::new();
    for p in Provider::ALL {
        let codec = p.codec();
        let text = cache
            .encode_tools_text(codec.as_ref(), &tools, &ToolConfig::default())
            .unwrap();
        let fresh = codec.encode_tools(&tools, &ToolConfig::default()).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), fresh, "{p}");
    }
    assert!(cache.is_empty(), "every declaration came from a constant");
    // settings other than the defaults have no constant: their declarations are built and cached
    let prefer = OpenAiChat::with_strict(StrictPolicy::Prefer);
    assert_eq!(
        tool_providers::codec::cache::prebuilt(&prefer, tools[0]),
        None
    );
    cache
        .encode_tools_text(&prefer, &tools, &ToolConfig::default())
        .unwrap();
    assert_eq!(cache.len(), 3);
}

#[test]
fn a_changed_clone_does_not_use_stale_constants() {
    use tool_runtime::Tool;
    let chat = Provider::OpenAiChat.codec();
    let gemini = Provider::Gemini.codec();
    let mcp = Provider::Mcp.codec();
    let prebuilt = |c: &dyn Codec, d: &ToolDefinition| tool_providers::codec::cache::prebuilt(c, d);

    let mut described = fetch_page::definition().clone();
    described.description = "Fetch it".into();
    assert_eq!(prebuilt(chat.as_ref(), &described), None);
    let cache = DeclarationCache::new();
    assert!(
        cache
            .declaration(chat.as_ref(), &described)
            .unwrap()
            .contains("Fetch it")
    );

    let mut output = convert_amount::definition().clone();
    output.output_schema = Some(json!({"type": "integer"}));
    assert!(
        prebuilt(chat.as_ref(), &output).is_some(),
        "no output in it"
    );
    assert_eq!(prebuilt(gemini.as_ref(), &output), None);
    assert!(
        cache
            .declaration(gemini.as_ref(), &output)
            .unwrap()
            .contains(r#""responseJsonSchema":{"type":"integer"}"#)
    );

    let mut category = convert_amount::definition().clone();
    category.safety = tool_runtime::definition::Safety::ReadOnly;
    assert_eq!(prebuilt(mcp.as_ref(), &category), None);
    let mut schema = convert_amount::definition().clone();
    schema.parameters =
        serde_json::value::RawValue::from_string(r#"{"type":"object"}"#.into()).unwrap();
    assert_eq!(prebuilt(chat.as_ref(), &schema), None);
    let mut strict = convert_amount::definition().clone();
    strict.strict = Some(true);
    assert_eq!(prebuilt(chat.as_ref(), &strict), None);
}

#[test]
fn properties_named_like_keywords_survive_inlining() {
    // Ollama and the Gemini subset inline `$ref`s; a property called `definitions` or `$defs`
    // is a property, not a definitions table
    let def = ToolDefinition::new(
        "glossary",
        "Define terms",
        &json!({"type": "object",
            "properties": {
                "definitions": {"type": "array", "items": {"$ref": "#/$defs/Term"}},
                "$defs": {"type": "string", "description": "a property, oddly named"}
            },
            "required": ["definitions"],
            "$defs": {"Term": {"type": "object", "properties": {"word": {"type": "string"}},
                "required": ["word"]}}}),
    );
    let ollama = Provider::Ollama.codec().declare(&def).unwrap();
    let params = &ollama["function"]["parameters"];
    assert_eq!(
        params["properties"]["definitions"]["items"]["properties"]["word"],
        json!({"type": "string"})
    );
    assert_eq!(params["properties"]["$defs"]["type"], "string");
    assert!(params.get("$defs").is_none(), "the real table is gone");

    let subset = tool_providers::codec::gemini::Gemini {
        schema_field: tool_providers::codec::gemini::GeminiSchemaField::Parameters,
    };
    let gemini = subset.declare(&def).unwrap();
    let props = &gemini["parameters"]["properties"];
    assert_eq!(
        props["definitions"]["items"]["properties"]["word"]["type"],
        "STRING"
    );
    assert_eq!(props["$defs"]["type"], "STRING");
}

#[test]
fn strict_refuses_an_open_object_without_properties() {
    let mut def = ToolDefinition::new(
        "tag",
        "Tag a thing",
        &json!({"type": "object", "properties": {
            "id": {"type": "string"},
            "meta": {"type": "object", "description": "free-form"}},
            "required": ["id", "meta"], "additionalProperties": false}),
    );
    def.strict = Some(true);
    for p in [Provider::OpenAiChat, Provider::OpenAiResponses] {
        let err = p.codec().declare(&def).unwrap_err();
        assert!(
            matches!(&err, CodecError::Schema { pointer, reason, .. }
                if pointer == "/properties/meta" && reason.contains("open")),
            "{p}: {err}"
        );
    }
    // Prefer sends it non-strict instead of narrowing `meta` to `{}`
    def.strict = None;
    let prefer = OpenAiChat::with_strict(StrictPolicy::Prefer)
        .declare(&def)
        .unwrap();
    assert_eq!(prefer["function"]["strict"], false);
    assert_eq!(
        prefer["function"]["parameters"]["properties"]["meta"],
        json!({"type": "object", "description": "free-form"})
    );
}

/// A definition built without a `ToolSet` is not checked at registration: a schema nested past
/// the limit (here past serde_json's own recursion limit) is refused by every codec with an error
/// naming the tool, and one at the limit is declared by every codec, cached or not.
#[test]
fn schemas_nested_past_the_limit_are_refused_by_every_codec_and_never_panic() {
    use tool_runtime::definition::MAX_SCHEMA_DEPTH;
    let nested = |levels: usize| -> ToolDefinition {
        let text = format!(
            r#"{{"type": "function", "name": "deep", "description": "A deep schema.",
                 "parameters": {{"type": "object", "x-deep": {}{}}}}}"#,
            "[".repeat(levels - 1),
            "]".repeat(levels - 1)
        );
        serde_json::from_str(&text).unwrap()
    };
    let cache = DeclarationCache::new();
    for provider in Provider::ALL {
        for levels in [MAX_SCHEMA_DEPTH + 1, 124, 125, 1_000] {
            let def = nested(levels);
            let err = provider
                .codec()
                .encode_tools(&[&def], &ToolConfig::default())
                .unwrap_err();
            assert!(
                matches!(&err, CodecError::Schema { tool, .. } if tool == "deep"),
                "{provider:?} {levels}: {err:?}"
            );
            assert!(
                cache
                    .encode_tools(provider.codec().as_ref(), &[&def], &ToolConfig::default())
                    .is_err()
            );
        }
        let def = nested(MAX_SCHEMA_DEPTH);
        let fresh = provider
            .codec()
            .encode_tools(&[&def], &ToolConfig::default())
            .unwrap_or_else(|e| panic!("{provider:?}: {e}"));
        let cached = cache
            .encode_tools(provider.codec().as_ref(), &[&def], &ToolConfig::default())
            .unwrap();
        assert_eq!(
            fresh,
            serde_json::from_str::<Value>(cached.get()).unwrap(),
            "{provider:?}"
        );
    }
}
