//! An application's own rmcp handler composed with the tool server: one MCP server whose tools
//! come from the tool set (through the executor) and whose resources, prompts, completions and
//! logging level come from the application, driven by rmcp's client over an in-process pipe.

#![allow(deprecated)] // `logging/setLevel` is deprecated by rmcp for the 2026-07-28 revision

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CompleteRequestParams, CompleteResult, CompletionInfo,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, PaginatedRequestParams, Prompt,
    PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;
use tool_mcp::server::McpServer;
use tool_runtime::executor::MemoryAuditSink;
use tool_runtime::store::MemoryStore;
use tool_runtime::{Executor, ToolSet, tool};

/// Look a word up in the glossary.
#[tool(read_only)]
fn define(
    /// The word.
    word: String,
) -> String {
    format!("{word}: a word")
}

/// The application's part: a catalogue resource, a prompt with a completable argument, and the
/// logging level; what it saw is kept in a list shared by its clones.
#[derive(Clone, Default)]
struct Library {
    seen: Arc<Mutex<Vec<String>>>,
}

impl Library {
    fn saw(&self, what: impl Into<String>) {
        self.seen.lock().unwrap().push(what.into());
    }
}

impl ServerHandler for Library {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .build();
        // announced by the application, but tool calls are the tool server's and are not tasks
        capabilities.extensions = Some(BTreeMap::from([(
            rmcp::model::TASKS_EXTENSION_ID.to_owned(),
            serde_json::Map::new(),
        )]));
        ServerConfig::new(capabilities).with_instructions("Read the catalogue first.")
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // a tool of the application's own would bypass the executor: it is never listed
        let rogue = serde_json::from_value::<Tool>(
            json!({"name": "rogue", "inputSchema": {"type": "object"}}),
        )
        .unwrap();
        Ok(ListToolsResult::with_all_items(vec![rogue]))
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("library://catalogue", "catalogue").with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "library://catalogue" {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        Ok(
            ReadResourceResult::new(vec![ResourceContents::text("llamas, alpacas", request.uri)])
                .into(),
        )
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let topic = PromptArgument::new("topic").with_required(true);
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "summarise",
            Some("Summarise a topic"),
            Some(vec![topic]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let topic = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("topic"))
            .and_then(|t| t.as_str())
            .ok_or_else(|| ErrorData::invalid_params("the prompt needs a topic", None))?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Summarise what the library holds on {topic}."),
        )])
        .into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let values = ["llamas", "alpacas"]
            .into_iter()
            .filter(|v| v.starts_with(&request.argument.value))
            .map(String::from)
            .collect();
        Ok(CompleteResult::new(CompletionInfo::new(values).unwrap()))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.saw(format!("level {:?}", request.level));
        Ok(())
    }

    async fn on_initialized(&self, _: NotificationContext<RoleServer>) {
        self.saw("initialized");
    }
}

fn executor(audit: Arc<MemoryAuditSink>) -> Executor {
    let set = ToolSet::new().with::<define>().unwrap();
    Executor::builder(set)
        .store(Arc::new(MemoryStore::new()))
        .audit_sink(audit)
        .build()
        .unwrap()
}

async fn connect(server: McpServer) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve_on(server_io).await });
    ().serve(client_io).await.expect("initialize handshake")
}

#[tokio::test]
async fn one_server_answers_tools_from_the_tool_set_and_the_rest_from_the_application() {
    let audit = Arc::new(MemoryAuditSink::new());
    let library = Library::default();
    let server = McpServer::new(executor(audit.clone()))
        .named("library", "2.0.0")
        .with_app(library.clone());
    let client = connect(server).await;

    // initialize: the application's capabilities, the tool set's tools, the server's own name
    let info = client.peer_info().expect("server info");
    let capabilities = serde_json::to_value(&info.capabilities).unwrap();
    for capability in ["tools", "resources", "prompts", "completions", "logging"] {
        assert!(
            capabilities.get(capability).is_some(),
            "{capability}: {capabilities}"
        );
    }
    assert!(
        capabilities.get("extensions").is_none(),
        "tool calls are not tasks: {capabilities}"
    );
    assert_eq!(info.server_info.as_ref().unwrap().name, "library");
    assert_eq!(
        info.instructions.as_deref(),
        Some("Read the catalogue first.")
    );

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["define"]);
    let mut params = CallToolRequestParams::new("define");
    params.arguments = json!({"word": "llama"}).as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(
        audit.records().len(),
        1,
        "the call went through the executor"
    );
    let rogue = client
        .call_tool(CallToolRequestParams::new("rogue"))
        .await
        .unwrap();
    assert_eq!(rogue.is_error, Some(true), "{rogue:?}");

    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources[0].uri, "library://catalogue");
    let read = client
        .read_resource(ReadResourceRequestParams::new("library://catalogue"))
        .await
        .unwrap();
    let read = serde_json::to_value(&read).unwrap();
    assert_eq!(read["contents"][0]["text"], "llamas, alpacas", "{read}");
    let missing = client
        .read_resource(ReadResourceRequestParams::new("library://nothing"))
        .await
        .unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("no resource library://nothing"),
        "{missing}"
    );

    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "summarise");
    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("summarise")
                .with_arguments(json!({"topic": "llamas"}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    let prompt = serde_json::to_value(&prompt).unwrap();
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "Summarise what the library holds on llamas."
    );
    let values = client
        .complete_prompt_simple("summarise", "topic", "al")
        .await
        .unwrap();
    assert_eq!(values, ["alpacas"]);

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .unwrap();
    let seen = library.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        ["initialized", "level Warning"],
        "notifications reach the application"
    );
}

#[tokio::test]
async fn without_an_application_tools_and_their_logging_are_announced_and_the_rest_is_method_not_found()
 {
    let server = McpServer::new(executor(Arc::new(MemoryAuditSink::new())));
    let client = connect(server).await;
    let info = client.peer_info().expect("server info");
    let capabilities = serde_json::to_value(&info.capabilities).unwrap();
    assert_eq!(
        capabilities.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["logging", "tools"]
    );
    // the level of the tools' log entries is the tool server's
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    for error in [
        client.list_all_resources().await.map(|_| ()).unwrap_err(),
        client.list_all_prompts().await.map(|_| ()).unwrap_err(),
    ] {
        assert!(error.to_string().contains("-32601"), "{error}");
    }
}
