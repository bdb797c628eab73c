//! Commands that read or steer toolgate's control plane: the `toolgate`
//! CLI's subcommands and the control socket's methods.
//!
//! The rule is deny by default: a simple command that runs `toolgate` is
//! refused unless what it asks for is one of [`HARMLESS_SUBCOMMANDS`] (or
//! only `--version`/`--help`), so a subcommand added later is covered
//! without being listed. [`CONTROL_SUBCOMMANDS`] names the others for the
//! forms where `toolgate` is not the command word (`env toolgate approve`,
//! `cargo run --bin toolgate -- pins`, `['toolgate','approve']` in a
//! script); a test of the binary checks that the two lists together are
//! exactly the CLI's subcommands.

use super::Refusal;

/// `toolgate` subcommands a governed tool may run: they open none of
/// toolgate's files or sockets.
pub const HARMLESS_SUBCOMMANDS: [&str; 1] = ["help"];

/// Every other `toolgate` subcommand: each opens the control socket, the
/// agent socket as another client, the config, the data dir or the
/// keychain entries the config refers to. `tools`, `servers`, `approvals`
/// and `audit` only read, but what they read (other agents' pending calls
/// and arguments, the audit log) is the control plane's, and the OS
/// barrier denies governed processes the sockets and files they need;
/// `import` can write keychain secrets (`--store-secrets`); `call` and
/// `mcp-bridge` would make calls as another client than the agent, and
/// `hook` would answer for another agent's tools (and its `install` and
/// `remove` rewrite agents' hook settings); `doctor` reads the config;
/// `connect` and `disconnect` rewrite MCP clients' configs.
pub const CONTROL_SUBCOMMANDS: [&str; 19] = [
    "serve",
    "console",
    "mcp-bridge",
    "hook",
    "tools",
    "call",
    "breakers",
    "approvals",
    "approve",
    "deny",
    "rules",
    "servers",
    "pins",
    "import",
    "secret",
    "audit",
    "doctor",
    "connect",
    "disconnect",
];

/// The name of toolgate's binary.
const TOOLGATE: &str = "toolgate";

/// Options that only print and exit.
const PRINT_ONLY: [&str; 4] = ["--version", "-V", "--help", "-h"];

/// Whether `word` runs toolgate: the binary by any path.
pub(super) fn is_toolgate(word: &str) -> bool {
    word.rsplit('/').next() == Some(TOOLGATE)
}

/// A simple command whose command word is toolgate (`words[0]`): refused
/// unless it only prints (`--version`, `--help`) or its first argument
/// that is not an option is a harmless subcommand. An option's value
/// counts as that first argument (`--socket X approve`): toolgate pointed
/// at another socket or config is refused as well.
pub(super) fn check_invocation(words: &[String]) -> Result<(), Refusal> {
    let args = &words[1..];
    let first = args.iter().find(|a| !a.starts_with('-'));
    let prints = args
        .iter()
        .take_while(|a| Some(*a) != first)
        .any(|a| PRINT_ONLY.contains(&a.as_str()));
    match first {
        Some(first) if !prints && !HARMLESS_SUBCOMMANDS.contains(&first.as_str()) => {
            // Name the subcommand when an option's value came first.
            let sub = args
                .iter()
                .find(|a| CONTROL_SUBCOMMANDS.contains(&a.as_str()))
                .unwrap_or(first);
            Err(Refusal::Control {
                command: format!("{TOOLGATE} {sub}"),
            })
        }
        _ => Ok(()),
    }
}

/// Words of one simple command: a toolgate word followed later by a
/// control subcommand, wherever toolgate stands (`env`, `sudo -E`,
/// `cargo run --bin toolgate --`, `xargs`).
pub(super) fn check_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<(), Refusal> {
    let mut seen = false;
    for w in words {
        if is_toolgate(w) {
            seen = true;
        } else if seen && CONTROL_SUBCOMMANDS.contains(&w) {
            return Err(Refusal::Control {
                command: format!("{TOOLGATE} {w}"),
            });
        }
    }
    Ok(())
}

/// One word read as code (`['toolgate','approve','1']`, a JSON argv):
/// its name-like pieces, checked like the words of a command.
pub(super) fn check_embedded(word: &str) -> Result<(), Refusal> {
    check_words(
        word.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '+')))
            .filter(|w| !w.is_empty()),
    )
}

/// A control method's name anywhere in `text` (`toolgate/approve`, as sent
/// to the control socket by hand), standing alone: not inside a longer
/// path such as `src/toolgate/rules.rs`.
pub(super) fn check_methods(text: &str) -> Result<(), Refusal> {
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices("toolgate/") {
        if at > 0 && is_path_byte(bytes[at - 1]) {
            continue;
        }
        let found = crate::wire::CONTROL_METHODS.iter().find(|m| {
            text[at..].starts_with(**m) && bytes.get(at + m.len()).is_none_or(|b| !is_path_byte(*b))
        });
        if let Some(m) = found {
            return Err(Refusal::Control {
                command: (*m).to_owned(),
            });
        }
    }
    Ok(())
}

/// A byte that continues a path or a name.
fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/')
}
