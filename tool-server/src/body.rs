//! Request bodies: read up to the server's limit and parsed as JSON, with the same structured
//! errors the executor gives for a model's arguments.

use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;
use tool_runtime::{ErrorCode, ToolError, hydrate::Limits};

use crate::AppState;
use crate::error::ApiError;

/// Room for a request's envelope (`{"arguments": ...}`, an edit's wrapper) beyond the arguments.
const ENVELOPE_BYTES: usize = 64 * 1024;

/// The default body limit: the tool set's argument limit plus the envelope.
pub(crate) fn default_limit(limits: &Limits) -> usize {
    limits.max_bytes.saturating_add(ENVELOPE_BYTES)
}

/// A JSON body of type `T`, read up to [`AppState::max_body_bytes`]. An empty body reads as
/// `{}`, so routes whose fields are all optional accept a bodiless POST.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.max_body_bytes;
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large(limit));
        }
        let bytes = axum::body::to_bytes(req.into_body(), limit)
            .await
            .map_err(|_| too_large(limit))?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        serde_json::from_slice(text).map(JsonBody).map_err(|e| {
            let code = if e.is_data() {
                ErrorCode::INVALID_ARGUMENTS
            } else {
                ErrorCode::INVALID_JSON
            };
            ApiError::new(
                ToolError::new(code, format!("the request body: {e}")).recover(
                    "send a JSON object as the request body, as the OpenAPI document describes",
                ),
            )
        })
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        ToolError::new(
            ErrorCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than {limit} bytes"),
        )
        .recover("send smaller arguments")
        .with_detail("limit_bytes", limit),
    )
}
