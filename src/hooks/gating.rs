//! The engine's side of the hooks: a before-hook runs the agent's call
//! through the same pipeline as any call, paused at execution; the
//! after-hook, a separate process, finds the paused call again and
//! finishes it with the tool's outcome.
//!
//! Between the two, the call lives here, keyed by agent, session and the
//! call's key (the agent's tool-use id, or what both hooks see), for at
//! most [`super::prepare::REPORT_WINDOW`]: an agent that never reports (its own prompt
//! refused the call, it was stopped) leaves a row that says so, not a
//! call that waits forever.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::HookAgent;
use super::call::{Answer, Decision, Ended, HookCall};
use super::mapping;
use super::prepare::PreparedTools;
use super::runner::Ticket;
use crate::cancel::{Cancel, CancelReason};
use crate::context::Session;
use crate::engine::{CallReply, Engine};
use crate::error::CallError;
use crate::tool::{Content, ToolResult};

/// Most hooked calls waiting for their after-hook at once; past it the
/// finished ones are swept out, and a new call is answered `ask`.
const MAX_PENDING: usize = 4096;

type Key = (HookAgent, String, String);

/// One allowed call waiting for its after-hook.
struct Pending {
    report: tokio::sync::oneshot::Sender<Result<ToolResult, CallError>>,
    finish: JoinHandle<CallReply>,
    /// Fires the call's token: shutdown ends waiting calls as cancelled.
    cancel: Cancel,
}

/// The engine's hooked calls: their prepared tools and the allowed calls
/// waiting for their after-hook.
#[derive(Default)]
pub struct HookGates {
    prepared: PreparedTools,
    pending: Mutex<HashMap<Key, VecDeque<Pending>>>,
}

impl std::fmt::Debug for HookGates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookGates").finish_non_exhaustive()
    }
}

impl HookGates {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<Key, VecDeque<Pending>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The definition of the agent tool shown as `shown`, if one of its
    /// calls was gated (see [`PreparedTools::def_shown_as`]).
    pub fn def_shown_as(&self, shown: &str) -> Option<crate::tool::ToolDef> {
        self.prepared.def_shown_as(shown)
    }

    /// How many allowed calls wait for their after-hook.
    pub fn waiting(&self) -> usize {
        self.pending().values().map(VecDeque::len).sum()
    }

    /// Keeps an allowed call until its after-hook; false when too many
    /// wait already.
    fn keep(&self, key: Key, p: Pending) -> Result<(), Pending> {
        let mut map = self.pending();
        if map.values().map(VecDeque::len).sum::<usize>() >= MAX_PENDING {
            map.retain(|_, q| {
                q.retain(|p| !p.finish.is_finished());
                !q.is_empty()
            });
            if map.values().map(VecDeque::len).sum::<usize>() >= MAX_PENDING {
                return Err(p);
            }
        }
        map.entry(key).or_default().push_back(p);
        Ok(())
    }

    /// The oldest allowed call under `key` still waiting.
    fn take(&self, key: &Key) -> Option<Pending> {
        let mut map = self.pending();
        let queue = map.get_mut(key)?;
        let mut found = None;
        while let Some(p) = queue.pop_front() {
            if !p.finish.is_finished() {
                found = Some(p);
                break;
            }
        }
        if queue.is_empty() {
            map.remove(key);
        }
        found
    }

    /// Ends every call still waiting for its after-hook as cancelled with
    /// `reason` (shutdown), and waits until each is audited.
    pub async fn close(&self, reason: CancelReason) {
        let all: Vec<Pending> = self.pending().drain().flat_map(|(_, q)| q).collect();
        for p in all {
            p.cancel.cancel(reason);
            let _ = p.finish.await;
        }
    }
}

/// Answers a before-hook: runs `call` through the pipeline for `session`
/// (its caller is the hook's peer, named as the agent), paused at
/// execution. `request` is the hook's own request: if the hook goes away
/// before the decision, the call is cancelled (its pending approval
/// closed); once allowed, the call belongs to `root` (the server's token,
/// fired at shutdown) until its after-hook comes.
pub async fn before(
    engine: &Engine,
    session: &Session,
    call: HookCall,
    request: &Cancel,
    root: &Cancel,
) -> Answer {
    let mapped = mapping::map(call.agent, &call.tool, &call.input);
    let prepared =
        match engine
            .hook_gates()
            .prepared
            .get(engine, call.agent, &call.tool, mapped.judge)
        {
            Ok(p) => p,
            Err(e) => {
                return Answer::new(
                    Decision::Ask,
                    format!("toolgate could not judge this call: {e}"),
                );
            }
        };
    let session = agent_session(session, &call);
    let own = root.child();
    let (ticket, ends) = Ticket::new();
    let (engine2, own2) = (engine.clone(), own.clone());
    let mut finish = tokio::spawn(super::runner::scope(ticket, async move {
        engine2
            .call_prepared(&session, &prepared, mapped.args, &own2)
            .await
    }));
    let mut allowed = ends.allowed;
    let decided = tokio::select! {
        Ok(_) = &mut allowed => None,
        done = &mut finish => Some(done),
        reason = request.cancelled() => {
            own.cancel(reason);
            Some((&mut finish).await)
        }
    };
    let Some(done) = decided else {
        let key = (call.agent, call.session, call.call_key);
        let pending = Pending {
            report: ends.report,
            finish,
            cancel: own,
        };
        return match engine.hook_gates().keep(key, pending) {
            Ok(()) => Answer::new(Decision::Allow, "toolgate allowed this call"),
            Err(p) => {
                p.cancel.cancel(CancelReason::Shutdown);
                Answer::new(
                    Decision::Ask,
                    "toolgate has too many calls of this agent waiting to finish; the agent asks you instead",
                )
            }
        };
    };
    match done {
        Ok(reply) => refused(call.agent, &reply),
        Err(e) => Answer::new(
            Decision::Ask,
            format!("toolgate could not judge this call: {e}"),
        ),
    }
}

/// A call the pipeline ended before execution: why, as the agent reads it.
fn refused(agent: HookAgent, reply: &CallReply) -> Answer {
    let mut answer = match &reply.result {
        Err(CallError::NeedsApproval { .. }) => Answer::new(
            Decision::Ask,
            format!(
                "toolgate: {}; nobody can approve it in toolgate now, so {} asks you",
                error_text(reply),
                agent.display_name()
            ),
        ),
        Err(CallError::Cancelled { reason }) => Answer::new(
            Decision::Ask,
            format!("toolgate stopped judging this call ({})", reason.describe()),
        ),
        Err(e) if e.kind() == crate::error::ErrorKind::Internal => Answer::new(
            Decision::Ask,
            format!("toolgate could not judge this call: {e}"),
        ),
        Err(_) => Answer::new(
            Decision::Deny,
            format!("toolgate denied this call: {}", error_text(reply)),
        ),
        // Unreachable: a hooked call only finishes with a result through
        // its after-hook.
        Ok(_) => Answer::new(Decision::Ask, "toolgate finished this call before it ran"),
    };
    answer.call_id = Some(reply.call_id);
    answer
}

fn error_text(reply: &CallReply) -> String {
    match &reply.result {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    }
}

/// The session the agent's calls run in: the hook's connection's caller,
/// named as the agent, in a session of the agent's own session id (so the
/// loop guard and the audit log group an agent session's calls).
fn agent_session(conn: &Session, call: &HookCall) -> Session {
    let mut caller = (*conn.caller).clone();
    caller.client_name = Some(call.agent.display_name().to_owned());
    // The hook process is toolgate's binary, so the peer reads as a bridge
    // and the caller as its parent, the agent; "via bridge" would only
    // mislead the person reading the request.
    caller.bridge_pid = None;
    let id = if call.session.is_empty() {
        call.agent.id().to_owned()
    } else {
        format!("{}:{}", call.agent.id(), call.session)
    };
    Session::new(id, caller)
}

/// Answers an after-hook: finishes the allowed call it reports with the
/// tool's outcome. The answer says whether a waiting call was found.
pub async fn after(engine: &Engine, call: HookCall) -> Value {
    let key = (call.agent, call.session, call.call_key);
    let Some(pending) = engine.hook_gates().take(&key) else {
        return json!({
            "recorded": false,
            "reason": "no call allowed by toolgate waits for this report (toolgate did not gate it, \
                       was restarted since, or the call was reported already)",
        });
    };
    let outcome = match call.ended {
        Some(Ended::Ok { text, is_error }) => Ok(ToolResult {
            content: vec![Content::text(text)],
            is_error,
            ..ToolResult::default()
        }),
        Some(Ended::Failed { message }) => Err(CallError::tool_failed(message)),
        None => Err(CallError::caller_error(
            "the agent's report said nothing about how the call ended",
        )),
    };
    // The pipeline may have given up meanwhile; its reply says so.
    let _ = pending.report.send(outcome);
    match pending.finish.await {
        Ok(reply) => json!({
            "recorded": true,
            "callId": reply.call_id,
            "ok": reply.result.is_ok(),
        }),
        Err(e) => json!({"recorded": false, "reason": e.to_string()}),
    }
}

#[cfg(test)]
#[path = "gating_tests.rs"]
mod tests;
