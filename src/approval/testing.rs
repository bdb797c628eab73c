//! Test support for the queue and remembered-rule tests: an `Approvals`
//! on a temp database with a manual clock, and calls that ask it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::*;
use crate::audit::AuditLog;
use crate::cancel::Cancel;
use crate::context::Caller;
use crate::events::{Event, EventBus};
use crate::policy::{Assessment, Verdict};
use crate::tool::Risk;

pub(super) const T0: i64 = 1_800_000_000_000;

pub(super) struct Fixture {
    pub(super) _dir: tempfile::TempDir,
    pub(super) db: std::path::PathBuf,
    pub(super) approvals: Approvals,
    pub(super) events: broadcast::Receiver<Event>,
    pub(super) clock: Arc<ManualClock>,
}

pub(super) async fn open_at(
    db: &std::path::Path,
    clock: Arc<ManualClock>,
    alive: bool,
) -> Approvals {
    let audit = AuditLog::open(db).await.unwrap();
    let opts = ApprovalOptions {
        clock,
        liveness: Arc::new(move |c: &CallerInfo| alive && c.pid == Some(1)),
    };
    Approvals::open(&audit, EventBus::new(), opts)
        .await
        .unwrap()
}

pub(super) async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    let clock = ManualClock::at(T0);
    let approvals = open_at(&db, clock.clone(), true).await;
    let events = approvals.subscribe();
    Fixture {
        _dir: dir,
        db,
        approvals,
        events,
        clock,
    }
}

pub(super) fn assessment(timeout: Duration) -> Assessment {
    Assessment {
        verdict: Verdict::Ask,
        risk: Risk::Critical,
        rule: "default:shell-rm-recursive".into(),
        reason: "recursive or forced delete".into(),
        timeout,
    }
}

pub(super) fn caller(pid: i32) -> Caller {
    Caller {
        pid: Some(pid),
        uid: Some(1000),
        client_name: Some("claude".into()),
        ..Caller::via("socket")
    }
}

/// Starts a call asking a person; returns its task.
pub(super) fn ask(
    a: &Approvals,
    tool: &str,
    args: Value,
    timeout: Duration,
) -> JoinHandle<Resolution> {
    let a = a.clone();
    let tool = tool.to_owned();
    tokio::spawn(async move {
        let assessment = assessment(timeout);
        let c = caller(1);
        a.ask(Ask {
            call_id: 7,
            tool: &tool,
            args: &args,
            shown_args: args.clone(),
            preview: crate::preview::preview(None, &args),
            policy_version: 1,
            assessment: &assessment,
            caller: &c,
            session: "s1",
            cancel: None,
        })
        .await
        .unwrap()
    })
}

/// Starts a call asking a person that `cancel` ends the way the engine
/// ends a cancelled call: its future is dropped once the token fires.
/// The task yields `None` if it was cancelled.
pub(super) fn cancellable_ask(a: &Approvals, cancel: &Cancel) -> JoinHandle<Option<Resolution>> {
    let (a, cancel) = (a.clone(), cancel.clone());
    tokio::spawn(async move {
        let assessment = assessment(Duration::from_secs(120));
        let (c, args) = (caller(1), json!({"command": "touch x"}));
        let asking = a.ask(Ask {
            call_id: 8,
            tool: "sh",
            args: &args,
            shown_args: args.clone(),
            preview: crate::preview::preview(None, &args),
            policy_version: 1,
            assessment: &assessment,
            caller: &c,
            session: "s1",
            cancel: Some(&cancel),
        });
        tokio::select! {
            biased;
            r = asking => Some(r.unwrap()),
            _ = cancel.cancelled() => None,
        }
    })
}

/// The id of the next request announced on the bus.
pub(super) async fn next_request(rx: &mut broadcast::Receiver<Event>) -> i64 {
    loop {
        if let Event::ApprovalRequested { id, .. } = rx.recv().await.unwrap() {
            return id;
        }
    }
}

pub(super) async fn next_decided(rx: &mut broadcast::Receiver<Event>) -> (i64, ApprovalStatus) {
    loop {
        if let Event::ApprovalDecided { id, status, .. } = rx.recv().await.unwrap() {
            return (id, status);
        }
    }
}

pub(super) const MINUTE: Duration = Duration::from_secs(60);
