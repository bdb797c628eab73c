//! Canonical form of call arguments: the identity of "the same call".
//!
//! The loop guard counts repeats of the same call and approvals bind a
//! decision to exactly one call, so both need a form in which
//! `{"a":1,"b":2}` and `{"b":2,"a":1}` are equal. Object keys are sorted
//! recursively, whatever serde_json's map order is; numbers keep serde_json's
//! own shortest rendering. Hashes of it are keyed per data dir
//! ([`CallKey`]): the arguments hashed include secrets the audit log shows
//! redacted.

use std::fmt::Write;

use hmac::Mac;
use serde_json::Value;

use crate::call_key::CallKey;

/// Appends the canonical JSON of `v` to `out`: a `String`, an audit
/// journal line being written, or a hasher (see [`ByteSink`],
/// [`HashSink`]), so the form is never built twice just to be copied or
/// hashed. The sinks in this crate cannot fail; a failing one would stop
/// the output short.
pub fn write_canonical<W: Write + ?Sized>(v: &Value, out: &mut W) {
    let _ = canonical(v, out);
}

fn canonical<W: Write + ?Sized>(v: &Value, out: &mut W) -> std::fmt::Result {
    match v {
        Value::Object(map) => {
            out.write_char('{')?;
            // serde_json's map is sorted unless some crate in the build
            // turns on `preserve_order`; sort only then.
            if map.keys().is_sorted() {
                write_members(map.iter(), out)?;
            } else {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_unstable_by_key(|(k, _)| *k);
                write_members(members.into_iter(), out)?;
            }
            out.write_char('}')
        }
        Value::Array(items) => {
            out.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_char(',')?;
                }
                canonical(item, out)?;
            }
            out.write_char(']')
        }
        Value::String(s) => write_str(s, out),
        scalar => write!(out, "{scalar}"),
    }
}

fn write_members<'a, W: Write + ?Sized>(
    members: impl Iterator<Item = (&'a String, &'a Value)>,
    out: &mut W,
) -> std::fmt::Result {
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.write_char(',')?;
        }
        write_str(k, out)?;
        out.write_char(':')?;
        canonical(v, out)?;
    }
    Ok(())
}

/// A JSON string exactly as serde_json writes it. Most keys and values
/// need no escaping (serde_json escapes only `"`, `\` and control
/// characters) and are copied as they are.
fn write_str<W: Write + ?Sized>(s: &str, out: &mut W) -> std::fmt::Result {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.write_char('"')?;
        out.write_str(s)?;
        out.write_char('"')
    } else {
        write!(out, "{}", Value::String(s.to_owned()))
    }
}

/// A journal line being written, as a [`write_canonical`] sink
/// (`fmt::Write` has no impl for bytes).
pub struct ByteSink<'a>(pub &'a mut Vec<u8>);

impl Write for ByteSink<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// A hasher as a [`write_canonical`] sink: the canonical form is hashed
/// as it is produced, never held.
pub struct HashSink<'a, H>(pub &'a mut H);

impl<H: std::hash::Hasher> Write for HashSink<'_, H> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// The canonical JSON of `v`.
pub fn canonical_json(v: &Value) -> String {
    let mut s = String::new();
    write_canonical(v, &mut s);
    s
}

/// HMAC-SHA256 under `key` of `tool` and the canonical arguments,
/// hex-encoded. The tool name is part of the hash so equal arguments to
/// different tools differ.
pub fn call_hash(key: &CallKey, tool: &str, args: &Value) -> String {
    hex_lower(&call_digest(key, tool, canonical_json(args).as_bytes()))
}

/// The digest [`call_hash`] encodes, of arguments already in canonical
/// form: the audit log hashes the bytes it has just written.
pub fn call_digest(key: &CallKey, tool: &str, canonical_args: &[u8]) -> [u8; 32] {
    let mut h = key.mac();
    h.update(tool.as_bytes());
    h.update(&[0u8]);
    h.update(canonical_args);
    h.finalize().into_bytes().into()
}

/// `bytes` as lowercase hex. `hex::encode` collects chars one by one;
/// encoding into a buffer is several times cheaper.
pub fn hex_lower(bytes: &[u8]) -> String {
    let mut buf = vec![0u8; bytes.len() * 2];
    // Unreachable errors: the buffer is exactly twice the input, and hex
    // digits are ASCII (so the buffer becomes the string, uncopied).
    match hex::encode_to_slice(bytes, &mut buf) {
        Ok(()) => String::from_utf8(buf).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use sha2::{Digest, Sha256};

    fn key() -> CallKey {
        CallKey::new([7; 32])
    }

    #[test]
    fn digests_are_lowercase_hex_of_every_byte() {
        assert_eq!(hex_lower(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex_lower(&[]), "");
        // FIPS 180-2's first test vector.
        assert_eq!(
            hex_lower(&Sha256::digest(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-c]{1,2}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Rebuilds every object with its keys inserted in reverse order.
    fn reorder(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<_> = m.keys().cloned().collect();
                keys.reverse();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), reorder(&m[&k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(reorder).collect()),
            other => other.clone(),
        }
    }

    /// Like `arb_json`, with any text in strings and keys: quotes,
    /// backslashes, control characters, non-ASCII.
    fn arb_json_any_text() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<f64>().prop_map(|n| json!(n)),
            any::<String>().prop_map(Value::String),
            "[\"\\\\\\x00-\\x1f a-z\\u{7f}é]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn text_is_escaped_exactly_as_serde_json_does(v in arb_json_any_text()) {
            // serde_json's map is sorted in this build, so its compact
            // output is the canonical form.
            prop_assert_eq!(canonical_json(&v), serde_json::to_string(&v).unwrap());
        }

        #[test]
        fn key_order_never_matters(v in arb_json()) {
            prop_assert_eq!(call_hash(&key(), "t", &v), call_hash(&key(), "t", &reorder(&v)));
        }

        #[test]
        fn canonical_json_parses_back_to_the_same_value(v in arb_json()) {
            let back: Value = serde_json::from_str(&canonical_json(&v)).unwrap();
            prop_assert_eq!(back, v);
        }

        #[test]
        fn different_values_hash_differently(a in arb_json(), b in arb_json()) {
            prop_assume!(a != b);
            prop_assert_ne!(call_hash(&key(), "t", &a), call_hash(&key(), "t", &b));
        }
    }

    #[test]
    fn the_hash_is_hmac_sha256_and_depends_on_the_key() {
        // RFC 2104 spelt out with plain SHA-256: H((K^opad) || H((K^ipad) || m)).
        let hmac = |k: [u8; 32], m: &[u8]| {
            let mut block = [0u8; 64];
            block[..32].copy_from_slice(&k);
            let pad = |b: u8| block.map(|x| x ^ b);
            let inner = Sha256::new()
                .chain_update(pad(0x36))
                .chain_update(m)
                .finalize();
            Sha256::new()
                .chain_update(pad(0x5c))
                .chain_update(inner)
                .finalize()
        };
        let args = json!({"pin": "1234"});
        assert_eq!(
            call_hash(&key(), "t", &args),
            hex_lower(&hmac([7; 32], b"t\0{\"pin\":\"1234\"}"))
        );
        let other = CallKey::new([8; 32]);
        assert_ne!(call_hash(&key(), "t", &args), call_hash(&other, "t", &args));
    }

    #[test]
    fn tool_name_is_part_of_the_identity() {
        let args = json!({"path": "a"});
        assert_ne!(
            call_hash(&key(), "fs_read", &args),
            call_hash(&key(), "fs_write", &args)
        );
        assert_eq!(
            canonical_json(&json!({"b": [1, {"d": 1, "c": 2}], "a": "x"})),
            r#"{"a":"x","b":[1,{"c":2,"d":1}]}"#
        );
    }
}
