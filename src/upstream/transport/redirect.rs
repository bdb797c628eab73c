//! Redirects of upstream HTTP connections: followed within the configured
//! origin, refused across origins.
//!
//! Every request to an upstream server carries its configured headers and
//! `Authorization`. reqwest's default policy follows any redirect and
//! strips only the headers it knows to be credentials (`Authorization`,
//! `Cookie`), so an `X-Api-Key` would reach whatever host a redirect names.
//! A cross-origin redirect is therefore an error naming both origins, not
//! followed at all: following it without the headers (the other choice)
//! would still connect the server's name, trust level and tools to a host
//! nobody configured, whose tool descriptions the agent would then read as
//! the configured server's. A person who means the move changes the URL.
//!
//! Within the origin, redirects are followed (at most [`MAX_REDIRECTS`]).
//! The streamable HTTP client follows only 307 and 308 there, as rmcp's
//! own policy does: a 301-303 turns the POST of a JSON-RPC message into a
//! bodyless GET. WebSocket upstreams follow no redirect at all
//! (tungstenite does not), and say where one pointed.

use std::sync::{Arc, Mutex, PoisonError};

use url::Url;

/// Redirects followed for one request.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// Why a redirect was not followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedirectRefused {
    /// It leads to another origin.
    #[error(
        "{from} redirected to another origin, {to}; not followed, as the server's headers and credentials would go there too (configure the new URL if the move is right)"
    )]
    CrossOrigin {
        /// The configured origin.
        from: String,
        /// Where the redirect leads.
        to: String,
    },
    /// Too many hops.
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooMany,
}

/// What to do with a redirect to `next` after the requests to `previous`
/// (the first being the configured URL): `Ok(())` follows it.
pub(crate) fn check(previous: &[Url], next: &Url) -> Result<(), RedirectRefused> {
    let Some(first) = previous.first() else {
        return Ok(());
    };
    if first.origin() != next.origin() {
        return Err(RedirectRefused::CrossOrigin {
            from: first.origin().ascii_serialization(),
            to: next.origin().ascii_serialization(),
        });
    }
    if previous.len() > MAX_REDIRECTS {
        return Err(RedirectRefused::TooMany);
    }
    Ok(())
}

/// The policy of the legacy SSE client (GET of the stream, POSTs of
/// messages).
pub(crate) fn policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| match check(attempt.previous(), attempt.url()) {
        Ok(()) => attempt.follow(),
        Err(e) => attempt.error(e),
    })
}

/// The last redirect a client refused. rmcp reports a failed request by
/// the text of reqwest's error, which leaves out its source (the reason),
/// so the streamable HTTP client's policy leaves the reason here too.
pub(crate) type LastRefusal = Arc<Mutex<Option<RedirectRefused>>>;

/// The refusal noted in `last`, if any.
pub(crate) fn take(last: &LastRefusal) -> Option<RedirectRefused> {
    last.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// The policy of the streamable HTTP client (rmcp's reqwest): within the
/// origin only 307 and 308 are followed, the others are handed back as the
/// response (see the module docs). A refusal is also noted in `last`.
pub(crate) fn streamable_policy(last: LastRefusal) -> reqwest_rmcp::redirect::Policy {
    reqwest_rmcp::redirect::Policy::custom(move |attempt| {
        match check(attempt.previous(), attempt.url()) {
            Err(e) => {
                *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(e.clone());
                attempt.error(e)
            }
            Ok(()) => {
                let keeps_body = matches!(
                    attempt.status(),
                    reqwest_rmcp::StatusCode::TEMPORARY_REDIRECT
                        | reqwest_rmcp::StatusCode::PERMANENT_REDIRECT
                );
                if keeps_body {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }
        }
    })
}

/// The refused redirect behind a failed request, if that is why it failed.
pub(crate) fn refused(e: &(dyn std::error::Error + 'static)) -> Option<RedirectRefused> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<RedirectRefused>() {
            return Some(r.clone());
        }
        cur = err.source();
    }
    None
}

/// An error and its sources, joined: reqwest and rmcp put the reason a
/// request failed (a refused redirect among them) in the source chain,
/// not in their own message.
pub(crate) fn with_sources(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cur = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn only_the_configured_origin_is_followed() {
        let start = [url("https://mcp.example.com/sse")];
        assert_eq!(
            check(&start, &url("https://mcp.example.com/v2/sse")),
            Ok(())
        );
        for other in [
            "https://evil.example.net/sse",
            "http://mcp.example.com/sse",
            "https://mcp.example.com:8443/sse",
        ] {
            let e = check(&start, &url(other)).unwrap_err().to_string();
            assert!(e.contains("https://mcp.example.com redirected"), "{e}");
            assert!(
                e.contains(&url(other).origin().ascii_serialization()),
                "{e}"
            );
        }
        // A second hop is judged against the configured origin, not the
        // previous hop.
        let hops = [url("https://a.example/x"), url("https://a.example/y")];
        assert!(check(&hops, &url("https://b.example/z")).is_err());
        let many: Vec<Url> = (0..=MAX_REDIRECTS)
            .map(|i| url(&format!("https://a.example/{i}")))
            .collect();
        assert_eq!(
            check(&many, &url("https://a.example/n")),
            Err(RedirectRefused::TooMany)
        );
    }

    /// A server on loopback: `/from` redirects (307) to `/to` on the same
    /// origin, which answers with the `x-api-key` it got.
    async fn same_origin_server() -> String {
        use axum::routing::get;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route(
                "/from",
                get(|| async {
                    (
                        axum::http::StatusCode::TEMPORARY_REDIRECT,
                        [("location", "/to")],
                    )
                }),
            )
            .route(
                "/to",
                get(|h: axum::http::HeaderMap| async move {
                    h.get("x-api-key")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("none")
                        .to_owned()
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        origin
    }

    #[tokio::test]
    async fn a_same_origin_redirect_is_followed_with_the_headers() {
        let origin = same_origin_server().await;
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(policy())
            .build()
            .unwrap();
        let body = client
            .get(format!("{origin}/from"))
            .header("x-api-key", "k-123")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "k-123");
        let client = reqwest_rmcp::Client::builder()
            .no_proxy()
            .redirect(streamable_policy(LastRefusal::default()))
            .build()
            .unwrap();
        let body = client
            .get(format!("{origin}/from"))
            .header("x-api-key", "k-456")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "k-456");
    }
}
