//! Where each client keeps its MCP servers on Linux, and in which shape,
//! as each client's own documentation says (the URLs are in
//! `docs/connect.md` and [`super::ClientId::doc_url`]).
//!
//! | client | scope | file | servers at |
//! |---|---|---|---|
//! | Claude Desktop | user | `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` | `mcpServers` |
//! | Claude Code | user | `~/.claude.json` | `mcpServers` |
//! | Claude Code | local | `~/.claude.json` | `projects["<abs dir>"].mcpServers` |
//! | Claude Code | project | `<dir>/.mcp.json` | `mcpServers` |
//! | Cursor | user / project | `~/.cursor/mcp.json`, `<dir>/.cursor/mcp.json` | `mcpServers` |
//! | VS Code | user / project | `$XDG_CONFIG_HOME/Code/User/mcp.json`, `<dir>/.vscode/mcp.json` | `servers` |
//! | Windsurf | user | `~/.codeium/windsurf/mcp_config.json` | `mcpServers` |
//! | Gemini CLI | user / project | `~/.gemini/settings.json`, `<dir>/.gemini/settings.json` | `mcpServers` |
//! | Codex CLI | user | `$CODEX_HOME/config.toml` (`~/.codex`) | `[mcp_servers.NAME]` |
//! | Zed | user | `$XDG_CONFIG_HOME/zed/settings.json` | `context_servers` |
//!
//! Every JSON file is read as JSONC (comments, trailing commas): VS Code
//! and Zed document comments in theirs, and reading the others leniently
//! costs nothing.

use std::path::PathBuf;

use serde::Serialize;
use ts_rs::TS;

use super::{ClientId, ConnectEnv};

/// Which of a client's configurations a file (or a part of one) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "ConfigScope")]
pub enum Scope {
    /// The person's own, for every project.
    User,
    /// A project's, usually committed with it.
    Project,
    /// Claude Code's per-project entry in the person's own file.
    Local,
}

/// How a client writes one server entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `{"command", "args", "env", "cwd"}` or a URL under `url`,
    /// `serverUrl` (Windsurf) or `httpUrl` (Gemini CLI), with `headers`.
    McpServers,
    /// Gemini CLI: the same, but `url` is SSE and `httpUrl` streamable HTTP.
    Gemini,
    /// VS Code: the same, plus a required `"type"`.
    Vscode,
    /// Codex: a TOML table, `http_headers` for headers.
    Codex,
}

/// One place servers are kept: a file and the keys leading to the
/// server map inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Whose.
    pub client: ClientId,
    /// Which scope.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// Keys from the root to the server map (`["mcpServers"]`).
    pub keys: Vec<String>,
    /// Entry shape.
    pub dialect: Dialect,
    /// The project directory, for project and local scopes.
    pub project: Option<PathBuf>,
}

/// Every place `client` may keep servers, given `env`'s home and projects.
pub fn locations(client: ClientId, env: &ConnectEnv) -> Vec<Location> {
    let home = &env.home;
    let cfg = &env.xdg_config_home;
    let loc = |scope, path: PathBuf, keys: &[&str], dialect, project: Option<&PathBuf>| Location {
        client,
        scope,
        path,
        keys: keys.iter().map(|k| (*k).to_owned()).collect(),
        dialect,
        project: project.cloned(),
    };
    let mcp = Dialect::McpServers;
    let per_project = |rel: &str, keys: &[&str], dialect| -> Vec<Location> {
        env.projects
            .iter()
            .map(|p| loc(Scope::Project, p.join(rel), keys, dialect, Some(p)))
            .collect()
    };
    let mut out = Vec::new();
    match client {
        ClientId::ClaudeDesktop => out.push(loc(
            Scope::User,
            cfg.join("Claude/claude_desktop_config.json"),
            &["mcpServers"],
            mcp,
            None,
        )),
        ClientId::ClaudeCode => {
            let file = home.join(".claude.json");
            out.push(loc(Scope::User, file.clone(), &["mcpServers"], mcp, None));
            for p in &env.projects {
                let dir = p.to_string_lossy();
                out.push(loc(
                    Scope::Local,
                    file.clone(),
                    &["projects", &dir, "mcpServers"],
                    mcp,
                    Some(p),
                ));
            }
            out.extend(per_project(".mcp.json", &["mcpServers"], mcp));
        }
        ClientId::Cursor => {
            out.push(loc(
                Scope::User,
                home.join(".cursor/mcp.json"),
                &["mcpServers"],
                mcp,
                None,
            ));
            out.extend(per_project(".cursor/mcp.json", &["mcpServers"], mcp));
        }
        ClientId::Vscode => {
            out.push(loc(
                Scope::User,
                cfg.join("Code/User/mcp.json"),
                &["servers"],
                Dialect::Vscode,
                None,
            ));
            out.extend(per_project(
                ".vscode/mcp.json",
                &["servers"],
                Dialect::Vscode,
            ));
        }
        ClientId::Windsurf => out.push(loc(
            Scope::User,
            home.join(".codeium/windsurf/mcp_config.json"),
            &["mcpServers"],
            mcp,
            None,
        )),
        ClientId::GeminiCli => {
            out.push(loc(
                Scope::User,
                home.join(".gemini/settings.json"),
                &["mcpServers"],
                Dialect::Gemini,
                None,
            ));
            out.extend(per_project(
                ".gemini/settings.json",
                &["mcpServers"],
                Dialect::Gemini,
            ));
        }
        ClientId::Codex => out.push(loc(
            Scope::User,
            env.codex_home.join("config.toml"),
            &["mcp_servers"],
            Dialect::Codex,
            None,
        )),
        ClientId::Zed => out.push(loc(
            Scope::User,
            cfg.join("zed/settings.json"),
            &["context_servers"],
            mcp,
            None,
        )),
    }
    out
}
