//! Declarations, every tool-choice form, results, and the declaration cache.

use crate::common;

use common::representative_definitions;
use serde_json::{Value, json};
use tool_providers::codec::openai_chat::{OpenAiChat, StrictPolicy};
use tool_providers::codec::{
    Codec, CodecError, DeclarationCache, Provider, ToolChoice, ToolConfig, ToolOutcome, ToolResult,
};
use tool_runtime::{ErrorCode, ToolCall, ToolError, definition::ToolDefinition};

fn defs() -> Vec<ToolDefinition> {
    representative_definitions()
}

fn refs(defs: &[ToolDefinition]) -> Vec<&ToolDefinition> {
    defs.iter().collect()
}

fn fields(provider: Provider, config: ToolConfig) -> Result<Value, CodecError> {
    let d = defs();
    let mut v = provider.codec().encode_tools(&refs(&d), &config)?;
    v.as_object_mut().unwrap().remove("tools");
    Ok(v)
}

fn names(provider: Provider, config: ToolConfig) -> Vec<String> {
    let d = defs();
    let v = provider.codec().encode_tools(&refs(&d), &config).unwrap();
    let list = match provider {
        Provider::Gemini => v["tools"][0]["functionDeclarations"].clone(),
        _ => v["tools"].clone(),
    };
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn named(n: &str) -> ToolChoice {
    ToolChoice::Named(n.into())
}

fn allowed(required: bool) -> ToolChoice {
    ToolChoice::Allowed {
        tools: vec!["search_notes".into(), "get_time".into()],
        required,
    }
}

#[test]
fn openai_chat_every_choice_form() {
    let p = Provider::OpenAiChat;
    let f = |c| fields(p, ToolConfig::new(c)).unwrap()["tool_choice"].clone();
    assert_eq!(f(ToolChoice::Auto), json!("auto"));
    assert_eq!(f(ToolChoice::None), json!("none"));
    assert_eq!(f(ToolChoice::Required), json!("required"));
    assert_eq!(
        f(named("get_time")),
        json!({"type": "function", "function": {"name": "get_time"}})
    );
    assert_eq!(
        f(allowed(true)),
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": "search_notes"}},
            {"type": "function", "function": {"name": "get_time"}}]}})
    );
    assert_eq!(
        names(p, ToolConfig::new(allowed(false))).len(),
        5,
        "allowed_tools keeps the list (prompt cache)"
    );
    let par = fields(p, ToolConfig::default().parallel(false)).unwrap();
    assert_eq!(par["parallel_tool_calls"], false);
    assert!(
        fields(p, ToolConfig::default())
            .unwrap()
            .get("parallel_tool_calls")
            .is_none()
    );
}

#[test]
fn openai_responses_every_choice_form() {
    let p = Provider::OpenAiResponses;
    let f = |c| fields(p, ToolConfig::new(c)).unwrap()["tool_choice"].clone();
    assert_eq!(f(ToolChoice::Required), json!("required"));
    assert_eq!(
        f(named("get_time")),
        json!({"type": "function", "name": "get_time"})
    );
    assert_eq!(
        f(allowed(false)),
        json!({"type": "allowed_tools", "mode": "auto", "tools": [
            {"type": "function", "name": "search_notes"}, {"type": "function", "name": "get_time"}]})
    );
    assert_eq!(
        fields(p, ToolConfig::new(ToolChoice::None).parallel(true)).unwrap()["parallel_tool_calls"],
        true
    );
}

#[test]
fn anthropic_every_choice_form() {
    let p = Provider::Anthropic;
    let f = |c: ToolConfig| fields(p, c).unwrap()["tool_choice"].clone();
    assert_eq!(
        f(ToolConfig::new(ToolChoice::Auto)),
        json!({"type": "auto"})
    );
    assert_eq!(
        f(ToolConfig::new(ToolChoice::None)),
        json!({"type": "none"})
    );
    assert_eq!(
        f(ToolConfig::new(ToolChoice::Required)),
        json!({"type": "any"})
    );
    assert_eq!(
        f(ToolConfig::new(named("get_time")).parallel(false)),
        json!({"type": "tool", "name": "get_time", "disable_parallel_tool_use": true})
    );
    assert_eq!(
        f(ToolConfig::new(ToolChoice::None).parallel(false)),
        json!({"type": "none"})
    );
    assert_eq!(
        names(p, ToolConfig::new(allowed(true))),
        ["search_notes", "get_time"]
    );
    assert_eq!(f(ToolConfig::new(allowed(true))), json!({"type": "any"}));
}

#[test]
fn gemini_every_choice_form() {
    let p = Provider::Gemini;
    let f =
        |c| fields(p, ToolConfig::new(c)).unwrap()["toolConfig"]["functionCallingConfig"].clone();
    assert_eq!(f(ToolChoice::Auto), json!({"mode": "AUTO"}));
    assert_eq!(f(ToolChoice::None), json!({"mode": "NONE"}));
    assert_eq!(f(ToolChoice::Required), json!({"mode": "ANY"}));
    assert_eq!(
        f(named("get_time")),
        json!({"mode": "ANY", "allowedFunctionNames": ["get_time"]})
    );
    assert_eq!(
        f(allowed(true)),
        json!({"mode": "ANY", "allowedFunctionNames": ["search_notes", "get_time"]})
    );
    assert_eq!(
        names(p, ToolConfig::new(allowed(false))),
        ["search_notes", "get_time"]
    );
    assert!(matches!(
        fields(p, ToolConfig::default().parallel(false)),
        Err(CodecError::Unsupported { .. })
    ));
    // VALIDATED: text or calls, calls held to the schema; optionally limited to some tools,
    // which stay declared (allowedFunctionNames applies in this mode)
    assert_eq!(
        f(ToolChoice::Validated { tools: None }),
        json!({"mode": "VALIDATED"})
    );
    let validated_subset = ToolChoice::Validated {
        tools: Some(vec!["get_time".into()]),
    };
    assert_eq!(
        f(validated_subset.clone()),
        json!({"mode": "VALIDATED", "allowedFunctionNames": ["get_time"]})
    );
    assert_eq!(names(p, ToolConfig::new(validated_subset)).len(), 5);
    let unknown = ToolChoice::Validated {
        tools: Some(vec!["nope".into()]),
    };
    assert_eq!(
        fields(p, ToolConfig::new(unknown)).unwrap_err(),
        CodecError::UnknownChoice("nope".into())
    );
}

#[test]
fn only_gemini_has_a_validated_mode() {
    for p in Provider::ALL {
        if p == Provider::Gemini {
            continue;
        }
        let err = fields(p, ToolConfig::new(ToolChoice::Validated { tools: None })).unwrap_err();
        assert!(
            matches!(&err, CodecError::Unsupported { provider, .. } if *provider == p),
            "{p}: {err}"
        );
    }
}

#[test]
fn ollama_and_mcp_refuse_what_they_cannot_enforce() {
    for p in [Provider::Ollama, Provider::Mcp] {
        assert!(
            fields(p, ToolConfig::default())
                .unwrap()
                .as_object()
                .unwrap()
                .is_empty()
        );
        for c in [ToolChoice::Required, named("get_time"), allowed(true)] {
            let err = fields(p, ToolConfig::new(c.clone())).unwrap_err();
            assert!(matches!(err, CodecError::Unsupported { .. }), "{p} {c:?}");
        }
        assert_eq!(
            names(p, ToolConfig::new(allowed(false))),
            ["search_notes", "get_time"]
        );
    }
    assert!(names(Provider::Ollama, ToolConfig::new(ToolChoice::None)).is_empty());
}

#[test]
fn a_choice_naming_an_undeclared_tool_is_refused() {
    for p in Provider::ALL {
        let err = fields(p, ToolConfig::new(named("nope"))).unwrap_err();
        assert!(
            matches!(&err, CodecError::UnknownChoice(n) if n == "nope")
                || matches!(err, CodecError::Unsupported { .. }),
            "{p}"
        );
    }
}

#[test]
fn strict_declarations_and_refusals() {
    let d = defs();
    let chat = Provider::OpenAiChat.codec();
    let search = chat.declare(&d[0]).unwrap();
    assert_eq!(search["function"]["strict"], true);
    assert_eq!(
        search["function"]["parameters"]["required"],
        json!(["query", "limit", "tags"])
    );
    let fetch = chat.declare(&d[3]).unwrap();
    assert_eq!(
        fetch["function"]["strict"], false,
        "not declared strict: sent as is"
    );
    assert_eq!(
        fetch["function"]["parameters"],
        serde_json::from_str::<Value>(d[3].parameters.get()).unwrap()
    );

    let mut open = d[3].clone();
    open.strict = Some(true);
    let err = chat.declare(&open).unwrap_err();
    assert!(
        matches!(&err, CodecError::Schema { tool, pointer, .. } if tool == "fetch_url" && pointer == "/properties/headers/additionalProperties"),
        "{err}"
    );
    // Prefer: strict where possible, the open map stays non-strict
    let prefer = OpenAiChat::with_strict(StrictPolicy::Prefer);
    assert_eq!(prefer.declare(&d[3]).unwrap()["function"]["strict"], false);
    assert_eq!(prefer.declare(&d[2]).unwrap()["function"]["strict"], true);
    assert_eq!(
        prefer.declare(&open).unwrap_err(),
        err,
        "declared strict: never downgraded"
    );
    // the canonical schema is untouched by any view
    assert_eq!(d[0].parameters.get(), defs()[0].parameters.get());
}

#[test]
fn the_cache_gives_the_same_json_builds_once_and_rebuilds_on_change() {
    let d = defs();
    let cache = DeclarationCache::new();
    for p in Provider::ALL {
        let codec = p.codec();
        let fresh = codec
            .encode_tools(&refs(&d), &ToolConfig::default())
            .unwrap();
        let cached = cache
            .encode_tools(codec.as_ref(), &refs(&d), &ToolConfig::default())
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(cached.get()).unwrap(),
            fresh,
            "{p}"
        );
        let text = cache
            .encode_tools_text(codec.as_ref(), &refs(&d), &ToolConfig::default())
            .unwrap();
        assert_eq!(text, cached.get());
    }
    assert_eq!(cache.len(), 5 * 6);
    let chat = Provider::OpenAiChat.codec();
    let first = cache.declaration(chat.as_ref(), &d[1]).unwrap();
    let again = cache.declaration(chat.as_ref(), &d[1]).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "served from the cache"
    );
    let mut changed = d[1].clone();
    changed.description = "Something else".into();
    let rebuilt = cache.declaration(chat.as_ref(), &changed).unwrap();
    assert!(rebuilt.contains("Something else"));
    assert_eq!(cache.len(), 30, "replaced, not added");
    // another strict policy is another view
    let prefer = OpenAiChat::with_strict(StrictPolicy::Prefer);
    cache.declaration(&prefer, &d[1]).unwrap();
    assert_eq!(cache.len(), 31);
}

fn results() -> Vec<ToolResult> {
    let call = |id: &str, name: &str| ToolCall::new(id, name, json!({}));
    vec![
        ToolResult::new(
            &call("c1", "search_notes"),
            ToolOutcome::Success(json!({"hits": 2})),
        ),
        ToolResult::new(
            &call("c2", "delete_file"),
            ToolOutcome::Error(
                ToolError::new(ErrorCode::NOT_FOUND, "no such file")
                    .recover("list the directory first"),
            ),
        ),
        ToolResult::new(
            &call("c3", "delete_file"),
            ToolOutcome::Denied {
                reason: Some("keep it".into()),
            },
        ),
    ]
}

#[test]
fn results_show_code_and_recover_action_and_denials_are_not_errors() {
    let r = results();
    let chat = Provider::OpenAiChat.codec().encode_results(&r);
    assert_eq!(
        chat[0],
        json!({"role": "tool", "tool_call_id": "c1", "content": "{\"hits\":2}"})
    );
    let err: Value = serde_json::from_str(chat[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(err["error"]["code"], "NOT_FOUND");
    assert_eq!(err["error"]["recover_action"], "list the directory first");

    let anthropic = Provider::Anthropic.codec().encode_results(&r);
    assert_eq!(
        anthropic.len(),
        1,
        "one user message with every tool_result"
    );
    let blocks = anthropic[0]["content"].as_array().unwrap();
    assert_eq!(blocks[1]["is_error"], true);
    assert!(
        blocks[2].get("is_error").is_none(),
        "a denial is not an error"
    );
    assert!(blocks[2]["content"].as_str().unwrap().contains("denied"));

    let mcp = Provider::Mcp.codec().encode_results(&r);
    assert_eq!(mcp[0]["structuredContent"], json!({"hits": 2}));
    assert_eq!(mcp[1]["isError"], true);
    assert_eq!(mcp[2]["isError"], false);
    assert!(mcp[2].get("structuredContent").is_none());

    let gemini = Provider::Gemini.codec().encode_results(&r);
    let parts = gemini[0]["parts"].as_array().unwrap();
    assert_eq!(
        parts[0]["functionResponse"]["response"],
        json!({"output": {"hits": 2}})
    );
    assert_eq!(
        parts[1]["functionResponse"]["response"]["error"]["code"],
        "NOT_FOUND"
    );
    assert_eq!(
        parts[2]["functionResponse"]["response"]["output"]["status"],
        "denied"
    );

    let ollama = Provider::Ollama.codec().encode_results(&r);
    assert_eq!(ollama[0]["tool_name"], "search_notes");
    let responses = Provider::OpenAiResponses.codec().encode_results(&r);
    assert_eq!(responses[2]["type"], "function_call_output");
    assert!(
        responses[2]["output"]
            .as_str()
            .unwrap()
            .contains("\"status\":\"denied\"")
    );
}

#[test]
fn decoded_responses_echo_back_in_each_format() {
    for p in Provider::ALL {
        let codec = p.codec();
        let calls = vec![ToolCall::new("id1", "search_notes", r#"{"query":"x"}"#)];
        let echo = codec.encode_assistant("Looking.", &calls);
        let text = serde_json::to_string(&echo).unwrap();
        assert!(text.contains("search_notes"), "{p}: {text}");
        assert!(text.contains("query"), "{p}: {text}");
    }
}

// Tools whose whole schema `#[tool]` knows at compile time: their default declarations are
// constants on the definition (`PrebuiltDeclarations`).

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
