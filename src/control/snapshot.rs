//! [`Snapshot`]: the whole console state, valid at a stream position.
//!
//! How a client stays consistent: it loads a snapshot, subscribes with
//! `after = snapshot.seq`, and applies every event with a greater `seq`.
//!
//! Why that is safe although the snapshot is read while the engine runs:
//! the position is taken first ([`Sequencer::mark`]), then the parts are
//! read. Every event numbered at or before the mark was emitted before the
//! reads began, and the engine changes its state before it announces the
//! change, so the snapshot contains the effect of every event up to the
//! mark: nothing is missed. An event numbered after the mark may already
//! be reflected in what was read (its change happened between the mark
//! and the read), so the client sees it a second time. Every event the
//! console applies is therefore applied idempotently, as an upsert or a
//! removal keyed by its id: an approval by request id, a call by call id,
//! a breaker by tool, a server by name, a tool by name. Counters the
//! client would add to (`calls_total`, `calls_failed`) are not read from
//! the engine but counted by the sequencer as it numbers events, and read
//! under the same lock as the mark, so they are exact at `seq` and each
//! later `call_finished` adds one; the others are lengths of the lists and
//! are recomputed from them.
//!
//! [`Sequencer::mark`]: super::stream::Sequencer::mark

use super::types::{CallSummary, Counters, PolicySummary, Snapshot};
use super::{Control, ControlError};
use crate::approval::{ApprovalRequest, ApprovalStatus};
use crate::wire::BreakerState;

/// Closed approval requests in a snapshot.
const RECENT_APPROVALS: usize = 50;

/// Calls in a snapshot.
const RECENT_CALLS: u32 = 500;

impl Control {
    /// The console's state at the current stream position.
    ///
    /// # Errors
    /// A store failed.
    pub async fn snapshot(&self) -> Result<Snapshot, ControlError> {
        let mark = self.inner.seq.mark();
        let (pending, recent_approvals) = self.approvals_now().await?;
        let breakers = self.breakers();
        let servers = self.servers();
        let quarantined = self.quarantined().await?;
        let tools = self.tools().await?;
        let recent_calls = self.recent_calls().await?;
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let counters = Counters {
            pending: count(pending.len()),
            open_breakers: count(
                breakers
                    .iter()
                    .filter(|b| b.state != BreakerState::Closed)
                    .count(),
            ),
            quarantined: count(quarantined.len()),
            servers_down: count(servers.iter().filter(|s| s.state.is_down()).count()),
            ..mark.counters()
        };
        Ok(Snapshot {
            seq: mark.seq,
            engine: self.inner.info.clone(),
            barrier: self.engine().barrier().status().clone(),
            counters,
            pending,
            recent_approvals,
            breakers,
            spark: self.spark_shape(),
            breaker_defaults: self.breaker_defaults(),
            servers,
            plugins: self.engine().plugins().to_vec(),
            quarantined,
            tools,
            clients: self.clients(),
            policy: self.policy_summary(),
            recent_calls,
            in_flight: mark.in_flight,
            team: self.team_view(),
        })
    }

    /// Pending requests (soonest expiry first) and the last closed ones.
    async fn approvals_now(
        &self,
    ) -> Result<(Vec<ApprovalRequest>, Vec<ApprovalRequest>), ControlError> {
        let Some(approvals) = self.engine().approvals() else {
            return Ok((Vec::new(), Vec::new()));
        };
        let mut pending = approvals.pending();
        pending.sort_by_key(|r| (r.expires_ms, r.id));
        let ask = i64::try_from(RECENT_APPROVALS + pending.len()).unwrap_or(i64::MAX);
        let mut recent = approvals.recent(ask).await?;
        recent.retain(|r| r.status != ApprovalStatus::Pending);
        recent.truncate(RECENT_APPROVALS);
        Ok((pending, recent))
    }

    async fn recent_calls(&self) -> Result<Vec<CallSummary>, ControlError> {
        if self.engine().audit().is_none() {
            return Ok(Vec::new());
        }
        let page = self
            .audit_page(&super::types::AuditQuery {
                limit: Some(RECENT_CALLS),
                ..Default::default()
            })
            .await?;
        Ok(page.rows)
    }

    /// The policy at a glance.
    pub fn policy_summary(&self) -> PolicySummary {
        let policy = self.engine().policy().load();
        let filter = self.engine().filter();
        let remembered = self.engine().approvals().map_or(0, |a| a.rules().len());
        PolicySummary {
            version: policy.version,
            preset: policy.config.preset.as_str().to_owned(),
            allowed_tools: filter.allow_patterns().map(<[String]>::to_vec),
            denied_tools: filter.deny_patterns().to_vec(),
            rules_count: u64::try_from(policy.config.rules.len()).unwrap_or(u64::MAX),
            remembered_count: u64::try_from(remembered).unwrap_or(u64::MAX),
            config_problem: self.engine().config_problem().map(|p| (*p).clone()),
            restart_note: self.engine().restart_note().map(|p| (*p).clone()),
        }
    }
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
