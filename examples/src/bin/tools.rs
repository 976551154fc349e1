//! `tools`: the command line every app built on a `ToolSet` gets, on a small demo set.
//!
//! ```text
//! cargo run -p examples --bin tools -- list
//! cargo run -p examples --bin tools -- schema --provider openai
//! cargo run -p examples --bin tools -- check search_notes --args '{"query": "rust", "limit": 5}'
//! cargo run -p examples --bin tools -- --catalog my_tools.json check get_weather --args @args.json
//! ```
//!
//! Exit codes: 0 success, 1 the input was refused (add `--json` for the error as JSON), 2 usage.

use std::process::ExitCode;
use std::sync::{Arc, LazyLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_runtime::cli::Cli;
use tool_runtime::{
    CallContext, DynHandler, Safety, SchemaOrigin, Tool, ToolDefinition, ToolError, ToolSet,
};

/// Arguments of `search_notes`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct SearchArgs {
    /// What to look for.
    #[schemars(length(min = 1, max = 200))]
    query: String,
    /// How many notes to return.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 50))]
    limit: u32,
    /// Only notes with all of these tags.
    #[serde(default)]
    tags: Vec<String>,
}

fn default_limit() -> u32 {
    10
}

/// Searches the notes. (Written out by hand here; `#[tool]` generates the same.)
struct SearchNotes;

impl Tool for SearchNotes {
    type Args = SearchArgs;
    type Output = Vec<String>;

    fn definition() -> &'static ToolDefinition {
        static DEF: LazyLock<ToolDefinition> = LazyLock::new(|| {
            let mut d = ToolDefinition::new(
                "search_notes",
                "Search the notes by text and tags.",
                &tool_runtime::schema::derive::<SearchArgs>(),
            );
            d.schema_origin = SchemaOrigin::Derived;
            d.safety = Safety::ReadOnly;
            d.intent = Some("Search your notes for {query}".into());
            d
        });
        &DEF
    }

    async fn call(args: SearchArgs, _cx: &CallContext) -> Result<Vec<String>, ToolError> {
        Ok(vec![format!("a note about {}", args.query)])
    }
}

/// The demo tool set: one typed tool and one defined at run time.
fn demo() -> ToolSet {
    let mut set = ToolSet::new().with::<SearchNotes>().expect("a valid tool");
    let mut weather = ToolDefinition::new(
        "get_weather",
        "Current weather for a city.",
        &json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city"],
            "additionalProperties": false
        }),
    );
    weather.safety = Safety::External;
    let handler: DynHandler = Arc::new(|args: Value, _cx| {
        Box::pin(async move { Ok(json!({"city": args["city"], "temperature": 21})) })
    });
    set.register_dynamic(weather, Some(handler))
        .expect("a valid definition");
    set
}

fn main() -> ExitCode {
    Cli::new(demo())
        .with_schema_view(tool_providers::cli::ProviderSchemas)
        .run_from_env()
        .into()
}
