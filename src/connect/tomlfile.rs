//! Editing Codex's `config.toml` with `toml_edit`: only the
//! `[mcp_servers.NAME]` tables toolgate moves are touched; comments,
//! order and every other key stay as written.

use std::path::Path;

use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table, TableLike};

use super::ConnectError;

/// Parses `text`; an error names the file, line and column.
///
/// # Errors
/// [`ConnectError::Malformed`].
pub fn parse(text: &str, path: &Path) -> Result<DocumentMut, ConnectError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let before = text.get(..at).unwrap_or("");
        ConnectError::Malformed {
            path: path.to_owned(),
            line: before.matches('\n').count() + 1,
            column: before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
            reason: e.message().trim().to_owned(),
        }
    })
}

fn table_at<'a>(doc: &'a DocumentMut, keys: &[String]) -> Option<&'a dyn TableLike> {
    let mut t: &dyn TableLike = doc.as_table();
    for k in keys {
        t = t.get(k)?.as_table_like()?;
    }
    Some(t)
}

fn table_at_mut<'a>(doc: &'a mut DocumentMut, keys: &[String]) -> Option<&'a mut dyn TableLike> {
    let mut t: &mut dyn TableLike = doc.as_table_mut();
    for k in keys {
        t = t.get_mut(k)?.as_table_like_mut()?;
    }
    Some(t)
}

/// The entries at `keys`, in file order, as plain JSON.
pub fn entries(doc: &DocumentMut, keys: &[String]) -> Vec<(String, Value)> {
    let Some(t) = table_at(doc, keys) else {
        return Vec::new();
    };
    t.iter()
        .filter_map(|(name, item)| Some((name.to_owned(), item_json(item)?)))
        .collect()
}

/// The entries at `keys` as items, for putting back on disconnect.
pub fn items(doc: &DocumentMut, keys: &[String]) -> Vec<(String, Item)> {
    table_at(doc, keys).map_or_else(Vec::new, |t| {
        t.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect()
    })
}

/// An item as JSON, through its TOML text.
fn item_json(item: &Item) -> Option<Value> {
    let mut t = Table::new();
    t.insert("v", item.clone());
    let mut doc = DocumentMut::new();
    doc.as_table_mut().insert("v", Item::Table(t));
    let parsed: toml::Table = toml::from_str(&doc.to_string()).ok()?;
    let v = parsed.get("v")?.get("v")?;
    serde_json::to_value(v).ok()
}

/// Replaces the entries in `moved` with a `key` table, placed where the
/// first of them was.
pub fn replace(doc: &mut DocumentMut, keys: &[String], moved: &[String], key: &str, bridge: Table) {
    let Some(t) = table_at_mut(doc, keys) else {
        return;
    };
    let mut position = None;
    for name in moved {
        if let Some(item) = t.remove(name)
            && position.is_none()
        {
            position = item.as_table().and_then(Table::position);
        }
    }
    let mut bridge = bridge;
    bridge.set_position(position);
    t.insert(key, Item::Table(bridge));
}

/// Takes out the `key` table and puts `originals` back, skipping names
/// the person has since used (returned).
pub fn restore(
    doc: &mut DocumentMut,
    keys: &[String],
    key: &str,
    originals: Vec<(String, Item)>,
) -> Vec<String> {
    let mut parent: &mut dyn TableLike = doc.as_table_mut();
    for k in keys {
        if parent.get(k).and_then(Item::as_table_like).is_none() {
            let mut t = Table::new();
            t.set_implicit(true);
            parent.insert(k, Item::Table(t));
        }
        let Some(next) = parent.get_mut(k).and_then(Item::as_table_like_mut) else {
            return Vec::new();
        };
        parent = next;
    }
    parent.remove(key);
    let mut conflicts = Vec::new();
    for (name, item) in originals {
        if parent.contains_key(&name) {
            conflicts.push(name);
        } else {
            parent.insert(&name, item);
        }
    }
    conflicts
}
