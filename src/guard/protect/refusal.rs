//! Why a call was refused: each reason names what it touched.

use std::path::PathBuf;

/// Why a call was refused; the message names the protected path or the
/// command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// A path in a protected place, to read or to change.
    #[error(
        "`{}` is protected: toolgate's {what} `{}`; governed tools may not read or change it: {why}",
        .path.display(), .protected.display()
    )]
    Touches {
        /// The path asked for, resolved.
        path: PathBuf,
        /// What the protected place is.
        what: &'static str,
        /// The protected place.
        protected: PathBuf,
        /// Why not even reading is allowed.
        why: &'static str,
    },
    /// Another name (a hard link) of a file in a protected place.
    #[error(
        "`{}` is a hard link to `{}` in toolgate's {what} `{}`; governed tools may not read or change it: {why}",
        .path.display(), .target.display(), .protected.display()
    )]
    HardLink {
        /// The path asked for, resolved.
        path: PathBuf,
        /// The protected file it is another name of.
        target: PathBuf,
        /// What the protected place is.
        what: &'static str,
        /// The protected place.
        protected: PathBuf,
        /// Why not even reading is allowed.
        why: &'static str,
    },
    /// A protected path named in free text (a command, an upstream tool's
    /// argument), written out, through `~`, a variable, a glob or a `cd`.
    #[error(
        "it names `{found}`, toolgate's {what} `{}`; governed tools may not touch toolgate's own files",
        .protected.display()
    )]
    Mention {
        /// The text that named it.
        found: String,
        /// What the protected place is.
        what: &'static str,
        /// The protected place.
        protected: PathBuf,
    },
    /// A command that would read or steer toolgate itself.
    #[error(
        "it runs `{command}`, which steers toolgate itself; governed tools may not use toolgate's control plane (approvals, rules, pins, breakers, secrets, the console, the audit log): a person runs such commands in their own terminal"
    )]
    Control {
        /// What was found, e.g. `toolgate approve` or `toolgate/approve`.
        command: String,
    },
}

impl Refusal {
    /// This refusal as one of text that named the path as `found`.
    pub(super) fn mentioned_as(self, found: &str) -> Self {
        match self {
            Self::Touches {
                what, protected, ..
            }
            | Self::HardLink {
                what, protected, ..
            } => Self::Mention {
                found: found.to_owned(),
                what,
                protected,
            },
            other => other,
        }
    }
}
