//! The [`Tool`] behind every upstream tool: forwards one call to the
//! server's current connection and translates the result.
//!
//! The connection lives in a slot shared by all of a server's tools and
//! swapped by the supervisor on every (re)connect, so a restarted server is
//! used by the very next call with no re-registration. While the server is
//! down the slot is empty and calls fail at once with `connection` (which
//! retry and the breaker understand) instead of waiting for a timeout.

use std::borrow::Cow;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use futures::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use super::errors::map_service_error;
use crate::context::CallContext;
use crate::error::CallError;
use crate::tool::{Content, Tool, ToolResult};

/// The current connection to one server, if any.
pub(crate) type PeerSlot = Arc<ArcSwapOption<Peer<RoleClient>>>;

/// One upstream tool.
pub(crate) struct RemoteTool {
    /// The server's name (for messages).
    pub(crate) server: Arc<str>,
    /// The tool's name on the server.
    pub(crate) remote: Cow<'static, str>,
    /// The registry name (for error messages naming the tool).
    pub(crate) name: Arc<str>,
    /// The server's connection.
    pub(crate) peer: PeerSlot,
    /// Hides the server's secret values in the errors it sends back: they
    /// reach the agent, the audit log and the console.
    pub(crate) scrub: crate::scrub::Scrubber,
}

impl Tool for RemoteTool {
    fn call<'a>(
        &'a self,
        args: Value,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, CallError>> {
        Box::pin(async move {
            let Some(peer) = self.peer.load_full() else {
                return Err(CallError::Connection {
                    message: format!("upstream server `{}` is not connected", self.server),
                });
            };
            let mut params = CallToolRequestParams::new(self.remote.clone());
            if let Value::Object(obj) = args {
                params = params.with_arguments(obj);
            }
            match peer.call_tool(params).await {
                Ok(r) => Ok(convert(r)),
                Err(e) => Err(map_service_error(&self.name, self.scrubbed(e))),
            }
        })
    }
}

impl RemoteTool {
    /// A server's JSON-RPC error with its message and data scrubbed; other
    /// failures are toolgate's own words about the transport.
    fn scrubbed(&self, e: ServiceError) -> ServiceError {
        match e {
            ServiceError::McpError(mut data) if !self.scrub.is_empty() => {
                data.message = self.scrub.scrub_owned(data.message.into_owned()).into();
                if let Some(d) = data.data.take() {
                    let text = self.scrub.scrub_owned(d.to_string());
                    data.data = Some(serde_json::from_str(&text).unwrap_or(Value::String(text)));
                }
                ServiceError::McpError(data)
            }
            other => other,
        }
    }
}

/// An MCP result as a [`ToolResult`]: content parts one to one, `isError`
/// kept, structured content kept (an object, as the MCP spec requires) and
/// also added as a JSON part when the server sent no content, so a model
/// reading only the content still sees it; `_meta` kept as metadata for
/// people.
pub(crate) fn convert(r: CallToolResult) -> ToolResult {
    let mut content: Vec<Content> = r.content.into_iter().map(content).collect();
    let structured_content = match r.structured_content {
        Some(Value::Object(o)) => Some(o),
        _ => None,
    };
    if content.is_empty()
        && let Some(o) = &structured_content
    {
        content.push(Content::Json {
            value: Value::Object(o.clone()),
        });
    }
    let meta = r
        .meta
        .and_then(|m| match serde_json::to_value(m) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        })
        .unwrap_or_default();
    ToolResult {
        content,
        is_error: r.is_error.unwrap_or(false),
        structured_content,
        meta,
    }
}

fn content(block: ContentBlock) -> Content {
    match block {
        ContentBlock::Text(t) => Content::Text { text: t.text },
        ContentBlock::Image(i) => Content::Image {
            data: i.data,
            mime_type: i.mime_type,
        },
        ContentBlock::Audio(a) => Content::Audio {
            data: a.data,
            mime_type: a.mime_type,
        },
        ContentBlock::Resource(e) => match e.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Content::Resource {
                uri,
                mime_type,
                text: Some(text),
            },
            ResourceContents::BlobResourceContents { uri, mime_type, .. } => Content::Resource {
                uri,
                mime_type,
                text: None,
            },
            other => Content::Json {
                value: serde_json::to_value(other).unwrap_or(Value::Null),
            },
        },
        ContentBlock::ResourceLink(r) => Content::Resource {
            uri: r.uri,
            mime_type: r.mime_type,
            text: None,
        },
        #[allow(unreachable_patterns)]
        other => Content::Json {
            value: serde_json::to_value(other).unwrap_or(Value::Null),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn structured_content_is_kept_beside_the_text() {
        let weather = json!({"temperature": 33, "conditions": "Cloudy"});
        let mut r = CallToolResult::success(vec![ContentBlock::text(weather.to_string())]);
        r.structured_content = Some(weather.clone());
        let t = convert(r);
        assert_eq!(t.structured_content, weather.as_object().cloned());
        assert_eq!(t.content, vec![Content::text(weather.to_string())]);
        assert_eq!(t.structured_extra_len(), 0, "the text repeats it");
    }

    #[test]
    fn structured_content_alone_also_becomes_a_json_part() {
        let mut r = CallToolResult::structured(json!({"a": 1}));
        r.content.clear();
        let t = convert(r);
        assert_eq!(
            t.content,
            vec![Content::Json {
                value: json!({"a": 1})
            }]
        );
        assert_eq!(t.structured_content, json!({"a": 1}).as_object().cloned());
    }

    #[test]
    fn structured_content_that_is_not_an_object_is_not_kept() {
        let mut r = CallToolResult::success(vec![ContentBlock::text("[1]")]);
        r.structured_content = Some(json!([1]));
        assert_eq!(convert(r).structured_content, None);
    }
}
