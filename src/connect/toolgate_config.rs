//! Adding the moved servers to toolgate's own config and taking them out
//! again, with `toml_edit` like the policy editor, so the person's
//! comments and layout stay. Each added `[[servers]]` entry carries a
//! comment saying where it came from; the result is checked with the
//! code that loads the config before anything is written, and the
//! running engine picks the change up through its config watcher.

use std::collections::HashSet;
use std::path::Path;

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use super::ConnectError;
use super::entry::Movable;
use crate::config::Config;
use crate::config::import;
use crate::secrets::{PREFIX, Secret, credential_name};

/// A `[[servers]]` entry to add, and the secrets it refers to.
#[derive(Debug, Clone)]
pub struct NewServer {
    /// Its name in toolgate's config.
    pub name: String,
    /// The table.
    pub table: Table,
    /// `keyring:` names and the values to store under them.
    pub secrets: Vec<(String, Secret)>,
}

/// The config as it is, parsed and validated (an empty config when the
/// file is missing or empty).
///
/// # Errors
/// [`ConnectError::ToolgateConfig`] when it does not load: connect will
/// not edit a config the engine would refuse.
pub fn current(text: &str, path: &Path) -> Result<Config, ConnectError> {
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    Config::parse(text, path).map_err(|e| ConnectError::ToolgateConfig {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// Builds the entry for `m`, named `name`, with secret-looking `env` and
/// header values turned into `keyring:<name>_<KEY>` references (names
/// in `taken` are avoided and the new ones added to it). A value is
/// secret-looking when its key says so ([`credential_name`]: token,
/// secret, passw, key, auth, credential, cookie, private).
pub fn server(name: &str, m: &Movable, origin: &str, taken: &mut HashSet<String>) -> NewServer {
    let mut t = Table::new();
    t.decor_mut().set_prefix(format!("\n# from {origin}\n"));
    t.insert("name", value(name));
    if m.disabled {
        t.insert("enabled", value(false));
    }
    t.insert("transport", value(m.transport));
    let mut secrets = Vec::new();
    if let Some(c) = &m.command {
        t.insert("command", value(c.as_str()));
        if !m.args.is_empty() {
            t.insert("args", value(m.args.iter().collect::<Array>()));
        }
        if let Some(cwd) = &m.cwd {
            t.insert("cwd", value(cwd.as_str()));
        }
        if !m.env.is_empty() {
            let env = map(name, &m.env, taken, &mut secrets);
            t.insert("env", value(env));
        }
    } else if let Some(u) = &m.url {
        t.insert("url", value(u.as_str()));
        if !m.headers.is_empty() {
            let h = map(name, &m.headers, taken, &mut secrets);
            t.insert("headers", value(h));
        }
    }
    NewServer {
        name: name.to_owned(),
        table: t,
        secrets,
    }
}

fn map(
    server: &str,
    m: &std::collections::BTreeMap<String, String>,
    taken: &mut HashSet<String>,
    secrets: &mut Vec<(String, Secret)>,
) -> InlineTable {
    let mut t = InlineTable::new();
    for (k, v) in m {
        if credential_name(k) && !v.starts_with(PREFIX) && !v.is_empty() {
            let secret = import::unique(import::secret_name(server, k), taken);
            t.insert(k, format!("{PREFIX}{secret}").into());
            secrets.push((secret, Secret::new(v.clone())));
        } else {
            t.insert(k, v.as_str().into());
        }
    }
    t
}

/// `text` with `servers` appended as `[[servers]]` entries.
///
/// # Errors
/// [`ConnectError::ToolgateConfig`] when `text` is not TOML or its
/// `servers` is not an array of tables.
pub fn add(text: &str, path: &Path, servers: &[NewServer]) -> Result<String, ConnectError> {
    let mut doc = parse(text, path)?;
    let root = doc.as_table_mut();
    if !root.contains_key("servers") {
        root.insert("servers", Item::ArrayOfTables(Default::default()));
    }
    let Some(list) = root
        .get_mut("servers")
        .and_then(Item::as_array_of_tables_mut)
    else {
        return Err(ConnectError::ToolgateConfig {
            path: path.to_owned(),
            message: "`servers` is not written as [[servers]] tables".into(),
        });
    };
    for s in servers {
        list.push(s.table.clone());
    }
    let out = doc.to_string();
    // A new config starts with its first comment, not a blank line.
    Ok(if text.trim().is_empty() {
        out.trim_start_matches('\n').to_owned()
    } else {
        out
    })
}

/// `text` without the `[[servers]]` entries named in `names`.
///
/// # Errors
/// [`ConnectError::ToolgateConfig`] when `text` is not TOML.
pub fn remove(text: &str, path: &Path, names: &[String]) -> Result<String, ConnectError> {
    let mut doc = parse(text, path)?;
    if let Some(list) = doc
        .as_table_mut()
        .get_mut("servers")
        .and_then(Item::as_array_of_tables_mut)
    {
        list.retain(|t| {
            t.get("name")
                .and_then(Item::as_str)
                .is_none_or(|n| !names.iter().any(|x| x == n))
        });
        if list.is_empty() {
            doc.as_table_mut().remove("servers");
        }
    }
    Ok(doc.to_string())
}

fn parse(text: &str, path: &Path) -> Result<DocumentMut, ConnectError> {
    text.parse()
        .map_err(|e: toml_edit::TomlError| ConnectError::ToolgateConfig {
            path: path.to_owned(),
            message: e.message().trim().to_owned(),
        })
}

/// Checks `text` loads as a config.
///
/// # Errors
/// [`ConnectError::ToolgateConfig`].
pub fn check(text: &str, path: &Path) -> Result<Config, ConnectError> {
    current(text, path)
}
