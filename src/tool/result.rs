//! What a tool returns: content parts (text, JSON, image, audio, resource
//! links) plus structured content, an error flag and metadata, the same
//! shape as MCP's `CallToolResult`, so upstream results pass through without
//! loss.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::JsonObject;

/// One part of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Structured JSON.
    Json {
        /// The value.
        value: Value,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type, e.g. `image/png`.
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type, e.g. `audio/wav`.
        mime_type: String,
    },
    /// A link to a resource or file, optionally with its text.
    Resource {
        /// The resource URI (`file:///…`, `https://…`).
        uri: String,
        /// MIME type, if known.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        mime_type: Option<String>,
        /// Embedded text, if the tool included it.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        text: Option<String>,
    },
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text of a text or resource part, if any.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            Self::Resource { text: Some(t), .. } => Some(t),
            _ => None,
        }
    }

    /// Size in bytes as sent to the model (text, JSON rendering or base64).
    pub fn len(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Json { value } => value.to_string().len(),
            Self::Image { data, .. } | Self::Audio { data, .. } => data.len(),
            Self::Resource { uri, text, .. } => uri.len() + text.as_ref().map_or(0, String::len),
        }
    }

    /// True when [`Content::len`] is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A tool's output. `is_error` results are shown to the model (it can act on
/// them); the circuit breaker counts them only where the tool's
/// `BreakerConfig::count_is_error` says so (they are usually the tool's
/// answer to one call, not a sign it is unhealthy).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// Output parts in order.
    pub content: Vec<Content>,
    /// The tool reports that it failed.
    #[serde(default)]
    pub is_error: bool,
    /// The output as one JSON object for programs (MCP `structuredContent`),
    /// matching the tool's output schema when it declares one. It usually
    /// repeats the content: clients that validate against the schema read
    /// this, models read the content. The pipeline may drop it (truncation,
    /// trust-wrapping), see docs/agent-protocol.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<JsonObject>,
    /// Metadata for people and the audit log; never sent to the model.
    #[serde(default, skip_serializing_if = "JsonObject::is_empty")]
    pub meta: JsonObject,
}

impl ToolResult {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            ..Self::default()
        }
    }

    /// A successful JSON result; an object is also its structured content,
    /// so programs get it without parsing the text.
    pub fn json(value: Value) -> Self {
        Self {
            structured_content: value.as_object().cloned(),
            content: vec![Content::Json { value }],
            ..Self::default()
        }
    }

    /// A result the tool marks as failed, with a message for the model.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            ..Self::default()
        }
    }

    /// All text parts joined by newlines (JSON parts rendered compactly).
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if !out.is_empty() {
                out.push('\n');
            }
            match part {
                Content::Json { value } => out.push_str(&value.to_string()),
                other => out.push_str(other.as_text().unwrap_or("")),
            }
        }
        out
    }

    /// Total output size in bytes: the content, plus the structured
    /// content's JSON unless the content already carries it.
    pub fn size(&self) -> usize {
        self.content.iter().map(Content::len).sum::<usize>() + self.structured_extra_len()
    }

    /// Bytes the structured content adds to the content: its compact JSON,
    /// or 0 when there is none or a content part already holds the same
    /// value (the MCP spec asks servers to repeat it as text).
    pub fn structured_extra_len(&self) -> usize {
        match &self.structured_content {
            Some(s) if !self.content.iter().any(|p| holds(p, s)) => json_len(s),
            _ => 0,
        }
    }
}

/// Whether `part` is `value`: a JSON part equal to it, or text that parses
/// to it (any formatting).
fn holds(part: &Content, value: &JsonObject) -> bool {
    match part {
        Content::Json {
            value: Value::Object(o),
        } => o == value,
        Content::Text { text } if text.trim_start().starts_with('{') => {
            serde_json::from_str::<JsonObject>(text).is_ok_and(|o| &o == value)
        }
        _ => false,
    }
}

/// Length of `value` as compact JSON, without building the string.
pub(crate) fn json_len(value: &JsonObject) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    // Writing to a counter cannot fail, and a map of JSON values always
    // serialises.
    let _ = serde_json::to_writer(&mut n, value);
    n.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_round_trips_through_json() {
        let r = ToolResult {
            content: vec![
                Content::text("hi"),
                Content::Json {
                    value: serde_json::json!({"a": 1}),
                },
                Content::Image {
                    data: "aGk=".into(),
                    mime_type: "image/png".into(),
                },
                Content::Resource {
                    uri: "file:///x".into(),
                    mime_type: None,
                    text: Some("t".into()),
                },
            ],
            is_error: false,
            structured_content: None,
            meta: JsonObject::new(),
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["content"][2]["type"], "image");
        assert_eq!(v["content"][2]["mime_type"], "image/png");
        let back: ToolResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
        assert_eq!(r.joined_text(), "hi\n{\"a\":1}\n\nt");
    }

    #[test]
    fn structured_content_counts_in_the_size_unless_the_content_repeats_it() {
        let value = serde_json::json!({"a": [1, 2]});
        let mut r = ToolResult::text("{ \"a\": [1,\n 2] }");
        r.structured_content = value.as_object().cloned();
        assert_eq!(
            r.structured_extra_len(),
            0,
            "any formatting of the same value"
        );
        r.content = vec![Content::text("two numbers")];
        assert_eq!(r.structured_extra_len(), value.to_string().len());
        assert_eq!(r.size(), "two numbers".len() + value.to_string().len());
        let j = ToolResult::json(value.clone());
        assert_eq!(j.structured_content, value.as_object().cloned());
        assert_eq!(j.size(), value.to_string().len());
        assert_eq!(
            ToolResult::json(serde_json::json!([1])).structured_content,
            None
        );
    }
}
