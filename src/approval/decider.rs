//! Who made a decision on an approval request, recorded with it (`by`).
//!
//! The decider is identified by the transport the decision arrived on,
//! never by the decider's own words: the control socket reads its peer's
//! pid from the kernel (`SO_PEERCRED`) and its executable from `/proc`, so
//! the audit trail says which process approved a call (DESIGN.md: "the
//! CLI's control socket and the console ... decisions (recording who
//! decided)"). The console and the tray get their own variants when they
//! exist.

use std::fmt;

use crate::context::Caller;

/// Who decided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decider {
    /// The `toolgate` CLI (or any process) on the control socket.
    Cli {
        /// The peer's process id, from the kernel.
        pid: Option<i32>,
        /// The peer's executable, when `/proc` shows it.
        exe: Option<String>,
    },
}

impl Decider {
    /// The control-socket peer `caller`.
    pub fn cli(caller: &Caller) -> Self {
        Self::Cli {
            pid: caller.pid,
            exe: caller.exe.clone(),
        }
    }
}

/// `cli pid 4242 (/usr/bin/toolgate)`, the form stored as `decided_by`.
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
