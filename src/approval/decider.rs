//! Who made a decision on an approval request, recorded with it (`by`).
//!
//! The decider is identified by the transport the decision arrived on,
//! never by the decider's own words: the control socket reads its peer's
//! pid from the kernel (`SO_PEERCRED`) and its executable from `/proc`; a
//! console session is named by a non-secret label of its cookie; the
//! desktop shell, which holds the console's bearer token, says whether a
//! person decided in its tray or on a notification. The engine's own
//! closings (timeout, startup, shutdown, the caller leaving) have variants
//! too, but are never accepted as a decision ([`Decider::is_person`]).
//!
//! This is the one type for "who decided" in the engine: the approval
//! queue, the control service and its transports all use it.

use std::fmt;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::context::Caller;

/// Who decided. Recorded with every decision, in its text form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decider {
    /// The CLI (or any process) on the control socket.
    Cli {
        /// The peer's pid, from the kernel.
        pid: Option<u32>,
        /// Its executable, when `/proc` shows it.
        exe: Option<String>,
    },
    /// A person in the console. `session` labels the console session for
    /// the record; it is never the session's secret cookie.
    Console {
        /// A non-secret label of the session, if any.
        session: Option<String>,
    },
    /// A person in the desktop app's window (a console session whose
    /// login link the app minted for its window).
    DesktopWindow {
        /// A non-secret label of the session, if any.
        session: Option<String>,
    },
    /// The tray menu of the desktop app.
    Tray,
    /// An action button of a desktop notification.
    Notification,
    /// Nobody answered in time.
    Timeout,
    /// Closed at startup (the caller was gone).
    Startup,
    /// Closed at shutdown.
    Shutdown,
    /// The calling agent left.
    Caller,
}

impl Decider {
    /// The control-socket peer `caller`.
    pub fn cli(caller: &Caller) -> Self {
        Self::Cli {
            pid: caller.pid.and_then(|p| u32::try_from(p).ok()),
            exe: caller.exe.clone(),
        }
    }

    /// Whether this is a person (who may approve or deny), rather than
    /// the engine closing a request by itself.
    pub fn is_person(&self) -> bool {
        matches!(
            self,
            Self::Cli { .. }
                | Self::Console { .. }
                | Self::DesktopWindow { .. }
                | Self::Tray
                | Self::Notification
        )
    }
}

/// `cli pid 4242 (/usr/bin/toolgate)`, `console session ab12`, `tray`, ...:
/// the form stored as `decided_by`.
impl fmt::Display for Decider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cli { pid, exe } => {
                f.write_str("cli")?;
                if let Some(pid) = pid {
                    write!(f, " pid {pid}")?;
                }
                if let Some(exe) = exe {
                    write!(f, " ({exe})")?;
                }
                Ok(())
            }
            Self::Console { session: Some(s) } => write!(f, "console session {s}"),
            Self::Console { session: None } => f.write_str("console"),
            Self::DesktopWindow { session: Some(s) } => write!(f, "desktop window {s}"),
            Self::DesktopWindow { session: None } => f.write_str("desktop window"),
            Self::Tray => f.write_str("tray"),
            Self::Notification => f.write_str("notification"),
            Self::Timeout => f.write_str("timeout"),
            Self::Startup => f.write_str("startup"),
            Self::Shutdown => f.write_str("shutdown"),
            Self::Caller => f.write_str("caller"),
        }
    }
}

/// Where a recorded decider (its [`Decider`] text form, as stored in
/// `decided_by` and `created_by`) decided, in words: `in the console`,
/// `from the CLI (pid 42)`. Text from an older or unknown form is quoted.
pub fn recorded_words(by: &str) -> String {
    let pid = by
        .split_once("pid ")
        .map(|(_, rest)| rest.split(' ').next().unwrap_or_default());
    match by.split(' ').next().unwrap_or_default() {
        "cli" => match pid {
            Some(pid) => format!("from the CLI (pid {pid})"),
            None => "from the CLI".to_owned(),
        },
        "console" | "ui" => "in the console".to_owned(),
        "desktop" => "in the desktop window".to_owned(),
        "tray" => "from the tray".to_owned(),
        "notification" => "from a notification".to_owned(),
        // A teammate's decision, sent from their engine: `team alice on box`.
        "team" => format!("by {}", by.trim_start_matches("team ")),
        _ => format!("by “{by}”"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_deciders_read_as_places() {
        let cli = Decider::Cli {
            pid: Some(42),
            exe: Some("/usr/bin/toolgate".into()),
        };
        assert_eq!(recorded_words(&cli.to_string()), "from the CLI (pid 42)");
        let console = Decider::Console {
            session: Some("ab12".into()),
        };
        assert_eq!(recorded_words(&console.to_string()), "in the console");
        assert_eq!(recorded_words("desktop window 3"), "in the desktop window");
        assert_eq!(recorded_words("tray"), "from the tray");
        assert_eq!(recorded_words("someone"), "by “someone”");
    }

    #[test]
    fn a_cli_decider_names_its_process() {
        let caller = Caller {
            pid: Some(4242),
            exe: Some("/usr/bin/toolgate".into()),
            ..Caller::via("socket")
        };
        assert_eq!(
            Decider::cli(&caller).to_string(),
            "cli pid 4242 (/usr/bin/toolgate)"
        );
        assert_eq!(Decider::cli(&Caller::via("socket")).to_string(), "cli");
    }

    #[test]
    fn only_people_decide() {
        let console = Decider::Console {
            session: Some("ab12".into()),
        };
        assert_eq!(console.to_string(), "console session ab12");
        assert!(console.is_person() && Decider::Tray.is_person());
        assert!(!Decider::Timeout.is_person() && !Decider::Shutdown.is_person());
    }
}
