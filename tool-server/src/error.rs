//! One error shape for every route: `{"error": <ToolError>}` with a status that matches its code.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use tool_runtime::{ErrorCode, ToolError};
use utoipa::ToSchema;

/// `UNAUTHORIZED`: no or an unknown bearer token.
pub(crate) const UNAUTHORIZED: ErrorCode = ErrorCode::of("UNAUTHORIZED");
/// `FORBIDDEN`: a valid token whose role may not do this.
pub(crate) const FORBIDDEN: ErrorCode = ErrorCode::of("FORBIDDEN");
/// `UNAVAILABLE`: the store cannot be reached.
pub(crate) const UNAVAILABLE: ErrorCode = ErrorCode::of("UNAVAILABLE");

/// How long a client refused for having too many operations waiting is told to wait: a person
/// decides in about this time.
const PENDING_RETRY_SECS: u64 = 30;

/// An error answered by the server: the executor's structured error and the HTTP status it maps
/// to.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    error: ToolError,
}

/// The body of every error response.
#[derive(Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    /// The structured error: `code`, `message`, `retryable`, and where they apply
    /// `recover_action`, `violations` (one per offending argument, with its JSON pointer) and
    /// `details` (suggestions, `retry_after_ms`, the operation's state).
    #[schema(value_type = Object)]
    error: Value,
}

impl ApiError {
    /// The status a structured error is answered with, by its code.
    pub fn status_of(error: &ToolError) -> StatusCode {
        match error.code.as_str() {
            "UNKNOWN_TOOL" | "NOT_FOUND" => StatusCode::NOT_FOUND,
            "INVALID_ARGUMENTS" | "SCHEMA_REQUIRED" | "NESTING_TOO_DEEP" => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            "INVALID_JSON" => StatusCode::BAD_REQUEST,
            "PAYLOAD_TOO_LARGE" => StatusCode::PAYLOAD_TOO_LARGE,
            "UNSUPPORTED_MEDIA_TYPE" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "NOT_ALLOWED" | "FORBIDDEN" | "HOST_NOT_ALLOWED" => StatusCode::FORBIDDEN,
            "UNAUTHORIZED" => StatusCode::UNAUTHORIZED,
            "ALREADY_RESOLVED" | "DEFINITION_CHANGED" => StatusCode::CONFLICT,
            "RATE_LIMITED" | "TOO_MANY_PENDING" | "TOO_MANY_SESSIONS" => {
                StatusCode::TOO_MANY_REQUESTS
            }
            "UNAVAILABLE" | "STORE_UNAVAILABLE" => StatusCode::SERVICE_UNAVAILABLE,
            "TIMEOUT" => StatusCode::GATEWAY_TIMEOUT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The error with the status its code maps to.
    pub fn new(error: ToolError) -> Self {
        ApiError {
            status: Self::status_of(&error),
            error,
        }
    }

    pub(crate) fn set_status(&mut self, status: StatusCode) {
        self.status = status;
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The structured error.
    pub fn error(&self) -> &ToolError {
        &self.error
    }

    pub(crate) fn unauthorized(message: &str) -> Self {
        ApiError::new(
            ToolError::new(UNAUTHORIZED, message).recover(
                "send `Authorization: Bearer <token>` with the agent's or approver's token",
            ),
        )
    }

    pub(crate) fn forbidden(message: &str) -> Self {
        ApiError::new(ToolError::new(FORBIDDEN, message))
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        ApiError::new(ToolError::new(ErrorCode::INTERNAL, message))
    }
}

impl From<ToolError> for ApiError {
    fn from(error: ToolError) -> Self {
        ApiError::new(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = self
            .error
            .details
            .get("retry_after_ms")
            .and_then(Value::as_u64)
            .map(|ms| ms.div_ceil(1000).max(1))
            .or((self.error.code.as_str() == "TOO_MANY_PENDING").then_some(PENDING_RETRY_SECS));
        let unauthorized = self.status == StatusCode::UNAUTHORIZED;
        let body = serde_json::json!({ "error": self.error });
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if unauthorized {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_codes() {
        let of = |code| ApiError::status_of(&ToolError::new(code, "x"));
        assert_eq!(of(ErrorCode::UNKNOWN_TOOL), StatusCode::NOT_FOUND);
        assert_eq!(
            of(ErrorCode::INVALID_ARGUMENTS),
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            of(ErrorCode::PAYLOAD_TOO_LARGE),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        assert_eq!(of(ErrorCode::of("ALREADY_RESOLVED")), StatusCode::CONFLICT);
        assert_eq!(
            of(ErrorCode::of("DEFINITION_CHANGED")),
            StatusCode::CONFLICT
        );
        assert_eq!(of(ErrorCode::RATE_LIMITED), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            of(ErrorCode::of("TOO_MANY_PENDING")),
            StatusCode::TOO_MANY_REQUESTS
        );
        assert_eq!(of(ErrorCode::INTERNAL), StatusCode::INTERNAL_SERVER_ERROR);
        // a store that is locked, down or slow: the client may come back
        assert_eq!(
            of(tool_runtime::store::STORE_UNAVAILABLE),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[test]
    fn too_many_pending_says_when_to_come_back() {
        let e = ToolError::new(ErrorCode::of("TOO_MANY_PENDING"), "100 wait").retryable(true);
        let response = ApiError::new(e).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "30");
        let limited =
            ToolError::new(ErrorCode::RATE_LIMITED, "x").with_detail("retry_after_ms", 2500);
        let response = ApiError::new(limited).into_response();
        assert_eq!(
            response.headers()[header::RETRY_AFTER],
            "3",
            "the limiter's own wait"
        );
    }
}
