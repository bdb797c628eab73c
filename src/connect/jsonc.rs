//! Editing a client's JSON or JSONC file through a concrete syntax tree
//! (`jsonc-parser`'s CST): only the server entries toolgate moves are
//! touched, so comments, key order, unknown keys and the file's own
//! indentation survive every edit.

use std::path::Path;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;

use super::ConnectError;

/// Parses `text` (comments and trailing commas allowed); an error names
/// the file, line and column.
///
/// # Errors
/// [`ConnectError::Malformed`].
pub fn parse(text: &str, path: &Path) -> Result<CstRootNode, ConnectError> {
    let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| {
        ConnectError::Malformed {
            path: path.to_owned(),
            line: e.line_display(),
            column: e.column_display(),
            reason: e.kind().to_string(),
        }
    })?;
    match root.value() {
        None => Ok(root),
        Some(v) if v.as_object().is_some() => Ok(root),
        Some(_) => Err(ConnectError::Malformed {
            path: path.to_owned(),
            line: 1,
            column: 1,
            reason: "the top level is not an object".into(),
        }),
    }
}

/// The object at `keys`, if every step is an object.
pub fn map(root: &CstRootNode, keys: &[String]) -> Option<CstObject> {
    let mut obj = root.object_value()?;
    for k in keys {
        obj = obj.object_value(k)?;
    }
    Some(obj)
}

/// The object at `keys`, made (with its parents) where missing.
pub fn map_or_create(root: &CstRootNode, keys: &[String]) -> CstObject {
    let mut obj = root.object_value_or_set();
    for k in keys {
        obj = obj.object_value_or_set(k);
    }
    obj
}

/// The entries of `obj`, in file order, as plain JSON.
pub fn entries(obj: &CstObject) -> Vec<(String, Value)> {
    obj.properties()
        .into_iter()
        .filter_map(|p| {
            let name = p.decoded_name()?;
            let value = p.value()?.to_serde_value()?;
            Some((name, value))
        })
        .collect()
}

/// The entries of `obj` as CST input values, key order kept, for putting
/// back on disconnect.
pub fn inputs(obj: &CstObject) -> Vec<(String, CstInputValue)> {
    obj.properties()
        .into_iter()
        .filter_map(|p| Some((p.decoded_name()?, input(&p.value()?)?)))
        .collect()
}

/// `node` as an input value with its object keys in file order (a
/// `serde_json::Value` would sort them).
pub fn input(node: &CstNode) -> Option<CstInputValue> {
    if let Some(o) = node.as_object() {
        return Some(CstInputValue::Object(
            o.properties()
                .into_iter()
                .filter_map(|p| Some((p.decoded_name()?, input(&p.value()?)?)))
                .collect(),
        ));
    }
    if let Some(a) = node.as_array() {
        return Some(CstInputValue::Array(
            a.elements().iter().filter_map(input).collect(),
        ));
    }
    Some(match node.to_serde_value()? {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s),
        // Containers were handled above.
        Value::Array(_) | Value::Object(_) => return None,
    })
}

/// Replaces the entries named in `moved` with one `key` entry, put where
/// the first of them was.
pub fn replace(obj: &CstObject, moved: &[String], key: &str, bridge: CstInputValue) {
    let mut at = None;
    for p in obj.properties() {
        if p.decoded_name().is_some_and(|n| moved.contains(&n)) {
            at.get_or_insert(p.property_index());
            p.remove();
        }
    }
    let len = obj.properties().len();
    obj.insert(at.unwrap_or(len).min(len), key, bridge);
}

/// Takes out the `key` entry and puts `originals` back where it was,
/// skipping names the person has since used for something else (those
/// are returned).
pub fn restore(obj: &CstObject, key: &str, originals: &[(String, CstInputValue)]) -> Vec<String> {
    let mut at = obj.properties().len();
    if let Some(p) = obj.get(key) {
        at = p.property_index();
        p.remove();
    }
    let mut conflicts = Vec::new();
    for (name, value) in originals {
        if obj.get(name).is_some() {
            conflicts.push(name.clone());
            continue;
        }
        let len = obj.properties().len();
        obj.insert(at.min(len), name, value.clone());
        at += 1;
    }
    conflicts
}
