//! Rows of the audit log and how they are made from a finished call.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical::{call_hash, canonical_json, hash_canonical};
use crate::context::Session;
use crate::engine::CallReply;
use crate::events::StageName;
use crate::tool::JsonObject;

/// Text stored in place of a secret argument.
pub(crate) const REDACTED: &str = "[redacted]";

/// One call, ready to insert. Serializable because it is journaled (see
/// the `spool` module) before it reaches SQLite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CallRecord {
    /// Arrival, unix ms.
    pub ts_ms: i64,
    /// Engine call id.
    pub call_id: i64,
    /// Session id.
    pub session: String,
    /// Caller as JSON.
    pub caller: String,
    /// Tool name as requested.
    pub tool: String,
    /// Canonical arguments with secrets redacted.
    pub args: String,
    /// Hash of tool + unredacted canonical arguments.
    pub args_hash: String,
    /// `allowed` (the tool ran) or `refused`.
    pub decision: Cow<'static, str>,
    /// `ok`, `tool_error` or `error`.
    pub outcome: Cow<'static, str>,
    /// Error class.
    pub error_kind: Option<String>,
    /// Error message as the agent saw it.
    pub error_message: Option<String>,
    /// Stage timings as JSON.
    pub stages: String,
    /// Stage notes as JSON.
    pub notes: String,
    /// Output size in bytes.
    pub output_size: i64,
    /// SHA-256 of the output JSON.
    pub output_digest: Option<String>,
    /// Time in the pipeline, µs.
    pub elapsed_us: i64,
}

impl CallRecord {
    /// The record of `reply`. `args` are the arguments the pipeline ended
    /// with; `schema` (if the tool was found) says which are secret.
    pub fn from_reply(
        ts_ms: i64,
        session: &Session,
        tool: &str,
        args: &Value,
        schema: Option<&JsonObject>,
        reply: &CallReply,
    ) -> Self {
        let shown = match schema {
            Some(s) => redact_secrets(s, args),
            None => Cow::Borrowed(args),
        };
        let args_json = canonical_json(&shown);
        // Without secrets the shown arguments are the arguments: hash the
        // canonical form already made instead of making it again.
        let args_hash = match &shown {
            Cow::Borrowed(_) => hash_canonical(tool, &args_json),
            Cow::Owned(_) => call_hash(tool, args),
        };
        let ran = reply.trace.iter().any(|(s, _)| *s == StageName::Execute);
        let (outcome, error_kind, error_message, output_size, output_digest) = match &reply.result {
            Ok(r) => {
                let digest = digest_json(r);
                (
                    if r.is_error { "tool_error" } else { "ok" },
                    None,
                    None,
                    r.size(),
                    Some(digest),
                )
            }
            Err(e) => (
                "error",
                Some(e.kind().to_string()),
                Some(e.to_string()),
                0,
                None,
            ),
        };
        Self {
            ts_ms,
            call_id: i64::try_from(reply.call_id).unwrap_or(i64::MAX),
            session: session.id.to_string(),
            caller: serde_json::to_string(&*session.caller).unwrap_or_default(),
            tool: tool.to_owned(),
            args: args_json,
            args_hash,
            decision: Cow::Borrowed(if ran { "allowed" } else { "refused" }),
            outcome: Cow::Borrowed(outcome),
            error_kind,
            error_message,
            stages: timings_json(&reply.trace),
            notes: serde_json::to_string(&reply.notes).unwrap_or_default(),
            output_size: i64::try_from(output_size).unwrap_or(i64::MAX),
            output_digest,
            elapsed_us: i64::try_from(reply.elapsed.as_micros()).unwrap_or(i64::MAX),
        }
    }
}

/// `[["execute",12],["timeout",14],...]`: stage names and microseconds.
fn timings_json(trace: &[(StageName, std::time::Duration)]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(16 + 20 * trace.len());
    out.push('[');
    for (i, (stage, d)) in trace.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "[\"{}\",{}]", stage.as_str(), d.as_micros());
    }
    out.push(']');
    out
}

/// SHA-256 of a value's JSON, hex-encoded, hashed as it is written rather
/// than from a buffer holding all of it.
fn digest_json(value: &impl Serialize) -> String {
    struct HashWriter(Sha256);
    impl std::io::Write for HashWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = HashWriter(Sha256::new());
    let _ = serde_json::to_writer(&mut w, value);
    hex::encode(w.0.finalize())
}

/// Whether a property schema marks its value as secret: `writeOnly: true`
/// (JSON Schema's own word for "never echo this back"), `format:
/// "password"`, or toolgate's `x-secret: true`.
fn is_secret(prop: &Value) -> bool {
    prop.get("writeOnly").and_then(Value::as_bool) == Some(true)
        || prop.get("x-secret").and_then(Value::as_bool) == Some(true)
        || prop.get("format").and_then(Value::as_str) == Some("password")
}

/// `args` with every secret argument (at any depth of nested objects)
/// replaced by [`REDACTED`].
pub fn redact_secrets<'a>(schema: &JsonObject, args: &'a Value) -> Cow<'a, Value> {
    if has_secret(schema, args) {
        Cow::Owned(redacted(schema, args))
    } else {
        Cow::Borrowed(args)
    }
}

/// Whether any argument present in `args` is secret by `schema`; most
/// tools have none, and then nothing is copied.
fn has_secret(schema: &JsonObject, args: &Value) -> bool {
    let (Some(props), Value::Object(obj)) =
        (schema.get("properties").and_then(Value::as_object), args)
    else {
        return false;
    };
    obj.iter().any(|(k, v)| match props.get(k) {
        Some(p) if is_secret(p) => true,
        Some(Value::Object(p)) => has_secret(p, v),
        _ => false,
    })
}

fn redacted(schema: &JsonObject, args: &Value) -> Value {
    let (Some(props), Value::Object(obj)) =
        (schema.get("properties").and_then(Value::as_object), args)
    else {
        return args.clone();
    };
    let out = obj
        .iter()
        .map(|(k, v)| {
            let shown = match props.get(k) {
                Some(p) if is_secret(p) => Value::String(REDACTED.into()),
                Some(Value::Object(p)) => redacted(p, v),
                _ => v.clone(),
            };
            (k.clone(), shown)
        })
        .collect();
    Value::Object(out)
}

/// A call row as read back.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct CallRow {
    /// Row id (monotonic).
    pub id: i64,
    /// Arrival, unix ms.
    pub ts_ms: i64,
    /// Engine call id.
    pub call_id: i64,
    /// Session id.
    pub session: String,
    /// Caller JSON.
    pub caller: String,
    /// Tool name.
    pub tool: String,
    /// Redacted canonical arguments.
    pub args: String,
    /// Argument hash.
    pub args_hash: String,
    /// `allowed` / `refused`.
    pub decision: String,
    /// `ok` / `tool_error` / `error`.
    pub outcome: String,
    /// Error class.
    pub error_kind: Option<String>,
    /// Error message.
    pub error_message: Option<String>,
    /// Stage timings JSON.
    pub stages: String,
    /// Notes JSON.
    pub notes: String,
    /// Output size.
    pub output_size: i64,
    /// Output digest.
    pub output_digest: Option<String>,
    /// Time in the pipeline, µs.
    pub elapsed_us: i64,
}

/// An event row as read back.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EventRow {
    /// Row id.
    pub id: i64,
    /// When, unix ms.
    pub ts_ms: i64,
    /// Event type.
    pub kind: String,
    /// Event JSON.
    pub body: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_at_any_depth() {
        let schema = match json!({"type": "object", "properties": {
            "user": {"type": "string"},
            "token": {"type": "string", "writeOnly": true},
            "pw": {"type": "string", "format": "password"},
            "auth": {"type": "object", "properties": {"key": {"type": "string", "x-secret": true}}}
        }}) {
            Value::Object(o) => o,
            _ => unreachable!(),
        };
        let args = json!({"user": "u", "token": "t0k", "pw": "hunter2", "auth": {"key": "k3y", "n": 1}, "extra": 2});
        let r = redact_secrets(&schema, &args).into_owned();
        assert_eq!(
            r,
            json!({"user": "u", "token": REDACTED, "pw": REDACTED, "auth": {"key": REDACTED, "n": 1}, "extra": 2})
        );
        let text = r.to_string();
        for secret in ["t0k", "hunter2", "k3y"] {
            assert!(!text.contains(secret));
        }
        // No secret among the arguments given: nothing is copied.
        let plain = json!({"user": "u", "auth": {"n": 1}});
        assert!(matches!(redact_secrets(&schema, &plain), Cow::Borrowed(_)));
        let nested = json!({"auth": {"key": "k3y"}});
        assert!(matches!(redact_secrets(&schema, &nested), Cow::Owned(_)));
    }

    #[test]
    fn the_stage_timings_are_json_of_names_and_microseconds() {
        let trace = [
            (StageName::Execute, std::time::Duration::from_micros(12)),
            (StageName::LoopGuard, std::time::Duration::from_nanos(1_999)),
        ];
        let v: Value = serde_json::from_str(&timings_json(&trace)).unwrap_or(Value::Null);
        assert_eq!(v, json!([["execute", 12], ["loop_guard", 1]]));
        assert_eq!(timings_json(&[]), "[]");
    }

    #[test]
    fn the_streamed_digest_is_the_digest_of_the_whole_json() {
        let value = json!({"content": [{"type": "text", "text": "hi \"there\""}], "n": [1, 2.5]});
        let whole = hex::encode(Sha256::digest(
            serde_json::to_vec(&value).unwrap_or_default(),
        ));
        assert_eq!(digest_json(&value), whole);
    }
}
