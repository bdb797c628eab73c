//! Legacy HTTP+SSE servers (MCP 2024-11-05). rmcp 3.11 has no client for
//! it, so this is a small [`Transport`] of our own:
//!
//! - `GET <url>` with `Accept: text/event-stream` opens the event stream;
//!   its first `endpoint` event carries the URL to POST messages to
//!   (usually relative, `/message?sessionId=…`).
//! - Every `message` event's data is one JSON-RPC message from the server.
//! - Every outbound message is one `POST` of JSON to the endpoint URL; the
//!   reply arrives on the event stream, not in the POST's response.
//!
//! The endpoint must have the same origin as the SSE URL (the spec's rule):
//! otherwise a server could make toolgate POST — with the configured
//! credentials — anywhere it likes. For the same reason no request follows
//! a redirect to another origin (`redirect`). A non-2xx POST fails with rmcp's typed
//! [`HttpStatusError`], so 429 and 5xx map exactly as for streamable HTTP.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use rmcp::ClientHandler;
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::HttpStatusError;
use sse_stream::{Sse, SseStream};
use url::Url;

use super::{Connection, redirect};
use crate::upstream::errors::UpstreamError;

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Why a POST to a legacy SSE server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseSendError {
    /// The request did not complete (refused, reset, DNS).
    #[error("POST failed: {0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with an error status.
    #[error(transparent)]
    Status(#[from] HttpStatusError),
    /// The message could not be serialised (a bug).
    #[error("cannot serialise message: {0}")]
    Json(#[from] serde_json::Error),
}

/// A client transport for the legacy HTTP+SSE protocol.
pub struct SseClientTransport {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    events: Option<Events>,
}

impl SseClientTransport {
    /// Opens the event stream at `url` and waits for the `endpoint` event.
    ///
    /// # Errors
    /// Bad URL, connection failure, an error status, a stream that ends
    /// before `endpoint`, or an endpoint on another origin.
    pub async fn open(url: &str, headers: HeaderMap) -> Result<Self, UpstreamError> {
        let base = Url::parse(url).map_err(|e| UpstreamError::BadUrl {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
        let client = reqwest::Client::builder()
            .redirect(redirect::policy())
            .build()
            .map_err(|e| UpstreamError::Connect(redirect::with_sources(&e)))?;
        let resp = client
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| match redirect::refused(&e) {
                Some(r) => UpstreamError::Redirect(r),
                None => UpstreamError::Connect(redirect::with_sources(&e)),
            })?;
        if !resp.status().is_success() {
            return Err(UpstreamError::Status {
                status: resp.status().as_u16(),
            });
        }
        let mut events: Events = Box::pin(SseStream::from_bytes_stream(resp.bytes_stream()));
        let endpoint = wait_for_endpoint(&mut events, &base).await?;
        Ok(Self {
            client,
            endpoint,
            headers,
            events: Some(events),
        })
    }
}

async fn wait_for_endpoint(events: &mut Events, base: &Url) -> Result<Url, UpstreamError> {
    while let Some(ev) = events.next().await {
        let ev = ev.map_err(|e| UpstreamError::Connect(format!("event stream: {e}")))?;
        if ev.event.as_deref() != Some("endpoint") {
            continue;
        }
        let data = ev.data.unwrap_or_default();
        let url = base.join(data.trim()).map_err(|e| UpstreamError::BadUrl {
            url: data.clone(),
            message: e.to_string(),
        })?;
        if url.origin() != base.origin() {
            return Err(UpstreamError::BadUrl {
                url: url.to_string(),
                message: "the endpoint is on another origin than the SSE URL".to_owned(),
            });
        }
        return Ok(url);
    }
    Err(UpstreamError::Connect(
        "event stream ended before the `endpoint` event".to_owned(),
    ))
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseSendError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let url = self.endpoint.clone();
        let headers = self.headers.clone();
        async move {
            let body = serde_json::to_vec(&item)?;
            let resp = client
                .post(url)
                .headers(headers)
                .header(CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await?;
            if resp.status().is_success() {
                return Ok(());
            }
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            Err(HttpStatusError::new(resp.status().as_u16(), retry_after).into())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let events = self.events.as_mut()?;
        loop {
            match events.next().await? {
                Ok(ev) => {
                    if let Some(msg) = message(ev) {
                        return Some(msg);
                    }
                }
                Err(e) => {
                    tracing::warn!("SSE upstream stream failed: {e}");
                    return None;
                }
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.events = None;
        std::future::ready(Ok(()))
    }
}

/// The JSON-RPC message in a `message` event (the default event type);
/// other events (a repeated `endpoint`, pings) are skipped, unparsable data
/// is logged and skipped.
fn message(ev: Sse) -> Option<RxJsonRpcMessage<RoleClient>> {
    if !matches!(ev.event.as_deref(), None | Some("message")) {
        return None;
    }
    let data = ev.data?;
    match serde_json::from_str(&data) {
        Ok(m) => Some(m),
        Err(e) => {
            tracing::warn!("SSE upstream sent an unparsable message ({e}); skipped");
            None
        }
    }
}

pub(super) async fn connect<H: ClientHandler>(
    handler: H,
    url: &str,
    headers: HeaderMap,
) -> Result<Connection<H>, UpstreamError> {
    let transport = SseClientTransport::open(url, headers).await?;
    let service = handler
        .serve(transport)
        .await
        .map_err(|e| UpstreamError::Handshake(e.to_string()))?;
    Ok(Connection { service, pid: None })
}
