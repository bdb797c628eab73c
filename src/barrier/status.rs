//! What the barrier holds on this machine, in words a person reads: the
//! console's header, `toolgate doctor` and the refusal of shell-like tools
//! all take these, so the wording exists once.
//!
//! The facts come from the warden itself (its `--probe`, see
//! [`super::warden`]): what the kernel enforced on a real warden process,
//! and whether that process was really refused toolgate's files. A status
//! is never guessed from the kernel version.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// How much of the barrier holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum BarrierLevel {
    /// Every guarantee holds.
    Full,
    /// toolgate's files, the control plane and the user's daemons are out
    /// of reach; some lesser guarantee is missing (listed in `gaps`).
    Partial,
    /// Governed processes are not confined: they could reach toolgate's
    /// files and credentials.
    Off,
}

/// The barrier on this machine, for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct BarrierStatus {
    /// How much holds.
    pub level: BarrierLevel,
    /// The kernel's Landlock ABI, when Landlock works.
    pub landlock_abi: Option<u8>,
    /// Whether the seccomp filter (no Unix sockets) applies.
    pub seccomp: bool,
    /// One line: what holds, or why it does not.
    pub summary: String,
    /// What does not hold, one sentence each (empty when `full`).
    pub gaps: Vec<String>,
    /// Whether shell-like tools are refused because the barrier is off
    /// and the config says to refuse them then.
    pub refuses_shell: bool,
}

/// What a warden's probe found, as it prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// Landlock's ABI, when a ruleset was enforced.
    pub landlock_abi: Option<u8>,
    /// Why Landlock could not be applied, if it could not.
    pub landlock_error: Option<String>,
    /// Whether the seccomp filter was applied (`None`: not asked for).
    pub seccomp: Option<bool>,
    /// Why it could not be, if it could not.
    pub seccomp_error: Option<String>,
    /// Why the capabilities could not be dropped, if they could not.
    #[serde(default)]
    pub capabilities_error: Option<String>,
    /// Hidden places the probe could still open (must be empty).
    pub reachable: Vec<String>,
}

/// The first Landlock ABI that covers truncation (`truncate(2)` of a file
/// the process may not write): below it toolgate's data could be emptied.
pub const MIN_ABI: u8 = 3;
/// The first ABI that scopes signals and abstract Unix sockets.
pub const SCOPES_ABI: u8 = 6;

impl BarrierStatus {
    /// The status a probe shows, with the config's choices: Unix sockets
    /// allowed or not, shell-like tools refused when off or not.
    pub fn from_probe(probe: &Probe, unix_sockets_allowed: bool, refuse_when_off: bool) -> Self {
        let mut off = Vec::new();
        let mut gaps = Vec::new();
        match probe.landlock_abi {
            None => off.push(format!(
                "Landlock is not available{}: governed processes can read toolgate's credentials and write its files",
                probe
                    .landlock_error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            )),
            Some(abi) if abi < MIN_ABI => off.push(format!(
                "Landlock ABI {abi} (Linux 6.2 brings {MIN_ABI}) does not cover truncation: a governed process could empty toolgate's audit log"
            )),
            Some(abi) if abi < SCOPES_ABI => gaps.push(format!(
                "Landlock ABI {abi} does not scope signals (Linux 6.12 brings {SCOPES_ABI}): a governed process can signal toolgate itself"
            )),
            Some(_) => {}
        }
        if let Some(e) = &probe.capabilities_error {
            off.push(format!(
                "capabilities could not be dropped ({e}): a governed process of root could reach past Landlock"
            ));
        }
        if !probe.reachable.is_empty() {
            off.push(format!(
                "a confined process could still open {}",
                probe.reachable.join(", ")
            ));
        }
        match (probe.seccomp, unix_sockets_allowed) {
            (_, true) => gaps.push(
                "Unix sockets are allowed ([barrier] unix_sockets): a user daemon reached through one (systemd --user, D-Bus, tmux) can start programs outside the barrier".to_owned(),
            ),
            (Some(true), false) => {}
            (_, false) => off.push(format!(
                "the seccomp filter could not be applied{}: governed processes could ask the user's daemons to start programs outside the barrier",
                probe
                    .seccomp_error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            )),
        }
        let level = match (off.is_empty(), gaps.is_empty()) {
            (false, _) => BarrierLevel::Off,
            (true, false) => BarrierLevel::Partial,
            (true, true) => BarrierLevel::Full,
        };
        let refuses_shell = level == BarrierLevel::Off && refuse_when_off;
        let summary = summary(level, probe.landlock_abi, refuses_shell);
        off.extend(gaps);
        Self {
            level,
            landlock_abi: probe.landlock_abi,
            seccomp: probe.seccomp == Some(true),
            summary,
            gaps: off,
            refuses_shell,
        }
    }

    /// The status of a host that has no warden to start (its binary cannot
    /// be one): nothing is confined.
    pub fn no_warden(why: &str, refuse_when_off: bool) -> Self {
        let level = BarrierLevel::Off;
        Self {
            level,
            landlock_abi: None,
            seccomp: false,
            summary: summary(level, None, refuse_when_off),
            gaps: vec![format!("no warden to confine processes with: {why}")],
            refuses_shell: refuse_when_off,
        }
    }

    /// Whether governed processes are confined (full or partial).
    pub fn confines(&self) -> bool {
        self.level != BarrierLevel::Off
    }
}

fn summary(level: BarrierLevel, abi: Option<u8>, refuses_shell: bool) -> String {
    let abi = abi.map(|a| format!("Landlock ABI {a}")).unwrap_or_default();
    match (level, refuses_shell) {
        (BarrierLevel::Full, _) => format!(
            "Barrier on ({abi}, seccomp): governed processes cannot reach toolgate's files, credentials or control plane"
        ),
        (BarrierLevel::Partial, _) => format!(
            "Barrier partly on ({abi}): toolgate's files and control plane are out of reach; see what is missing"
        ),
        (BarrierLevel::Off, true) => {
            "Barrier off: this machine cannot confine governed processes, so shell-like tools are refused".to_owned()
        }
        (BarrierLevel::Off, false) => {
            "Barrier off: governed processes run unconfined ([barrier] when_unavailable = \"run\")".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(abi: Option<u8>, seccomp: bool) -> Probe {
        Probe {
            landlock_abi: abi,
            seccomp: Some(seccomp),
            ..Probe::default()
        }
    }

    #[test]
    fn levels_follow_what_the_probe_found() {
        let full = BarrierStatus::from_probe(&probe(Some(7), true), false, true);
        assert_eq!(full.level, BarrierLevel::Full);
        assert!(full.gaps.is_empty() && !full.refuses_shell);
        let partial = BarrierStatus::from_probe(&probe(Some(4), true), false, true);
        assert_eq!(partial.level, BarrierLevel::Partial);
        assert!(partial.gaps[0].contains("signals"), "{:?}", partial.gaps);
        for p in [
            probe(None, true),
            probe(Some(2), true),
            probe(Some(7), false),
        ] {
            let s = BarrierStatus::from_probe(&p, false, true);
            assert_eq!(s.level, BarrierLevel::Off, "{p:?}");
            assert!(s.refuses_shell);
        }
        let reachable = Probe {
            reachable: vec!["/x/data".into()],
            ..probe(Some(7), true)
        };
        assert_eq!(
            BarrierStatus::from_probe(&reachable, false, true).level,
            BarrierLevel::Off
        );
    }

    #[test]
    fn allowing_unix_sockets_is_a_gap_the_person_chose() {
        let s = BarrierStatus::from_probe(&probe(Some(7), false), true, true);
        assert_eq!(s.level, BarrierLevel::Partial);
        assert!(s.gaps[0].contains("unix_sockets"), "{:?}", s.gaps);
    }

    #[test]
    fn off_without_refusal_says_how_it_was_chosen() {
        let s = BarrierStatus::from_probe(&probe(None, false), false, false);
        assert!(!s.refuses_shell);
        assert!(s.summary.contains("when_unavailable"), "{}", s.summary);
    }
}
