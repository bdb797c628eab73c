//! The `"id"` of a JSON-RPC request read from the first bytes of its text.
//!
//! A request refused before it is parsed (too large, too deep, too many
//! values; see [`super::shape`]) still deserves an answer its client can
//! match: JSON-RPC clients wait for a reply with their id, and a null-id
//! error leaves the call hanging until the client's own timeout. The id of
//! a well-formed request is almost always among its first members, so the
//! first bytes already read are searched for a top-level `"id"` whose value
//! is a string or a number. Nothing else is parsed; when the id is not
//! there (or the text is not an object), the refusal goes out with a null
//! id, as JSON-RPC says for a request whose id cannot be read.

use serde_json::Value;

/// How much of a refused frame is kept to look for its id.
pub const PREFIX: usize = 4 * 1024;

/// The top-level `"id"` of the object `text` begins, if it appears whole
/// in `text` and is a string or a number.
pub fn leading_id(text: &[u8]) -> Option<Value> {
    let start = text.iter().position(|b| !b.is_ascii_whitespace())?;
    if text[start] != b'{' {
        return None;
    }
    let mut depth = 0usize;
    let mut i = start;
    while i < text.len() {
        match text[i] {
            b'"' => {
                let end = string_end(text, i)?;
                if depth == 1
                    && &text[i + 1..end] == b"id"
                    && let Some(colon) =
                        after_whitespace(text, end + 1).filter(|j| text[*j] == b':')
                {
                    return scalar_at(text, after_whitespace(text, colon + 1)?);
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote closing the string that opens at `open`.
fn string_end(text: &[u8], open: usize) -> Option<usize> {
    let mut k = open + 1;
    while k < text.len() {
        match text[k] {
            b'\\' => k += 2,
            b'"' => return Some(k),
            _ => k += 1,
        }
    }
    None
}

fn after_whitespace(text: &[u8], from: usize) -> Option<usize> {
    (from..text.len()).find(|j| !text[*j].is_ascii_whitespace())
}

/// A string or number starting at `j`, only if it ends inside `text`.
fn scalar_at(text: &[u8], j: usize) -> Option<Value> {
    let end = match text[j] {
        b'"' => string_end(text, j)? + 1,
        b'-' | b'0'..=b'9' => {
            let len = text[j..]
                .iter()
                .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))?;
            j + len
        }
        _ => return None,
    };
    serde_json::from_slice(&text[j..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_top_level_id_is_found_before_the_rest() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":"fz-784","method":"x","params":{}"#,
            "[".repeat(100)
        );
        assert_eq!(leading_id(deep.as_bytes()), Some(json!("fz-784")));
        assert_eq!(
            leading_id(br#" { "id" : 42 , "params": [[[["#),
            Some(json!(42))
        );
        assert_eq!(leading_id(br#"{"method":"x","id":-7}"#), Some(json!(-7)));
        // An id after the params, when it is in the prefix, still counts.
        assert_eq!(
            leading_id(br#"{"params":{"id":1},"id":"top"}"#),
            Some(json!("top"))
        );
    }

    #[test]
    fn no_id_unless_it_is_whole_and_a_scalar_at_the_top() {
        assert_eq!(leading_id(br#"{"params":{"id":1},"#), None);
        assert_eq!(leading_id(br#"{"id":"cut-of"#), None);
        assert_eq!(leading_id(br#"{"id":12"#), None);
        assert_eq!(leading_id(br#"{"id":null}"#), None);
        assert_eq!(leading_id(br#"{"id":{"a":1}}"#), None);
        assert_eq!(leading_id(br#"[{"id":1}]"#), None);
        assert_eq!(leading_id(br#"{"x":"\"id\":5","y":1}"#), None);
        assert_eq!(leading_id(b"\xff\xfe"), None);
        assert_eq!(leading_id(b""), None);
    }
}
