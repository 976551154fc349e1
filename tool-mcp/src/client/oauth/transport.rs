//! The HTTP client of an OAuth-authorized server: rmcp's authorized client (the token on every
//! request, refreshed when it expires or is rejected), and, when the server still refuses
//! (`401` with a challenge, `403 insufficient_scope`), a flow ([`Authorization::answer`]) and
//! the request sent once more.
//!
//! A refresh the authorization server refuses with `invalid_client` or `unauthorized_client`
//! means the client the tokens were issued to is no longer one it knows (a registration it
//! dropped, a secret it no longer takes): the client and its tokens are discarded and the
//! request sent again without a token, so that the server's challenge starts again as on first
//! use. So is a client whose registered secret expired, before it is sent. (A refused refresh
//! token, `invalid_grant`, is rmcp's to answer: the request goes without a token, and the flow
//! asks again as the same client.)

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthError;
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
        let mut seen = auth.generation.load(Ordering::SeqCst);
        if auth.secret_expired() {
            auth.forget_client(
                seen,
                "the secret of the client that registered itself expired",
            )
            .await;
            seen = auth.generation.load(Ordering::SeqCst);
        }
        let mut sent = send().await;
        if let Err(Error::Auth(AuthError::TokenRefreshFailed(why))) = &sent
            && let Some(code) = client_refused(why)
        {
            let why = format!(
                "the authorization server no longer takes the client the tokens were issued to \
                 (its refresh was refused: {code})"
            );
            auth.forget_client(seen, &why).await;
            seen = auth.generation.load(Ordering::SeqCst);
            sent = send().await;
        }
        let challenge = match sent {
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

/// The error code of a refused refresh, `why` (as rmcp words it, from oauth2's
/// `RequestTokenError`), when it says the authorization server does not take the client:
/// `invalid_client` or `unauthorized_client` (RFC 6749 section 5.2). Only the code is read: what
/// follows it is the server's description.
fn client_refused(why: &str) -> Option<&'static str> {
    let answer = why.strip_prefix("Server returned error response: ")?;
    let code = answer.split([':', ' ']).next()?;
    ["invalid_client", "unauthorized_client"]
        .into_iter()
        .find(|known| *known == code)
}

#[cfg(test)]
mod tests {
    use oauth2::basic::{BasicErrorResponse, BasicErrorResponseType};

    use super::client_refused;

    /// The words of a refused refresh, as oauth2 makes them and rmcp passes them on.
    fn refused(code: BasicErrorResponseType, description: Option<&str>) -> String {
        let answer = BasicErrorResponse::new(code, description.map(str::to_owned), None);
        oauth2::RequestTokenError::<std::io::Error, _>::ServerResponse(answer).to_string()
    }

    #[test]
    fn a_refresh_refused_for_its_client_is_told_from_other_refusals() {
        use BasicErrorResponseType::*;
        assert_eq!(
            client_refused(&refused(InvalidClient, None)),
            Some("invalid_client")
        );
        assert_eq!(
            client_refused(&refused(InvalidClient, Some("client unknown"))),
            Some("invalid_client")
        );
        assert_eq!(
            client_refused(&refused(UnauthorizedClient, Some("x"))),
            Some("unauthorized_client")
        );
        for other in [InvalidGrant, InvalidRequest, InvalidScope] {
            assert_eq!(
                client_refused(&refused(other, Some("invalid_client"))),
                None
            );
        }
        // the description is the server's: it does not make the code
        assert_eq!(
            client_refused(&refused(
                BasicErrorResponseType::Extension("invalid_client_x".into()),
                None
            )),
            None
        );
        assert_eq!(client_refused("connection reset: invalid_client"), None);
    }
}
