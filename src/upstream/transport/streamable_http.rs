//! Streamable HTTP servers (MCP 2025-03-26 and later), through rmcp's own
//! reqwest-based client transport, given a client with toolgate's redirect
//! policy (`redirect`: never to another origin). HTTP failures come back as
//! rmcp's typed `HttpStatusError` (429, 5xx with `Retry-After`), which
//! `errors` maps.

use std::collections::HashMap;

use reqwest::header::HeaderMap;
use rmcp::ClientHandler;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::{Connection, redirect};
use crate::upstream::errors::UpstreamError;

pub(super) async fn connect<H: ClientHandler>(
    handler: H,
    url: &str,
    headers: HeaderMap,
) -> Result<Connection<H>, UpstreamError> {
    let custom: HashMap<_, _> = headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    // As rmcp's default client, idle connections are not pooled (a reused
    // connection stalled ~40 ms on delayed ACKs); redirects are ours.
    let refused = redirect::LastRefusal::default();
    let client = reqwest_rmcp::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(redirect::streamable_policy(refused.clone()))
        .build()
        .map_err(|e| UpstreamError::Connect(redirect::with_sources(&e)))?;
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let service = handler.serve(transport).await.map_err(|e| {
        match redirect::refused(&e).or_else(|| redirect::take(&refused)) {
            Some(r) => UpstreamError::Redirect(r),
            None => UpstreamError::Handshake(redirect::with_sources(&e)),
        }
    })?;
    Ok(Connection { service, pid: None })
}
