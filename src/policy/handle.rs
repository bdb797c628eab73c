//! The live policy, swappable at run time.
//!
//! The config watcher calls [`PolicyHandle::swap`] with a freshly validated
//! [`PolicyConfig`]; calls already past the policy stage keep the version
//! they were assessed under, new calls see the new one. Reads are one
//! `ArcSwap` load (no lock on the call path). Every swap increments the
//! version, which approval requests record: a person can see which rules
//! asked, and a call approved under an older version is re-checked against
//! the current one before it runs (a new `deny` wins).

use std::sync::Arc;

use arc_swap::ArcSwap;

use super::rules::PolicyConfig;
use crate::events::{Event, EventBus};

/// One version of the policy.
#[derive(Debug)]
pub struct VersionedPolicy {
    /// Starts at 1; +1 on every swap.
    pub version: u64,
    /// The rules.
    pub config: Arc<PolicyConfig>,
}

/// The live policy. Cloning shares it.
#[derive(Debug, Clone)]
pub struct PolicyHandle {
    current: Arc<ArcSwap<VersionedPolicy>>,
    events: EventBus,
}

impl PolicyHandle {
    /// Version 1 of the policy; swaps are announced on `events`.
    pub fn new(config: PolicyConfig, events: EventBus) -> Self {
        Self {
            current: Arc::new(ArcSwap::from_pointee(VersionedPolicy {
                version: 1,
                config: Arc::new(config),
            })),
            events,
        }
    }

    /// The current version and rules.
    pub fn load(&self) -> Arc<VersionedPolicy> {
        self.current.load_full()
    }

    /// The current version number.
    pub fn version(&self) -> u64 {
        self.current.load().version
    }

    /// Replaces the rules; returns the new version. Concurrent swaps each
    /// get their own version (read-copy-update), none is lost.
    pub fn swap(&self, config: PolicyConfig) -> u64 {
        let config = Arc::new(config);
        let prev = self.current.rcu(|cur| VersionedPolicy {
            version: cur.version + 1,
            config: config.clone(),
        });
        let version = prev.version + 1;
        self.events.emit(Event::PolicyReloaded { version });
        self.events.changed(crate::slices::Slice::Policy);
        // A tool's risk as views list it is the policy's assessment.
        self.events.changed(crate::slices::Slice::Tools);
        version
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Preset;

    #[test]
    fn every_swap_increments_the_version_and_is_announced() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let h = PolicyHandle::new(PolicyConfig::default(), bus);
        assert_eq!(h.version(), 1);
        let c = PolicyConfig {
            preset: Preset::ReadOnly,
            ..PolicyConfig::default()
        };
        assert_eq!(h.swap(c), 2);
        assert_eq!(h.swap(PolicyConfig::default()), 3);
        assert_eq!(h.load().version, 3);
        assert!(matches!(
            rx.try_recv(),
            Ok(Event::PolicyReloaded { version: 2 })
        ));
    }

    #[test]
    fn concurrent_swaps_never_reuse_a_version() {
        let h = PolicyHandle::new(PolicyConfig::default(), EventBus::new());
        let versions: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| h.swap(PolicyConfig::default())))
                .collect();
            hs.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut sorted = versions.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (2..=9).collect::<Vec<_>>());
    }
}
