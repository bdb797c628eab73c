//! Failures of upstream servers, mapped onto the engine's error classes by
//! type, never by message text (PraisonAI's keyword matcher misclassifies
//! any error not worded as it expects). Retry and the breaker then act on
//! MCP tools exactly as on built-ins.
//!
//! | upstream failure                                     | `CallError`            | class          |
//! |------------------------------------------------------|------------------------|----------------|
//! | transport closed / reset / refused, child exited     | `Connection`           | `connection`   |
//! | service cancelled (server stopped or restarting)     | `Connection`           | `connection`   |
//! | HTTP 429 from the transport (`Retry-After` kept)     | `RateLimited`          | `rate_limit`   |
//! | HTTP 5xx from the transport                          | `Upstream { status }`  | `upstream_5xx` |
//! | other HTTP status (401, 403, 404, ...)               | `Upstream { status }`  | `tool_failed`  |
//! | rmcp request timeout                                 | `Timeout`              | `timeout`      |
//! | JSON-RPC -32602 invalid params (also unknown tool)   | `InvalidArgs`          | `invalid_args` |
//! | JSON-RPC -32603 internal error                       | `Upstream { 500 }`     | `upstream_5xx` |
//! | JSON-RPC -32000 (SDK "connection closed")            | `Connection`           | `connection`   |
//! | JSON-RPC -32001 (SDK "request timeout")              | `Upstream { 504 }`     | `upstream_5xx` |
//! | JSON-RPC -32003..=-32099 (server-defined errors)     | `Upstream { 502 }`     | `upstream_5xx` |
//! | JSON-RPC -32700 / -32600, MCP -32020..=-32022        | `Internal`             | `internal`     |
//! | (toolgate sent something the server cannot read)     |                        |                |
//! | JSON-RPC -32601 (the server cannot run a tool it listed) | `ToolFailed` (tool)  | `tool_failed`  |
//! | any other JSON-RPC error (-32002, app codes)         | `ToolFailed` (caller)  | `tool_failed`  |
//! | other rmcp failures (an unexpected reply)            | `ToolFailed` (tool)    | `tool_failed`  |
//! | result with `isError: true`                          | `Ok(ToolResult { is_error: true })` | (result) |
//!
//! `isError` results are not errors of the call: the tool ran and its
//! message is for the model (MCP spec). The breaker does not count them
//! unless the server is configured with `breaker_counts_is_error = true`
//! (`BreakerConfig::count_is_error`): a tool that answers "no such issue"
//! is healthy, and counting such answers would let one agent switch the
//! tool off for all. A JSON-RPC error with an application code is the same
//! kind of deliberate answer to this one request ([`Fault::Caller`]).

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use rmcp::service::ServiceError;
use rmcp::transport::streamable_http_client::HttpStatusError;

use crate::error::{ArgProblem, CallError, Fault};

/// Why a server could not be started or connected. Recorded as the
/// server's last error; never returned to an agent directly (its calls get
/// [`CallError::Connection`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The child process could not be spawned.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// The program.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A URL in the server's config is malformed.
    #[error("bad url `{url}`: {message}")]
    BadUrl {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// A header name or value cannot be sent.
    #[error("bad header `{name}`")]
    BadHeader {
        /// The header's name (never its value: it may be a secret).
        name: String,
    },
    /// The connection could not be made.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The server redirected the connection somewhere toolgate does not
    /// follow (another origin; see `transport::redirect`).
    #[error("cannot connect: {0}")]
    Redirect(#[from] super::transport::RedirectRefused),
    /// The server answered the connection with an HTTP error status.
    #[error("server answered HTTP {status}")]
    Status {
        /// The HTTP status.
        status: u16,
    },
    /// The MCP `initialize` handshake failed.
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
    /// Listing the server's tools failed.
    #[error("tools/list failed: {0}")]
    ListTools(String),
    /// Connecting took longer than the connect timeout.
    #[error("no answer within {}ms", .0.as_millis())]
    ConnectTimeout(Duration),
}

/// Maps a failed rmcp request onto a [`CallError`], by type.
pub fn map_service_error(tool: &str, err: ServiceError) -> CallError {
    match err {
        ServiceError::McpError(e) => map_jsonrpc(tool, e),
        ServiceError::TransportSend(e) => map_transport(e.error.as_ref()),
        ServiceError::Timeout { timeout } => CallError::Timeout { after: timeout },
        ServiceError::TransportClosed | ServiceError::Cancelled { .. } => CallError::Connection {
            message: "the upstream connection closed before the call finished".to_owned(),
        },
        other => CallError::tool_failed(other.to_string()),
    }
}

/// JSON-RPC error codes; see the module table.
fn map_jsonrpc(tool: &str, e: ErrorData) -> CallError {
    let message = e.message.to_string();
    match e.code {
        ErrorCode::INVALID_PARAMS => CallError::InvalidArgs {
            tool: tool.to_owned(),
            problems: vec![ArgProblem {
                pointer: String::new(),
                message,
            }],
        },
        ErrorCode::INTERNAL_ERROR => CallError::Upstream {
            status: 500,
            message,
        },
        ErrorCode::PARSE_ERROR
        | ErrorCode::INVALID_REQUEST
        | ErrorCode::HEADER_MISMATCH
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
            CallError::internal(format!("upstream rejected toolgate's request: {message}"))
        }
        ErrorCode(-32000) => CallError::Connection { message },
        ErrorCode(-32001) => CallError::Upstream {
            status: 504,
            message,
        },
        ErrorCode(c) if (-32099..=-32003).contains(&c) => CallError::Upstream {
            status: 502,
            message,
        },
        ErrorCode::METHOD_NOT_FOUND => CallError::tool_error(Fault::Tool, message),
        _ => CallError::tool_error(Fault::Caller, message),
    }
}

/// A transport send failure: walk the error's sources for a typed cause.
/// Anything without an HTTP status is a connection failure: the message
/// never reached the server.
fn map_transport(err: &(dyn std::error::Error + Send + Sync + 'static)) -> CallError {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(h) = e.downcast_ref::<HttpStatusError>() {
            return from_http_status(h.status, h.retry_after.as_deref());
        }
        cur = e.source();
    }
    CallError::Connection {
        message: err.to_string(),
    }
}

/// An HTTP status from an upstream transport.
pub(crate) fn from_http_status(status: u16, retry_after: Option<&str>) -> CallError {
    match status {
        429 => CallError::RateLimited {
            retry_after: retry_after
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs),
        },
        _ => CallError::Upstream {
            status,
            message: format!("upstream answered HTTP {status}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use rmcp::transport::DynamicTransportError;

    fn rpc(code: i32) -> ErrorKind {
        map_service_error(
            "t",
            ServiceError::McpError(ErrorData::new(ErrorCode(code), "m", None)),
        )
        .kind()
    }

    #[test]
    fn jsonrpc_codes_map_to_classes() {
        assert_eq!(rpc(-32602), ErrorKind::InvalidArgs);
        assert_eq!(rpc(-32603), ErrorKind::Upstream5xx);
        assert_eq!(rpc(-32000), ErrorKind::Connection);
        assert_eq!(rpc(-32001), ErrorKind::Upstream5xx);
        assert_eq!(rpc(-32050), ErrorKind::Upstream5xx);
        assert_eq!(rpc(-32700), ErrorKind::Internal);
        assert_eq!(rpc(-32021), ErrorKind::Internal);
        assert_eq!(rpc(-32002), ErrorKind::ToolFailed);
        assert_eq!(rpc(-32601), ErrorKind::ToolFailed);
        assert_eq!(rpc(42), ErrorKind::ToolFailed);
    }

    fn fault(code: i32) -> Option<Fault> {
        map_service_error(
            "t",
            ServiceError::McpError(ErrorData::new(ErrorCode(code), "m", None)),
        )
        .fault()
    }

    #[test]
    fn deliberate_answers_are_the_callers_and_a_missing_method_the_servers() {
        assert_eq!(fault(-32002), Some(Fault::Caller));
        assert_eq!(fault(42), Some(Fault::Caller));
        assert_eq!(fault(-32601), Some(Fault::Tool));
    }

    fn send_err(e: Box<dyn std::error::Error + Send + Sync>) -> CallError {
        map_service_error(
            "t",
            ServiceError::TransportSend(DynamicTransportError::from_parts(
                "test",
                std::any::TypeId::of::<()>(),
                e,
            )),
        )
    }

    #[derive(Debug, thiserror::Error)]
    #[error("wrapped: connection timeout rate limit")]
    struct Wrapper(#[source] HttpStatusError);

    #[test]
    fn transport_errors_map_by_type_through_wrappers() {
        let e = send_err(Box::new(Wrapper(HttpStatusError::new(
            429,
            Some("3".into()),
        ))));
        assert_eq!(e.kind(), ErrorKind::RateLimit);
        assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
        let e = send_err(Box::new(Wrapper(HttpStatusError::new(503, None))));
        assert_eq!(e.kind(), ErrorKind::Upstream5xx);
        let e = send_err(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert_eq!(e.kind(), ErrorKind::Connection);
        let e = map_service_error("t", ServiceError::TransportClosed);
        assert_eq!(e.kind(), ErrorKind::Connection);
        let e = map_service_error(
            "t",
            ServiceError::Timeout {
                timeout: Duration::from_secs(1),
            },
        );
        assert_eq!(e.kind(), ErrorKind::Timeout);
    }
}
