//! Remote upstream servers: npm server-everything over legacy SSE and
//! streamable HTTP (a real child listening on a free port), and an rmcp
//! server over WebSocket served inside the test (rmcp has no WS transport;
//! both ends use toolgate's adapter).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use toolgate::ErrorKind;
use toolgate::config::servers::{AuthSpec, TransportSpec};
use toolgate::upstream::{ServerState, transport::ws_transport};

use crate::upstream_support::{Harness, everything_http, payload, spec, wait_for};

const UP: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_legacy_sse() {
    let (_child, port) = everything_http("sse").await;
    let h = Harness::new().await;
    let url = format!("http://127.0.0.1:{port}/sse");
    h.up.apply(vec![spec(
        "sse",
        TransportSpec::Sse {
            url,
            headers: BTreeMap::new(),
        },
    )])
    .await;
    h.ready("sse", 5, UP).await;
    assert!(
        h.tool_names().contains(&"sse__echo".to_owned()),
        "{:?}",
        h.tool_names()
    );
    let r = h
        .call("sse__echo", json!({"message": "over sse"}))
        .await
        .expect("echo");
    assert_eq!(payload(&r), "Echo: over sse");
    let r = h
        .call("sse__get-sum", json!({"a": 20, "b": "22"}))
        .await
        .expect("sum");
    assert!(payload(&r).contains("is 42"), "{}", payload(&r));
    h.up.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http() {
    let (_child, port) = everything_http("streamableHttp").await;
    let h = Harness::new().await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let headers = BTreeMap::from([("X-Toolgate-Test".to_owned(), "1".to_owned())]);
    h.up.apply(vec![spec(
        "http",
        TransportSpec::StreamableHttp { url, headers },
    )])
    .await;
    h.ready("http", 5, UP).await;
    let r = h
        .call("http__echo", json!({"message": "over http"}))
        .await
        .expect("echo");
    assert_eq!(payload(&r), "Echo: over http");
    h.up.shutdown().await;
    assert!(h.tool_names().is_empty());
}

/// A one-tool rmcp server: `shout` upper-cases, `explode` fails with
/// JSON-RPC -32603.
#[derive(Clone)]
struct Shouter;

impl ServerHandler for Shouter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        });
        let schema = match schema {
            serde_json::Value::Object(o) => Arc::new(o),
            _ => Arc::default(),
        };
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("shout", "Upper-cases text.", schema.clone()),
            Tool::new("explode", "Always fails inside the server.", schema),
        ]))
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = req
            .arguments
            .and_then(|a| a.get("text").and_then(|t| t.as_str()).map(str::to_owned))
            .unwrap_or_default();
        match &*req.name {
            "shout" => {
                Ok(CallToolResult::success(vec![ContentBlock::text(text.to_uppercase())]).into())
            }
            _ => Err(ErrorData::internal_error("the server broke", None)),
        }
    }
}

/// Serves [`Shouter`] over WebSocket on `listener`, refusing handshakes
/// without `Authorization: Bearer s3cret`. Aborting the task drops its
/// `JoinSet`, which ends every connection too.
fn serve_ws(listener: TcpListener) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut conns = tokio::task::JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            conns.spawn(async move {
                // The handshake callback's signature is tungstenite's.
                #[allow(clippy::result_large_err)]
                let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
                    match req.headers().get("authorization") {
                        Some(v) if v == "Bearer s3cret" => Ok(resp),
                        _ => {
                            let mut e = ErrorResponse::new(Some("no".into()));
                            *e.status_mut() =
                                tokio_tungstenite::tungstenite::http::StatusCode::UNAUTHORIZED;
                            Err(e)
                        }
                    }
                };
                let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, check).await else {
                    return;
                };
                if let Ok(svc) = Shouter.serve(ws_transport::<RoleServer, _>(ws)).await {
                    let _ = svc.waiting().await;
                }
            });
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_server_with_bearer_auth_errors_and_reconnect() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = serve_ws(listener);
    let h = Harness::new().await;
    let url = format!("ws://127.0.0.1:{port}");
    let mut good = spec(
        "ws",
        TransportSpec::Websocket {
            url: url.clone(),
            headers: BTreeMap::new(),
        },
    );
    good.auth = Some(AuthSpec::Bearer {
        token: "s3cret".into(),
    });
    good.max_retries = Some(0);
    let mut bad = spec(
        "nokey",
        TransportSpec::Websocket {
            url,
            headers: BTreeMap::new(),
        },
    );
    bad.auth = Some(AuthSpec::Bearer {
        token: "wrong".into(),
    });
    h.up.apply(vec![good, bad]).await;
    h.ready("ws", 2, UP).await;

    let r = h
        .call("ws__shout", json!({"text": "quiet"}))
        .await
        .expect("shout");
    assert_eq!(payload(&r), "QUIET");
    // JSON-RPC -32603 from the server: the 5xx class, so retry and the
    // breaker act on it.
    let e = h
        .call("ws__explode", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Upstream5xx, "{e}");

    // The wrong token is refused at the handshake; the status says so.
    let up = h.up.clone();
    wait_for(Duration::from_secs(10), "nokey to fail", || {
        up.status("nokey").is_some_and(|s| {
            s.state == ServerState::Failed
                && s.last_error.as_deref().is_some_and(|e| e.contains("401"))
        })
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {:?}", h.up.status("nokey")));
    assert!(!h.tool_names().iter().any(|n| n.starts_with("nokey__")));

    // The server goes away: calls fail with `connection`, the client
    // reconnects with backoff once it is back on the same port.
    server.abort();
    let _ = server.await;
    let up = h.up.clone();
    wait_for(Duration::from_secs(10), "ws to notice", || {
        up.status("ws")
            .is_some_and(|s| s.state != ServerState::Ready)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {:?}", h.up.status("ws")));
    let e = h.call("ws__shout", json!({"text": "x"})).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("rebind");
    let server = serve_ws(listener);
    h.ready("ws", 2, UP).await;
    let r = h
        .call("ws__shout", json!({"text": "back"}))
        .await
        .expect("shout again");
    assert_eq!(payload(&r), "BACK");
    h.up.shutdown().await;
    server.abort();
}
