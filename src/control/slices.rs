//! One slice of the console's state read again on its own, with the
//! revision it is at (see [`crate::slices`]): what a view fetches when the
//! stream says the slice changed, instead of a whole snapshot.

use serde::Serialize;
use ts_rs::TS;

use super::types::{BreakerView, ClientView, PolicySummary, ToolSummary};
use super::{Control, ControlError};
use crate::slices::Slice;
use crate::upstream::{PinRecord, ServerStatus};

/// A slice's content, tagged with its name (`{"slice": "tools", ...}`).
#[derive(Debug, Clone, Serialize, TS)]
#[serde(tag = "slice", rename_all = "snake_case")]
pub enum SliceView {
    /// Every tool and the quarantined ones (as in the snapshot).
    Tools {
        /// The revision read before the content.
        #[ts(type = "number")]
        revision: u64,
        /// Every tool, active, quarantined or denied.
        tools: Vec<ToolSummary>,
        /// Quarantined upstream tools.
        quarantined: Vec<PinRecord>,
        /// What each connected agent client is listed.
        clients: Vec<ClientView>,
    },
    /// The policy at a glance.
    Policy {
        /// The revision read before the content.
        #[ts(type = "number")]
        revision: u64,
        /// As in the snapshot.
        policy: PolicySummary,
    },
    /// Upstream servers.
    Servers {
        /// The revision read before the content.
        #[ts(type = "number")]
        revision: u64,
        /// As in the snapshot.
        servers: Vec<ServerStatus>,
        /// As in the snapshot.
        plugins: Vec<crate::plugins::PluginView>,
    },
    /// Breakers of tools that have been called.
    Breakers {
        /// The revision read before the content.
        #[ts(type = "number")]
        revision: u64,
        /// As in the snapshot.
        breakers: Vec<BreakerView>,
    },
    /// The team's queue and engines.
    Team {
        /// The revision read before the content.
        #[ts(type = "number")]
        revision: u64,
        /// As in the snapshot: `null` when the engine runs alone.
        team: Option<super::team::TeamView>,
    },
}

impl SliceView {
    /// Which slice it is.
    pub fn slice(&self) -> Slice {
        match self {
            Self::Tools { .. } => Slice::Tools,
            Self::Policy { .. } => Slice::Policy,
            Self::Servers { .. } => Slice::Servers,
            Self::Breakers { .. } => Slice::Breakers,
            Self::Team { .. } => Slice::Team,
        }
    }

    /// The revision it was read at.
    pub fn revision(&self) -> u64 {
        match self {
            Self::Tools { revision, .. }
            | Self::Policy { revision, .. }
            | Self::Servers { revision, .. }
            | Self::Breakers { revision, .. }
            | Self::Team { revision, .. } => *revision,
        }
    }
}

impl Control {
    /// `slice` as it is now, with its revision (read first).
    ///
    /// # Errors
    /// The pin store failed (tools).
    pub async fn slice(&self, slice: Slice) -> Result<SliceView, ControlError> {
        let revision = self.engine().events().revision(slice);
        Ok(match slice {
            Slice::Tools => SliceView::Tools {
                revision,
                tools: self.tools().await?,
                quarantined: self.quarantined().await?,
                clients: self.clients(),
            },
            Slice::Policy => SliceView::Policy {
                revision,
                policy: self.policy_summary(),
            },
            Slice::Servers => SliceView::Servers {
                revision,
                servers: self.servers(),
                plugins: self.engine().plugins().to_vec(),
            },
            Slice::Breakers => SliceView::Breakers {
                revision,
                breakers: self.breakers(),
            },
            Slice::Team => SliceView::Team {
                revision,
                team: self.team_view(),
            },
        })
    }
}

#[cfg(test)]
#[path = "slices_tests.rs"]
mod tests;
