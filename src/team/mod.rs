//! Team scale: many engines, one approval queue, on a Postgres the team
//! already runs (docs/team.md). Without `[storage] url` nothing here runs
//! and toolgate is one engine on its embedded SQLite.
//!
//! Each engine keeps governing from its own SQLite database, which is also
//! its spool while the team database is away; the [`Team`] link mirrors it
//! to Postgres and takes decisions sent to it by the team
//! (docs/architecture/decisions.md, "Team: the raising engine decides").

mod identity;
mod link;
mod request;
mod settings;
mod store;

pub use identity::EngineIdentity;
pub use link::{Team, TeamParts, TeamState, TeamStatus};
pub use request::{Outcome, TeamRequest};
pub use settings::{Sharing, StorageError, StorageSettings};
pub use store::{EngineSeen, TeamCall, TeamCallsQuery};

use crate::approval::ApprovalError;

/// Why a team operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    /// The team database is unreachable now.
    #[error(
        "the team database is unreachable ({0}); this engine decides only its own requests until it is back"
    )]
    Offline(String),
    /// The connection was lost mid-way.
    #[error("lost the team database: {0}")]
    Lost(String),
    /// The engine that raised the request is offline.
    #[error("{engine} is offline: its requests can only be decided there until it is back")]
    EngineOffline {
        /// `user on host`.
        engine: String,
    },
    /// The raising engine did not take the decision in time; it was voided
    /// and can no longer take effect.
    #[error("{engine} did not answer in time; the decision was withdrawn, nothing was decided")]
    NoAnswer {
        /// `user on host`, or its id.
        engine: String,
    },
    /// `[team] deciders` of the raising engine does not list this
    /// engine's user.
    #[error("{0}")]
    NotADecider(String),
    /// A request of this very engine: it is decided in the local queue.
    #[error("request {id} is this engine's own; decide it in the local queue")]
    OwnRequest {
        /// Its id.
        id: i64,
    },
    /// The database failed.
    #[error("team database: {0}")]
    Db(#[from] sqlx::Error),
    /// The team schema could not be brought up to date.
    #[error("team database schema: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The local audit log could not be read.
    #[error("reading the local audit log: {0}")]
    Audit(String),
    /// The local pin store could not be read.
    #[error("reading the local tool pins: {0}")]
    Pins(String),
    /// The local queue failed.
    #[error(transparent)]
    Local(#[from] ApprovalError),
}
