//! The MCP clients toolgate knows how to connect: their stable ids, the
//! names people know them by, what their docs say about restarting, and
//! which of them have a hook system toolgate can gate built-in tools
//! through. Where each keeps its servers is in [`super::catalog`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One MCP client. The kebab-case id is stable: it is used on the CLI
/// (`toolgate connect cursor`), in undo records and on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
pub enum ClientId {
    /// Anthropic's desktop app.
    ClaudeDesktop,
    /// Anthropic's coding agent (CLI).
    ClaudeCode,
    /// The Cursor editor.
    Cursor,
    /// Visual Studio Code (Copilot agent mode).
    Vscode,
    /// The Windsurf editor (Cascade).
    Windsurf,
    /// Google's Gemini CLI.
    GeminiCli,
    /// OpenAI's Codex CLI.
    Codex,
    /// The Zed editor.
    Zed,
}

impl ClientId {
    /// Every client, in the order they are listed to a person.
    pub const ALL: [ClientId; 8] = [
        Self::ClaudeDesktop,
        Self::ClaudeCode,
        Self::Cursor,
        Self::Vscode,
        Self::Windsurf,
        Self::GeminiCli,
        Self::Codex,
        Self::Zed,
    ];

    /// The id as written on the CLI and the wire.
    pub fn id(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "claude-desktop",
            Self::ClaudeCode => "claude-code",
            Self::Cursor => "cursor",
            Self::Vscode => "vscode",
            Self::Windsurf => "windsurf",
            Self::GeminiCli => "gemini-cli",
            Self::Codex => "codex",
            Self::Zed => "zed",
        }
    }

    /// The name people know it by; the bridge entry passes it as
    /// `--client`, so approvals, Live and the audit name the client.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "Claude Desktop",
            Self::ClaudeCode => "Claude Code",
            Self::Cursor => "Cursor",
            Self::Vscode => "VS Code",
            Self::Windsurf => "Windsurf",
            Self::GeminiCli => "Gemini CLI",
            Self::Codex => "Codex CLI",
            Self::Zed => "Zed",
        }
    }

    /// Whether the agent has a hook system toolgate installs into (to gate
    /// its built-in tools: shell, file edits, fetches).
    pub fn has_hooks(self) -> bool {
        matches!(self, Self::ClaudeCode | Self::Cursor | Self::GeminiCli)
    }

    /// What to do after its config changed, in one line, as its docs say.
    pub fn restart_hint(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => {
                "Quit Claude Desktop completely (File > Quit; closing the window is not enough) and open it again."
            }
            Self::ClaudeCode => {
                "Exit each running Claude Code session and start it again; /mcp then lists toolgate."
            }
            Self::Cursor => {
                "Restart Cursor (or open a new chat); its MCP settings then list toolgate."
            }
            Self::Vscode => {
                "Restart the servers from the MCP: List Servers command (or reload the window)."
            }
            Self::Windsurf => "Press refresh in Cascade's MCP panel, or restart Windsurf.",
            Self::GeminiCli => {
                "Exit each running Gemini CLI session and start it again; /mcp then lists toolgate."
            }
            Self::Codex => {
                "Exit each running Codex session and start it again; /mcp then lists toolgate."
            }
            Self::Zed => "Zed applies settings.json when it is saved; nothing to restart.",
        }
    }

    /// Whether a running instance must be restarted to see the change
    /// (Zed reloads its settings by itself).
    pub fn needs_restart(self) -> bool {
        !matches!(self, Self::Zed)
    }

    /// The public documentation the config format was taken from.
    pub fn doc_url(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "https://modelcontextprotocol.io/quickstart/user",
            Self::ClaudeCode => "https://code.claude.com/docs/en/mcp",
            Self::Cursor => "https://cursor.com/docs/mcp",
            Self::Vscode => {
                "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration"
            }
            Self::Windsurf => "https://docs.windsurf.com/windsurf/cascade/mcp",
            Self::GeminiCli => {
                "https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md"
            }
            Self::Codex => "https://github.com/openai/codex/blob/main/docs/config.md",
            Self::Zed => "https://zed.dev/docs/ai/mcp",
        }
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A client id that is none of [`ClientId::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown client `{given}`; one of {}", ClientId::ALL.map(ClientId::id).join(", "))]
pub struct UnknownClient {
    /// What was given.
    pub given: String,
}

impl FromStr for ClientId {
    type Err = UnknownClient;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.id() == s)
            .ok_or_else(|| UnknownClient {
                given: s.to_owned(),
            })
    }
}
