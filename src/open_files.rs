//! The engine's own open-files limit. Each agent connection takes two
//! descriptors (the socket and its hang-up watch), so the common soft limit
//! of 1024 would refuse the 500th agent while the hard limit (often
//! 524288) allows far more. The engine raises its soft limit to the hard
//! one at start, the way servers do; it never asks for more than the hard
//! limit the user's session grants.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Raises the soft open-files limit to the hard one. Returns the limit in
/// force afterwards (`None`: unlimited or unknown).
pub fn raise() -> Option<u64> {
    let now = getrlimit(Resource::Nofile);
    if now.current != now.maximum {
        let wanted = Rlimit {
            current: now.maximum,
            maximum: now.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, wanted) {
            tracing::warn!("could not raise the open-files limit: {e}");
        }
    }
    getrlimit(Resource::Nofile).current
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let after = super::raise();
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        assert_eq!(after, hard);
    }
}
