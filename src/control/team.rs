//! The team's queue as the console shows and decides it: the link's state,
//! the team's engines and the other engines' requests ([`TeamView`]), and
//! a person's decision on one of them, which the link sends to the engine
//! that raised it (docs/team.md).
//!
//! Every change the link sees is announced on the console's stream as the
//! [`Slice::Team`] slice changing, so an open console reads [`TeamView`]
//! again (`GET /api/state/team`) instead of polling: the link itself is
//! fed by LISTEN/NOTIFY, so a request raised on another machine reaches an
//! open console within a second.

use std::collections::BTreeMap;

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use ts_rs::TS;

use super::types::{ApproveInput, DenyInput};
use super::{Control, ControlError};
use crate::approval::Decision;
use crate::events::EventBus;
use crate::slices::Slice;
use crate::team::{Outcome, Team, TeamError, TeamRequest, TeamState, TeamStatus};

/// Bytes of a denial's reason, as for a local request.
const MAX_REASON: usize = 2_000;

/// The team as this engine's console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct TeamView {
    /// The link: this engine, the database, online or degraded, the
    /// engines seen.
    pub status: TeamStatus,
    /// Other engines' requests: pending ones first (oldest first), then
    /// the last closed ones.
    pub requests: Vec<TeamRequest>,
    /// Every engine named above as people read it (`user on host`), by
    /// engine id: the engine's own words, not a copy in the UI.
    pub labels: BTreeMap<String, String>,
    /// The link's state in one sentence, with what it means for deciding.
    pub summary: String,
}

/// What `state` means for the person at this engine, in one sentence.
fn summary(state: &TeamState) -> String {
    match state {
        TeamState::Connecting => "Connecting to the team database.".into(),
        TeamState::Online => {
            "Online: requests are shared with the team, and whoever decides first decides.".into()
        }
        TeamState::Degraded { error, .. } => {
            // The link's error already names the database; said once is enough.
            let error = error.strip_prefix("team database: ").unwrap_or(error);
            let mut words = TeamError::Offline(error.to_owned()).to_string();
            words[..1].make_ascii_uppercase();
            words.push('.');
            words
        }
    }
}

impl TeamView {
    /// The link's state and requests now.
    pub fn of(team: &Team) -> Self {
        let status = team.status();
        let requests = team.requests();
        let labels = std::iter::once(&status.me)
            .chain(status.engines.iter().map(|e| &e.engine))
            .chain(requests.iter().map(|r| &r.engine))
            .map(|e| (e.id.clone(), e.label()))
            .collect();
        Self {
            summary: summary(&status.state),
            status,
            requests,
            labels,
        }
    }
}

/// Announces every change of `team` as [`Slice::Team`] changing, until
/// `stop` fires or the link is gone.
pub(super) fn announce(team: &Team, events: EventBus, stop: CancellationToken) {
    let mut changes = team.changes();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    events.changed(Slice::Team);
                }
            }
        }
    });
}

impl Control {
    /// The team link, when the engine has one.
    pub fn team(&self) -> Option<&Team> {
        self.inner.team.as_ref()
    }

    /// The team now; `None` when the engine runs alone.
    pub fn team_view(&self) -> Option<TeamView> {
        self.team().map(TeamView::of)
    }

    /// The team now, for `GET /api/team`.
    ///
    /// # Errors
    /// [`ControlError::Unavailable`] when the engine runs alone.
    pub fn team_now(&self) -> Result<TeamView, ControlError> {
        Ok(TeamView::of(self.linked()?))
    }

    fn linked(&self) -> Result<&Team, ControlError> {
        self.team().ok_or_else(|| {
            ControlError::Unavailable(
                "this engine is not part of a team: set [storage] url in its config to share \
                 one approval queue (docs/team.md)"
                    .into(),
            )
        })
    }

    /// The team's audit log, newest first (`GET /api/team/calls`).
    ///
    /// # Errors
    /// No team, or the team database is unreachable (its audit log lives
    /// there).
    pub async fn team_calls(
        &self,
        q: &crate::team::TeamCallsQuery,
    ) -> Result<Vec<crate::team::TeamCall>, ControlError> {
        Ok(self.linked()?.calls(q).await?)
    }

    /// Approves request `id` of engine `engine` through that engine's
    /// queue. A request someone decided first is not an error: the
    /// outcome says what won (`took_effect: false`).
    ///
    /// # Errors
    /// No team, an `always` (remembered rules stay with the engine that
    /// made them: decide it there), or the link's refusal in words (the
    /// engine is offline, the link is degraded, this user may not decide
    /// it, no answer in time).
    pub async fn team_approve(
        &self,
        engine: &str,
        id: i64,
        input: ApproveInput,
    ) -> Result<Outcome, ControlError> {
        no_always(input.always.is_some())?;
        self.team_decide(engine, id, Decision::approve()).await
    }

    /// Denies request `id` of engine `engine`, with an optional reason
    /// for its agent.
    ///
    /// # Errors
    /// As [`Self::team_approve`]; a reason over 2,000 bytes is invalid.
    pub async fn team_deny(
        &self,
        engine: &str,
        id: i64,
        input: DenyInput,
    ) -> Result<Outcome, ControlError> {
        no_always(input.always.is_some())?;
        let reason = input
            .reason
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty());
        if reason.as_ref().is_some_and(|r| r.len() > MAX_REASON) {
            return Err(ControlError::invalid(
                "reason",
                format!("at most {MAX_REASON} bytes; the agent reads it"),
            ));
        }
        self.team_decide(engine, id, Decision::deny(reason)).await
    }

    async fn team_decide(
        &self,
        engine: &str,
        id: i64,
        d: Decision,
    ) -> Result<Outcome, ControlError> {
        Ok(self.linked()?.decide(engine, id, d).await?)
    }
}

/// Remembered rules belong to the engine that keeps them; the console
/// here cannot offer a scope of another engine's policy.
fn no_always(always: bool) -> Result<(), ControlError> {
    if always {
        return Err(ControlError::invalid(
            "always",
            "remembered rules stay with the engine that raised the request; \
             approve or deny once here, or decide it on that engine to remember it",
        ));
    }
    Ok(())
}

impl From<TeamError> for ControlError {
    fn from(e: TeamError) -> Self {
        match e {
            TeamError::NotADecider(words) => Self::Forbidden(words),
            TeamError::OwnRequest { .. } => Self::invalid("engine", e.to_string()),
            TeamError::Offline(_)
            | TeamError::Lost(_)
            | TeamError::EngineOffline { .. }
            | TeamError::NoAnswer { .. } => Self::Unavailable(e.to_string()),
            TeamError::Db(_)
            | TeamError::Migrate(_)
            | TeamError::Local(_)
            | TeamError::Audit(_)
            | TeamError::Pins(_) => Self::internal(e),
        }
    }
}

#[cfg(test)]
#[path = "team_tests.rs"]
mod tests;
