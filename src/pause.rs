//! The meeting point of a pipeline paused at execution and the agent that
//! runs the tool itself: gate mode's `toolgate/gate` + `toolgate/report`
//! ([`crate::mcp`]) and a coding agent's before- and after-hook
//! ([`crate::hooks`]). The runner of such a tool takes both halves once:
//! it hands the cast arguments out through `allowed` and waits on
//! `report` for how the agent's run ended.
//!
//! Each user finds its ticket through a task-local of its own, so a
//! gate's ticket can never be taken by a hooked call's runner or the other
//! way round.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::CallError;
use crate::tool::ToolResult;

/// How the agent's run of the tool ended.
pub(crate) type Report = Result<ToolResult, CallError>;

/// The runner's halves, taken once.
#[derive(Debug)]
pub(crate) struct Ticket {
    halves: Mutex<Option<(oneshot::Sender<Value>, oneshot::Receiver<Report>)>>,
}

/// The halves the agent's side holds.
#[derive(Debug)]
pub(crate) struct Ends {
    /// Resolves with the arguments when the call may run.
    pub allowed: oneshot::Receiver<Value>,
    /// Takes the report of the agent's run.
    pub report: oneshot::Sender<Report>,
}

impl Ticket {
    /// A ticket and the ends that meet it.
    pub(crate) fn new() -> (Arc<Self>, Ends) {
        let (allowed_tx, allowed) = oneshot::channel();
        let (report, report_rx) = oneshot::channel();
        let ticket = Arc::new(Self {
            halves: Mutex::new(Some((allowed_tx, report_rx))),
        });
        (ticket, Ends { allowed, report })
    }

    /// The runner's halves; `None` once taken (a ticket serves one run).
    pub(crate) fn take(&self) -> Option<(oneshot::Sender<Value>, oneshot::Receiver<Report>)> {
        self.halves
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_halves_meet_once() {
        let (ticket, ends) = Ticket::new();
        let (allowed, report) = ticket.take().expect("first take");
        assert!(ticket.take().is_none(), "a ticket serves one run");
        allowed.send(Value::Bool(true)).unwrap();
        assert_eq!(ends.allowed.await.unwrap(), Value::Bool(true));
        ends.report.send(Ok(ToolResult::text("done"))).unwrap();
        assert_eq!(report.await.unwrap().unwrap(), ToolResult::text("done"));
    }
}
