//! Rows of the audit log and how they are made from a finished call.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::call_key::CallKey;
use crate::canonical::{ByteSink, call_digest, call_hash, write_canonical};
use crate::context::Session;
use crate::engine::CallReply;
use crate::error::ErrorKind;
use crate::events::StageName;
use crate::mcp::convert::MAX_ERROR_TEXT;
use crate::schema::redact_secrets;
use crate::tool::JsonObject;

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
    #[serde(deserialize_with = "json_text")]
    pub caller: String,
    /// Tool name as requested.
    pub tool: String,
    /// Canonical arguments with secrets redacted.
    #[serde(deserialize_with = "json_text")]
    pub args: String,
    /// Keyed hash of tool + unredacted canonical arguments (see
    /// [`crate::call_key`]).
    pub args_hash: String,
    /// `allowed` (the tool ran) or `refused`.
    pub decision: Cow<'static, str>,
    /// `ok`, `tool_error`, `error` or `cancelled` (the call's owner ended
    /// it; `error_kind` is then `cancelled` and the message says why).
    pub outcome: Cow<'static, str>,
    /// Error class.
    pub error_kind: Option<String>,
    /// Error message as the agent saw it.
    pub error_message: Option<String>,
    /// Stage timings as JSON.
    #[serde(deserialize_with = "json_text")]
    pub stages: String,
    /// Stage notes as JSON.
    #[serde(deserialize_with = "json_text")]
    pub notes: String,
    /// Output size in bytes.
    pub output_size: i64,
    /// SHA-256 of the output JSON.
    pub output_digest: Option<String>,
    /// Time in the pipeline, µs.
    pub elapsed_us: i64,
}

impl CallRecord {
    /// The journal form of a finished call: this record as one JSON object,
    /// written in a single pass on the caller's thread. The JSON columns
    /// (args, caller, stages, notes) are embedded as JSON rather than as
    /// strings of JSON, so nothing is escaped twice and no column is built
    /// as a string first; the writer thread reads the object back into a
    /// [`CallRecord`] off the reply path. `args` are the arguments the
    /// pipeline ended with; `schema`, given when the tool's schema marks
    /// anything secret, says which are (see [`crate::schema`]'s
    /// redaction); `key` keys the hash.
    pub(crate) fn journal_body(
        key: &CallKey,
        ts_ms: i64,
        session: &Session,
        tool: &str,
        args: &Value,
        schema: Option<&JsonObject>,
        reply: &CallReply,
    ) -> Vec<u8> {
        let shown = match schema {
            Some(s) => redact_secrets(s, args),
            None => Cow::Borrowed(args),
        };
        let ran = reply.trace.iter().any(|(s, _)| *s == StageName::Execute);
        let mut b = Body(Vec::with_capacity(LINE_CAPACITY));
        b.raw("{\"ts_ms\":");
        b.json(&ts_ms);
        b.raw(",\"call_id\":");
        b.json(&i64::try_from(reply.call_id).unwrap_or(i64::MAX));
        b.raw(",\"session\":");
        b.json(session.id.as_str());
        b.raw(",\"caller\":");
        b.json(&*session.caller);
        b.raw(",\"tool\":");
        b.json(tool);
        b.raw(",\"args\":");
        let start = b.0.len();
        write_canonical(&shown, &mut ByteSink(&mut b.0));
        let written = start..b.0.len();
        b.raw(",\"args_hash\":");
        match &shown {
            // Without secrets the shown arguments are the arguments: hash
            // the canonical form just written instead of making it again.
            Cow::Borrowed(_) => {
                let digest = call_digest(key, tool, b.0.get(written).unwrap_or_default());
                b.hex(&digest);
            }
            Cow::Owned(_) => b.json(&call_hash(key, tool, args)),
        }
        b.raw(",\"decision\":");
        b.json(if ran { "allowed" } else { "refused" });
        match &reply.result {
            Ok(r) => {
                b.raw(",\"outcome\":");
                b.json(if r.is_error { "tool_error" } else { "ok" });
                b.raw(",\"output_size\":");
                b.json(&i64::try_from(r.size()).unwrap_or(i64::MAX));
                b.raw(",\"output_digest\":");
                b.hex(&digest_json(r));
            }
            Err(e) => {
                b.raw(match e.kind() {
                    ErrorKind::Cancelled => ",\"outcome\":\"cancelled\"",
                    _ => ",\"outcome\":\"error\"",
                });
                b.raw(",\"output_size\":0,\"error_kind\":");
                b.json(e.kind().as_str());
                b.raw(",\"error_message\":");
                // As the agent saw it: cut where its reply was.
                b.json(&crate::events::display_text(e, MAX_ERROR_TEXT));
            }
        }
        b.raw(",\"stages\":");
        b.timings(&reply.trace);
        b.raw(",\"notes\":");
        b.json(&reply.notes);
        b.raw(",\"elapsed_us\":");
        b.json(&i64::try_from(reply.elapsed.as_micros()).unwrap_or(i64::MAX));
        b.raw("}");
        b.0
    }
}

/// Room for a typical journal line (about 640 bytes for a small call), so
/// writing one seldom reallocates.
const LINE_CAPACITY: usize = 1024;

/// A journal body being written.
struct Body(Vec<u8>);

impl Body {
    /// A SHA-256 digest as a JSON string of lowercase hex digits, encoded
    /// in place.
    fn hex(&mut self, digest: &[u8; 32]) {
        let mut digits = [0u8; 64];
        // Cannot fail: the buffer is exactly twice the digest.
        let _ = hex::encode_to_slice(digest, &mut digits);
        self.0.push(b'"');
        self.0.extend_from_slice(&digits);
        self.0.push(b'"');
    }

    /// Text that is already JSON (or JSON syntax).
    fn raw(&mut self, text: &str) {
        self.0.extend_from_slice(text.as_bytes());
    }

    /// A value as JSON. Writing to a `Vec` cannot fail, and none of the
    /// values written here has a serialiser that can.
    fn json(&mut self, value: &(impl Serialize + ?Sized)) {
        let _ = serde_json::to_writer(&mut self.0, value);
    }

    /// `[["execute",12],["timeout",14],...]`: stage names and
    /// microseconds, without the formatting machinery (a dozen entries on
    /// every call).
    fn timings(&mut self, trace: &[(StageName, std::time::Duration)]) {
        self.raw("[");
        for (i, (stage, d)) in trace.iter().enumerate() {
            self.raw(if i > 0 { ",[\"" } else { "[\"" });
            self.raw(stage.as_str());
            self.raw("\",");
            self.json(&u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
            self.raw("]");
        }
        self.raw("]");
    }
}

/// Reads a JSON column: embedded as JSON (journal bodies) or as a string
/// holding JSON (rows serialised with serde); either way its JSON text.
fn json_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let raw = <Box<serde_json::value::RawValue> as serde::Deserialize>::deserialize(d)?;
    let text = raw.get();
    if text.starts_with('"') {
        serde_json::from_str(text).map_err(serde::de::Error::custom)
    } else {
        Ok(text.to_owned())
    }
}

/// A journaled row as the writer inserts it: borrowed from the journal
/// line wherever the JSON allows (the JSON columns always, as journal
/// bodies embed them), so moving a row with an 8 MiB argument into SQLite
/// reads it once rather than copying it twice more.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct RecordRef<'a> {
    pub ts_ms: i64,
    pub call_id: i64,
    #[serde(borrow)]
    pub session: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "json_text_ref")]
    pub caller: Cow<'a, str>,
    #[serde(borrow)]
    pub tool: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "json_text_ref")]
    pub args: Cow<'a, str>,
    #[serde(borrow)]
    pub args_hash: Cow<'a, str>,
    #[serde(borrow)]
    pub decision: Cow<'a, str>,
    #[serde(borrow)]
    pub outcome: Cow<'a, str>,
    #[serde(borrow, default)]
    pub error_kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub error_message: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "json_text_ref")]
    pub stages: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "json_text_ref")]
    pub notes: Cow<'a, str>,
    pub output_size: i64,
    #[serde(borrow, default)]
    pub output_digest: Option<Cow<'a, str>>,
    pub elapsed_us: i64,
}

impl<'a> From<&'a CallRecord> for RecordRef<'a> {
    fn from(r: &'a CallRecord) -> Self {
        let b = |s: &'a String| Cow::Borrowed(s.as_str());
        Self {
            ts_ms: r.ts_ms,
            call_id: r.call_id,
            session: b(&r.session),
            caller: b(&r.caller),
            tool: b(&r.tool),
            args: b(&r.args),
            args_hash: b(&r.args_hash),
            decision: Cow::Borrowed(&r.decision),
            outcome: Cow::Borrowed(&r.outcome),
            error_kind: r.error_kind.as_ref().map(b),
            error_message: r.error_message.as_ref().map(b),
            stages: b(&r.stages),
            notes: b(&r.notes),
            output_size: r.output_size,
            output_digest: r.output_digest.as_ref().map(b),
            elapsed_us: r.elapsed_us,
        }
    }
}

/// [`json_text`], borrowing the text when the column is embedded JSON.
fn json_text_ref<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Cow<'de, str>, D::Error> {
    let raw = <&serde_json::value::RawValue as serde::Deserialize>::deserialize(d)?;
    let text = raw.get();
    if text.starts_with('"') {
        serde_json::from_str(text)
            .map(Cow::Owned)
            .map_err(serde::de::Error::custom)
    } else {
        Ok(Cow::Borrowed(text))
    }
}

/// SHA-256 of a value's JSON, hashed as it is written rather than from a
/// buffer holding all of it.
fn digest_json(value: &impl Serialize) -> [u8; 32] {
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
    w.0.finalize().into()
}

#[cfg(test)]
impl CallRecord {
    /// An allowed call of tool `t` that ran now, with no arguments, for
    /// tests to change what they need of.
    pub(crate) fn sample(call_id: i64) -> Self {
        Self {
            ts_ms: super::store::now_ms(),
            call_id,
            session: "s".into(),
            caller: "{}".into(),
            tool: "t".into(),
            args: "{}".into(),
            args_hash: "h".into(),
            decision: "allowed".into(),
            outcome: "ok".into(),
            error_kind: None,
            error_message: None,
            stages: "[]".into(),
            notes: "[]".into(),
            output_size: 2,
            output_digest: Some("d".into()),
            elapsed_us: 5,
        }
    }
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
    /// Redacted canonical arguments; empty when the read left them out
    /// (see `args_left_out`).
    pub args: String,
    /// Set by reads of many rows when the arguments are longer than they
    /// load per row (see `crate::control::audit_query`): their length in
    /// bytes, and `args` is empty. Such a row's arguments are read on
    /// their own, one row at a time.
    #[sqlx(default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_left_out: Option<i64>,
    /// Argument hash.
    pub args_hash: String,
    /// `allowed` / `refused`.
    pub decision: String,
    /// `ok` / `tool_error` / `error` / `cancelled`.
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

impl CallRow {
    /// The row a record becomes under row id `id`.
    pub(crate) fn from_record(id: i64, r: CallRecord) -> Self {
        Self {
            id,
            ts_ms: r.ts_ms,
            call_id: r.call_id,
            session: r.session,
            caller: r.caller,
            tool: r.tool,
            args: r.args,
            args_left_out: None,
            args_hash: r.args_hash,
            decision: r.decision.into_owned(),
            outcome: r.outcome.into_owned(),
            error_kind: r.error_kind,
            error_message: r.error_message,
            stages: r.stages,
            notes: r.notes,
            output_size: r.output_size,
            output_digest: r.output_digest,
            elapsed_us: r.elapsed_us,
        }
    }
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
    use crate::canonical::canonical_json;
    use serde_json::json;

    fn key() -> CallKey {
        CallKey::new([3; 32])
    }

    #[test]
    fn the_stage_timings_are_json_of_names_and_microseconds() {
        let trace = [
            (StageName::Execute, std::time::Duration::from_micros(12)),
            (StageName::LoopGuard, std::time::Duration::from_nanos(1_999)),
        ];
        let timings = |trace: &[(StageName, std::time::Duration)]| {
            let mut b = Body(Vec::new());
            b.timings(trace);
            String::from_utf8(b.0).unwrap_or_default()
        };
        let v: Value = serde_json::from_str(&timings(&trace)).unwrap_or(Value::Null);
        assert_eq!(v, json!([["execute", 12], ["loop_guard", 1]]));
        assert_eq!(timings(&[]), "[]");
    }

    #[test]
    fn the_streamed_digest_is_the_digest_of_the_whole_json() {
        let value = json!({"content": [{"type": "text", "text": "hi \"there\""}], "n": [1, 2.5]});
        let whole: [u8; 32] = Sha256::digest(serde_json::to_vec(&value).unwrap_or_default()).into();
        assert_eq!(digest_json(&value), whole);
    }

    fn reply(result: Result<crate::tool::ToolResult, crate::error::CallError>) -> CallReply {
        CallReply {
            call_id: 7,
            result,
            elapsed: std::time::Duration::from_micros(250),
            notes: vec![(StageName::Policy, "allow \"quoted\" → ok".into())],
            trace: vec![
                (StageName::Execute, std::time::Duration::from_micros(200)),
                (StageName::Policy, std::time::Duration::from_micros(240)),
            ],
        }
    }

    fn body_of(reply: &CallReply, args: &Value, schema: Option<&JsonObject>) -> CallRecord {
        let session = Session::new("s-1", crate::context::Caller::via("test"));
        let body =
            CallRecord::journal_body(&key(), 1_700, &session, "fs_read", args, schema, reply);
        serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&body)))
    }

    #[test]
    fn a_journal_body_reads_back_as_the_row_it_describes() {
        let result = crate::tool::ToolResult {
            content: vec![crate::tool::Content::text("line \"one\"\nline two")],
            ..Default::default()
        };
        let args = json!({"path": "a \"b\".txt", "n": [1, 2.5, null]});
        let r = reply(Ok(result.clone()));
        let rec = body_of(&r, &args, None);
        assert_eq!(rec.ts_ms, 1_700);
        assert_eq!(rec.call_id, 7);
        assert_eq!(rec.session, "s-1");
        assert_eq!(rec.tool, "fs_read");
        assert_eq!(rec.args, canonical_json(&args));
        assert_eq!(rec.args_hash, call_hash(&key(), "fs_read", &args));
        assert_eq!(rec.decision, "allowed");
        assert_eq!(rec.outcome, "ok");
        assert_eq!((rec.error_kind, rec.error_message), (None, None));
        assert_eq!(rec.output_size, i64::try_from(result.size()).unwrap_or(-1));
        assert_eq!(
            rec.output_digest,
            Some(crate::canonical::hex_lower(&digest_json(&result)))
        );
        assert_eq!(rec.stages, r#"[["execute",200],["policy",240]]"#);
        let notes: Value = serde_json::from_str(&rec.notes).unwrap_or(Value::Null);
        assert_eq!(notes, json!([["policy", "allow \"quoted\" → ok"]]));
        let caller: Value = serde_json::from_str(&rec.caller).unwrap_or(Value::Null);
        assert_eq!(caller["via"], "test");
        assert_eq!(rec.elapsed_us, 250);
    }

    #[test]
    fn a_refused_call_is_journaled_with_its_error_and_redacted_arguments() {
        let schema = match json!({"type": "object", "properties": {"token": {"type": "string", "writeOnly": true}}})
        {
            Value::Object(o) => o,
            _ => unreachable!(),
        };
        let mut r = reply(Err(crate::error::CallError::PolicyDenied {
            reason: "no \"way\"".into(),
        }));
        r.trace.retain(|(s, _)| *s != StageName::Execute);
        let args = json!({"token": "s3cret"});
        let rec = body_of(&r, &args, Some(&schema));
        assert_eq!(rec.decision, "refused");
        assert_eq!(rec.outcome, "error");
        assert_eq!(rec.error_kind.as_deref(), Some("policy_denied"));
        assert!(
            rec.error_message
                .as_deref()
                .is_some_and(|m| m.contains("no \"way\""))
        );
        assert_eq!((rec.output_size, rec.output_digest), (0, None));
        assert!(!rec.args.contains("s3cret"), "{}", rec.args);
        // The hash is of the real arguments, so equal calls still match.
        assert_eq!(rec.args_hash, call_hash(&key(), "fs_read", &args));
    }

    #[test]
    fn a_cancelled_call_is_journaled_as_cancelled_with_its_reason() {
        let reason = crate::cancel::CancelReason::ClientDisconnected;
        let r = reply(Err(crate::error::CallError::Cancelled { reason }));
        let rec = body_of(&r, &json!({}), None);
        // It was cut short while the tool ran: the tool did run.
        assert_eq!(rec.decision, "allowed");
        assert_eq!(rec.outcome, "cancelled");
        assert_eq!(rec.error_kind.as_deref(), Some("cancelled"));
        assert!(
            rec.error_message
                .as_deref()
                .is_some_and(|m| m.contains("the client disconnected")),
            "{:?}",
            rec.error_message
        );
    }

    // Before: the row kept the whole message, which quotes what was
    // refused (an 8 MiB path made an 8 MiB message, escaped once more).
    #[test]
    fn a_long_error_is_journaled_as_the_agent_saw_it() {
        let e = crate::error::CallError::PolicyDenied {
            reason: "no ".repeat(1 << 20),
        };
        let seen = crate::mcp::convert::call_result(7, &Err(e.clone()));
        let rec = body_of(&reply(Err(e)), &json!({}), None);
        let message = rec.error_message.unwrap_or_default();
        assert!(message.len() <= MAX_ERROR_TEXT, "{}", message.len());
        assert_eq!(seen["content"][0]["text"], message.as_str());
    }

    // The writer inserts rows borrowed from the journal line: the JSON
    // columns are not copied out of it.
    #[test]
    fn a_journal_line_is_read_back_without_copying_its_arguments() {
        let args = json!({"path": "a".repeat(1 << 16), "q": "\"quoted\""});
        let r = reply(Ok(crate::tool::ToolResult::default()));
        let session = Session::new("s-1", crate::context::Caller::via("test"));
        let body = CallRecord::journal_body(&key(), 1_700, &session, "fs_read", &args, None, &r);
        let row: RecordRef<'_> = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(row.args, Cow::Borrowed(_)));
        assert_eq!(row.args, canonical_json(&args));
        let owned: CallRecord = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}"));
        let again = RecordRef::from(&owned);
        assert_eq!(
            (again.args, again.caller, again.stages, again.error_message),
            (row.args, row.caller, row.stages, row.error_message)
        );
    }

    #[test]
    fn rows_serialised_with_serde_read_back_the_same() {
        // Journals written by `record_call` (and by earlier versions) hold
        // the JSON columns as strings; both forms must read back alike.
        let r = reply(Ok(crate::tool::ToolResult::default()));
        let rec = body_of(&r, &json!({"q": "x"}), None);
        let line = serde_json::to_vec(&rec).unwrap_or_default();
        let again: CallRecord = serde_json::from_slice(&line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, rec);
    }
}
