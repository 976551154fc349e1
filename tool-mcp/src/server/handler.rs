//! [`McpServer`] as rmcp's [`ServerHandler`]: tools from the tool set through the executor, every
//! other method from the application's handler ([`McpServer::with_app`]).

// `logging/setLevel` and `resources/(un)subscribe` are deprecated by rmcp for the 2026-07-28
// revision; clients of the earlier ones still send them.
#![allow(deprecated)]

use std::borrow::Cow;

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelledNotificationParam,
    CompleteRequestParams, CompleteResult, CustomNotification, CustomRequest, CustomResult,
    GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};

use super::{
    McpServer, TOOLS_LIST_TTL_MS, app, elicit, host, progress, request_id, result_of, tool_call,
};

type Request = RequestContext<RoleServer>;
type Notification = NotificationContext<RoleServer>;

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        // tools log (`CallContext::log`), so the server takes `logging/setLevel` with or without
        // an application's handler
        let config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .build(),
        )
        .with_server_info(self.info.clone());
        let config = match &self.instructions {
            Some(text) => config.with_instructions(text.clone()),
            None => config,
        };
        app::merged(config, self.app.get_info())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.app.supported_protocol_versions()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        if let Some(cursor) = request.and_then(|r| r.cursor) {
            // every tool is in the first page and no cursor was ever issued: one is made up
            return Err(rmcp::ErrorData::invalid_params(
                format!(
                    "cursor {:?} is not one this server issued: tools/list answers every tool \
                     in one page, without a cursor",
                    tool_runtime::display::visible_prefix(&cursor, 64)
                ),
                None,
            ));
        }
        let mut result = ListToolsResult::with_all_items(self.listed.tools().to_vec());
        if context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
        {
            // The list is the same for every caller until the tools change; it is answered
            // behind the caller's credential, so only the caller's client keeps it.
            result.ttl_ms = Some(TOOLS_LIST_TTL_MS);
            result.cache_scope = Some(CacheScope::Private);
        }
        Ok(result)
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, rmcp::ErrorData>> + Send + '_ {
        // A call's future holds the executor's and the tool's state, tens of kilobytes: rmcp
        // spawns each request's future and tokio moves it whole, more than once. Boxed, what
        // moves is a pointer.
        Box::pin(self.serve_call(request, context))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed.tools().iter().find(|t| t.name == name).cloned()
    }

    // Everything but tools is the application's (`McpServer::with_app`).

    async fn complete(
        &self,
        p: CompleteRequestParams,
        cx: Request,
    ) -> Result<CompleteResult, ErrorData> {
        self.app.complete(p, cx).await
    }

    /// The level is the tool server's (its tools' log entries), and the application's handler
    /// hears of it too: its answer is the client's, unless it serves no logging of its own.
    async fn set_level(&self, p: SetLevelRequestParams, cx: Request) -> Result<(), ErrorData> {
        self.level.set(p.level);
        match self.app.set_level(p, cx).await {
            Err(e) if e.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND => Ok(()),
            answer => answer,
        }
    }

    async fn get_prompt(
        &self,
        p: GetPromptRequestParams,
        cx: Request,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.app.get_prompt(p, cx).await
    }

    async fn list_prompts(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.app.list_prompts(p, cx).await
    }

    async fn list_resources(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.app.list_resources(p, cx).await
    }

    async fn list_resource_templates(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.app.list_resource_templates(p, cx).await
    }

    async fn read_resource(
        &self,
        p: ReadResourceRequestParams,
        cx: Request,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.app.read_resource(p, cx).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.app.accepted_subscription_filter(requested)
    }

    async fn listen(&self, cx: SubscriptionContext) -> Result<(), ErrorData> {
        self.app.listen(cx).await
    }

    async fn subscribe(&self, p: SubscribeRequestParams, cx: Request) -> Result<(), ErrorData> {
        self.app.subscribe(p, cx).await
    }

    async fn unsubscribe(&self, p: UnsubscribeRequestParams, cx: Request) -> Result<(), ErrorData> {
        self.app.unsubscribe(p, cx).await
    }

    async fn on_custom_request(
        &self,
        p: CustomRequest,
        cx: Request,
    ) -> Result<CustomResult, ErrorData> {
        self.app.on_custom_request(p, cx).await
    }

    async fn on_cancelled(&self, p: CancelledNotificationParam, cx: Notification) {
        self.app.on_cancelled(p, cx).await
    }

    async fn on_progress(&self, p: ProgressNotificationParam, cx: Notification) {
        self.app.on_progress(p, cx).await
    }

    async fn on_initialized(&self, cx: Notification) {
        self.listed.notify(cx.peer.clone());
        self.app.on_initialized(cx).await
    }

    async fn on_roots_list_changed(&self, cx: Notification) {
        self.app.on_roots_list_changed(cx).await
    }

    async fn on_custom_notification(&self, p: CustomNotification, cx: Notification) {
        self.app.on_custom_notification(p, cx).await
    }

    async fn list_skills(
        &self,
        p: Option<PaginatedRequestParams>,
        cx: Request,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.app.list_skills(p, cx).await
    }

    async fn get_skill(
        &self,
        p: GetSkillRequestParams,
        cx: Request,
    ) -> Result<GetSkillResult, ErrorData> {
        self.app.get_skill(p, cx).await
    }

    async fn read_resource_directory(
        &self,
        p: ReadResourceDirectoryRequestParams,
        cx: Request,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.app.read_resource_directory(p, cx).await
    }
}

impl McpServer {
    /// A `tools/call`, answered by the executor, confirmed in-band where the client allows it.
    async fn serve_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let call = tool_call(&request, &request_id(&context.id));
        let mut cx = self.context_of(&call, &context);
        let granted = self.may_elicit(&context) && elicit::supported(&context);
        let in_rounds = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let answering = request.request_state.is_some() || request.input_responses.is_some();
        let parked = std::sync::OnceLock::new();
        // what the tool tells the client while it runs, in order, before the result: progress
        // when the client sent a token, log entries at its level
        let forward =
            progress::Forward::start(context.peer.clone(), context.meta.get_progress_token());
        cx.progress = forward.reporter();
        cx.host = Some(tool_runtime::host::Host::new(host::McpHost::of(
            &context,
            forward.notes(),
            self.level.clone(),
            &call.name,
            in_rounds,
        )));
        let response = async {
            if answering {
                // Only a caller granted in-band confirmation may answer; the answer of any
                // other (an agent holding a state it saw) is not looked at.
                if !(granted && in_rounds) {
                    return Err(rmcp::ErrorData::invalid_params(
                        "this client may not answer confirmations in-band: a call that needs a \
                         person waits for the approvals page",
                        None,
                    ));
                }
                let waiting = cx.clone();
                return self.resume(&request, &call, &context, &waiting).await;
            }
            if granted && in_rounds {
                let response = self.ask_in_rounds(&call, cx).await;
                forward.finish().await;
                return Ok(response);
            }
            // A granted host that can be asked while the call waits confirms in-band; every
            // other call gets the executor's own handler (a pending operation, with `Deferred`).
            if granted {
                let response = self
                    .confirm_by_elicitation(&call, cx, &context, &parked)
                    .await;
                forward.finish().await;
                return Ok(response);
            }
            let outcome = self.executor.call(&call, cx).await.outcome;
            forward.finish().await;
            Ok(result_of(&call, &outcome).into())
        };
        tokio::select! {
            response = response => response,
            // The client gave up (notifications/cancelled): dropping the call cancels the tool.
            () = context.ct.cancelled() => {
                if let Some(op) = parked.get() {
                    self.withdraw(op, &context).await;
                }
                Err(rmcp::ErrorData::internal_error("the client cancelled the call", None))
            }
        }
    }
}
