//! The console's error answer: an HTTP status and
//! `{"error": {"code", "message", "field"?}}`
//! (docs/architecture/console-api.md, Errors).
//! The code decides the status, so a transport never picks one by hand.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::policy::document::FieldError;
use crate::policy::editor::EditError;

/// The stable error codes of the console API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(rename = "ErrorCode")]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Code {
    /// Malformed request (JSON that does not parse, a bad query value).
    BadRequest,
    /// No or wrong console session or token.
    Unauthorized,
    /// Foreign Host or Origin, or the agents' token.
    Forbidden,
    /// No such call, approval, rule, tool, server.
    NotFound,
    /// It already ended (decided, expired, cancelled).
    Stale,
    /// An edit was based on a revision that is no longer current (the
    /// policy changed since the edit was started); nothing was written.
    Conflict,
    /// A field is invalid; names it.
    Invalid,
    /// The request body is larger than the console accepts.
    TooLarge,
    /// This engine runs without the part the request needs.
    Unavailable,
    /// A store or the disk failed.
    Internal,
}

impl Code {
    /// The code as sent (`not_found`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadRequest => "bad_request",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Stale => "stale",
            Self::Conflict => "conflict",
            Self::Invalid => "invalid",
            Self::TooLarge => "too_large",
            Self::Unavailable => "unavailable",
            Self::Internal => "internal",
        }
    }

    /// The code for a service error's `code()` string; unknown ones are
    /// `internal`.
    pub fn parse(code: &str) -> Self {
        match code {
            "bad_request" => Self::BadRequest,
            "unauthorized" => Self::Unauthorized,
            "forbidden" => Self::Forbidden,
            "not_found" => Self::NotFound,
            "stale" => Self::Stale,
            "conflict" => Self::Conflict,
            "invalid" => Self::Invalid,
            "too_large" => Self::TooLarge,
            "unavailable" => Self::Unavailable,
            _ => Self::Internal,
        }
    }

    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            Self::BadRequest => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Stale | Self::Conflict => StatusCode::CONFLICT,
            Self::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// An error answer of the console API (the TypeScript `ErrorBody`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error, ts_rs::TS)]
#[ts(rename = "ErrorBody")]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    /// What kind of failure (decides the status).
    pub code: Code,
    /// What went wrong and what to do.
    pub message: String,
    /// The request field it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub field: Option<String>,
    /// Every field problem, for policy edits (the first is `field`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<FieldError>>")]
    pub errors: Vec<FieldError>,
}

impl ApiError {
    /// An error without a field.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            field: None,
            errors: Vec::new(),
        }
    }

    /// An `invalid` error about `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            ..Self::new(Code::Invalid, message)
        }
    }

    /// From a service error's parts (`ControlError::code()`, its message
    /// and field): the one line a service's `From` impl needs.
    pub fn from_parts(code: &str, message: impl Into<String>, field: Option<&str>) -> Self {
        Self {
            field: field.map(str::to_owned),
            ..Self::new(Code::parse(code), message)
        }
    }

    /// A request needing a part this engine was started without.
    pub fn unwired(what: &str) -> Self {
        Self::new(
            Code::Unavailable,
            format!("{what} is not available from this engine's console yet"),
        )
    }
}

impl From<EditError> for ApiError {
    fn from(e: EditError) -> Self {
        let code = Code::parse(e.code());
        match e {
            EditError::Invalid(errors) => Self {
                field: errors.first().and_then(|e| e.field.clone()),
                message: EditError::Invalid(errors.clone()).to_string(),
                code,
                errors,
            },
            other => Self::new(code, other.to_string()),
        }
    }
}

/// What an error response's body holds: `{"error": {...}}`.
#[derive(Serialize, ts_rs::TS)]
#[ts(rename = "ErrorEnvelope")]
pub(crate) struct Body<'a> {
    error: &'a ApiError,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.code.status(), Json(Body { error: &self })).into_response()
    }
}

/// The largest request body the console API reads (axum's default limit,
/// named here so its error can say it).
pub const MAX_BODY: usize = 2 * 1024 * 1024;

/// Turns the framework's own plain-text refusals under `/api` (a body over
/// [`MAX_BODY`]) into the API's JSON error, so every failure a client of
/// the API sees has the same shape.
pub(super) async fn json_refusals(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let r = next.run(req).await;
    if r.status() == StatusCode::PAYLOAD_TOO_LARGE && !is_json(&r) {
        let mut r = ApiError::new(
            Code::TooLarge,
            format!(
                "the request body is larger than the console API accepts ({} MiB)",
                MAX_BODY / (1024 * 1024)
            ),
        )
        .into_response();
        // The body is left unread, so the server closes the connection;
        // saying so keeps a client from reusing it for its next request.
        r.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
        return r;
    }
    r
}

fn is_json(r: &Response) -> bool {
    r.headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}
