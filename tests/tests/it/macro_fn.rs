//! The function form of `#[tool]`: the definition it produces, the function staying callable,
//! and hydration + running through a `ToolSet`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::{
    CallContext, ErrorCode, State, Tool, ToolCall, ToolError, ToolSet,
    definition::{Safety, SchemaOrigin},
    tool,
    tool::CallId,
    toolset,
    toolset::RegistrationError,
};

#[derive(Clone, Debug, Default)]
struct Db {
    notes: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema, PartialEq)]
struct Note {
    title: String,
}

#[derive(Debug)]
struct MyError(String);

impl From<MyError> for ToolError {
    fn from(e: MyError) -> Self {
        ToolError::new(ErrorCode::EXECUTION_FAILED, e.0)
    }
}

/// Search your notes.
///
/// Returns the matching notes, best first.
#[tool(read_only, idempotent, intent = "Search your notes for {query}", tags = ["notes", "search"], timeout = "30s")]
async fn search_notes(
    /// The search text
    query: String,
    /// How many notes to return
    #[arg(default = 10, min = 1, max = 50)]
    limit: u32,
    State(db): State<Db>,
) -> Result<Vec<Note>, MyError> {
    if query.is_empty() {
        return Err(MyError("empty query".into()));
    }
    Ok(db
        .notes
        .iter()
        .filter(|n| n.contains(&query))
        .take(limit as usize)
        .map(|n| Note { title: n.clone() })
        .collect())
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
struct Place {
    /// City name
    city: String,
    country: Option<String>,
}

/// Weather for a place.
#[tool(external, tags("weather"), sensitive = ["api_key"])]
#[allow(clippy::too_many_arguments)]
fn get_weather(
    /// Where
    place: Place,
    #[serde(rename = "temperatureUnit")] unit: Option<Unit>,
    days: Vec<u8>,
    extra: BTreeMap<String, String>,
    #[arg(sensitive)] api_key: String,
    #[arg(default)] verbose: bool,
    call: CallId,
    cx: &CallContext,
) -> String {
    format!(
        "{} {:?} {:?} {} {} {} {} {}",
        place.city,
        unit,
        days,
        extra.len(),
        api_key.len(),
        verbose,
        call.0,
        cx.call_id
    )
}

fn params(def: &tool_runtime::definition::ToolDefinition) -> Value {
    def.parameters_value()
}

#[test]
fn description_and_options_come_from_docs_and_the_attribute() {
    let def = search_notes::definition();
    assert_eq!(def.name, "search_notes");
    assert_eq!(
        def.description,
        "Search your notes.\n\nReturns the matching notes, best first."
    );
    assert_eq!(def.safety, Safety::ReadOnly);
    assert!(def.idempotent && !def.reversible);
    assert_eq!(def.intent.as_deref(), Some("Search your notes for {query}"));
    assert_eq!(def.tags, ["notes", "search"]);
    assert_eq!(def.timeout, Some(std::time::Duration::from_secs(30)));
    assert_eq!(def.schema_origin, SchemaOrigin::Derived);
    assert_eq!(<search_notes as Tool>::NAME, "search_notes");
    // Primitive arguments only: the schema is also known at compile time.
    let constant: Value =
        serde_json::from_str(<search_notes as Tool>::SCHEMA_JSON.unwrap()).unwrap();
    assert_eq!(constant, def.parameters_value());
    assert!(<get_weather as Tool>::SCHEMA_JSON.is_none());
}

#[test]
fn derived_schema_has_param_docs_defaults_bounds_and_no_injected_params() {
    let p = params(search_notes::definition());
    assert_eq!(
        p,
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The search text"},
                "limit": {
                    "type": "integer", "format": "uint32",
                    "description": "How many notes to return",
                    "default": 10, "minimum": 1, "maximum": 50
                }
            },
            "required": ["query"]
        })
    );
    let out = search_notes::definition().output_schema.clone().unwrap();
    assert_eq!(out["type"], "array");
    assert_eq!(out["items"]["$ref"], "#/$defs/Note");
}

#[test]
fn renames_enums_options_nested_defs_vecs_and_maps_survive() {
    let def = get_weather::definition();
    let p = params(def);
    assert!(p.get("title").is_none() && p.get("$schema").is_none());
    let props = p["properties"].as_object().unwrap();
    let keys: Vec<&str> = props.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "place",
            "temperatureUnit",
            "days",
            "extra",
            "api_key",
            "verbose"
        ]
    );
    assert_eq!(p["required"], json!(["place", "days", "extra", "api_key"]));
    assert_eq!(props["place"]["description"], "Where");
    assert_eq!(
        p["$defs"]["Place"]["properties"]["city"]["description"],
        "City name"
    );
    assert_eq!(p["$defs"]["Unit"]["enum"], json!(["celsius", "fahrenheit"]));
    assert_eq!(props["days"]["type"], "array");
    assert_eq!(props["extra"]["additionalProperties"]["type"], "string");
    assert_eq!(props["verbose"]["default"], false);
    assert_eq!(def.sensitive, ["api_key"]);
    assert_eq!(def.safety, Safety::External);
    assert_eq!(def.tags, ["weather"]);
    assert!(def.output_schema.is_some());
}

#[tokio::test]
async fn the_function_stays_callable_as_written() {
    let db = Db {
        notes: vec!["rust macros".into(), "cooking".into()],
    };
    let found = search_notes("rust".into(), 5, State(db)).await.unwrap();
    assert_eq!(
        found,
        [Note {
            title: "rust macros".into()
        }]
    );
    let text = get_weather(
        Place {
            city: "Oslo".into(),
            country: None,
        },
        None,
        vec![1],
        BTreeMap::new(),
        "k".into(),
        false,
        CallId("c".into()),
        &CallContext::new("c"),
    );
    assert!(text.starts_with("Oslo None [1]"));
}

#[tokio::test]
async fn hydrates_and_runs_through_a_toolset_with_state_and_defaults() {
    let set = ToolSet::new()
        .with::<search_notes>()
        .unwrap()
        .with_state(Db {
            notes: vec!["rust macros".into(), "rust traits".into(), "tea".into()],
        });
    set.check_state().unwrap();
    let call = ToolCall::new("c1", "search_notes", r#"{"query": "rust"}"#);
    let instance = set.hydrate(&call).unwrap();
    let args = instance.args::<<search_notes as Tool>::Args>().unwrap();
    assert_eq!(args.limit, 10, "the #[arg(default)] applied");
    let cx = CallContext {
        state: set.state().clone(),
        ..CallContext::new("c1")
    };
    let out = instance.run(cx.clone()).await.unwrap();
    assert_eq!(
        out,
        json!([{"title": "rust macros"}, {"title": "rust traits"}])
    );

    // The body's own error type reaches the caller as a ToolError.
    let empty = set
        .hydrate(&ToolCall::new("c2", "search_notes", r#"{"query": ""}"#))
        .unwrap();
    let err = empty.run(cx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::EXECUTION_FAILED);
}

#[test]
fn bounds_from_arg_are_enforced_by_validation_before_the_body() {
    let set = ToolSet::new().with::<search_notes>().unwrap();
    let err = set
        .hydrate(&ToolCall::new(
            "c",
            "search_notes",
            r#"{"query": "x", "limit": 99}"#,
        ))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_ARGUMENTS);
    assert_eq!(err.violations[0].pointer, "/limit");
}

#[test]
fn missing_state_is_found_at_start_up() {
    let set = ToolSet::new().with::<search_notes>().unwrap();
    assert_eq!(
        set.check_state().unwrap_err(),
        RegistrationError::MissingState {
            tool: "search_notes".into(),
            type_name: std::any::type_name::<Db>(),
        }
    );
}

#[tokio::test]
async fn injected_call_id_and_context_reach_a_sync_tool() {
    let set = toolset![get_weather].unwrap();
    let call = ToolCall::new(
        "call-7",
        "get_weather",
        json!({"place": {"city": "Oslo"}, "temperatureUnit": "celsius", "days": [1, 2], "extra": {}, "api_key": "s"}),
    );
    let out = set
        .hydrate(&call)
        .unwrap()
        .run(CallContext::new("call-7"))
        .await
        .unwrap();
    assert_eq!(
        out,
        json!("Oslo Some(Celsius) [1, 2] 0 1 false call-7 call-7")
    );
}

/// Strict and derived: Option fields become required-and-nullable, objects are closed.
#[tool(read_only, strict)]
fn strict_lookup(
    /// Key
    key: String,
    /// Optional filter
    filter: Option<String>,
) -> u32 {
    key.len() as u32 + filter.map_or(0, |f| f.len() as u32)
}

/// A strict tool whose derived schema contains a nested open map (only found at run time).
#[tool(read_only, strict)]
fn strict_nested_map(
    /// Where
    place: Nested,
) -> bool {
    place.m.is_empty()
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Nested {
    m: BTreeMap<String, u8>,
}

#[test]
fn strict_derived_schemas_are_made_strict_or_refused_at_registration() {
    let p = params(strict_lookup::definition());
    assert_eq!(p["additionalProperties"], false);
    assert_eq!(p["required"], json!(["key", "filter"]));
    assert!(toolset![strict_lookup].is_ok());

    match toolset![strict_lookup, strict_nested_map] {
        Err(RegistrationError::InvalidSchema { name, error }) => {
            assert_eq!(name, "strict_nested_map");
            assert!(error.to_string().contains("open object"), "{error}");
        }
        other => panic!("expected a strict-mode refusal, got {other:?}"),
    }
}

/// An application-defined extractor, injected with `#[inject]`.
#[derive(Debug)]
struct Caller(String);

impl tool_runtime::tool::FromCallContext for Caller {
    fn from_call_context(cx: &CallContext) -> Result<Self, ToolError> {
        cx.session
            .clone()
            .map(Caller)
            .ok_or_else(|| ToolError::new(ErrorCode::MISSING_STATE, "no session"))
    }
}

/// Greets the caller.
#[tool(read_only, examples = [r#"{"greeting": "hi"}"#, r#"{"greeting": 5}"#])]
fn greet(
    /// The greeting
    greeting: String,
    #[inject] caller: Caller,
) -> String {
    format!("{greeting} {}", caller.0)
}

/// Greets politely; its example fits.
#[tool(read_only, examples = [r#"{"greeting": "hello"}"#])]
fn greet_politely(greeting: String, #[inject] caller: Caller) -> String {
    format!("{greeting}, dear {}", caller.0)
}

/// The caller's session as a value that cannot leave its thread (`Rc` is neither `Send` nor
/// `Sync`): a sync body on the blocking pool could not take it, one called in place can.
struct ThreadBound(std::rc::Rc<String>);

impl tool_runtime::tool::FromCallContext for ThreadBound {
    fn from_call_context(cx: &CallContext) -> Result<Self, ToolError> {
        Caller::from_call_context(cx).map(|c| ThreadBound(std::rc::Rc::new(c.0)))
    }
}

/// Greets the caller, called in place.
#[tool(read_only, non_blocking)]
fn greet_in_place(greeting: String, #[inject] caller: ThreadBound, cx: &CallContext) -> String {
    format!("{greeting} {} ({})", caller.0, cx.call_id)
}

#[tokio::test]
async fn a_non_blocking_fn_is_lent_the_context_and_takes_values_that_cannot_move() {
    let set = toolset![greet_in_place].unwrap();
    let call = ToolCall::new("c9", "greet_in_place", r#"{"greeting": "hi"}"#);
    let cx = CallContext {
        session: Some("ada".into()),
        ..CallContext::new("c9")
    };
    let out = set.hydrate(&call).unwrap().run(cx).await.unwrap();
    assert_eq!(out, json!("hi ada (c9)"));
    // the extractor's error reaches the caller as it does for any body
    let err = set
        .hydrate(&call)
        .unwrap()
        .run(CallContext::new("c9"))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::MISSING_STATE);
}

#[tokio::test]
async fn inject_uses_from_call_context_and_its_errors_reach_the_caller() {
    let p = params(greet_politely::definition());
    assert_eq!(
        p["required"],
        json!(["greeting"]),
        "injected params are not arguments"
    );
    let set = toolset![greet_politely].unwrap();
    let call = ToolCall::new("c", "greet_politely", r#"{"greeting": "hello"}"#);
    let cx = CallContext {
        session: Some("ada".into()),
        ..CallContext::new("c")
    };
    let out = set.hydrate(&call).unwrap().run(cx).await.unwrap();
    assert_eq!(out, json!("hello, dear ada"));
    let err = set
        .hydrate(&call)
        .unwrap()
        .run(CallContext::new("c"))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::MISSING_STATE);
}

#[test]
fn examples_of_derived_schemas_are_checked_at_registration() {
    match toolset![greet] {
        Err(RegistrationError::InvalidSchema { name, error }) => {
            assert_eq!(name, "greet");
            assert!(error.to_string().contains("example 2"), "{error}");
        }
        other => panic!("expected the example to be refused, got {other:?}"),
    }
}

/// The doc comment is for the code's readers.
#[tool(read_only, description = "  Count the words of a text.  ")]
fn count_words(
    /// The text.
    text: String,
) -> usize {
    text.split_whitespace().count()
}

#[tool(read_only, description = "Say hello.")]
fn undocumented_hello() -> String {
    "hello".into()
}

#[tokio::test]
async fn description_overrides_the_doc_comment_and_stands_in_for_it() {
    // trimmed, and the doc comment is not used at all
    assert_eq!(
        count_words::definition().description,
        "Count the words of a text."
    );
    // no doc comment is needed when `description` is given
    assert_eq!(undocumented_hello::definition().description, "Say hello.");
    // the override is what every provider sees, and the tool still works
    let set = toolset![count_words, undocumented_hello].unwrap();
    let listed: Vec<&str> = set.definitions().map(|d| d.description.as_ref()).collect();
    assert_eq!(listed, ["Count the words of a text.", "Say hello."]);
    let inst = set
        .hydrate(&ToolCall::new("c", "count_words", r#"{"text": "a b c"}"#))
        .unwrap();
    assert_eq!(inst.run(CallContext::new("c")).await.unwrap(), json!(3));
    // the function stays callable as written
    assert_eq!(count_words("one two".into()), 2);
}
