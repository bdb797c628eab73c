//! Slices of engine state that a live view shows, each with a revision.
//!
//! Some changes of state are announced item by item (a tool registered, a
//! breaker opened), but many are not: an allow/deny list swapped by a config
//! reload changes which tools are active without touching the registry; a
//! restart changes a server's pid and restart count; a breaker appears on a
//! tool's first call. So every change of a slice, whatever made it (the
//! config file, the console, the CLI, the tray, an upstream's `list_changed`,
//! a plugin registering tools), also bumps that slice's revision and emits
//! [`Event::StateChanged`](crate::events::Event::StateChanged) with it. A
//! view that sees the event reads the slice again.
//!
//! The contract a reader relies on: the engine changes the state first,
//! then bumps the revision and announces it. A reader that reads the
//! revision *before* the state therefore has every change up to that
//! revision; if it was told of a newer revision than the one it read, it
//! reads again. Reading a slice twice is harmless (it replaces the view's
//! copy), so a change announced both item by item and as a slice is safe.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// A part of the engine's state a view shows as a whole.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum Slice {
    /// The tool list as views show it: registered tools (active or hidden
    /// by the allow/deny lists) and quarantined ones.
    Tools,
    /// The policy in force and the allow/deny lists.
    Policy,
    /// Upstream servers' statuses.
    Servers,
    /// Circuit breakers: which tools have one, and their state.
    Breakers,
    /// The team link (`[storage] url`): its state, the team's engines and
    /// the other engines' requests.
    Team,
}

impl Slice {
    /// Every slice.
    pub const ALL: [Slice; 5] = [
        Self::Tools,
        Self::Policy,
        Self::Servers,
        Self::Breakers,
        Self::Team,
    ];

    /// The snake_case name (as in URLs).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Policy => "policy",
            Self::Servers => "servers",
            Self::Breakers => "breakers",
            Self::Team => "team",
        }
    }

    /// The slice named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    fn index(self) -> usize {
        match self {
            Self::Tools => 0,
            Self::Policy => 1,
            Self::Servers => 2,
            Self::Breakers => 3,
            Self::Team => 4,
        }
    }
}

/// One revision counter per slice, starting at 0.
#[derive(Debug, Default)]
pub struct Revisions([AtomicU64; 5]);

impl Revisions {
    /// The revision of `slice` now.
    pub fn get(&self, slice: Slice) -> u64 {
        self.0[slice.index()].load(Ordering::Acquire)
    }

    /// Moves `slice` one revision on; returns the new revision.
    pub fn bump(&self, slice: Slice) -> u64 {
        self.0[slice.index()].fetch_add(1, Ordering::AcqRel) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_slice_counts_on_its_own_and_names_round_trip() {
        let r = Revisions::default();
        assert_eq!(r.bump(Slice::Tools), 1);
        assert_eq!(r.bump(Slice::Tools), 2);
        assert_eq!(r.bump(Slice::Servers), 1);
        assert_eq!(r.get(Slice::Policy), 0);
        for s in Slice::ALL {
            assert_eq!(Slice::parse(s.as_str()), Some(s));
        }
        assert_eq!(Slice::parse("nope"), None);
    }
}
