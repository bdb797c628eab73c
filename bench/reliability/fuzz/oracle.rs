//! What a frame must get back, by the JSON-RPC 2.0 rules the agent
//! protocol states (docs/agent-protocol.md): a request with a usable id
//! gets an answer carrying that id; a frame that is not a request (bad
//! JSON, not an object, no usable id) gets one error with a null id; a
//! notification or a response gets nothing.

use serde_json::Value;

/// The answer a frame must get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// An answer (result or error) with this id, as JSON text.
    Id(String),
    /// One error with `"id": null`.
    NullError,
    /// No answer.
    Nothing,
}

/// What a frame must get back from a reader with the engine's limits: one
/// past them (`over_length`, or too deep or too many values) is refused
/// before it is parsed, and answered with the id its first bytes show, or
/// a null id when they show none (docs/agent-protocol.md, "Limits"). The
/// id is read by the engine's own function: that it is found is the
/// protocol's promise; where it stands is not what this harness tests.
pub fn expect_limited(frame: &[u8], over_length: bool, blank_is_nothing: bool) -> Expect {
    use toolgate::mcp::leading_id::{PREFIX, leading_id};
    if over_length || toolgate::mcp::shape::Shape::of(frame).is_err() {
        return leading_id(&frame[..frame.len().min(PREFIX)])
            .map_or(Expect::NullError, |id| Expect::Id(id.to_string()));
    }
    expect(frame, blank_is_nothing)
}

/// Whether `id` is one JSON-RPC allows: a string or an integer (a JSON
/// `null` reads as no id at all).
fn usable_id(id: &Value) -> Option<bool> {
    match id {
        Value::Null => None,
        Value::String(_) => Some(true),
        Value::Number(n) => Some(!n.is_f64()),
        _ => Some(false),
    }
}

/// What `frame` must get back. `blank_is_nothing`: the socket skips
/// frames of whitespace only (an empty line is no message); an HTTP body
/// of whitespace is a parse error.
pub fn expect(frame: &[u8], blank_is_nothing: bool) -> Expect {
    if blank_is_nothing && frame.iter().all(u8::is_ascii_whitespace) {
        return Expect::Nothing;
    }
    let Ok(text) = std::str::from_utf8(frame) else {
        return Expect::NullError;
    };
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        return Expect::NullError;
    };
    let id = match o.get("id").map(|id| (id, usable_id(id))) {
        None | Some((_, None)) => None,
        Some((id, Some(true))) => Some(id.to_string()),
        Some((_, Some(false))) => return Expect::NullError,
    };
    let answer = || id.clone().map_or(Expect::NullError, Expect::Id);
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return answer();
    }
    let present = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
    match o.get("method") {
        Some(Value::String(_)) if id.is_some() => answer(),
        Some(Value::String(_)) => Expect::Nothing,
        Some(v) if !v.is_null() => answer(),
        _ if id.is_some() && (present("result") || present("error")) => Expect::Nothing,
        _ => answer(),
    }
}

/// The oracle's own rules, checked before every fuzz run (a bench target
/// has no test harness): a wrong oracle would blame the daemon.
pub fn self_check() -> Result<(), String> {
    let cases: [(&str, bool, Expect); 12] = [
        ("garbage", true, Expect::NullError),
        ("   ", true, Expect::Nothing),
        ("  ", false, Expect::NullError),
        ("[1]", true, Expect::NullError),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            true,
            Expect::Id("1".into()),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"a","method":5}"#,
            true,
            Expect::Id("\"a\"".into()),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            true,
            Expect::NullError,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            true,
            Expect::Nothing,
        ),
        (
            r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#,
            true,
            Expect::Id("2".into()),
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            true,
            Expect::Nothing,
        ),
        (r#"{"jsonrpc":"2.0","id":3}"#, true, Expect::Id("3".into())),
        (r#"{"jsonrpc":"2.0"}"#, true, Expect::NullError),
    ];
    for (frame, blank, want) in cases {
        let got = expect(frame.as_bytes(), blank);
        if got != want {
            return Err(format!("oracle: {frame} -> {got:?}, want {want:?}"));
        }
    }
    Ok(())
}
