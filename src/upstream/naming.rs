//! Registry names for upstream tools: `<server>__<tool>`, sanitised to
//! the tool-name rule `^[A-Za-z0-9_-]{1,64}$` (docs/architecture/overview.md,
//! "Tool names").
//!
//! The prefix keeps two servers' `search` tools apart and tells a person at
//! a glance where a tool comes from. Characters outside the rule become
//! `_`. A name longer than 64 bytes keeps its first 55 bytes and gets `_`
//! plus 8 hex digits of the SHA-256 of the *unsanitised* `server/tool` pair,
//! so the shortened name is stable across restarts (pins and per-tool
//! config keep working) and two long names that share a prefix still differ.

use sha2::{Digest, Sha256};

use crate::tool::{ToolName, ToolNameError};

/// Separator between server and tool name.
const SEP: &str = "__";
/// Hex digits of hash kept in a shortened name.
const HASH_HEX: usize = 8;

/// The registry name of `tool` on `server`.
///
/// # Errors
/// None in practice: the result is sanitised and bounded before it is
/// checked; the `Result` only carries [`ToolName::new`]'s guarantee through.
pub fn tool_name(server: &str, tool: &str) -> Result<ToolName, ToolNameError> {
    let mut name = String::with_capacity(server.len() + SEP.len() + tool.len());
    push_sanitised(&mut name, server);
    name.push_str(SEP);
    push_sanitised(&mut name, tool);
    if name.len() > ToolName::MAX_LEN {
        let digest = Sha256::new()
            .chain_update(server.as_bytes())
            .chain_update([0u8])
            .chain_update(tool.as_bytes())
            .finalize();
        // Sanitised names are ASCII, so any byte index is a char boundary.
        name.truncate(ToolName::MAX_LEN - HASH_HEX - 1);
        name.push('_');
        name.push_str(&hex::encode(digest)[..HASH_HEX]);
    }
    ToolName::new(&name)
}

fn push_sanitised(out: &mut String, s: &str) {
    if s.is_empty() {
        out.push('_');
    }
    out.extend(s.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '_'
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_sanitises() {
        assert_eq!(
            tool_name("everything", "echo").unwrap().as_str(),
            "everything__echo"
        );
        assert_eq!(
            tool_name("git", "log.show me").unwrap().as_str(),
            "git__log_show_me"
        );
        assert_eq!(tool_name("s", "").unwrap().as_str(), "s___");
        assert_eq!(tool_name("s", "é").unwrap().as_str(), "s___");
    }

    #[test]
    fn long_names_are_shortened_stably_and_distinctly() {
        let a = tool_name("server", &"x".repeat(80)).unwrap();
        let b = tool_name("server", &format!("{}y", "x".repeat(79))).unwrap();
        assert_eq!(a.as_str().len(), 64);
        assert_eq!(a, tool_name("server", &"x".repeat(80)).unwrap());
        assert_ne!(a, b);
        assert!(a.as_str().starts_with("server__xxx"));
    }
}
