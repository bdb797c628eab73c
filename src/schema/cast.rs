//! Casting sloppy model arguments toward the schema, before validation.
//!
//! Models often send `"3"` for an integer, `"yes"` for a boolean, `"City= "`
//! for the key `City`, or a whole array as a JSON string. PraisonAI's
//! `_cast_arguments` repairs the first three for decorated tools; here
//! [`cast_args`] repairs all of them for every tool, recursively (object
//! `properties` and `additionalProperties`, array `items`/`prefixItems`).
//!
//! Contract:
//! - A value that already has one of the schema's listed `type`s is never
//!   type-cast; casting only moves a value *toward* the schema. The one
//!   rewrite of a matching value is a float with no fraction (`42.0`) for an
//!   `integer` field, which becomes the integer `42` (same number; typed tools
//!   deserialising into `i64` would reject the float).
//! - A key that is not declared is renamed to the declared property it
//!   matches after trimming whitespace and trailing `=` (and, failing that,
//!   case-insensitively, if exactly one matches), unless that property is
//!   already present. With `additionalProperties: false` (and no
//!   `patternProperties`, which we cannot evaluate), keys still unknown are
//!   dropped.
//! - `anyOf`, `oneOf`, `allOf` and `$ref` schemas are left alone: guessing a
//!   branch could turn a valid value into a wrong one. Validation reports
//!   what remains.
//! - Casting is idempotent, never panics, and reports one [`CastNote`] per
//!   change so the audit trail shows exactly what the tool received.

use std::fmt;

use serde_json::{Number, Value};

use crate::tool::JsonObject;

/// One change casting made, for the audit trail and the UI: a cast the
/// model did not ask for must be visible to the person reviewing the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CastNote {
    /// JSON pointer of the argument (`""` for the whole object).
    pub pointer: String,
    /// What was done, e.g. `string "3" → integer 3`.
    pub change: String,
}

impl fmt::Display for CastNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.change)
        } else {
            let name = self.pointer.trim_start_matches('/').replace('/', ".");
            write!(f, "argument `{name}`: {}", self.change)
        }
    }
}

/// Casts `args` in place toward `schema` and returns what changed, so the
/// validator judges what the model meant rather than how it typed it.
/// Never panics; values it cannot cast are left for validation to report.
pub fn cast_args(schema: &JsonObject, args: &mut Value) -> Vec<CastNote> {
    let mut notes = Vec::new();
    cast_value(schema, args, &Ptr::Root, &mut notes);
    notes
}

/// Keywords whose meaning depends on picking a branch or resolving a
/// reference; values under them are not cast.
const UNGUESSABLE: [&str; 4] = ["anyOf", "oneOf", "allOf", "$ref"];

/// Longest rendering of a value inside a note.
const SHOW_MAX: usize = 60;

fn cast_value(schema: &JsonObject, value: &mut Value, at: &Ptr<'_>, notes: &mut Vec<CastNote>) {
    if UNGUESSABLE.iter().any(|k| schema.contains_key(*k)) {
        return;
    }
    cast_type(schema, value, at, notes);
    cast_enum(schema, value, at, notes);
    match value {
        Value::Object(map) => cast_object(schema, map, at, notes),
        Value::Array(items) => cast_array(schema, items, at, notes),
        _ => {}
    }
}

/// The `type` keyword as a list of names, read in place (casting visits
/// every schema node of every call); empty when absent or malformed.
#[derive(Clone, Copy)]
struct Types<'a>(Option<&'a Value>);

impl<'a> Types<'a> {
    fn of(schema: &'a JsonObject) -> Self {
        Self(schema.get("type"))
    }

    fn iter(self) -> impl Iterator<Item = &'a str> {
        let (one, many) = match self.0 {
            Some(Value::String(t)) => (Some(t.as_str()), None),
            Some(Value::Array(ts)) => (None, Some(ts.iter().filter_map(Value::as_str))),
            _ => (None, None),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    fn is_empty(self) -> bool {
        self.iter().next().is_none()
    }
}

fn cast_type(schema: &JsonObject, value: &mut Value, at: &Ptr<'_>, notes: &mut Vec<CastNote>) {
    let types = Types::of(schema);
    if types.is_empty() {
        return;
    }
    if types.iter().any(|t| has_type(value, t)) {
        if types.iter().any(|t| t == "integer")
            && let Some(int) = integral_float(value)
        {
            replace(schema, value, int, at, notes);
        }
        return;
    }
    if let Some(cast) = types.iter().find_map(|t| cast_to(value, t)) {
        replace(schema, value, cast, at, notes);
    }
}

/// Replaces `value` with `new`, noting the change; the note names only
/// the types of a value `schema` marks secret (notes are in the audit log).
fn replace(
    schema: &JsonObject,
    value: &mut Value,
    new: Value,
    at: &Ptr<'_>,
    notes: &mut Vec<CastNote>,
) {
    let change = if super::secret::marks_secret(schema) {
        format!("{} → {}", type_name(value), type_name(&new))
    } else {
        format!("{} → {}", describe(value), describe(&new))
    };
    *value = new;
    notes.push(CastNote {
        pointer: at.render(),
        change,
    });
}

/// Whether `value` has JSON Schema type `ty`; as in the spec, `42.0` is an
/// integer (normalised to `42` by [`cast_type`]).
pub(super) fn has_type(value: &Value, ty: &str) -> bool {
    match (ty, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64() || integral_f64(n).is_some(),
        _ => false,
    }
}

/// `Some(integer)` when `value` is a float with no fractional part that fits.
fn integral_float(value: &Value) -> Option<Value> {
    match value {
        Value::Number(n) if n.is_f64() => integral_f64(n).map(Value::from),
        _ => None,
    }
}

fn integral_f64(n: &Number) -> Option<i64> {
    let f = n.as_f64()?;
    // i64::MAX as f64 rounds up to 2^63, which does not fit: compare with <.
    let fits = f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64;
    #[allow(clippy::cast_possible_truncation)]
    fits.then_some(f as i64)
}

/// `value` cast to type `ty`, if there is an unambiguous cast.
fn cast_to(value: &Value, ty: &str) -> Option<Value> {
    match ty {
        "integer" => to_integer(value),
        "number" => to_number(value),
        "boolean" => to_boolean(value),
        "string" => to_string(value),
        "array" | "object" => from_json_text(value, ty),
        _ => None,
    }
}

fn to_integer(value: &Value) -> Option<Value> {
    match value {
        Value::String(s) => parse_integer(s.trim()),
        Value::Number(n) => integral_f64(n).map(Value::from),
        _ => None,
    }
}

fn parse_integer(s: &str) -> Option<Value> {
    if let Ok(i) = s.parse::<i64>() {
        return Some(Value::from(i));
    }
    if let Ok(u) = s.parse::<u64>() {
        return Some(Value::from(u));
    }
    let f = s.parse::<f64>().ok()?;
    integral_f64(&Number::from_f64(f)?).map(Value::from)
}

fn to_number(value: &Value) -> Option<Value> {
    let s = value.as_str()?.trim();
    if let Some(int) = s
        .parse::<i64>()
        .ok()
        .map(Value::from)
        .or_else(|| s.parse::<u64>().ok().map(Value::from))
    {
        return Some(int);
    }
    Number::from_f64(s.parse::<f64>().ok()?).map(Value::Number)
}

fn to_boolean(value: &Value) -> Option<Value> {
    match value {
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(Value::Bool(true)),
            "false" | "no" | "off" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        Value::Number(n) => match n.as_f64() {
            Some(0.0) => Some(Value::Bool(false)),
            Some(1.0) => Some(Value::Bool(true)),
            _ => None,
        },
        _ => None,
    }
}

fn to_string(value: &Value) -> Option<Value> {
    match value {
        Value::Number(n) => Some(Value::String(n.to_string())),
        Value::Bool(b) => Some(Value::String(b.to_string())),
        _ => None,
    }
}

/// A string holding JSON of the wanted container type, parsed.
fn from_json_text(value: &Value, ty: &str) -> Option<Value> {
    let parsed: Value = serde_json::from_str(value.as_str()?.trim()).ok()?;
    has_type(&parsed, ty).then_some(parsed)
}

/// A string not in `enum` becomes the one enum value it equals ignoring
/// case and surrounding whitespace (`"Warm"` → `"warm"`, `"2"` → `2`).
/// Options the `type` keyword rules out are skipped, so a contradictory
/// schema cannot make two casts undo each other.
fn cast_enum(schema: &JsonObject, value: &mut Value, at: &Ptr<'_>, notes: &mut Vec<CastNote>) {
    let (Some(Value::Array(options)), Value::String(s)) = (schema.get("enum"), &*value) else {
        return;
    };
    if options.contains(value) {
        return;
    }
    let wanted = s.trim().to_lowercase();
    let types = Types::of(schema);
    let typed = |o: &&Value| types.is_empty() || types.iter().any(|t| has_type(o, t));
    let mut matches = options.iter().filter(typed).filter(|o| {
        let text = match o {
            Value::String(t) => t.to_lowercase(),
            other => other.to_string().to_lowercase(),
        };
        text == wanted
    });
    if let (Some(only), None) = (matches.next(), matches.next()) {
        let only = only.clone();
        replace(schema, value, only, at, notes);
    }
}

fn cast_object(schema: &JsonObject, map: &mut JsonObject, at: &Ptr<'_>, notes: &mut Vec<CastNote>) {
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(props) = props {
        rename_keys(props, map, at, notes);
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false))
        && !schema.contains_key("patternProperties");
    if closed {
        // Collecting an empty iterator allocates nothing: the usual case.
        let unknown: Vec<String> = map
            .keys()
            .filter(|k| props.is_none_or(|p| !p.contains_key(*k)))
            .cloned()
            .collect();
        for key in unknown {
            map.remove(&key);
            notes.push(CastNote {
                pointer: Ptr::Key(at, &key).render(),
                change: format!("dropped unknown argument `{key}`"),
            });
        }
    }
    let extra = schema
        .get("additionalProperties")
        .and_then(Value::as_object);
    for (key, value) in map.iter_mut() {
        let sub = match props.and_then(|p| p.get(key)) {
            Some(declared) => declared.as_object(),
            None => extra,
        };
        if let Some(sub) = sub {
            cast_value(sub, value, &Ptr::Key(at, key), notes);
        }
    }
}

/// Renames undeclared keys to the declared property they evidently mean.
fn rename_keys(props: &JsonObject, map: &mut JsonObject, at: &Ptr<'_>, notes: &mut Vec<CastNote>) {
    let undeclared: Vec<String> = map
        .keys()
        .filter(|k| !props.contains_key(*k))
        .cloned()
        .collect();
    for raw in undeclared {
        let Some(target) = declared_match(props, &raw) else {
            continue;
        };
        if map.contains_key(target) {
            continue;
        }
        if let Some(v) = map.remove(&raw) {
            map.insert(target.to_owned(), v);
            notes.push(CastNote {
                pointer: Ptr::Key(at, target).render(),
                change: format!("renamed argument `{raw}` → `{target}`"),
            });
        }
    }
}

/// The declared property `raw` means: exact after cleaning, else the only
/// one equal ignoring case.
fn declared_match<'p>(props: &'p JsonObject, raw: &str) -> Option<&'p str> {
    let clean = raw.trim().trim_end_matches('=').trim_end();
    if let Some((k, _)) = props.get_key_value(clean) {
        return Some(k.as_str());
    }
    let lower = clean.to_lowercase();
    let mut hits = props.keys().filter(|k| k.to_lowercase() == lower);
    match (hits.next(), hits.next()) {
        (Some(only), None) => Some(only.as_str()),
        _ => None,
    }
}

fn cast_array(schema: &JsonObject, items: &mut [Value], at: &Ptr<'_>, notes: &mut Vec<CastNote>) {
    let prefix: &[Value] = match (schema.get("prefixItems"), schema.get("items")) {
        (Some(Value::Array(p)), _) | (None, Some(Value::Array(p))) => p,
        _ => &[],
    };
    let rest = schema.get("items").and_then(Value::as_object);
    for (i, item) in items.iter_mut().enumerate() {
        let child = Ptr::Index(at, i);
        match prefix.get(i) {
            Some(sub) => {
                if let Some(sub) = sub.as_object() {
                    cast_value(sub, item, &child, notes);
                }
            }
            None if prefix.is_empty() || schema.contains_key("prefixItems") => {
                if let Some(rest) = rest {
                    cast_value(rest, item, &child, notes);
                }
            }
            // Old tuple form: items beyond it are governed by
            // `additionalItems`, which we do not cast.
            None => {}
        }
    }
}

/// Where a value sits in the arguments. Rendered as a JSON pointer only
/// when a note needs one: most calls need no note, and building a pointer
/// string for every argument cost more than casting it.
#[derive(Clone, Copy)]
enum Ptr<'a> {
    Root,
    Key(&'a Ptr<'a>, &'a str),
    Index(&'a Ptr<'a>, usize),
}

impl Ptr<'_> {
    /// The JSON pointer (RFC 6901; `""` for the whole object).
    fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Self::Root => {}
            Self::Key(parent, key) => {
                parent.write(out);
                super::pointer::push_segment(out, key);
            }
            Self::Index(parent, i) => {
                parent.write(out);
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }
}

/// `type value` for a note, the value shortened if long.
fn describe(value: &Value) -> String {
    format!("{} {}", type_name(value), shorten(&value.to_string()))
}

/// The JSON Schema type name of `value` (`integer` for whole numbers).
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `text` cut to [`SHOW_MAX`] characters, with `…` when cut.
pub(super) fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOW_MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[path = "cast_tests.rs"]
mod tests;
