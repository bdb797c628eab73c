//! JSON-RPC 2.0 envelopes: parsing one frame into a request, a notification
//! or a refusal, and writing replies. Every malformed input maps to the
//! specific JSON-RPC error a client can act on; nothing here panics.

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

/// An error reply: JSON-RPC code and message. Every handler of a
/// method answers with it, whichever role the method belongs to.
pub type Refused = (i64, String);

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// Valid JSON, but not a valid JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// Unknown method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Known method, bad parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed.
pub const INTERNAL_ERROR: i64 = -32603;
/// The control socket was asked something before the control credential
/// was presented (a server-defined code, in JSON-RPC's reserved range).
pub const UNAUTHENTICATED: i64 = -32001;

/// One incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Wants a reply.
    Request {
        /// The id to echo (a string or an integer).
        id: Value,
        /// Method name.
        method: String,
        /// Parameters, if any.
        params: Option<Value>,
    },
    /// Wants no reply.
    Notification {
        /// Method name.
        method: String,
        /// Parameters, if any.
        params: Option<Value>,
    },
    /// A reply to a request we sent (toolgate sends none yet; ignored).
    Response,
}

/// A refusal of a frame, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The request id if it could be read, else null.
    pub id: Value,
    /// JSON-RPC error code.
    pub code: i64,
    /// What was wrong.
    pub message: String,
}

#[derive(Deserialize)]
struct Envelope {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Value>,
}

/// Parses one frame.
///
/// # Errors
/// A [`Refusal`] with the code the JSON-RPC spec prescribes.
pub fn parse(frame: &[u8]) -> Result<Incoming, Refusal> {
    let refuse = |id: Value, code, message: String| Refusal { id, code, message };
    let text = std::str::from_utf8(frame).map_err(|e| {
        refuse(
            Value::Null,
            PARSE_ERROR,
            format!("frame is not valid UTF-8 (at byte {})", e.valid_up_to()),
        )
    })?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| refuse(Value::Null, PARSE_ERROR, format!("invalid JSON: {e}")))?;
    if value.is_array() {
        return Err(refuse(
            Value::Null,
            INVALID_REQUEST,
            "batch requests are not supported (MCP 2025-06-18 removed them)".into(),
        ));
    }
    let env: Envelope = serde_json::from_value(value).map_err(|_| {
        refuse(
            Value::Null,
            INVALID_REQUEST,
            "a JSON-RPC message must be a JSON object".into(),
        )
    })?;
    let id = match env.id {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) if !id.is_f64() => Some(id),
        Some(other) => {
            return Err(refuse(
                Value::Null,
                INVALID_REQUEST,
                format!("id must be a string or an integer, got {other}"),
            ));
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if env.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        let got = env
            .jsonrpc
            .map_or_else(|| "nothing".to_owned(), |v| v.to_string());
        return Err(refuse(
            reply_id,
            INVALID_REQUEST,
            format!("jsonrpc must be \"2.0\", got {got}"),
        ));
    }
    match (env.method, id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request {
            id,
            method,
            params: env.params,
        }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification {
            method,
            params: env.params,
        }),
        (Some(other), _) => Err(refuse(
            reply_id,
            INVALID_REQUEST,
            format!("method must be a string, got {other}"),
        )),
        (None, Some(_)) if env.result.is_some() || env.error.is_some() => Ok(Incoming::Response),
        (None, _) => Err(refuse(reply_id, INVALID_REQUEST, "missing method".into())),
    }
}

/// A success reply line (with its newline).
pub fn result_line(id: &Value, result: &impl Serialize) -> Vec<u8> {
    #[derive(Serialize)]
    struct Out<'a, R> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: &'a R,
    }
    line(&Out {
        jsonrpc: "2.0",
        id,
        result,
    })
}

/// An error reply line.
pub fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    line(
        &serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    )
}

/// A notification line.
pub fn notification_line(method: &str) -> Vec<u8> {
    line(&serde_json::json!({"jsonrpc": "2.0", "method": method}))
}

fn line(v: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    // Serialising our own plain types into a Vec cannot fail.
    if serde_json::to_writer(&mut out, v).is_err() {
        out.clear();
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"reply could not be encoded"}}"#);
    }
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(frame: &[u8]) -> (Value, i64, String) {
        let r = parse(frame).unwrap_err();
        (r.id, r.code, r.message)
    }

    #[test]
    fn requests_and_notifications() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap(),
            Incoming::Request {
                id: json!(7),
                method: "ping".into(),
                params: None
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}"#)
                .unwrap(),
            Incoming::Notification {
                method: "notifications/initialized".into(),
                params: Some(json!({}))
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(),
            Incoming::Response
        );
    }

    #[test]
    fn each_malformation_gets_its_own_code_and_words() {
        assert_eq!(refusal(b"\xff{}").1, PARSE_ERROR);
        assert!(refusal(b"\xff{}").2.contains("UTF-8"));
        assert_eq!(refusal(b"{not json").1, PARSE_ERROR);
        assert_eq!(refusal(b"[]").1, INVALID_REQUEST);
        assert_eq!(refusal(b"42").1, INVALID_REQUEST);
        let (id, code, msg) = refusal(br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#);
        assert_eq!((id, code), (json!(3), INVALID_REQUEST));
        assert_eq!(msg, "jsonrpc must be \"2.0\", got \"1.0\"");
        assert_eq!(
            refusal(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#).1,
            INVALID_REQUEST
        );
        assert_eq!(
            refusal(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#).1,
            INVALID_REQUEST
        );
        assert_eq!(
            refusal(br#"{"jsonrpc":"2.0","id":1,"method":5}"#).2,
            "method must be a string, got 5"
        );
        assert_eq!(refusal(br#"{"jsonrpc":"2.0","id":1}"#).2, "missing method");
    }

    #[test]
    fn lines_are_single_json_objects() {
        let l = result_line(&json!(1), &json!({"ok": true}));
        assert_eq!(l.last(), Some(&b'\n'));
        let v: Value = serde_json::from_slice(&l).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"ok": true}})
        );
        let v: Value =
            serde_json::from_slice(&error_line(&Value::Null, METHOD_NOT_FOUND, "x")).unwrap();
        assert_eq!(v["error"]["code"], -32601);
    }
}
