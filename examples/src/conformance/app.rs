//! The suite's resources, prompts and completions: the application's own rmcp handler, served
//! beside the tools by composing it with the tool server (`ServerOptions::mcp_app`).

// `resources/(un)subscribe` and `logging/setLevel` are deprecated by rmcp for the 2026-07-28
// revision; the suite's clients speak 2025-11-25, where they are how a client asks for them.
#![allow(deprecated)]

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, Resource,
    ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value, json};

/// A 1×1 red PNG, base64.
pub const TEST_IMAGE_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

const STATIC_TEXT: &str = "test://static-text";
const STATIC_BINARY: &str = "test://static-binary";
const WATCHED: &str = "test://watched-resource";
const TEMPLATE: &str = "test://template/{id}/data";

/// The suite's resources, prompts, completions and logging level.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fixtures;

type Cx = RequestContext<RoleServer>;

impl ServerHandler for Fixtures {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_resources()
            .build();
        if let Some(resources) = capabilities.resources.as_mut() {
            resources.subscribe = Some(true);
        }
        ServerConfig::new(capabilities)
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: Cx,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(STATIC_TEXT, "static-text")
                .with_description("A static text resource for testing")
                .with_mime_type("text/plain"),
            Resource::new(STATIC_BINARY, "static-binary")
                .with_description("A static binary resource (image) for testing")
                .with_mime_type("image/png"),
            Resource::new(WATCHED, "watched-resource")
                .with_description("A resource clients may subscribe to")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: Cx,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(TEMPLATE, "template")
                .with_description("A resource template with parameter substitution")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: Cx,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let contents = match uri.as_str() {
            STATIC_TEXT => ResourceContents::text(
                "This is the content of the static text resource.",
                uri.clone(),
            ),
            STATIC_BINARY => {
                ResourceContents::blob(TEST_IMAGE_BASE64, uri.clone()).with_mime_type("image/png")
            }
            WATCHED => ResourceContents::text("The watched resource, as it is now.", uri.clone()),
            other => match template_id(other) {
                Some(id) => ResourceContents::text(
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string(),
                    uri.clone(),
                )
                .with_mime_type("application/json"),
                None => return Err(not_found(other)),
            },
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn subscribe(&self, request: SubscribeRequestParams, _: Cx) -> Result<(), ErrorData> {
        // the resources never change, so a subscription has nothing to report; a resource that
        // does not exist cannot be subscribed to
        known(&request.uri)
    }

    async fn unsubscribe(&self, request: UnsubscribeRequestParams, _: Cx) -> Result<(), ErrorData> {
        known(&request.uri)
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: Cx,
    ) -> Result<ListPromptsResult, ErrorData> {
        let argument = |name: &str, description: &str| {
            PromptArgument::new(name)
                .with_description(description)
                .with_required(true)
        };
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A simple prompt without arguments"),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with required arguments"),
                Some(vec![
                    argument("arg1", "First test argument"),
                    argument("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt that includes an embedded resource"),
                Some(vec![argument(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt that includes image content"),
                None,
            ),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: Cx,
    ) -> Result<GetPromptResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let user = |content| PromptMessage::new(Role::User, content);
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![user(ContentBlock::text(
                "This is a simple prompt for testing.",
            ))],
            "test_prompt_with_arguments" => {
                let (arg1, arg2) = (argument(&arguments, "arg1")?, argument(&arguments, "arg2")?);
                vec![user(ContentBlock::text(format!(
                    "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                )))]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = argument(&arguments, "resourceUri")?;
                vec![
                    user(ContentBlock::resource(ResourceContents::text(
                        "Embedded resource content for testing.",
                        uri,
                    ))),
                    user(ContentBlock::text(
                        "Please process the embedded resource above.",
                    )),
                ]
            }
            "test_prompt_with_image" => vec![
                user(ContentBlock::image(TEST_IMAGE_BASE64, "image/png")),
                user(ContentBlock::text("Please analyze the image above.")),
            ],
            other => {
                return Err(ErrorData::invalid_params(
                    format!("there is no prompt {other:?}"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _: Cx,
    ) -> Result<CompleteResult, ErrorData> {
        // the values each completable argument takes, filtered by what the person typed
        let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Prompt(p), "arg1" | "arg2") if p.name == "test_prompt_with_arguments" => {
                &["paris", "park", "party", "test", "testing"]
            }
            (Reference::Resource(r), "id") if r.uri == TEMPLATE => &["123", "456"],
            _ => &[],
        };
        let values = candidates
            .iter()
            .filter(|v| v.starts_with(&request.argument.value))
            .map(|v| (*v).to_owned())
            .collect();
        let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn set_level(&self, _: SetLevelRequestParams, _: Cx) -> Result<(), ErrorData> {
        // accepted; nothing on this server logs to the client yet, so there is nothing to filter
        Ok(())
    }
}

/// The `{id}` of a URI of the template, when it is one.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

fn known(uri: &str) -> Result<(), ErrorData> {
    match uri {
        STATIC_TEXT | STATIC_BINARY | WATCHED => Ok(()),
        other if template_id(other).is_some() => Ok(()),
        other => Err(not_found(other)),
    }
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("there is no resource {uri:?}"), None)
}

/// A required string argument of a prompt.
fn argument(arguments: &Map<String, Value>, name: &str) -> Result<String, ErrorData> {
    match arguments.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(ErrorData::invalid_params(
            format!("the prompt needs the string argument {name:?}"),
            None,
        )),
    }
}
