use serde_json::json;

use super::parse_stdout;
use crate::tool::Content;

#[test]
fn a_tool_result_is_taken_as_it_is() {
    let r = parse_stdout(br#"{"content": [{"type": "text", "text": "hi"}], "isError": true}"#);
    assert!(r.is_error);
    assert_eq!(r.joined_text(), "hi");
}

#[test]
fn another_json_object_is_a_json_result() {
    let r = parse_stdout(br#"{"count": 3}"#);
    assert!(!r.is_error);
    assert_eq!(r.structured_content.unwrap()["count"], json!(3));
    assert!(matches!(r.content[0], Content::Json { .. }));
}

#[test]
fn plain_text_is_text_and_broken_json_is_a_failure() {
    assert_eq!(parse_stdout(b"hello\n").joined_text(), "hello\n");
    let r = parse_stdout(b"{\"content\": [");
    assert!(r.is_error && r.joined_text().contains("invalid JSON"));
    let r = parse_stdout(br#"{"content": "not a list"}"#);
    assert!(r.is_error && r.joined_text().contains("not a ToolResult"));
}
