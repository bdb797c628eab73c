//! One server entry of a client's config, read into the form toolgate's
//! `[[servers]]` takes, or the reason it cannot move.
//!
//! An entry stays in the client's config (and is said to) when toolgate
//! could not start it the way the client does:
//! - it uses a value only the client can fill in: VS Code's
//!   `${input:…}` prompts, `${env:…}`/`${workspaceFolder}` variables,
//!   Gemini CLI's `$VAR` expansion, VS Code's `envFile`;
//! - Codex takes its credentials from the client's environment
//!   (`bearer_token_env_var`, `env_http_headers`, `env_vars`);
//! - it is neither a command nor a URL toolgate knows.
//!
//! Keys toolgate has no counterpart for (`timeout`, `trust`,
//! `alwaysAllow`, …) are dropped from the moved server and named in the
//! plan's notes; disconnect brings the entry back whole.

use std::collections::BTreeMap;

use serde_json::Value;

use super::catalog::Dialect;
use crate::config::import;

/// A server as toolgate would run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Movable {
    /// `stdio`, `sse`, `streamable_http` or `websocket`.
    pub transport: &'static str,
    /// The program (stdio).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its extra environment.
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<String>,
    /// The endpoint (network transports).
    pub url: Option<String>,
    /// Extra headers.
    pub headers: BTreeMap<String, String>,
    /// Off in the client (`"disabled": true`, `"enabled": false`).
    pub disabled: bool,
    /// Keys dropped on the way.
    pub ignored: Vec<String>,
}

impl Movable {
    /// The command line or URL, for a person.
    pub fn target(&self) -> String {
        match (&self.command, &self.url) {
            (Some(c), _) => std::iter::once(c.as_str())
                .chain(self.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(u)) => u.clone(),
            (None, None) => String::new(),
        }
    }

    /// Whether `other` is the same server: the same command and
    /// arguments, or the same URL.
    pub fn same_server(&self, command: Option<&str>, args: &[String], url: Option<&str>) -> bool {
        match (&self.command, &self.url) {
            (Some(c), _) => command == Some(c.as_str()) && args == self.args.as_slice(),
            (None, Some(u)) => url == Some(u.as_str()),
            (None, None) => false,
        }
    }
}

/// Keys the reader understands, per dialect; others are `ignored`.
const KNOWN: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "serverUrl",
    "httpUrl",
    "headers",
    "http_headers",
    "type",
    "transport",
    "disabled",
    "enabled",
    "source",
];

/// Reads one entry; `Err` says why it stays in the client's config.
pub fn read(dialect: Dialect, entry: &Value) -> Result<Movable, String> {
    let Some(obj) = entry.as_object() else {
        return Err("is not an object".into());
    };
    if let Some(var) = client_variable(entry) {
        return Err(format!("uses `{var}`, which only the client can fill in"));
    }
    for key in [
        "envFile",
        "bearer_token_env_var",
        "env_http_headers",
        "env_vars",
    ] {
        if obj.contains_key(key) {
            return Err(format!(
                "takes values from the client's environment (`{key}`)"
            ));
        }
    }
    let text = |k: &str| -> Result<Option<String>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("`{k}` is not a string")),
        }
    };
    let command = text("command")?;
    let (url, url_kind) = match (text("url")?, text("serverUrl")?, text("httpUrl")?) {
        (_, _, Some(u)) => (Some(u), Some("streamable_http")),
        // Gemini CLI: `url` is its SSE transport, `httpUrl` streamable HTTP.
        (Some(u), _, None) if dialect == Dialect::Gemini => (Some(u), Some("sse")),
        (Some(u), _, None) | (None, Some(u), None) => (Some(u), None),
        (None, None, None) => (None, None),
    };
    let kind = text("type")?.or(text("transport")?);
    let transport = transport(kind.as_deref(), command.is_some(), url.as_deref(), url_kind)?;
    let headers_key = if dialect == Dialect::Codex {
        "http_headers"
    } else {
        "headers"
    };
    Ok(Movable {
        transport,
        args: strings(obj.get("args"), "args")?,
        env: string_map(obj.get("env"), "env")?,
        cwd: text("cwd")?,
        headers: string_map(obj.get(headers_key), headers_key)?,
        disabled: obj.get("disabled") == Some(&Value::Bool(true))
            || obj.get("enabled") == Some(&Value::Bool(false)),
        ignored: obj
            .keys()
            .filter(|k| !KNOWN.contains(&k.as_str()))
            .cloned()
            .collect(),
        command: if transport == "stdio" { command } else { None },
        url: if transport == "stdio" { None } else { url },
    })
}

fn transport(
    kind: Option<&str>,
    has_command: bool,
    url: Option<&str>,
    url_kind: Option<&'static str>,
) -> Result<&'static str, String> {
    if let Some(kind) = kind {
        let t = import::kind_transport(kind).ok_or_else(|| format!("unknown type `{kind}`"))?;
        return match (t, has_command, url) {
            ("stdio", true, _) => Ok("stdio"),
            ("stdio", false, _) => Err("type is stdio but there is no `command`".into()),
            (t, _, Some(_)) => Ok(t),
            (t, _, None) => Err(format!("type is {t} but there is no URL")),
        };
    }
    match (has_command, url) {
        (true, None) => Ok("stdio"),
        (false, Some(u)) => url_kind
            .or_else(|| import::url_transport(u))
            .ok_or_else(|| format!("URL `{u}` is not http(s) or ws(s)")),
        (true, Some(_)) => Err("has both a command and a URL".into()),
        (false, None) => Err("has neither a command nor a URL".into()),
    }
}

fn strings(v: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("`{key}` holds a value that is not a string"))
            })
            .collect(),
        Some(_) => Err(format!("`{key}` is not a list")),
    }
}

fn string_map(v: Option<&Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, x)| match x {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(format!("`{key}.{k}` is not a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{key}` is not an object")),
    }
}

/// The first string in `v` that the client expands itself: `${…}`
/// anywhere, or a whole value of the form `$NAME`.
fn client_variable(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => {
            if let Some(start) = s.find("${") {
                let end = s[start..].find('}').map_or(s.len(), |e| start + e + 1);
                return Some(s[start..end].to_owned());
            }
            let name = s.strip_prefix('$')?;
            let ok = !name.is_empty()
                && name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            ok.then(|| s.clone())
        }
        Value::Array(a) => a.iter().find_map(client_variable),
        Value::Object(m) => m.values().find_map(client_variable),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdio_and_url_entries_of_each_dialect() {
        let m = read(
            Dialect::McpServers,
            &json!({"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "timeout": 5}),
        )
        .unwrap();
        assert_eq!(m.transport, "stdio");
        assert_eq!(m.target(), "npx -y x");
        assert_eq!(m.ignored, ["timeout"]);
        let w = read(Dialect::McpServers, &json!({"serverUrl": "https://h/sse"})).unwrap();
        assert_eq!(w.transport, "sse");
        let g = read(Dialect::McpServers, &json!({"httpUrl": "https://h/sse"})).unwrap();
        assert_eq!(g.transport, "streamable_http");
        let v = read(
            Dialect::Vscode,
            &json!({"type": "http", "url": "https://h/mcp"}),
        )
        .unwrap();
        assert_eq!(v.transport, "streamable_http");
        let c = read(
            Dialect::Codex,
            &json!({"url": "https://h/mcp", "http_headers": {"X-Key": "k"}}),
        )
        .unwrap();
        assert_eq!(c.headers["X-Key"], "k");
        assert!(
            read(
                Dialect::McpServers,
                &json!({"command": "x", "disabled": true})
            )
            .unwrap()
            .disabled
        );
    }

    #[test]
    fn entries_the_client_must_fill_in_stay() {
        let e = read(
            Dialect::Vscode,
            &json!({"type": "stdio", "command": "x", "env": {"K": "${input:key}"}}),
        )
        .unwrap_err();
        assert!(e.contains("${input:key}"), "{e}");
        let e = read(
            Dialect::McpServers,
            &json!({"command": "x", "env": {"K": "$MY_TOKEN"}}),
        )
        .unwrap_err();
        assert!(e.contains("$MY_TOKEN"), "{e}");
        let e = read(
            Dialect::Codex,
            &json!({"url": "https://h", "bearer_token_env_var": "T"}),
        )
        .unwrap_err();
        assert!(e.contains("bearer_token_env_var"), "{e}");
        assert!(read(Dialect::McpServers, &json!({"args": []})).is_err());
        // A dollar inside a value is not a variable.
        assert!(
            read(
                Dialect::McpServers,
                &json!({"command": "x", "args": ["a$b"]})
            )
            .is_ok()
        );
    }
}
