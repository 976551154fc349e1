//! The application's part of an MCP server: resources, prompts, completions, logging and the
//! notifications a client sends, from an rmcp [`ServerHandler`] the application writes, beside
//! the tools that [`McpServer`](super::McpServer) serves from the tool set.
//!
//! rmcp's handler trait returns `impl Future`, so it cannot be a trait object; [`Erased`] is the
//! same set of methods with boxed futures, implemented for every handler, so that one
//! `McpServer` type serves with or without an application's handler (the HTTP layer needs one
//! concrete handler type). Each method is the handler's own; nothing is added on the way.

// `logging/setLevel` and `resources/(un)subscribe` are marked deprecated by rmcp for the
// 2026-07-28 revision, which replaces them; clients of the earlier revisions still send them, so
// they are passed on to the application like every other method.
#![allow(deprecated)]

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CancelledNotificationParam, CompleteRequestParams, CompleteResult, CustomNotification,
    CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams,
    GetSkillResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListSkillsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};

/// A boxed future of a handler's method.
pub(crate) type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

type Request = RequestContext<RoleServer>;
type Notification = NotificationContext<RoleServer>;

/// The methods of [`ServerHandler`] that an application answers, as a trait object.
pub(crate) trait Erased: Send + Sync + 'static {
    /// A copy for another connection (each MCP session gets one, as rmcp's HTTP service
    /// makes one handler per session).
    fn fresh(&self) -> Arc<dyn Erased>;
    /// The handler's type, for `Debug`.
    fn name(&self) -> &'static str;
    fn get_info(&self) -> ServerConfig;
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]>;
    fn complete(
        &self,
        p: CompleteRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<CompleteResult, ErrorData>>;
    fn set_level(&self, p: SetLevelRequestParams, cx: Request) -> Boxed<'_, Result<(), ErrorData>>;
    fn get_prompt(
        &self,
        p: GetPromptRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<GetPromptResponse, ErrorData>>;
    fn list_prompts(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Boxed<'_, Result<ListPromptsResult, ErrorData>>;
    fn list_resources(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Boxed<'_, Result<ListResourcesResult, ErrorData>>;
    fn list_resource_templates(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Boxed<'_, Result<ListResourceTemplatesResult, ErrorData>>;
    fn read_resource(
        &self,
        p: ReadResourceRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<ReadResourceResponse, ErrorData>>;
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter>;
    fn listen(&self, cx: SubscriptionContext) -> Boxed<'_, Result<(), ErrorData>>;
    fn subscribe(&self, p: SubscribeRequestParams, cx: Request)
    -> Boxed<'_, Result<(), ErrorData>>;
    fn unsubscribe(
        &self,
        p: UnsubscribeRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<(), ErrorData>>;
    fn on_custom_request(
        &self,
        p: CustomRequest,
        cx: Request,
    ) -> Boxed<'_, Result<CustomResult, ErrorData>>;
    fn on_cancelled(&self, p: CancelledNotificationParam, cx: Notification) -> Boxed<'_, ()>;
    fn on_progress(&self, p: ProgressNotificationParam, cx: Notification) -> Boxed<'_, ()>;
    fn on_initialized(&self, cx: Notification) -> Boxed<'_, ()>;
    fn on_roots_list_changed(&self, cx: Notification) -> Boxed<'_, ()>;
    fn on_custom_notification(&self, p: CustomNotification, cx: Notification) -> Boxed<'_, ()>;
    fn list_skills(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Boxed<'_, Result<ListSkillsResult, ErrorData>>;
    fn get_skill(
        &self,
        p: GetSkillRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<GetSkillResult, ErrorData>>;
    fn read_resource_directory(
        &self,
        p: ReadResourceDirectoryRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<ReadResourceDirectoryResult, ErrorData>>;
}

impl<H: ServerHandler + Clone> Erased for H {
    fn fresh(&self) -> Arc<dyn Erased> {
        Arc::new(self.clone())
    }
    fn name(&self) -> &'static str {
        std::any::type_name::<H>()
    }
    fn get_info(&self) -> ServerConfig {
        ServerHandler::get_info(self)
    }
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        ServerHandler::supported_protocol_versions(self)
    }
    fn complete(
        &self,
        p: CompleteRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<CompleteResult, ErrorData>> {
        Box::pin(ServerHandler::complete(self, p, cx))
    }
    fn set_level(&self, p: SetLevelRequestParams, cx: Request) -> Boxed<'_, Result<(), ErrorData>> {
        Box::pin(ServerHandler::set_level(self, p, cx))
    }
    fn get_prompt(
        &self,
        p: GetPromptRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<GetPromptResponse, ErrorData>> {
        Box::pin(ServerHandler::get_prompt(self, p, cx))
    }
    fn list_prompts(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Boxed<'_, Result<ListPromptsResult, ErrorData>> {
        Box::pin(ServerHandler::list_prompts(self, p, cx))
    }
    fn list_resources(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Boxed<'_, Result<ListResourcesResult, ErrorData>> {
        Box::pin(ServerHandler::list_resources(self, p, cx))
    }
    fn list_resource_templates(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Boxed<'_, Result<ListResourceTemplatesResult, ErrorData>> {
        Box::pin(ServerHandler::list_resource_templates(self, p, cx))
    }
    fn read_resource(
        &self,
        p: ReadResourceRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<ReadResourceResponse, ErrorData>> {
        Box::pin(ServerHandler::read_resource(self, p, cx))
    }
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        ServerHandler::accepted_subscription_filter(self, requested)
    }
    fn listen(&self, cx: SubscriptionContext) -> Boxed<'_, Result<(), ErrorData>> {
        Box::pin(ServerHandler::listen(self, cx))
    }
    fn subscribe(
        &self,
        p: SubscribeRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<(), ErrorData>> {
        Box::pin(ServerHandler::subscribe(self, p, cx))
    }
    fn unsubscribe(
        &self,
        p: UnsubscribeRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<(), ErrorData>> {
        Box::pin(ServerHandler::unsubscribe(self, p, cx))
    }
    fn on_custom_request(
        &self,
        p: CustomRequest,
        cx: Request,
    ) -> Boxed<'_, Result<CustomResult, ErrorData>> {
        Box::pin(ServerHandler::on_custom_request(self, p, cx))
    }
    fn on_cancelled(&self, p: CancelledNotificationParam, cx: Notification) -> Boxed<'_, ()> {
        Box::pin(ServerHandler::on_cancelled(self, p, cx))
    }
    fn on_progress(&self, p: ProgressNotificationParam, cx: Notification) -> Boxed<'_, ()> {
        Box::pin(ServerHandler::on_progress(self, p, cx))
    }
    fn on_initialized(&self, cx: Notification) -> Boxed<'_, ()> {
        Box::pin(ServerHandler::on_initialized(self, cx))
    }
    fn on_roots_list_changed(&self, cx: Notification) -> Boxed<'_, ()> {
        Box::pin(ServerHandler::on_roots_list_changed(self, cx))
    }
    fn on_custom_notification(&self, p: CustomNotification, cx: Notification) -> Boxed<'_, ()> {
        Box::pin(ServerHandler::on_custom_notification(self, p, cx))
    }
    fn list_skills(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Boxed<'_, Result<ListSkillsResult, ErrorData>> {
        Box::pin(ServerHandler::list_skills(self, p, cx))
    }
    fn get_skill(
        &self,
        p: GetSkillRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<GetSkillResult, ErrorData>> {
        Box::pin(ServerHandler::get_skill(self, p, cx))
    }
    fn read_resource_directory(
        &self,
        p: ReadResourceDirectoryRequestParams,
        cx: Request,
    ) -> Boxed<'_, Result<ReadResourceDirectoryResult, ErrorData>> {
        Box::pin(ServerHandler::read_resource_directory(self, p, cx))
    }
}

/// What `initialize` (and `server/discover`) announce for the tools of the tool set and the
/// application's handler together: the application's capabilities for everything but tools,
/// which are the tool set's, and logging, which both have, and no tasks extension, since tool calls are not run as tasks. The
/// name and version are the tool server's ([`McpServer::named`](super::McpServer::named)), and
/// so are the instructions when it has some
/// ([`McpServer::instructions`](super::McpServer::instructions)), else the application's.
pub(crate) fn merged(own: ServerConfig, app: ServerConfig) -> ServerConfig {
    let mut capabilities = app.capabilities;
    capabilities.tools = own.capabilities.tools.clone();
    // the tools log whether or not the application does
    if capabilities.logging.is_none() {
        capabilities.logging = own.capabilities.logging.clone();
    }
    if let Some(extensions) = capabilities.extensions.as_mut() {
        extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
        if extensions.is_empty() {
            capabilities.extensions = None;
        }
    }
    let mut config = own;
    config.capabilities = capabilities;
    if config.instructions.is_none() {
        config.instructions = app.instructions;
    }
    config
}

/// The handler of a server without an application's: it serves nothing but what rmcp's
/// defaults answer for a server with no capabilities (method not found).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoApp;

impl ServerHandler for NoApp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(rmcp::model::ServerCapabilities::default())
    }
}
