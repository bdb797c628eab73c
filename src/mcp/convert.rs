//! toolgate's tool model ↔ MCP wire shapes (protocol 2025-11-25).

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::CallError;
use crate::tool::{Annotations, Content, JsonObject, ToolDef, ToolResult};

/// An MCP `Tool` as listed in `tools/list`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    description: &'a str,
    input_schema: &'a JsonObject,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a JsonObject>,
    #[serde(skip_serializing_if = "is_empty")]
    annotations: &'a Annotations,
}

fn is_empty(a: &Annotations) -> bool {
    *a == Annotations::default()
}

impl<'a> From<&'a ToolDef> for McpTool<'a> {
    fn from(d: &'a ToolDef) -> Self {
        Self {
            name: d.name.as_str(),
            title: d.annotations.title.as_deref(),
            description: &d.description,
            input_schema: &d.input_schema,
            output_schema: d.listed_output_schema(),
            annotations: &d.annotations,
        }
    }
}

/// The `tools/list` result.
pub fn list_result(tools: &[ToolDef]) -> Value {
    json!({ "tools": tools.iter().map(McpTool::from).collect::<Vec<_>>() })
}

/// An MCP `CallToolResult` for a pipeline outcome. Refusals and failures
/// become `isError` results (not JSON-RPC errors) so the model reads them
/// and can correct itself; `_meta["toolgate/error"]` carries the class for
/// programs.
pub fn call_result(call_id: u64, result: &Result<ToolResult, CallError>) -> Value {
    result_with(json!({"toolgate/callId": call_id}), result)
}

/// The result of `tool_search` or `tool_describe`: like [`call_result`],
/// without a call id, since no governed call ran.
pub fn bridge_result(result: &Result<ToolResult, CallError>) -> Value {
    result_with(json!({}), result)
}

fn result_with(mut meta: Value, result: &Result<ToolResult, CallError>) -> Value {
    match result {
        Ok(r) => {
            let mut out = json!({
                "content": r.content.iter().map(content_block).collect::<Vec<_>>(),
                "isError": r.is_error,
                "_meta": meta,
            });
            if let Some(s) = &r.structured_content {
                out["structuredContent"] = Value::Object(s.clone());
            }
            out
        }
        Err(e) => {
            let message = crate::events::display_text(e, MAX_ERROR_TEXT);
            meta["toolgate/error"] = json!({"kind": e.kind(), "message": message});
            json!({
                "content": [{"type": "text", "text": message}],
                "isError": true,
                "_meta": meta,
            })
        }
    }
}

/// Longest error message an agent gets back: messages quote what they
/// refuse (a path, a tool name), and an 8 MiB path made a 16 MiB reply.
/// 16 KiB keeps every message toolgate writes whole.
pub const MAX_ERROR_TEXT: usize = 16 * 1024;

/// One MCP content block.
pub fn content_block(c: &Content) -> Value {
    match c {
        Content::Text { text } => json!({"type": "text", "text": text}),
        Content::Json { value } => json!({"type": "text", "text": value.to_string()}),
        Content::Image { data, mime_type } => {
            json!({"type": "image", "data": data, "mimeType": mime_type})
        }
        Content::Audio { data, mime_type } => {
            json!({"type": "audio", "data": data, "mimeType": mime_type})
        }
        Content::Resource {
            uri,
            mime_type,
            text: Some(text),
        } => {
            json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "text": text}})
        }
        Content::Resource {
            uri,
            mime_type,
            text: None,
        } => {
            let name = uri.rsplit('/').find(|s| !s.is_empty()).unwrap_or(uri);
            json!({"type": "resource_link", "uri": uri, "name": name, "mimeType": mime_type})
        }
    }
}

/// toolgate content from MCP content blocks (gate-mode reports, upstream
/// results). Unknown block types are kept as their JSON text.
pub fn content_from_mcp(blocks: &[Value]) -> Vec<Content> {
    blocks
        .iter()
        .map(|b| {
            let s = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_owned);
            match b.get("type").and_then(Value::as_str) {
                Some("text") => Content::text(s("text").unwrap_or_default()),
                Some("image") => Content::Image {
                    data: s("data").unwrap_or_default(),
                    mime_type: s("mimeType").unwrap_or_default(),
                },
                Some("audio") => Content::Audio {
                    data: s("data").unwrap_or_default(),
                    mime_type: s("mimeType").unwrap_or_default(),
                },
                Some("resource_link") => Content::Resource {
                    uri: s("uri").unwrap_or_default(),
                    mime_type: s("mimeType"),
                    text: None,
                },
                Some("resource") => {
                    let r = b.get("resource").cloned().unwrap_or(Value::Null);
                    let rs = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_owned);
                    Content::Resource {
                        uri: rs("uri").unwrap_or_default(),
                        mime_type: rs("mimeType"),
                        text: rs("text"),
                    }
                }
                _ => Content::Json { value: b.clone() },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolName;

    #[test]
    fn a_huge_error_text_is_cut_for_the_agent() {
        let v = call_result(
            1,
            &Err(CallError::Denied {
                reason: Some("x".repeat(1 << 20)),
            }),
        );
        let text = v["content"][0]["text"].as_str().unwrap();
        assert!(text.len() <= MAX_ERROR_TEXT && text.ends_with('…'));
        assert_eq!(v["_meta"]["toolgate/error"]["message"], text);
    }

    #[test]
    fn errors_are_readable_is_error_results_with_their_class() {
        let v = call_result(
            9,
            &Err(CallError::Denied {
                reason: Some("not today".into()),
            }),
        );
        assert_eq!(v["isError"], true);
        assert_eq!(
            v["content"][0]["text"],
            "a person denied this call: not today"
        );
        assert_eq!(v["_meta"]["toolgate/error"]["kind"], "denied");
        assert_eq!(v["_meta"]["toolgate/callId"], 9);
    }

    #[test]
    fn structured_content_is_sent_as_is_next_to_the_text() {
        let mut r = ToolResult::text("{\"t\": 1}");
        r.structured_content = json!({"t": 1}).as_object().cloned();
        let v = call_result(1, &Ok(r));
        assert_eq!(v["structuredContent"], json!({"t": 1}));
        assert_eq!(v["content"][0]["text"], "{\"t\": 1}");
        let v = call_result(1, &Ok(ToolResult::text("plain")));
        assert!(v.get("structuredContent").is_none(), "{v}");
    }

    #[test]
    fn a_wrapped_tool_lists_no_output_schema() {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), json!("object"));
        let mut d = ToolDef::new(ToolName::new("t").unwrap(), "d", schema.clone())
            .with_trust(crate::tool::Trust::Trusted);
        d.output_schema = Some(std::sync::Arc::new(schema));
        let v = list_result(std::slice::from_ref(&d));
        assert_eq!(v["tools"][0]["outputSchema"], json!({"type": "object"}));
        let d = d.with_trust(crate::tool::Trust::External);
        let v = list_result(&[d]);
        assert!(v["tools"][0].get("outputSchema").is_none(), "{v}");
    }

    #[test]
    fn json_objects_also_become_structured_content() {
        let v = call_result(1, &Ok(ToolResult::json(json!({"a": 1}))));
        assert_eq!(v["structuredContent"], json!({"a": 1}));
        assert_eq!(
            v["content"][0],
            json!({"type": "text", "text": "{\"a\":1}"})
        );
    }

    #[test]
    fn content_round_trips_through_mcp_blocks() {
        let parts = vec![
            Content::text("t"),
            Content::Image {
                data: "aGk=".into(),
                mime_type: "image/png".into(),
            },
            Content::Resource {
                uri: "file:///a/b.txt".into(),
                mime_type: None,
                text: Some("x".into()),
            },
            Content::Resource {
                uri: "file:///a/b.txt".into(),
                mime_type: Some("text/plain".into()),
                text: None,
            },
        ];
        let blocks: Vec<Value> = parts.iter().map(content_block).collect();
        assert_eq!(blocks[3]["name"], "b.txt");
        assert_eq!(content_from_mcp(&blocks), parts);
    }

    #[test]
    fn tools_list_uses_mcp_field_names() {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), json!("object"));
        let d = ToolDef::new(ToolName::new("t").unwrap(), "d", schema);
        let v = list_result(&[d]);
        assert_eq!(
            v,
            json!({"tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"}}]})
        );
    }
}
