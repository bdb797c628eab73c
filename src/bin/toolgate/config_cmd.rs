//! `toolgate import …` and `toolgate secret …`: thin glue over
//! `toolgate::config::import` and `toolgate::secrets`; neither needs an
//! engine.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use toolgate::config::import;
use toolgate::secrets::{self, KeyringStore, SecretName, SecretStore};

use crate::Command;

/// Where to import from.
#[derive(Subcommand)]
pub(crate) enum ImportFrom {
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop {
        /// The file (default: the platform's Claude config dir).
        path: Option<PathBuf>,
        /// Also store the secrets found in the file in the keychain.
        #[arg(long)]
        store_secrets: bool,
    },
    /// Cursor's `mcp.json` (same format).
    Cursor {
        /// The file (default: ~/.cursor/mcp.json).
        path: Option<PathBuf>,
        /// Also store the secrets found in the file in the keychain.
        #[arg(long)]
        store_secrets: bool,
    },
}

/// `toolgate secret …`.
#[derive(Subcommand)]
pub(crate) enum SecretAction {
    /// Store a secret; the value is read from stdin, never from argv.
    Set {
        /// The name used in `keyring:NAME`.
        name: String,
    },
    /// Say whether a secret is set (its value only with --reveal).
    Get {
        /// The name used in `keyring:NAME`.
        name: String,
        /// Print the value itself to stdout.
        #[arg(long)]
        reveal: bool,
    },
    /// Delete a secret.
    Rm {
        /// The name used in `keyring:NAME`.
        name: String,
    },
}

/// Runs `command` if it is a config command.
pub(crate) fn run(command: &Command) -> anyhow::Result<Option<ExitCode>> {
    match command {
        Command::Import { from } => import_cmd(from).map(Some),
        Command::Secret { action } => secret_cmd(action).map(Some),
        _ => Ok(None),
    }
}

fn import_cmd(from: &ImportFrom) -> anyhow::Result<ExitCode> {
    let (path, default, store_secrets) = match from {
        ImportFrom::ClaudeDesktop {
            path,
            store_secrets,
        } => (path, import::claude_desktop_default_path(), *store_secrets),
        ImportFrom::Cursor {
            path,
            store_secrets,
        } => (path, import::cursor_default_path(), *store_secrets),
    };
    let path = path
        .clone()
        .or(default)
        .context("no home directory; pass the file's path")?;
    let out = import::import_file(&path)?;
    for note in &out.notes {
        eprintln!("toolgate: note: {note}");
    }
    if store_secrets && !out.secrets.is_empty() {
        let store = KeyringStore::new()?;
        for (name, value) in &out.secrets {
            store.set(&SecretName::new(name)?, value)?;
            eprintln!("toolgate: stored secret `{name}` in the keychain");
        }
    } else if !out.secrets.is_empty() {
        let names: Vec<&str> = out.secrets.iter().map(|(n, _)| n.as_str()).collect();
        eprintln!(
            "toolgate: note: {} secret(s) to store with `toolgate secret set NAME` (or re-run with --store-secrets): {}",
            names.len(),
            names.join(", ")
        );
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.toml.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn secret_cmd(action: &SecretAction) -> anyhow::Result<ExitCode> {
    let store = KeyringStore::new()?;
    match action {
        SecretAction::Set { name } => {
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!("toolgate: enter the value for `{name}`, then Ctrl-D:");
            }
            secrets::cli_set(&store, name, std::io::stdin().lock().take(1 << 20))?;
            eprintln!("toolgate: stored secret `{name}`");
        }
        SecretAction::Get { name, reveal } => {
            let value = secrets::cli_get(&store, name)?;
            if *reveal {
                println!("{}", value.expose());
            } else {
                println!(
                    "`{name}` is set ({} bytes); --reveal prints it",
                    value.expose().len()
                );
            }
        }
        SecretAction::Rm { name } => {
            secrets::cli_rm(&store, name)?;
            eprintln!("toolgate: removed secret `{name}`");
        }
    }
    Ok(ExitCode::SUCCESS)
}
