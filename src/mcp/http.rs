//! The streamable-HTTP MCP endpoint (`POST/GET/DELETE /mcp`, protocol
//! 2025-03-26 and later), for MCP clients that speak HTTP rather than stdio.
//!
//! Localhost only, and three checks before any JSON is read (MCP's
//! security guidance against DNS rebinding, also PraisonAI's
//! `mcp_security`): the `Host` header must name the loopback address and
//! port we listen on; an `Origin`, when a browser sends one, must be that
//! same loopback origin; and `Authorization: Bearer <token>` must carry the
//! per-launch token (compared in constant time). The token is written to a
//! `0600` file next to the agent socket, so only the owner's programs can
//! read it.
//!
//! Requests are answered with a single `application/json` body (the spec
//! allows this instead of an SSE stream); `GET` opens an SSE stream that
//! carries `notifications/tools/list_changed`.
//!
//! A call's owner is its HTTP request: the server drops the handler when
//! the client disconnects, so the call runs in a task of its own and the
//! handler holds a guard that cancels it when dropped; the task still ends
//! the call in its audit row (see [`crate::cancel`]). `DELETE` of a
//! session cancels the session's calls the same way.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::jsonrpc::{self, Incoming};
use super::server::{Conn, McpServer, runs_long};
use super::shape::Shape;
use crate::cancel::CancelReason;
use crate::context::{Caller, Session};
use crate::local_http::{constant_time_eq, is_local, new_token};

/// The header carrying the session id (MCP spec).
pub const SESSION_HEADER: &str = "mcp-session-id";

#[derive(Clone)]
struct Http {
    server: McpServer,
    token: Arc<str>,
    port: u16,
    sessions: Arc<Mutex<HashMap<String, Arc<Conn>>>>,
    /// The tasks running calls, which may outlive their handler.
    calls: TaskTracker,
    /// Fired at shutdown: ends the SSE streams, which would otherwise
    /// hold the graceful shutdown open until the deadline.
    shutdown: CancellationToken,
}

/// A bound HTTP endpoint.
#[derive(Debug)]
pub struct HttpEndpoint {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
}

impl HttpEndpoint {
    /// Binds `127.0.0.1:port` (`0` = pick a free port).
    ///
    /// # Errors
    /// The bind error.
    pub async fn bind(port: u16) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        Ok(Self { listener, addr })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown`, then lets the requests in flight finish:
    /// their calls run on until the server's
    /// [`McpServer::cancel_calls`], and connections still open at
    /// [`McpServer::cut_writes`] are dropped. Returns once every call task
    /// has ended (and written its audit row).
    pub async fn serve(self, server: McpServer, token: String, shutdown: CancellationToken) {
        self.serve_with(server, token, Router::new(), shutdown)
            .await;
    }

    /// Serves `/mcp` and, on the same listener, the routes of `others`
    /// (the console), each behind its own guard: the agents' token
    /// guard applies to `/mcp` only.
    pub async fn serve_with(
        self,
        server: McpServer,
        token: String,
        others: Router,
        shutdown: CancellationToken,
    ) {
        let state = Http {
            server,
            token: token.into(),
            port: self.addr.port(),
            sessions: Arc::default(),
            calls: TaskTracker::new(),
            shutdown: shutdown.clone(),
        };
        let app = Router::new()
            .route("/mcp", post(post_mcp).get(get_mcp).delete(delete_mcp))
            .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
            .layer(middleware::from_fn_with_state(state.clone(), guard))
            .with_state(state.clone())
            .merge(others);
        let serving = axum::serve(self.listener, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .into_future();
        tokio::select! {
            result = serving => if let Err(e) = result {
                tracing::warn!("HTTP endpoint stopped: {e}");
            },
            () = state.server.writes_cut() => {
                tracing::info!("shutdown deadline: closed the HTTP connections still open");
            }
        }
        state.calls.close();
        state.calls.wait().await;
        let sessions = std::mem::take(
            &mut *state
                .sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for conn in sessions.values() {
            state.server.end_session(conn, CancelReason::Shutdown).await;
        }
    }
}

/// Refuses requests whose Host, Origin or token is wrong, before routing.
async fn guard(State(s): State<Http>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host_ok = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| is_local(h, s.port));
    if !host_ok {
        return refuse(
            StatusCode::FORBIDDEN,
            "Host must be 127.0.0.1 or localhost with this port",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| is_local(o, s.port));
        if !ok {
            return refuse(StatusCode::FORBIDDEN, "Origin is not this local endpoint");
        }
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap_or("");
    if !constant_time_eq(bearer.as_bytes(), s.token.as_bytes()) {
        return refuse(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    }
    next.run(req).await
}

fn refuse(status: StatusCode, why: &'static str) -> Response {
    (status, why).into_response()
}

fn session_of(s: &Http, headers: &HeaderMap) -> Option<(String, Arc<Conn>)> {
    let id = headers.get(SESSION_HEADER)?.to_str().ok()?.to_owned();
    let conn = s
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)?
        .clone();
    Some((id, conn))
}

/// Largest request body. Smaller than the socket's frame limit: an HTTP
/// body is read whole before it is parsed, outside the socket's frame
/// budget, so the endpoint bounds it on its own.
pub const MAX_BODY: usize = 2 * 1024 * 1024;

async fn post_mcp(
    State(s): State<Http>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => return unread_body(&e),
    };
    if let Err(e) = Shape::of(&body) {
        let prefix = &body[..body.len().min(super::leading_id::PREFIX)];
        let id = super::leading_id::leading_id(prefix).unwrap_or(Value::Null);
        return json_response(
            StatusCode::BAD_REQUEST,
            jsonrpc::error_line(&id, jsonrpc::INVALID_REQUEST, &e.to_string()),
            None,
        );
    }
    let msg = match jsonrpc::parse(&body) {
        Ok(m) => m,
        Err(r) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                jsonrpc::error_line(&r.id, r.code, &r.message),
                None,
            );
        }
    };
    let session = session_of(&s, &headers);
    match msg {
        Incoming::Request { id, method, params } if method == "initialize" => {
            let sid = new_token();
            let caller = Caller::via("http");
            let conn = Arc::new(
                s.server
                    .conn(Session::new(format!("http-{}", &sid[..12]), caller)),
            );
            let line = s
                .server
                .request(&conn, &id, &method, params, conn.cancel_token())
                .await;
            s.sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(sid.clone(), conn);
            json_response(StatusCode::OK, line, Some(sid))
        }
        Incoming::Request { id, method, params } => match session {
            Some((_, conn)) if runs_long(&method) => {
                let line = owned_request(&s, conn, id, method, params).await;
                json_response(StatusCode::OK, line, None)
            }
            Some((_, conn)) => {
                let line = s
                    .server
                    .request(&conn, &id, &method, params, conn.cancel_token())
                    .await;
                json_response(StatusCode::OK, line, None)
            }
            None => refuse(
                StatusCode::NOT_FOUND,
                "unknown or missing Mcp-Session-Id; initialize first",
            ),
        },
        Incoming::Notification { method, params } => {
            if let Some((_, conn)) = session {
                s.server.notification(&conn, &method, params);
            }
            StatusCode::ACCEPTED.into_response()
        }
        Incoming::Response => StatusCode::ACCEPTED.into_response(),
    }
}

/// Runs a request that may take long (a call) in a task of its own, owned
/// by this handler: if the server drops the handler (its client
/// disconnected), the guard cancels the call, which still ends in its audit
/// row in the task. `notifications/cancelled` reaches it as on a socket.
async fn owned_request(
    s: &Http,
    conn: Arc<Conn>,
    id: Value,
    method: String,
    params: Option<Value>,
) -> Vec<u8> {
    let cancel = conn.begin_request(&id);
    let owner = cancel.cancel_on_drop(CancelReason::ClientDisconnected);
    let (server, c2) = (s.server.clone(), cancel.clone());
    let task = s.calls.spawn(async move {
        let line = server.request(&conn, &id, &method, params, &c2).await;
        conn.end_request(&id, &c2);
        line
    });
    let line = task.await.unwrap_or_else(|e| {
        jsonrpc::error_line(&Value::Null, jsonrpc::INTERNAL_ERROR, &e.to_string())
    });
    owner.disarm();
    line
}

/// The answer to a body that was not read (over [`MAX_BODY`], or cut
/// off): a JSON-RPC error like any other refusal, and `Connection: close`.
/// The server closes a connection whose body it left unread; without the
/// header, a client would put it back in its pool and lose its next
/// request to the close.
fn unread_body(e: &BytesRejection) -> Response {
    let message = if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        format!(
            "request body exceeds the {} MiB limit of the HTTP endpoint; \
             send large arguments over the agent socket, whose limit is {} MiB",
            MAX_BODY >> 20,
            super::frame::MAX_FRAME >> 20
        )
    } else {
        format!("the request body could not be read: {}", e.body_text())
    };
    let line = jsonrpc::error_line(&Value::Null, jsonrpc::INVALID_REQUEST, &message);
    let mut r = json_response(e.status(), line, None);
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

fn json_response(status: StatusCode, mut line: Vec<u8>, session: Option<String>) -> Response {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    let mut r = (status, [(header::CONTENT_TYPE, "application/json")], line).into_response();
    if let Some(sid) = session.and_then(|s| HeaderValue::from_str(&s).ok()) {
        r.headers_mut().insert(SESSION_HEADER, sid);
    }
    r
}

/// The server → client stream: `list_changed` notifications as SSE.
async fn get_mcp(State(s): State<Http>, headers: HeaderMap) -> Response {
    let Some((_, conn)) = session_of(&s, &headers) else {
        return refuse(StatusCode::NOT_FOUND, "unknown or missing Mcp-Session-Id");
    };
    let changes = s.server.engine().registry().subscribe_changes();
    let stream = futures::stream::unfold(changes, |mut rx| async move {
        rx.changed().await.ok()?;
        let version = *rx.borrow_and_update();
        Some((version, rx))
    })
    .take_until(s.shutdown.clone().cancelled_owned())
    .filter(move |_| std::future::ready(conn.is_initialized()))
    .map(|_| {
        let line = jsonrpc::notification_line("notifications/tools/list_changed");
        let data = String::from_utf8_lossy(&line).trim_end().to_owned();
        Ok::<_, std::convert::Infallible>(Bytes::from(format!("event: message\ndata: {data}\n\n")))
    });
    let mut r = axum::body::Body::from_stream(stream).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn delete_mcp(State(s): State<Http>, headers: HeaderMap) -> Response {
    let Some((id, conn)) = session_of(&s, &headers) else {
        return refuse(StatusCode::NOT_FOUND, "unknown or missing Mcp-Session-Id");
    };
    s.sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id);
    s.server
        .end_session(&conn, CancelReason::ClientDisconnected)
        .await;
    StatusCode::NO_CONTENT.into_response()
}
