//! The HTTP client of an OAuth-authorized server: rmcp's authorized client (the token on every
//! request, refreshed when it expires or is rejected), and, when the server still refuses
//! (`401` with a challenge, `403 insufficient_scope`), a flow ([`Authorization::answer`]) and
//! the request sent once more.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

use super::Authorization;

type Error = StreamableHttpError<reqwest::Error>;

/// The streamable HTTP client of a server under OAuth.
#[derive(Clone)]
pub(crate) struct OAuthHttp(pub(crate) Arc<Authorization>);

impl OAuthHttp {
    /// `send` with the current token; on the server's refusal, once more after a flow.
    async fn send<T, F, Fut>(&self, send: F) -> Result<T, Error>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let auth = &self.0;
        let seen = auth.generation.load(Ordering::SeqCst);
        let challenge = match send().await {
            Ok(answer) => {
                auth.accepted();
                return Ok(answer);
            }
            Err(Error::AuthRequired(e)) => e.www_authenticate_header,
            Err(Error::InsufficientScope(e)) => e.www_authenticate_header,
            Err(other) => return Err(other),
        };
        auth.answer(seen, &challenge).await?;
        match send().await {
            Ok(answer) => {
                auth.accepted();
                Ok(answer)
            }
            Err(e @ (Error::AuthRequired(_) | Error::InsufficientScope(_))) => {
                auth.refuse(format!("the server refused the token it was given: {e}"));
                Err(e)
            }
            Err(other) => Err(other),
        }
    }
}

impl StreamableHttpClient for OAuthHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.send(|| {
            self.0.client.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.send(|| {
            self.0.client.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.send(|| {
            self.0.client.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        // a session ends without asking anyone: a refusal here is not worth a flow
        self.0
            .client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, Error> {
        self.send(|| {
            self.0.client.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, Error> {
        self.send(|| {
            self.0.client.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
