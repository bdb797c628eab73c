//! Why connect, disconnect or a hook install could not be planned or
//! carried out. Every message names the file (and for a malformed file,
//! the line and column), and none carries a secret's value.

use std::path::PathBuf;

use super::ClientId;

/// See the module docs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// A client's file does not parse; nothing was written.
    #[error("{}:{line}:{column}: {reason}; nothing was changed", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong there.
        reason: String,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file could not be written (the old one is left as it was).
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Connect was asked twice.
    #[error("{} is already connected to toolgate; run `toolgate disconnect {}` first", client.display_name(), client.id())]
    AlreadyConnected {
        /// The client.
        client: ClientId,
    },
    /// Disconnect without a connect.
    #[error("{} was not connected by toolgate (no undo record in {}); nothing to undo", client.display_name(), record.display())]
    NotConnected {
        /// The client.
        client: ClientId,
        /// Where the record would be.
        record: PathBuf,
    },
    /// No server to move.
    #[error("{}: no MCP servers that toolgate can run were found in {files}", client.display_name())]
    NothingToConnect {
        /// The client.
        client: ClientId,
        /// The files looked at.
        files: String,
    },
    /// toolgate's own config cannot be read or would not load after the edit.
    #[error("toolgate's config {}: {message}", path.display())]
    ToolgateConfig {
        /// The config file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The files changed between the plan a person saw and apply.
    #[error("{} changed since the plan was shown; look at the new plan before applying", path.display())]
    Stale {
        /// The first file that changed.
        path: PathBuf,
    },
    /// The keychain refused.
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
    /// An undo record could not be read or written.
    #[error("undo record {}: {message}", path.display())]
    Record {
        /// The record file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Hooks were asked of a client without a hook system.
    #[error("{} has no hook system toolgate installs into; hooks are for claude-code, cursor and gemini-cli", client.display_name())]
    NoHooks {
        /// The client.
        client: ClientId,
    },
    /// Hooks already installed, or not installed.
    #[error("{message}")]
    Hooks {
        /// What is wrong.
        message: String,
    },
}
