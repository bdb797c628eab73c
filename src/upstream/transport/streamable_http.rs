//! Streamable HTTP servers (MCP 2025-03-26 and later), through rmcp's own
//! reqwest-based client transport. HTTP failures come back as rmcp's typed
//! `HttpStatusError` (429, 5xx with `Retry-After`), which `errors` maps.

use std::collections::HashMap;

use reqwest::header::HeaderMap;
use rmcp::ClientHandler;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::Connection;
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
    let transport = StreamableHttpClientTransport::from_config(config);
    let service = handler
        .serve(transport)
        .await
        .map_err(|e| UpstreamError::Handshake(e.to_string()))?;
    Ok(Connection { service, pid: None })
}
