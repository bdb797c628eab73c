//! The console's routes (docs/architecture/console-api.md, HTTP API): thin
//! handlers that read the request, call [`ConsoleApi`] or the policy
//! editor, and answer JSON or an [`ApiError`].
//!
//! Bad input is answered before anything is called: a body that is not
//! JSON is `400 bad_request` with serde's line and column; JSON of the
//! wrong shape is `422 invalid` naming the field (`doc.rules[0].effect`);
//! an id that is not a number is `404 not_found` like any unknown id.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::api::{
    Actor, ApiResult, ConsoleApi, CorePinBody, DeferralBody, FeedItem, PolicyPut, PolicyTestBody,
    ScopeBody,
};
use super::auth::COOKIE;
use super::error::{ApiError, Code};
use super::guard::{self, Gate};
use super::{Console, assets};
use crate::control::types::ExportFormat;
use crate::policy::document::{FieldError, PolicyDoc};
use crate::policy::editor::Validation;
use crate::wire::DecisionBody;

/// How often an idle event stream sends `: keepalive`
/// (docs/architecture/console-api.md, Event stream).
pub(super) const KEEPALIVE: Duration = Duration::from_secs(15);

type S<A> = State<Arc<Console<A>>>;

pub(super) fn router<A: ConsoleApi>(console: Console<A>) -> Router {
    let gate = Gate {
        auth: console.auth.clone(),
        port: console.port,
        agent_token: console.agent_token.clone(),
    };
    let api = Router::new()
        .route("/snapshot", get(snapshot::<A>))
        .route("/events", get(events::<A>))
        .route("/calls/{id}", get(call::<A>))
        .route("/audit", get(audit::<A>))
        .route("/audit/export", get(audit_export::<A>))
        .route("/approvals/{id}", get(approval::<A>))
        .route("/approvals/{id}/approve", post(approve::<A>))
        .route("/approvals/{id}/deny", post(deny::<A>))
        .route("/approvals/{id}/scope", post(scope::<A>))
        .route("/team", get(team::<A>))
        .route("/team/calls", get(team_calls::<A>))
        .route("/team/{engine}/{id}/approve", post(team_approve::<A>))
        .route("/team/{engine}/{id}/deny", post(team_deny::<A>))
        .route("/rules", get(rules::<A>))
        .route("/rules/{id}", delete(revoke_rule::<A>))
        .route("/breakers/{tool}/reset", post(reset_breaker::<A>))
        .route("/servers/{name}/restart", post(restart_server::<A>))
        .route("/servers/{name}/stderr", get(server_stderr::<A>))
        .route("/pins/{tool}", get(pin::<A>))
        .route("/pins/{tool}/approve", post(approve_pin::<A>))
        .route("/tools/search", get(search_tools::<A>))
        .route("/tools/{name}", get(tool::<A>))
        .route("/tools/{name}/core", put(pin_core::<A>))
        .route("/clients/{name}/deferral", put(choose_deferral::<A>))
        .route("/policy", get(policy::<A>).put(put_policy::<A>))
        .route("/policy/validate", post(validate_policy::<A>))
        .route("/policy/test", post(policy_test::<A>))
        .route("/connect", get(connect::<A>))
        .route("/connect/clients", get(connect_clients::<A>))
        .route("/connect/plan", post(connect_plan::<A>))
        .route("/connect/apply", post(connect_apply::<A>))
        .route("/health", get(health::<A>))
        .route("/state/{slice}", get(slice::<A>))
        .fallback(api_not_found)
        .layer(middleware::from_fn_with_state(
            gate.clone(),
            guard::authenticate,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(super::error::MAX_BODY))
        .layer(middleware::from_fn(super::error::json_refusals));
    Router::new()
        .route("/login", get(login::<A>))
        .nest("/api", api)
        .fallback(ui::<A>)
        .layer(middleware::from_fn_with_state(gate, guard::host_and_origin))
        .layer(middleware::from_fn(guard::security_headers))
        .with_state(Arc::new(console))
}

/// Any serialisable answer as JSON.
fn json<T: Serialize>(r: ApiResult<T>) -> Response {
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

/// A JSON request body; empty means `{}` (bodies are optional on the
/// decision routes).
fn body<T: DeserializeOwned>(bytes: &Bytes) -> ApiResult<T> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::new(
                Code::BadRequest,
                format!("the request body is not valid JSON: {inner}"),
            )
        } else if field == "." {
            // The body as a whole (e.g. a missing required field).
            ApiError::new(Code::Invalid, inner.to_string())
        } else {
            ApiError::invalid(field, inner.to_string())
        }
    })
}

fn id(raw: &str, what: &str) -> ApiResult<i64> {
    raw.parse().map_err(|_| {
        ApiError::new(
            Code::NotFound,
            format!("{what} `{raw}` does not exist (ids are numbers)"),
        )
    })
}

async fn api_not_found(req: Request) -> ApiError {
    ApiError::new(
        Code::NotFound,
        format!("no console API route {} {}", req.method(), req.uri().path()),
    )
}

async fn ui<A: ConsoleApi>(State(s): S<A>, req: Request) -> Response {
    assets::serve(&s.ui, req.method(), req.uri()).await
}

/// The page a used or expired login link shows (no script, no style: the
/// CSP forbids inline ones).
const EXPIRED: &str = "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>toolgate console: link expired</title></head>\n<body>\n<h1>This link was already used or expired.</h1>\n<p>Run <code>toolgate console</code> for a fresh one.</p>\n</body>\n</html>\n";

#[derive(Deserialize)]
struct LoginQuery {
    t: Option<String>,
}

async fn login<A: ConsoleApi>(State(s): S<A>, Query(q): Query<LoginQuery>) -> Response {
    let session = q.t.as_deref().and_then(|t| s.auth.redeem(t));
    let no_store = (header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    match session {
        Some(id) => {
            let cookie = format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/");
            match HeaderValue::from_str(&cookie) {
                Ok(cookie) => (
                    StatusCode::SEE_OTHER,
                    [
                        (header::LOCATION, HeaderValue::from_static("/")),
                        (header::SET_COOKIE, cookie),
                        no_store,
                    ],
                )
                    .into_response(),
                Err(_) => ApiError::new(Code::Internal, "bad session id").into_response(),
            }
        }
        None => (StatusCode::UNAUTHORIZED, [no_store], Html(EXPIRED)).into_response(),
    }
}

async fn snapshot<A: ConsoleApi>(State(s): S<A>) -> Response {
    json(s.api.snapshot().await)
}

#[derive(Deserialize)]
struct EventsQuery {
    after: Option<String>,
}

fn seq(raw: &str, what: &str) -> ApiResult<u64> {
    raw.trim().parse().map_err(|_| {
        ApiError::new(
            Code::BadRequest,
            format!("{what} must be a sequence number, got `{raw}`"),
        )
    })
}

/// SSE: `id: <seq>`, `event: message`, `data: <envelope>`; a last
/// `event: reload` with `{"seq"}` when the stream cannot resume. A
/// reconnecting `EventSource` sends `Last-Event-ID`, which is newer than
/// the `after` in the URL it was opened with, so it wins.
async fn events<A: ConsoleApi>(
    State(s): S<A>,
    headers: HeaderMap,
    Query(q): Query<EventsQuery>,
) -> Response {
    let last = headers
        .get("last-event-id")
        .map(|v| seq(v.to_str().unwrap_or("?"), "Last-Event-ID"))
        .transpose();
    let after = q.after.as_deref().map(|a| seq(a, "after")).transpose();
    let after = match (last, after) {
        (Err(e), _) | (_, Err(e)) => return e.into_response(),
        (Ok(last), Ok(after)) => last.or(after),
    };
    let feed = match s.api.events(after) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let stream = feed.map(|item| {
        Ok::<_, Infallible>(match item {
            FeedItem::Event { seq, json } => SseEvent::default()
                .id(seq.to_string())
                .event("message")
                .data(json),
            FeedItem::Reload { seq } => SseEvent::default()
                .event("reload")
                .data(format!("{{\"seq\":{seq}}}")),
        })
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEPALIVE).text(" keepalive"))
        .into_response()
}

async fn call<A: ConsoleApi>(State(s): S<A>, Path(raw): Path<String>) -> Response {
    match id(&raw, "call") {
        Ok(id) => json(s.api.call(id).await),
        Err(e) => e.into_response(),
    }
}

fn audit_query<A: ConsoleApi>(query: Option<&str>) -> ApiResult<A::AuditQuery> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(
        query.unwrap_or_default().as_bytes(),
    ));
    serde_path_to_error::deserialize(de)
        .map_err(|e| ApiError::invalid(e.path().to_string(), e.into_inner().to_string()))
}

async fn audit<A: ConsoleApi>(State(s): S<A>, req: Request) -> Response {
    match audit_query::<A>(req.uri().query()) {
        Ok(q) => json(s.api.audit(q).await),
        Err(e) => e.into_response(),
    }
}

#[derive(Deserialize)]
struct FormatQuery {
    format: Option<ExportFormat>,
}

async fn audit_export<A: ConsoleApi>(State(s): S<A>, req: Request) -> Response {
    let query = req.uri().query().unwrap_or_default();
    // `format` is ours; the other keys are the service's filters.
    let format: FormatQuery = match serde_urlencoded::from_bytes(query.as_bytes()) {
        Ok(f) => f,
        Err(e) => {
            return ApiError::invalid("format", format!("{e}; use jsonl or csv")).into_response();
        }
    };
    let rest: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form_urlencoded::parse(query.as_bytes()).filter(|(k, _)| k != "format"))
        .finish();
    let q = match audit_query::<A>(Some(&rest)) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    match s
        .api
        .audit_export(q, format.format.unwrap_or(ExportFormat::Jsonl))
        .await
    {
        Ok(export) => {
            let disposition = format!(
                "attachment; filename=\"{}\"",
                export.filename.replace(['"', '\\', '\r', '\n'], "_")
            );
            let body = export.body.map(|chunk| {
                chunk.map_err(|e| {
                    tracing::warn!("audit export stopped early: {}", e.message);
                    std::io::Error::other(e.message)
                })
            });
            let mut r = axum::body::Body::from_stream(body).into_response();
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(export.content_type),
            );
            if let Ok(v) = HeaderValue::from_str(&disposition) {
                h.insert(header::CONTENT_DISPOSITION, v);
            }
            r
        }
        Err(e) => e.into_response(),
    }
}

async fn approval<A: ConsoleApi>(State(s): S<A>, Path(raw): Path<String>) -> Response {
    match id(&raw, "approval request") {
        Ok(id) => json(s.api.approval(id).await),
        Err(e) => e.into_response(),
    }
}

async fn approve<A: ConsoleApi>(
    State(s): S<A>,
    Extension(by): Extension<Actor>,
    Path(raw): Path<String>,
    bytes: Bytes,
) -> Response {
    let parsed =
        id(&raw, "approval request").and_then(|id| Ok((id, body::<DecisionBody>(&bytes)?)));
    match parsed {
        Ok((id, b)) => json(s.api.approve(id, b, by).await),
        Err(e) => e.into_response(),
    }
}

async fn deny<A: ConsoleApi>(
    State(s): S<A>,
    Extension(by): Extension<Actor>,
    Path(raw): Path<String>,
    bytes: Bytes,
) -> Response {
    let parsed =
        id(&raw, "approval request").and_then(|id| Ok((id, body::<DecisionBody>(&bytes)?)));
    match parsed {
        Ok((id, b)) => json(s.api.deny(id, b, by).await),
        Err(e) => e.into_response(),
    }
}

async fn scope<A: ConsoleApi>(State(s): S<A>, Path(raw): Path<String>, bytes: Bytes) -> Response {
    let parsed = id(&raw, "approval request").and_then(|id| Ok((id, body::<ScopeBody>(&bytes)?)));
    match parsed {
        Ok((id, b)) => json(s.api.preview_scope(id, b).await),
        Err(e) => e.into_response(),
    }
}

async fn team<A: ConsoleApi>(State(s): S<A>) -> Response {
    json(s.api.team().await)
}

async fn team_calls<A: ConsoleApi>(State(s): S<A>, req: Request) -> Response {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(
        req.uri().query().unwrap_or_default().as_bytes(),
    ));
    match serde_path_to_error::deserialize(de) {
        Ok(q) => json(s.api.team_calls(q).await),
        Err(e) => {
            ApiError::invalid(e.path().to_string(), e.into_inner().to_string()).into_response()
        }
    }
}

/// A team request's engine and id, and the decision's body.
fn team_decision(raw: &str, bytes: &Bytes) -> ApiResult<(i64, DecisionBody)> {
    let id = id(raw, "team request")?;
    let body = body::<DecisionBody>(bytes)?;
    if body.decider.is_some() {
        return Err(ApiError::invalid(
            "decider",
            "a team decision is recorded as this engine's user on this host; leave `decider` out",
        ));
    }
    Ok((id, body))
}

async fn team_approve<A: ConsoleApi>(
    State(s): S<A>,
    Path((engine, raw)): Path<(String, String)>,
    bytes: Bytes,
) -> Response {
    match team_decision(&raw, &bytes) {
        Ok((id, b)) => json(s.api.team_approve(engine, id, b).await),
        Err(e) => e.into_response(),
    }
}

async fn team_deny<A: ConsoleApi>(
    State(s): S<A>,
    Path((engine, raw)): Path<(String, String)>,
    bytes: Bytes,
) -> Response {
    match team_decision(&raw, &bytes) {
        Ok((id, b)) => json(s.api.team_deny(engine, id, b).await),
        Err(e) => e.into_response(),
    }
}

async fn rules<A: ConsoleApi>(State(s): S<A>) -> Response {
    json(s.api.rules().await)
}

async fn revoke_rule<A: ConsoleApi>(State(s): S<A>, Path(raw): Path<String>) -> Response {
    match id(&raw, "remembered rule") {
        Ok(id) => json(s.api.revoke_rule(id).await),
        Err(e) => e.into_response(),
    }
}

async fn reset_breaker<A: ConsoleApi>(State(s): S<A>, Path(tool): Path<String>) -> Response {
    json(s.api.reset_breaker(tool).await)
}

async fn restart_server<A: ConsoleApi>(State(s): S<A>, Path(name): Path<String>) -> Response {
    json(s.api.restart_server(name).await)
}

#[derive(Deserialize)]
struct AfterQuery {
    after: Option<String>,
}

async fn server_stderr<A: ConsoleApi>(
    State(s): S<A>,
    Path(name): Path<String>,
    Query(q): Query<AfterQuery>,
) -> Response {
    match q.after.as_deref().map(|a| seq(a, "after")).transpose() {
        Ok(after) => json(s.api.server_stderr(name, after.unwrap_or(0)).await),
        Err(e) => e.into_response(),
    }
}

async fn pin<A: ConsoleApi>(State(s): S<A>, Path(tool): Path<String>) -> Response {
    json(s.api.pin_diff(tool).await)
}

async fn approve_pin<A: ConsoleApi>(State(s): S<A>, Path(tool): Path<String>) -> Response {
    json(s.api.approve_pin(tool).await)
}

async fn tool<A: ConsoleApi>(State(s): S<A>, Path(name): Path<String>) -> Response {
    json(s.api.tool(name).await)
}

async fn policy_test<A: ConsoleApi>(State(s): S<A>, bytes: Bytes) -> Response {
    match body::<PolicyTestBody>(&bytes) {
        Ok(b) => json(s.api.policy_test(b).await),
        Err(e) => e.into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchQuery {
    q: String,
    limit: Option<usize>,
}

async fn search_tools<A: ConsoleApi>(State(s): S<A>, req: Request) -> Response {
    let query = req.uri().query().unwrap_or_default();
    match serde_urlencoded::from_str::<SearchQuery>(query) {
        Ok(q) => json(s.api.search_tools(q.q, q.limit.unwrap_or(50)).await),
        Err(e) => ApiError::new(
            Code::BadRequest,
            format!("search takes `q` (the words) and an optional `limit`: {e}"),
        )
        .into_response(),
    }
}

async fn choose_deferral<A: ConsoleApi>(
    State(s): S<A>,
    Path(client): Path<String>,
    bytes: Bytes,
) -> Response {
    match body::<DeferralBody>(&bytes) {
        Ok(b) => json(s.api.choose_deferral(client, b).await),
        Err(e) => e.into_response(),
    }
}

async fn pin_core<A: ConsoleApi>(
    State(s): S<A>,
    Path(tool): Path<String>,
    bytes: Bytes,
) -> Response {
    match body::<CorePinBody>(&bytes) {
        Ok(b) => json(s.api.pin_core(tool, b).await),
        Err(e) => e.into_response(),
    }
}

async fn connect<A: ConsoleApi>(State(s): S<A>) -> Response {
    json(s.api.connect().await)
}

fn desk<A>(s: &Console<A>) -> ApiResult<&super::connect::ConnectDesk> {
    s.connect
        .as_ref()
        .ok_or_else(|| ApiError::unwired("connecting MCP clients"))
}

async fn connect_clients<A: ConsoleApi>(State(s): S<A>) -> Response {
    match desk(&s) {
        Ok(d) => json(d.status().await),
        Err(e) => e.into_response(),
    }
}

async fn connect_plan<A: ConsoleApi>(State(s): S<A>, bytes: Bytes) -> Response {
    match desk(&s).and_then(|d| Ok((d, body::<super::connect::PlanBody>(&bytes)?))) {
        Ok((d, b)) => json(d.plan(b).await),
        Err(e) => e.into_response(),
    }
}

async fn connect_apply<A: ConsoleApi>(State(s): S<A>, bytes: Bytes) -> Response {
    match desk(&s).and_then(|d| Ok((d, body::<super::connect::ApplyBody>(&bytes)?))) {
        Ok((d, b)) => json(d.apply(b).await),
        Err(e) => e.into_response(),
    }
}

async fn health<A: ConsoleApi>(State(s): S<A>) -> Response {
    json(s.api.health().await)
}

async fn slice<A: ConsoleApi>(State(s): S<A>, Path(name): Path<String>) -> Response {
    match crate::slices::Slice::parse(&name) {
        Some(slice) => json(s.api.slice(slice).await),
        None => ApiError::new(
            Code::NotFound,
            format!("no state slice `{name}` (tools, policy, servers, breakers)"),
        )
        .into_response(),
    }
}

async fn policy<A: ConsoleApi>(State(s): S<A>) -> Response {
    json(s.editor.read().map_err(ApiError::from))
}

/// Validation answers problems in its body (200, `ok: false`), including
/// a doc of the wrong shape, so a form shows them next to their fields;
/// only a body that is not JSON is an error.
async fn validate_policy<A: ConsoleApi>(State(s): S<A>, bytes: Bytes) -> Response {
    let doc = match body::<PolicyDoc>(&bytes) {
        Ok(doc) => doc,
        Err(e) if e.code == Code::Invalid => {
            return Json(Validation {
                ok: false,
                diff: String::new(),
                errors: vec![FieldError {
                    field: e.field,
                    message: e.message,
                }],
                warnings: Vec::new(),
            })
            .into_response();
        }
        Err(e) => return e.into_response(),
    };
    json(s.editor.validate(&doc).map_err(ApiError::from))
}

async fn put_policy<A: ConsoleApi>(State(s): S<A>, bytes: Bytes) -> Response {
    match body::<PolicyPut>(&bytes) {
        Ok(p) => json(
            s.editor
                .apply(&p.doc, p.base_version)
                .await
                .map_err(ApiError::from),
        ),
        Err(e) => e.into_response(),
    }
}
