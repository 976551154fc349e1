//! The `tools` command line, in process: output captured in buffers, exit codes as a contract.

use crate::common;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tool_runtime::cli::{Cli, CliCommand, Exit, Output, SchemaView};
use tool_runtime::{ToolSet, definition::ToolDefinition};

use common::{CreateNote, INVALID, ListNotebooks, SearchNotes, VALID};

fn cli() -> Cli {
    Cli::new(
        ToolSet::new()
            .with::<SearchNotes>()
            .unwrap()
            .with::<ListNotebooks>()
            .unwrap()
            .with::<CreateNote>()
            .unwrap(),
    )
}

struct Run {
    exit: Exit,
    out: String,
    err: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.out).unwrap_or_else(|e| panic!("{e}: {:?}", self.out))
    }
}

fn run(cli: &Cli, args: &[&str]) -> Run {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut output = Output {
        out: &mut out,
        err: &mut err,
        json: false,
    };
    let argv = std::iter::once("tools").chain(args.iter().copied());
    let exit = futures::executor::block_on(cli.run(argv, &mut output));
    Run {
        exit,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
    }
}

#[test]
fn list_prints_every_tool_and_json_describes_them() {
    let r = run(&cli(), &["list"]);
    assert_eq!(r.exit, Exit::Success);
    assert!(
        r.out.contains("search_notes") && r.out.contains("read_only"),
        "{}",
        r.out
    );
    assert!(r.out.contains("create_note") && r.out.contains("create"));
    let r = run(&cli(), &["list", "--json"]);
    let tools = r.json();
    assert_eq!(tools.as_array().unwrap().len(), 3);
    assert_eq!(tools[0]["name"], "search_notes");
    assert_eq!(tools[0]["fast_path"], true);
    assert_eq!(tools[0]["schema"], "derived");
    // --json is global: before the subcommand too
    assert_eq!(run(&cli(), &["--json", "list"]).json(), tools);
}

#[test]
fn schema_prints_canonical_definitions() {
    let r = run(&cli(), &["schema"]);
    assert_eq!(r.exit, Exit::Success);
    let defs = r.json();
    assert_eq!(defs.as_array().unwrap().len(), 3);
    assert_eq!(defs[0]["type"], "function");
    assert_eq!(defs[0]["parameters"]["properties"]["limit"]["maximum"], 50);
    let r = run(&cli(), &["schema", "create_note"]);
    assert_eq!(r.json()[0]["name"], "create_note");
    let r = run(&cli(), &["schema", "creat_note"]);
    assert_eq!(r.exit, Exit::Refused);
    assert!(
        r.err.contains("UNKNOWN_TOOL") && r.err.contains("create_note"),
        "{}",
        r.err
    );
}

struct FakeView;

impl SchemaView for FakeView {
    fn providers(&self) -> Vec<&'static str> {
        vec!["acme", "acme-beta"]
    }
    fn render(&self, provider: &str, tools: &[&ToolDefinition]) -> Result<Value, String> {
        Ok(
            json!({"provider": provider, "names": tools.iter().map(|t| &t.name).collect::<Vec<_>>()}),
        )
    }
}

#[test]
fn schema_provider_delegates_to_the_registered_view_and_unknown_ones_are_usage_errors() {
    let cli = cli().with_schema_view(FakeView);
    let r = run(
        &cli,
        &["schema", "--provider", "acme-beta", "list_notebooks"],
    );
    assert_eq!(r.exit, Exit::Success);
    assert_eq!(
        r.json(),
        json!({"provider": "acme-beta", "names": ["list_notebooks"]})
    );
    let r = run(&cli, &["schema", "--provider", "nope"]);
    assert_eq!(r.exit, Exit::Usage);
    assert!(r.err.contains("acme, acme-beta"), "{}", r.err);
    let r = run(&self::cli(), &["schema", "--provider", "openai"]);
    assert_eq!(r.exit, Exit::Usage);
    assert!(r.err.contains("none is registered"), "{}", r.err);
}

#[test]
fn check_prints_typed_arguments_or_refuses_with_exit_1() {
    let r = run(&cli(), &["check", "search_notes", "--args", VALID]);
    assert_eq!(r.exit, Exit::Success, "{}", r.err);
    assert_eq!(r.json(), serde_json::from_str::<Value>(VALID).unwrap());

    let r = run(&cli(), &["check", "search_notes", "--args", INVALID]);
    assert_eq!(r.exit, Exit::Refused);
    assert!(r.out.is_empty());
    assert!(
        r.err.contains("INVALID_ARGUMENTS") && r.err.contains("/limit"),
        "{}",
        r.err
    );

    let r = run(
        &cli(),
        &["check", "search_notes", "--json", "--args", INVALID],
    );
    assert_eq!(r.exit, Exit::Refused);
    let err = r.json();
    assert_eq!(err["code"], "INVALID_ARGUMENTS");
    assert_eq!(err["violations"].as_array().unwrap().len(), 3);

    let r = run(&cli(), &["check", "serch_notes", "--json", "--args", "{}"]);
    assert_eq!(r.exit, Exit::Refused);
    assert_eq!(r.json()["code"], "UNKNOWN_TOOL");

    let r = run(&cli(), &["check", "search_notes", "--args", "{not json"]);
    assert_eq!(r.exit, Exit::Refused);
    assert!(r.err.contains("INVALID_JSON"));
}

#[test]
fn check_reads_arguments_from_a_file_or_stdin_and_notes_repairs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("args.json");
    std::fs::write(&path, format!("```json\n{VALID}\n```")).unwrap();
    let arg = format!("@{}", path.display());
    let r = run(&cli(), &["check", "search_notes", "--args", &arg]);
    assert_eq!(r.exit, Exit::Success, "{}", r.err);
    assert!(r.err.contains("code_fence"), "{}", r.err);

    let r = run(
        &cli(),
        &["check", "search_notes", "--args", "@/no/such/file.json"],
    );
    assert_eq!(r.exit, Exit::Usage);

    let cli = cli().with_stdin(std::io::Cursor::new(VALID.as_bytes().to_vec()));
    let r = run(&cli, &["check", "search_notes", "--args", "-"]);
    assert_eq!(r.exit, Exit::Success, "{}", r.err);
    assert_eq!(r.json()["limit"], 10);

    // no --args: the empty arguments of a tool without parameters
    let r = run(&self::cli(), &["check", "list_notebooks"]);
    assert_eq!((r.exit, r.json()), (Exit::Success, json!({})));
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    assert_eq!(run(&cli(), &["frobnicate"]).exit, Exit::Usage);
    assert_eq!(run(&cli(), &["check"]).exit, Exit::Usage);
    assert_eq!(run(&cli(), &["list", "--bogus"]).exit, Exit::Usage);
    assert_eq!(run(&cli(), &[]).exit, Exit::Usage);
    let r = run(&cli(), &["--help"]);
    assert_eq!(r.exit, Exit::Success);
    assert!(
        r.out.contains("check") && r.out.contains("--catalog"),
        "{}",
        r.out
    );
}

#[test]
fn catalog_files_add_dynamic_tools_and_bad_catalogs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("tools.json");
    std::fs::write(
        &good,
        r#"[{"type": "function", "name": "get_weather", "description": "Weather.",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}, "safety": "external"}]"#,
    )
    .unwrap();
    let good = good.to_str().unwrap();
    let r = run(&cli(), &["--catalog", good, "list"]);
    assert!(
        r.out.contains("get_weather") && r.out.contains("[declared only]"),
        "{}",
        r.out
    );
    let r = run(
        &cli(),
        &[
            "check",
            "get_weather",
            "--catalog",
            good,
            "--args",
            r#"{"city":"Oslo"}"#,
        ],
    );
    assert_eq!(r.exit, Exit::Success, "{}", r.err);
    let r = run(
        &cli(),
        &["check", "get_weather", "--catalog", good, "--args", "{}"],
    );
    assert_eq!(r.exit, Exit::Refused);

    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"name": "x y", "parameters": {"type": "object"}}]"#,
    )
    .unwrap();
    let r = run(
        &cli(),
        &["--json", "--catalog", bad.to_str().unwrap(), "list"],
    );
    assert_eq!(r.exit, Exit::Refused);
    assert_eq!(r.json()["code"], "INVALID_DEFINITION");
    let r = run(&cli(), &["--catalog", "/no/such/catalog.json", "list"]);
    assert_eq!(r.exit, Exit::Usage);
    // a catalog tool named like a registered one is refused
    let dup = dir.path().join("dup.json");
    std::fs::write(
        &dup,
        r#"[{"name": "search_notes", "parameters": {"type": "object"}}]"#,
    )
    .unwrap();
    assert_eq!(
        run(&cli(), &["--catalog", dup.to_str().unwrap(), "list"]).exit,
        Exit::Refused
    );
}

/// A subcommand another layer adds.
struct Count;

impl CliCommand for Count {
    fn command(&self) -> clap::Command {
        clap::Command::new("count").about("Count the tools")
    }
    fn run<'a>(
        &'a self,
        toolset: &'a ToolSet,
        _matches: &'a clap::ArgMatches,
        output: &'a mut Output<'_>,
    ) -> BoxFuture<'a, Exit> {
        async move {
            let _ = writeln!(output.out, "{} json={}", toolset.len(), output.json);
            Exit::Success
        }
        .boxed()
    }
}

#[test]
fn added_commands_run_with_the_catalog_tools_and_the_json_flag() {
    let cli = cli().with(Count);
    assert_eq!(run(&cli, &["count"]).out, "3 json=false\n");
    assert_eq!(run(&cli, &["count", "--json"]).out, "3 json=true\n");
}

#[test]
fn the_group_nests_inside_an_application_command_line() {
    let cli = cli().with(Count);
    let app = clap::Command::new("notes-app")
        .subcommand(clap::Command::new("serve"))
        .subcommand(cli.command());
    let matches = app
        .try_get_matches_from([
            "notes-app",
            "tools",
            "check",
            "list_notebooks",
            "--args",
            "{}",
        ])
        .unwrap();
    let (name, sub) = matches.subcommand().unwrap();
    assert_eq!(name, "tools");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut output = Output {
        out: &mut out,
        err: &mut err,
        json: false,
    };
    let exit = futures::executor::block_on(cli.run_matches(sub, &mut output));
    assert_eq!(exit, Exit::Success);
    assert_eq!(String::from_utf8(out).unwrap().trim(), "{}");
}
