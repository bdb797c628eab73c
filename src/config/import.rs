//! `toolgate import claude-desktop [PATH]`: turns a Claude-Desktop or Cursor
//! `mcpServers` JSON file into `[[servers]]` TOML for toolgate's config.
//!
//! Input: `{"mcpServers": {"name": {"command", "args"?, "env"?, "cwd"?} |
//! {"url", "headers"?, "type"?}}}`. Output rules:
//! - Names are sanitised to the server-name rule ([`super::servers`]):
//!   other characters become `_`, runs of `_` collapse, the length is cut to
//!   the maximum, and duplicates get `-2`, `-3`. Every rename is noted.
//! - A `url` ending in `/sse` becomes `sse`, other `http(s)` URLs
//!   `streamable_http`, `ws(s)` URLs `websocket`; an explicit Cursor `type`
//!   (`sse`, `http`, `streamable-http`, `websocket`) wins.
//! - Env values whose key contains `TOKEN`, `KEY`, `SECRET`, `PASSWORD`,
//!   `PASSWD` or `CREDENTIAL` — and header values of `Authorization`-like
//!   headers — become `keyring:<server>_<KEY>` references, with a comment
//!   telling the person to run `toolgate secret set`. The value itself is
//!   never printed; it is returned as a [`Secret`] so the CLI can store it
//!   when asked (`--store-secrets`).
//!
//! The generated text always parses and validates as a config
//! (`Config::parse`); the round-trip test checks it.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Deserialize;

use super::servers::limits;
use crate::secrets::Secret;

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not JSON of the expected shape.
    #[error("not an mcpServers file: {0}")]
    Json(#[from] serde_json::Error),
    /// An entry has neither `command` nor `url`, or a URL of no known kind.
    #[error("server `{name}`: {problem}")]
    Entry {
        /// The name as written in the file.
        name: String,
        /// What is wrong.
        problem: String,
    },
}

/// The result of an import.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// `[[servers]]` TOML, ready to append to the config file.
    pub toml: String,
    /// Secrets found in the file, by the `keyring:` name the TOML refers to.
    pub secrets: Vec<(String, Secret)>,
    /// Things the person should know (renames, ignored fields).
    pub notes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    mcp_servers: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    disabled: bool,
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

/// Where Claude Desktop keeps its config: `~/.config/Claude/` on Linux,
/// `~/Library/Application Support/Claude/` on macOS, `%APPDATA%\Claude\` on
/// Windows (all the platform config dir).
pub fn claude_desktop_default_path() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|b| {
        b.config_dir()
            .join("Claude")
            .join("claude_desktop_config.json")
    })
}

/// Where Cursor keeps its global MCP config: `~/.cursor/mcp.json`.
pub fn cursor_default_path() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|b| b.home_dir().join(".cursor").join("mcp.json"))
}

/// Reads and converts the file at `path`.
///
/// # Errors
/// See [`ImportError`].
pub fn import_file(path: &std::path::Path) -> Result<Imported, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImportError::Read {
        path: path.to_owned(),
        source,
    })?;
    import_json(&text)
}

/// Converts `mcpServers` JSON text into `[[servers]]` TOML.
///
/// # Errors
/// See [`ImportError`].
pub fn import_json(text: &str) -> Result<Imported, ImportError> {
    let file: File = serde_json::from_str(text)?;
    let mut out = Imported {
        toml: String::new(),
        secrets: Vec::new(),
        notes: Vec::new(),
    };
    let mut taken = HashSet::new();
    for (original, entry) in &file.mcp_servers {
        let name = unique(sanitize_name(original), &mut taken);
        if &name != original {
            out.notes
                .push(format!("server `{original}` renamed to `{name}`"));
        }
        for key in entry.other.keys() {
            out.notes
                .push(format!("server `{original}`: field `{key}` ignored"));
        }
        if !out.toml.is_empty() {
            out.toml.push('\n');
        }
        write_server(&mut out, original, &name, entry)?;
    }
    Ok(out)
}

/// Makes `raw` a valid server name (see the module docs).
pub fn sanitize_name(raw: &str) -> String {
    let mut name = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if !(c == '_' && name.ends_with('_')) {
            name.push(c);
        }
    }
    let mut name = name.trim_matches('_').to_owned();
    name.truncate(limits::MAX_NAME_LEN);
    let name = name.trim_end_matches('_').to_owned();
    if name.is_empty() {
        "server".to_owned()
    } else if name.parse::<crate::hooks::HookAgent>().is_ok() {
        // A hook agent's id names its own tools (see `check_server_name`).
        format!("{name}-mcp")
    } else {
        name
    }
}

pub(crate) fn unique(name: String, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        let suffix = format!("-{n}");
        let mut base = name.clone();
        base.truncate(limits::MAX_NAME_LEN - suffix.len());
        candidate = format!("{}{suffix}", base.trim_end_matches('_'));
        n += 1;
    }
    candidate
}

fn transport_of(original: &str, entry: &Entry) -> Result<&'static str, ImportError> {
    let problem = |p: String| ImportError::Entry {
        name: original.to_owned(),
        problem: p,
    };
    if let Some(kind) = entry.kind.as_deref() {
        return kind_transport(kind).ok_or_else(|| problem(format!("unknown type `{kind}`")));
    }
    match (&entry.command, &entry.url) {
        (Some(_), None) => Ok("stdio"),
        (None, Some(url)) => url_transport(url)
            .ok_or_else(|| problem(format!("URL `{url}` is not http(s) or ws(s)"))),
        (Some(_), Some(_)) => Err(problem("has both `command` and `url`".into())),
        (None, None) => Err(problem("has neither `command` nor `url`".into())),
    }
}

/// toolgate's transport for a client's `type` (`stdio`, `sse`, `http`,
/// `streamable-http`, `websocket`, …); `None` if unknown.
pub(crate) fn kind_transport(kind: &str) -> Option<&'static str> {
    match kind {
        "stdio" => Some("stdio"),
        "sse" => Some("sse"),
        "http" | "streamable-http" | "streamable_http" | "streamableHttp" => {
            Some("streamable_http")
        }
        "ws" | "websocket" => Some("websocket"),
        _ => None,
    }
}

/// toolgate's transport for a bare URL: `ws(s)` is `websocket`, an
/// `http(s)` path ending in `/sse` is `sse`, other `http(s)` URLs
/// `streamable_http`; `None` for any other scheme.
pub(crate) fn url_transport(url: &str) -> Option<&'static str> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("ws://") || lower.starts_with("wss://") {
        Some("websocket")
    } else if lower.starts_with("http://") || lower.starts_with("https://") {
        let path = lower.split(['?', '#']).next().unwrap_or(&lower);
        Some(if path.trim_end_matches('/').ends_with("/sse") {
            "sse"
        } else {
            "streamable_http"
        })
    } else {
        None
    }
}

fn write_server(
    out: &mut Imported,
    original: &str,
    name: &str,
    entry: &Entry,
) -> Result<(), ImportError> {
    let transport = transport_of(original, entry)?;
    let t = &mut out.toml;
    let _ = writeln!(t, "# imported from mcpServers.{}", key(original));
    let _ = writeln!(t, "[[servers]]");
    let _ = writeln!(t, "name = {}", string(name));
    if entry.disabled {
        let _ = writeln!(t, "enabled = false");
    }
    let _ = writeln!(t, "transport = {}", string(transport));
    if transport == "stdio" {
        let command = entry.command.as_deref().ok_or_else(|| ImportError::Entry {
            name: original.to_owned(),
            problem: "type is stdio but there is no `command`".into(),
        })?;
        let _ = writeln!(t, "command = {}", string(command));
        if !entry.args.is_empty() {
            let args: Vec<String> = entry.args.iter().map(|a| string(a)).collect();
            let _ = writeln!(t, "args = [{}]", args.join(", "));
        }
        if let Some(cwd) = &entry.cwd {
            let _ = writeln!(t, "cwd = {}", string(cwd));
        }
        write_map(out, name, "env", &entry.env, is_secret_env);
    } else {
        let url = entry.url.as_deref().ok_or_else(|| ImportError::Entry {
            name: original.to_owned(),
            problem: format!("type is {transport} but there is no `url`"),
        })?;
        let _ = writeln!(t, "url = {}", string(url));
        write_map(out, name, "headers", &entry.headers, is_secret_header);
    }
    Ok(())
}

/// Writes `[servers.<table>]` with secret-looking values replaced by
/// `keyring:` references (and remembered in `out.secrets`).
fn write_map(
    out: &mut Imported,
    server: &str,
    table: &str,
    map: &BTreeMap<String, String>,
    is_secret: fn(&str) -> bool,
) {
    if map.is_empty() {
        return;
    }
    let _ = writeln!(out.toml, "[servers.{table}]");
    for (k, v) in map {
        if is_secret(k) && !v.starts_with(crate::secrets::PREFIX) {
            let secret = secret_name(server, k);
            let _ = writeln!(
                out.toml,
                "# secret: store it with `toolgate secret set {secret}` (reads the value from stdin)"
            );
            let _ = writeln!(
                out.toml,
                "{} = {}",
                key(k),
                string(&format!("keyring:{secret}"))
            );
            out.secrets.push((secret, Secret::new(v.clone())));
        } else {
            let _ = writeln!(out.toml, "{} = {}", key(k), string(v));
        }
    }
}

fn is_secret_env(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|m| k.contains(m))
}

fn is_secret_header(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k == "authorization" || k == "cookie" || is_secret_env(key)
}

/// `<server>_<KEY>` with characters a secret name cannot hold made `_`.
pub(crate) fn secret_name(server: &str, key: &str) -> String {
    format!("{server}_{key}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(crate::secrets::SecretName::MAX_LEN)
        .collect()
}

/// A TOML string literal (escaped by toml itself).
fn string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// A TOML key: bare when it can be, quoted otherwise.
fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { k.to_owned() } else { string(k) }
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
