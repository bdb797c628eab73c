//! WebSocket servers: one JSON-RPC message per text frame. rmcp 3.11 has no
//! WebSocket transport, but any `(Sink, Stream)` pair of messages is one
//! (verified before this was written: docs/architecture/decisions.md,
//! "Measured facts behind the stack"), so this is an adapter over
//! tokio-tungstenite, usable for
//! either role (the tests serve an rmcp server with it).
//!
//! Unparsable frames are logged and skipped rather than ending the
//! connection; binary frames are skipped; a Close frame or a read error ends
//! the stream, which rmcp reports as the transport closing.

use futures::{Sink, SinkExt, Stream, StreamExt};
use reqwest::header::HeaderMap;
use rmcp::ClientHandler;
use rmcp::ServiceExt;
use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::Connection;
use crate::upstream::errors::UpstreamError;

/// Turns a WebSocket into an rmcp transport for role `R`.
pub fn ws_transport<R, S>(
    ws: S,
) -> (
    impl Sink<TxJsonRpcMessage<R>, Error = WsError> + Send + Unpin + 'static,
    impl Stream<Item = RxJsonRpcMessage<R>> + Send + Unpin + 'static,
)
where
    R: ServiceRole,
    S: Stream<Item = Result<Message, WsError>>
        + Sink<Message, Error = WsError>
        + Send
        + Unpin
        + 'static,
{
    let (tx, rx) = ws.split();
    let sink = tx.with(|m: TxJsonRpcMessage<R>| async move {
        let text = serde_json::to_string(&m).map_err(|e| WsError::Io(std::io::Error::other(e)))?;
        Ok::<_, WsError>(Message::Text(text.into()))
    });
    let stream = rx
        .take_while(|m| std::future::ready(matches!(m, Ok(m) if !m.is_close())))
        .filter_map(|m| async move {
            match m {
                Ok(Message::Text(t)) => match serde_json::from_str(t.as_str()) {
                    Ok(msg) => Some(msg),
                    Err(e) => {
                        tracing::warn!("WebSocket peer sent an unparsable frame ({e}); skipped");
                        None
                    }
                },
                _ => None,
            }
        });
    (Box::pin(sink), Box::pin(stream))
}

/// A redirect answer to the upgrade request that leads to another origin,
/// named as such (tungstenite follows no redirect; a same-origin one is
/// reported as its status).
fn refused_redirect<B>(
    url: &str,
    r: &tokio_tungstenite::tungstenite::http::Response<B>,
) -> Option<super::RedirectRefused> {
    if !r.status().is_redirection() {
        return None;
    }
    let from = url::Url::parse(url).ok()?;
    let to = from
        .join(r.headers().get("location")?.to_str().ok()?)
        .ok()?;
    super::redirect::check(std::slice::from_ref(&from), &to).err()
}

pub(super) async fn connect<H: ClientHandler>(
    handler: H,
    url: &str,
    headers: HeaderMap,
) -> Result<Connection<H>, UpstreamError> {
    let mut req = url
        .into_client_request()
        .map_err(|e| UpstreamError::BadUrl {
            url: url.to_owned(),
            message: e.to_string(),
        })?;
    req.headers_mut().extend(headers);
    let (ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .map_err(|e| match e {
            WsError::Http(r) => refused_redirect(url, &r).map_or(
                UpstreamError::Status {
                    status: r.status().as_u16(),
                },
                UpstreamError::Redirect,
            ),
            other => UpstreamError::Connect(other.to_string()),
        })?;
    let service = handler
        .serve(ws_transport::<rmcp::RoleClient, _>(ws))
        .await
        .map_err(|e| UpstreamError::Handshake(e.to_string()))?;
    Ok(Connection { service, pid: None })
}
