//! Which argument values a tool's input schema marks secret, and the copy
//! of the arguments people see: the one redaction behind the audit log's
//! rows, approval requests (and so the console's call details) and
//! validation messages.
//!
//! A value is secret when a schema that applies to it says so:
//! `writeOnly: true` (JSON Schema's "never echo this back"), `format:
//! "password"`, or toolgate's `x-secret: true`. The schemas that apply to
//! a value are found the way a validator would find them, without deciding
//! validity:
//! - `properties`, `patternProperties` (matching names) and, for names
//!   neither lists, `additionalProperties` when it is a schema;
//! - `prefixItems`, `items` (a schema, or a list of schemas by position
//!   with `additionalItems` after it);
//! - `$ref` to a local JSON pointer (`#/$defs/…`, `#/definitions/…`, `#`),
//!   resolved against the root schema; a reference cycle is followed once;
//! - `allOf`, and every branch of `anyOf`/`oneOf` (and `then`/`else`) that
//!   could apply: a branch whose `type` excludes the value cannot. When
//!   none could (the value is invalid), all of them count, so an invalid
//!   value in a secret's place is still hidden.
//!
//! A secret value is replaced whole by `"[redacted]"`, objects and arrays
//! included. A schema too tangled to follow within [`MAX_NODES`] schema
//! visits has the value it could not finish redacted whole: this code
//! fails closed. Remote references are not fetched and count as no schema.
//!
//! Most tools have no secret at all: [`has_secret_marker`] answers that once
//! per definition (`CompiledSchema::has_secrets`), and then no call walks
//! anything. When nothing present is secret, [`redact_secrets`] copies
//! nothing either.

use std::borrow::Cow;

use super::cast::has_type;
use serde_json::Value;

use super::pointer::unescape;
use crate::tool::JsonObject;

/// Text stored in place of a secret value.
pub const REDACTED: &str = "[redacted]";

/// Schema visits allowed for one redaction; past it, the value being
/// looked at is redacted whole.
const MAX_NODES: usize = 10_000;

/// Whether a schema node itself marks its value secret.
pub(super) fn marks_secret(node: &JsonObject) -> bool {
    node.get("writeOnly").and_then(Value::as_bool) == Some(true)
        || node.get("x-secret").and_then(Value::as_bool) == Some(true)
        || node.get("format").and_then(Value::as_str) == Some("password")
}

/// Whether any schema object anywhere in `schema` carries a secret marker:
/// if not, no argument of the tool can be secret. Over-approximates (an
/// unused `$defs` entry counts), which costs only a walk.
pub fn has_secret_marker(schema: &JsonObject) -> bool {
    fn any(v: &Value) -> bool {
        match v {
            Value::Object(o) => marks_secret(o) || o.values().any(any),
            Value::Array(a) => a.iter().any(any),
            _ => false,
        }
    }
    marks_secret(schema) || schema.values().any(any)
}

/// `args` with every secret value replaced by `"[redacted]"`; borrowed
/// (no copy) when nothing in `args` is secret.
pub fn redact_secrets<'a>(schema: &JsonObject, args: &'a Value) -> Cow<'a, Value> {
    let mut walk = Walk {
        root: schema,
        budget: MAX_NODES,
    };
    match walk.value(&[schema], args) {
        Some(shown) => Cow::Owned(shown),
        None => Cow::Borrowed(args),
    }
}

/// The budget ran out.
struct TooComplex;

struct Walk<'s> {
    root: &'s JsonObject,
    budget: usize,
}

impl<'s> Walk<'s> {
    /// The redacted copy of `value`, to which every schema in `nodes`
    /// applies; `None` when nothing in it is secret.
    fn value(&mut self, nodes: &[&'s JsonObject], value: &Value) -> Option<Value> {
        let mut applied = Vec::with_capacity(nodes.len());
        let mut refs = Vec::new();
        for node in nodes {
            if self.expand(node, value, &mut applied, &mut refs).is_err() {
                return Some(hidden());
            }
        }
        if applied.iter().any(|n| marks_secret(n)) {
            return Some(hidden());
        }
        match value {
            Value::Object(map) => self.object(&applied, map),
            Value::Array(items) => self.array(&applied, items),
            _ => None,
        }
    }

    /// Adds `node` and every schema it brings along for `value` (`$ref`
    /// targets, combinator branches that could apply) to `out`. `refs` are
    /// the references being followed, so a cycle stops.
    fn expand(
        &mut self,
        node: &'s JsonObject,
        value: &Value,
        out: &mut Vec<&'s JsonObject>,
        refs: &mut Vec<&'s str>,
    ) -> Result<(), TooComplex> {
        self.budget = self.budget.checked_sub(1).ok_or(TooComplex)?;
        out.push(node);
        if let Some(r) = node.get("$ref").and_then(Value::as_str)
            && !refs.contains(&r)
            && let Some(target) = self.resolve(r)
        {
            refs.push(r);
            let expanded = self.expand(target, value, out, refs);
            refs.pop();
            expanded?;
        }
        if let Some(Value::Array(all)) = node.get("allOf") {
            for branch in all.iter().filter_map(Value::as_object) {
                self.expand(branch, value, out, refs)?;
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = node.get(key) {
                let branches: Vec<&'s JsonObject> =
                    branches.iter().filter_map(Value::as_object).collect();
                self.branches(&branches, value, out, refs)?;
            }
        }
        let conditional: Vec<&'s JsonObject> = ["then", "else"]
            .iter()
            .filter_map(|k| node.get(*k).and_then(Value::as_object))
            .collect();
        self.branches(&conditional, value, out, refs)
    }

    /// Expands the branches that could apply to `value`, or all of them
    /// when none could.
    fn branches(
        &mut self,
        branches: &[&'s JsonObject],
        value: &Value,
        out: &mut Vec<&'s JsonObject>,
        refs: &mut Vec<&'s str>,
    ) -> Result<(), TooComplex> {
        let fitting: Vec<&'s JsonObject> = branches
            .iter()
            .copied()
            .filter(|b| self.could_apply(b, value, 0))
            .collect();
        let chosen = if fitting.is_empty() {
            branches
        } else {
            &fitting
        };
        for branch in chosen {
            self.expand(branch, value, out, refs)?;
        }
        Ok(())
    }

    /// False when `node`'s `type` (or that of the schema it refers to)
    /// rules `value` out.
    fn could_apply(&self, node: &JsonObject, value: &Value, depth: u8) -> bool {
        let typed = match node.get("type") {
            Some(Value::String(t)) => has_type(value, t),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| has_type(value, t)),
            _ => true,
        };
        if !typed {
            return false;
        }
        match node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| self.resolve(r))
        {
            Some(target) if depth < 8 => self.could_apply(target, value, depth + 1),
            _ => true,
        }
    }

    /// A local reference: a JSON pointer into the root schema.
    fn resolve(&self, reference: &str) -> Option<&'s JsonObject> {
        let pointer = reference.strip_prefix('#')?;
        let mut segs = pointer.split('/').skip(1);
        let Some(first) = segs.next() else {
            return pointer.is_empty().then_some(self.root);
        };
        let mut at = self.root.get(&*unescape(first))?;
        for seg in segs {
            let seg = unescape(seg);
            at = match at {
                Value::Object(o) => o.get(&*seg)?,
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        at.as_object()
    }

    /// An object's members under the schemas that apply to each.
    fn object(&mut self, nodes: &[&'s JsonObject], map: &JsonObject) -> Option<Value> {
        let mut out: Option<JsonObject> = None;
        for (i, (key, member)) in map.iter().enumerate() {
            let children = member_schemas(nodes, key);
            let shown = if children.is_empty() {
                None
            } else {
                self.value(&children, member)
            };
            match (shown, &mut out) {
                (Some(s), None) => {
                    let mut copy: JsonObject = map
                        .iter()
                        .take(i)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    copy.insert(key.clone(), s);
                    out = Some(copy);
                }
                (Some(s), Some(copy)) => {
                    copy.insert(key.clone(), s);
                }
                (None, Some(copy)) => {
                    copy.insert(key.clone(), member.clone());
                }
                (None, None) => {}
            }
        }
        out.map(Value::Object)
    }

    /// An array's items under the schemas that apply to each position.
    fn array(&mut self, nodes: &[&'s JsonObject], items: &[Value]) -> Option<Value> {
        let mut out: Option<Vec<Value>> = None;
        for (i, item) in items.iter().enumerate() {
            let children = item_schemas(nodes, i);
            let shown = if children.is_empty() {
                None
            } else {
                self.value(&children, item)
            };
            match (shown, &mut out) {
                (Some(s), None) => {
                    let mut copy: Vec<Value> = items.iter().take(i).cloned().collect();
                    copy.push(s);
                    out = Some(copy);
                }
                (Some(s), Some(copy)) => copy.push(s),
                (None, Some(copy)) => copy.push(item.clone()),
                (None, None) => {}
            }
        }
        out.map(Value::Array)
    }
}

fn hidden() -> Value {
    Value::String(REDACTED.to_owned())
}

/// The schemas that apply to member `key` of an object under `nodes`.
fn member_schemas<'s>(nodes: &[&'s JsonObject], key: &str) -> Vec<&'s JsonObject> {
    let mut out = Vec::new();
    for node in nodes {
        let mut listed = false;
        if let Some(s) = node
            .get("properties")
            .and_then(|p| p.get(key))
            .and_then(Value::as_object)
        {
            out.push(s);
            listed = true;
        }
        if let Some(Value::Object(patterns)) = node.get("patternProperties") {
            for (pattern, s) in patterns {
                // An invalid pattern matches nothing here; the schema did
                // not compile with one anyway.
                if regex::Regex::new(pattern).is_ok_and(|re| re.is_match(key)) {
                    listed = true;
                    out.extend(s.as_object());
                }
            }
        }
        let declared = node
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(key));
        if !listed && !declared {
            out.extend(node.get("additionalProperties").and_then(Value::as_object));
        }
    }
    out
}

/// The schemas that apply to item `i` of an array under `nodes`.
fn item_schemas<'s>(nodes: &[&'s JsonObject], i: usize) -> Vec<&'s JsonObject> {
    let mut out = Vec::new();
    for node in nodes {
        let prefix = node.get("prefixItems").and_then(Value::as_array);
        if let Some(s) = prefix.and_then(|p| p.get(i)) {
            out.extend(s.as_object());
            continue;
        }
        match node.get("items") {
            // Before 2020-12: a list of schemas by position.
            Some(Value::Array(by_position)) => match by_position.get(i) {
                Some(s) => out.extend(s.as_object()),
                None => out.extend(node.get("additionalItems").and_then(Value::as_object)),
            },
            Some(Value::Object(s)) => out.push(s),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "secret_tests.rs"]
mod tests;
