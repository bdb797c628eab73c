//! Whether a client is running now, from `/proc`, so a person is told to
//! restart it (with the words of its docs, [`super::ClientId::restart_hint`])
//! only when that matters. Only the person's own processes are looked at.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::ClientId;

/// The clients with at least one process of ours running, from the
/// `/proc` at `proc_root`.
pub fn running(proc_root: &Path) -> Vec<ClientId> {
    let me = rustix::process::geteuid().as_raw();
    let own_pid = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        if pid == own_pid || e.metadata().map_or(true, |m| m.uid() != me) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if let Some(c) = client_of(&argv)
            && !found.contains(&c)
        {
            found.push(c);
        }
    }
    found.sort();
    found
}

/// Which client a command line is, if any.
pub fn client_of(argv: &[String]) -> Option<ClientId> {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_ascii_lowercase();
    let exe = base(argv.first()?);
    let script = argv
        .get(1)
        .map(|s| s.to_ascii_lowercase())
        .unwrap_or_default();
    let node = exe == "node" || exe == "bun";
    match exe.as_str() {
        "claude-desktop" => return Some(ClientId::ClaudeDesktop),
        "claude" => return Some(ClientId::ClaudeCode),
        "cursor" => return Some(ClientId::Cursor),
        "code" => return Some(ClientId::Vscode),
        "windsurf" => return Some(ClientId::Windsurf),
        "gemini" => return Some(ClientId::GeminiCli),
        "codex" => return Some(ClientId::Codex),
        "zed" | "zed-editor" | "zeditor" => return Some(ClientId::Zed),
        _ => {}
    }
    if node && script.contains("@anthropic-ai/claude-code") {
        Some(ClientId::ClaudeCode)
    } else if node && script.contains("@google/gemini-cli") {
        Some(ClientId::GeminiCli)
    } else if node && script.contains("@openai/codex") {
        Some(ClientId::Codex)
    } else if argv[0].to_ascii_lowercase().contains("/claude-desktop/") {
        Some(ClientId::ClaudeDesktop)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn command_lines_name_their_client() {
        assert_eq!(
            client_of(&argv("/usr/bin/claude")),
            Some(ClientId::ClaudeCode)
        );
        assert_eq!(
            client_of(&argv(
                "node /usr/lib/node_modules/@google/gemini-cli/dist/index.js"
            )),
            Some(ClientId::GeminiCli)
        );
        assert_eq!(
            client_of(&argv("/usr/share/code/code --type=renderer")),
            Some(ClientId::Vscode)
        );
        assert_eq!(client_of(&argv("/usr/bin/zed-editor")), Some(ClientId::Zed));
        assert_eq!(client_of(&argv("/usr/bin/node server.js")), None);
        assert_eq!(client_of(&argv("/usr/bin/codex-helper")), None);
    }

    #[test]
    fn a_fake_proc_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("4242");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("cmdline"), b"/opt/cursor/cursor\0--no-sandbox\0").unwrap();
        std::fs::create_dir(dir.path().join("self")).unwrap();
        assert_eq!(running(dir.path()), vec![ClientId::Cursor]);
    }
}
