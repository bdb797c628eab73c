//! The checks every console request passes before a handler runs, and the
//! headers every console response carries
//! (docs/architecture/console-api.md, Auth):
//!
//! - `Host` must be `127.0.0.1:<port>` or `localhost:<port>` (DNS
//!   rebinding), as for `/mcp`;
//! - an `Origin` must be our own origin, and `POST`/`PUT`/`DELETE`/`PATCH`
//!   must carry one (a browser always sends it on those, so a request
//!   without one did not come from our page);
//! - `/api` needs the console session cookie or the console bearer token.
//!   The agents' MCP token is refused with 403 and a message saying which
//!   token the console takes: an agent holding its own token must never
//!   reach a console method.
//! - Every response gets the strict CSP, `nosniff` and `no-referrer`;
//!   `/api` answers are never cached.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::api::Actor;
use super::auth::{COOKIE, ConsoleAuth};
use super::error::{ApiError, Code};
use crate::local_http::{constant_time_eq, is_local};

/// The Content-Security-Policy of every console response: only our own
/// scripts, styles, images and connections; no inline code, no framing.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; \
form-action 'self'; frame-ancestors 'none'";

/// What the checks need.
#[derive(Clone)]
pub(super) struct Gate {
    pub(super) auth: ConsoleAuth,
    pub(super) port: u16,
    pub(super) agent_token: Arc<str>,
}

fn refuse(req_path: &str, code: Code, message: &str) -> Response {
    if req_path.starts_with("/api") {
        ApiError::new(code, message).into_response()
    } else {
        (code.status(), message.to_owned()).into_response()
    }
}

fn changes_state(m: &Method) -> bool {
    [Method::POST, Method::PUT, Method::DELETE, Method::PATCH].contains(m)
}

/// Host and Origin, for every console path.
pub(super) async fn host_and_origin(State(g): State<Gate>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let headers = req.headers();
    let host_ok = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| is_local(h, g.port));
    if !host_ok {
        return refuse(
            &path,
            Code::Forbidden,
            "Host must be 127.0.0.1 or localhost with this port; open the console from the URL `toolgate console` prints",
        );
    }
    let origin = headers.get(header::ORIGIN).map(|o| {
        o.to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| is_local(o, g.port))
    });
    match origin {
        Some(false) => {
            return refuse(
                &path,
                Code::Forbidden,
                "Origin is not this console; requests from other pages are refused",
            );
        }
        None if changes_state(req.method()) => {
            return refuse(
                &path,
                Code::Forbidden,
                "a request that changes something must carry this console's Origin header",
            );
        }
        _ => {}
    }
    next.run(req).await
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Who is asking, from the session cookie or the console bearer token.
fn actor(g: &Gate, headers: &HeaderMap) -> Result<Actor, (Code, &'static str)> {
    if let Some(bearer) = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
    {
        if g.auth.is_bearer(bearer) {
            return Ok(Actor::Bearer);
        }
        if constant_time_eq(bearer.as_bytes(), g.agent_token.as_bytes()) {
            return Err((
                Code::Forbidden,
                "this is the agents' MCP token; the console takes its own: the login link from `toolgate console`, or the token in console.token in the data directory",
            ));
        }
        return Err((
            Code::Unauthorized,
            "wrong console token; use the one in console.token in the data directory",
        ));
    }
    match cookie(headers, COOKIE) {
        Some(session) if let Some(surface) = g.auth.surface_of(session) => Ok(Actor::Session {
            session: ConsoleAuth::session_label(session),
            surface,
        }),
        Some(_) => Err((
            Code::Unauthorized,
            "this console session is no longer valid (newer sign-ins pushed it out, or the engine's sessions were cleared); run `toolgate console` for a fresh link",
        )),
        None => Err((
            Code::Unauthorized,
            "not logged in to the console; run `toolgate console` for a login link",
        )),
    }
}

/// The console role, for `/api`.
pub(super) async fn authenticate(State(g): State<Gate>, mut req: Request, next: Next) -> Response {
    match actor(&g, req.headers()) {
        Ok(who) => {
            req.extensions_mut().insert(who);
            next.run(req).await
        }
        Err((code, message)) => ApiError::new(code, message).into_response(),
    }
}

/// The security headers of every console response.
pub(super) async fn security_headers(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api");
    let mut r = next.run(req).await;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if api {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; tg_console=abc; b=2"),
        );
        assert_eq!(cookie(&h, COOKIE), Some("abc"));
        assert_eq!(cookie(&h, "tg"), None);
    }
}
