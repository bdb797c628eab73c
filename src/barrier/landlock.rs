//! Landlock: the rules of [`super::rules`] applied to the calling thread,
//! and what the kernel actually enforced.
//!
//! Best effort on purpose: an older kernel enforces what it knows and the
//! result says which ABI that was, so the warden can tell a full barrier
//! from a partial one (see [`super::status::Level`]) instead of failing on
//! every kernel older than this crate.

use landlock::{
    ABI, Access, AccessFs, BitFlags, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::rules::{Grant, Rule};

/// The newest ABI whose rights toolgate asks for (`ResolveUnix` came in 9).
const WANTED: ABI = ABI::V9;

/// What Landlock enforced on this thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Enforced {
    /// The kernel's Landlock ABI, `None` when Landlock is missing or off.
    pub(super) abi: Option<u8>,
    /// Whether a ruleset was enforced at all.
    pub(super) enforced: bool,
}

/// Restricts the calling thread (and everything it starts) to `rules`,
/// with signals and abstract Unix sockets scoped to its own domain where
/// the kernel can.
///
/// # Errors
/// The kernel refused a rule or the restriction itself.
pub(super) fn restrict(rules: &[Rule]) -> Result<Enforced, landlock::RulesetError> {
    let all = AccessFs::from_all(WANTED);
    let mut created = Ruleset::default()
        .handle_access(all)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)?
        .create()?;
    for rule in rules {
        // A path that vanished since it was listed simply gets no rule.
        let Ok(fd) = PathFd::new(&rule.path) else {
            continue;
        };
        created = created.add_rule(PathBeneath::new(fd, rights(rule, all)))?;
    }
    let status = created.restrict_self()?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => u8::try_from(effective_abi as i32).ok(),
        _ => None,
    };
    Ok(Enforced {
        abi,
        enforced: status.ruleset != RulesetStatus::NotEnforced,
    })
}

fn rights(rule: &Rule, all: BitFlags<AccessFs>) -> BitFlags<AccessFs> {
    let granted = match rule.grant {
        Grant::Full => all,
        Grant::ReadExec => AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute,
        Grant::List => AccessFs::ReadDir.into(),
    };
    if rule.dir {
        granted
    } else {
        granted & AccessFs::from_file(WANTED)
    }
}
