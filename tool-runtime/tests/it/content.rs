//! Rich results: a `#[tool]` returning `Content` blocks, through the executor and its audit.

use std::sync::Arc;

use serde_json::json;
use tool_runtime::content::{self, CONTENT_KEY, Content};
use tool_runtime::executor::{Executor, ExecutorConfig, MemoryAuditSink, Outcome};
use tool_runtime::store::MemoryStore;
use tool_runtime::{CallContext, Tool, ToolCall, ToolError, ToolSet, tool, tool::Run};

/// A large picture: more than the result limit, as real images are.
#[tool(read_only)]
fn picture() -> Content {
    Content::image(vec![7u8; 30_000], "image/png")
}

/// A picture and its caption, from a struct-form tool.
#[tool(read_only, name = "captioned")]
struct Captioned {
    /// The caption.
    caption: String,
}

impl Run for Captioned {
    type Output = Vec<Content>;
    type Error = ToolError;

    async fn run(self, _cx: &CallContext) -> Result<Vec<Content>, ToolError> {
        Ok(vec![
            Content::text(self.caption),
            Content::image([1u8, 2, 3], "image/jpeg"),
            Content::resource_blob("file:///r.pdf", "application/pdf", [9u8; 12]),
        ])
    }
}

/// An object that looks like the envelope but is a plain result of a plain type.
#[tool(read_only)]
fn lookalike() -> serde_json::Value {
    json!({"$content": "not blocks"})
}

fn executor(sink: Arc<MemoryAuditSink>) -> Executor {
    let set = ToolSet::new()
        .with::<picture>()
        .unwrap()
        .with::<Captioned>()
        .unwrap()
        .with::<lookalike>()
        .unwrap();
    Executor::builder(set)
        .config(ExecutorConfig {
            max_result_chars: 1_000,
            ..ExecutorConfig::default()
        })
        .store(Arc::new(MemoryStore::new()))
        .audit_sink(sink)
        .build()
        .unwrap()
}

#[tokio::test]
async fn rich_results_are_kept_whole_and_audited_by_type_and_size_only() {
    let sink = Arc::new(MemoryAuditSink::new());
    let exec = executor(sink.clone());

    let r = exec
        .call(&ToolCall::new("1", "picture", "{}"), CallContext::new("1"))
        .await;
    let Outcome::Success { value, truncated } = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    // an image is not cut to the result limit: half an image is none
    assert!(!truncated);
    let blocks = content::blocks(value).expect("a rich result");
    assert_eq!(blocks, vec![Content::image(vec![7u8; 30_000], "image/png")]);

    let r = exec
        .call(
            &ToolCall::new("2", "captioned", r#"{"caption":"A chart"}"#),
            CallContext::new("2"),
        )
        .await;
    let blocks = content::blocks(r.value().unwrap()).expect("a rich result");
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[0], Content::text("A chart"));

    let records = sink.records();
    let picture = records[0].result_summary.clone().unwrap();
    assert_eq!(picture, "image image/png, 30000 bytes");
    let captioned = records[1].result_summary.clone().unwrap();
    assert_eq!(
        captioned,
        "text, 7 bytes; image image/jpeg, 3 bytes; resource file:///r.pdf application/pdf, 12 bytes"
    );
    // never the bytes, in any form
    let all = serde_json::to_string(&records).unwrap();
    assert!(
        !all.contains("BwcH"),
        "base64 of the picture in the audit: {all}"
    );
    assert!(
        !all.contains("AQID"),
        "base64 of the jpeg in the audit: {all}"
    );
}

#[tokio::test]
async fn only_the_content_types_make_a_rich_result() {
    let sink = Arc::new(MemoryAuditSink::new());
    let exec = executor(sink.clone());
    let r = exec
        .call(
            &ToolCall::new("1", "lookalike", "{}"),
            CallContext::new("1"),
        )
        .await;
    let value = r.value().unwrap();
    assert_eq!(value, &json!({CONTENT_KEY: "not blocks"}));
    assert!(content::blocks(value).is_none());
    assert_eq!(
        sink.records()[0].result_summary.as_deref(),
        Some(r#"{"$content":"not blocks"}"#)
    );
}

#[test]
fn a_rich_tool_declares_no_output_schema() {
    // MCP's outputSchema describes structured results; content blocks are not one
    assert_eq!(picture::definition().output_schema, None);
    assert_eq!(Captioned::definition().output_schema, None);
}

#[tokio::test]
async fn the_command_line_prints_what_the_blocks_are_not_their_bytes() {
    use tool_runtime::cli::{Cli, Exit, Output};
    use tool_runtime::executor::cli::ExecutorCli;

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.toml");
    std::fs::write(
        &config,
        format!("[store]\npath = {:?}\n", dir.path().join("state.sqlite3")),
    )
    .unwrap();
    let set = ToolSet::new().with::<Captioned>().unwrap();
    let cli = ExecutorCli::new().install(Cli::new(set));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = {
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json: false,
        };
        let args = [
            "tools",
            "call",
            "captioned",
            "--args",
            r#"{"caption":"A chart"}"#,
            "--config",
            config.to_str().unwrap(),
        ];
        cli.run(args, &mut output).await
    };
    let (out, err) = (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    );
    assert_eq!(exit, Exit::Success, "{err}");
    assert_eq!(
        out,
        "A chart\n[image image/jpeg, 3 bytes]\n[resource file:///r.pdf application/pdf, 12 bytes]\n"
    );
}
