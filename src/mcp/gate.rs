//! Gate mode: governing tools that run inside the agent.
//!
//! An agent (e.g. a PraisonAI agent's own Python functions) registers its
//! tools with `toolgate/register`; they join the registry as
//! `agent:<id>` and leave when the connection closes. The id is the
//! connection's while it lives ([`crate::agent_ids`]), and names the
//! caller of the connection's calls. Before running one,
//! the agent calls `toolgate/gate`: toolgate runs the real pipeline, and when
//! the call reaches the execution point, the pipeline *pauses* and the agent
//! gets `allow` with the cast arguments (or `deny` with the reason if a stage
//! refused). The agent runs the tool and sends `toolgate/report`; the paused
//! pipeline resumes with that outcome (breaker bookkeeping, truncation,
//! trust-wrapping, AFTER hooks, the audit row) and the report's reply
//! carries the final text for the model. Because it is the same pipeline
//! run, one audit row covers gate + report.
//!
//! The pause is a task-local ticket: the agent tool's runner finds it only
//! inside the gate's own task, so a plain `tools/call` of an agent tool
//! cannot be mistaken for a gated one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::convert;
use super::jsonrpc::INVALID_PARAMS;
use super::jsonrpc::Refused;
use super::server::{Conn, params_of};
use crate::cancel::Cancel;
use crate::context::CallContext;
use crate::engine::{CallReply, Engine};
use crate::error::CallError;
use crate::pause::{Ends, Ticket};
use crate::tool::{Annotations, JsonObject, Risk, Source, Tool, ToolDef, ToolName, ToolResult};

tokio::task_local! {
    static TICKET: Arc<Ticket>;
}

/// Gates waiting for their report, by gate id.
#[derive(Debug, Default)]
pub(super) struct PendingGates(Mutex<HashMap<String, Pending>>);

#[derive(Debug)]
struct Pending {
    report: oneshot::Sender<Result<ToolResult, CallError>>,
    finish: JoinHandle<CallReply>,
}

impl PendingGates {
    /// Waits for the pipeline of every gate still waiting for its report;
    /// call it once the connection's token has fired, so they end as
    /// `cancelled` and are audited. The report channels stay open until
    /// then: closing them first would end the pipelines as `connection`
    /// failures instead.
    pub(super) async fn finish_all(&self) {
        let pending: Vec<Pending> = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, p)| p)
            .collect();
        for p in pending {
            let Pending { report, finish } = p;
            let _ = finish.await;
            drop(report);
        }
    }

    fn insert(&self, id: String, p: Pending) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, p);
    }

    fn take(&self, id: &str) -> Option<Pending> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }
}

/// The runner of an agent's tool: hands the call back to the agent.
struct AgentTool {
    agent: String,
}

impl AgentTool {
    fn outside_gate(&self) -> CallError {
        CallError::caller_error(format!(
            "this tool runs inside agent `{}`: the agent calls toolgate/gate before running it and \
             toolgate/report after; it cannot be called through tools/call",
            self.agent
        ))
    }
}

impl Tool for AgentTool {
    /// Refused with validation, before policy: a `tools/call` of an agent's
    /// tool can never run, so no person is asked about it.
    fn check(&self, _args: &Value) -> Result<(), CallError> {
        match TICKET.try_with(|_| ()) {
            Ok(()) => Ok(()),
            Err(_) => Err(self.outside_gate()),
        }
    }

    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, CallError>> {
        let _ = ctx;
        Box::pin(async move {
            let Ok(ticket) = TICKET.try_with(Arc::clone) else {
                return Err(self.outside_gate());
            };
            let Some((allowed, report)) = ticket.take() else {
                return Err(CallError::internal("gate ticket used twice"));
            };
            if allowed.send(args).is_err() {
                return Err(CallError::Connection {
                    message: "the agent stopped waiting for its gate".into(),
                });
            }
            report.await.unwrap_or_else(|_| {
                Err(CallError::Connection {
                    message: "the agent disconnected before reporting the outcome".into(),
                })
            })
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RegisterParams {
    agent_id: Option<String>,
    tools: Vec<AgentToolSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AgentToolSpec {
    name: String,
    #[serde(default)]
    description: String,
    input_schema: JsonObject,
    #[serde(default)]
    risk: Risk,
    #[serde(default)]
    annotations: Annotations,
}

/// `toolgate/register`. The first registration claims the agent id for
/// this connection (see [`crate::agent_ids`]); later ones add or replace
/// tools under the same id. An id another connection holds, or a second id
/// on this connection, is refused.
pub(super) fn register(
    engine: &Engine,
    conn: &Conn,
    params: Option<Value>,
) -> Result<Value, Refused> {
    let p: RegisterParams = params_of(params)?;
    let session = conn.session();
    let wanted = p.agent_id.unwrap_or_else(|| session.id.to_string());
    crate::agent_ids::check_id(&wanted).map_err(|e| (INVALID_PARAMS, e))?;
    let mut held = conn.agent.lock().unwrap_or_else(PoisonError::into_inner);
    let claim = match &mut *held {
        Some(claim) if claim.id() == wanted => claim,
        Some(claim) => {
            return Err((
                INVALID_PARAMS,
                format!(
                    "this connection is agent `{}` already; one connection is one agent, so register \
                     more tools under `{}`, or open another connection for `{wanted}`",
                    claim.id(),
                    claim.id()
                ),
            ));
        }
        slot @ None => {
            let claim = engine
                .agent_ids()
                .claim(&wanted, &session.caller.to_string())
                .map_err(|e| (INVALID_PARAMS, e.to_string()))?;
            conn.set_agent(claim.id());
            slot.insert(claim)
        }
    };
    let source = claim.source();
    let mut names = Vec::with_capacity(p.tools.len());
    for t in p.tools {
        let name = ToolName::new(&t.name).map_err(|e| (INVALID_PARAMS, e.to_string()))?;
        if crate::search::bridge::is_bridge(name.as_str()) {
            return Err((
                INVALID_PARAMS,
                format!(
                    "tool name `{name}` is reserved for toolgate's tool search; register it under another name"
                ),
            ));
        }
        let def = ToolDef::new(name.clone(), t.description, t.input_schema)
            .with_source(source.clone())
            .with_trust(crate::tool::Trust::Trusted)
            .with_risk(t.risk)
            .with_annotations(t.annotations);
        let runner: Arc<dyn Tool> = Arc::new(AgentTool {
            agent: claim.id().to_owned(),
        });
        engine
            .registry()
            .upsert(def, runner)
            .map_err(|e| (INVALID_PARAMS, e.to_string()))?;
        names.push(name.to_string());
    }
    Ok(json!({"agentId": claim.id(), "registered": names}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GateParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

/// `toolgate/gate`. The paused pipeline belongs to the gate request's
/// `cancel`, which the connection's token fires too: a gate whose agent
/// leaves before reporting ends as `cancelled`.
pub(super) async fn gate(
    engine: &Engine,
    conn: &Arc<Conn>,
    params: Option<Value>,
    cancel: &Cancel,
) -> Result<Value, Refused> {
    let p: GateParams = params_of(params)?;
    let owner = engine
        .registry()
        .snapshot()
        .get(&p.name)
        .map(|t| t.def.source.clone());
    let mine: Option<Arc<str>> = conn
        .agent
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|c| c.id().into());
    match owner {
        Some(Source::Agent(a)) if mine.as_deref() == Some(&*a) => {}
        Some(Source::Agent(a)) => {
            let holder = engine
                .agent_ids()
                .holder(&a)
                .map_or_else(String::new, |h| format!(" ({h})"));
            return Err((
                INVALID_PARAMS,
                format!(
                    "`{}` belongs to agent `{a}`, which another connection holds{holder}; only the \
                     connection that registered an agent's tools may gate them",
                    p.name
                ),
            ));
        }
        _ => {
            return Err((
                INVALID_PARAMS,
                format!(
                    "`{}` is not a tool this connection registered; register it with toolgate/register, or use tools/call",
                    p.name
                ),
            ));
        }
    }
    let (
        ticket,
        Ends {
            allowed: allowed_rx,
            report: report_tx,
        },
    ) = Ticket::new();
    let (engine, session, cancel) = (engine.clone(), conn.session(), cancel.clone());
    let args = Value::Object(p.arguments.unwrap_or_default());
    let mut finish = tokio::spawn(TICKET.scope(ticket, async move {
        engine
            .call_cancellable(&session, &p.name, args, &cancel)
            .await
    }));
    tokio::select! {
        Ok(args) = allowed_rx => {
            let id = next_gate_id();
            conn.gates.insert(id.clone(), Pending { report: report_tx, finish });
            Ok(json!({"decision": "allow", "gateId": id, "arguments": args}))
        }
        done = &mut finish => {
            let reply = done.map_err(|e| (super::jsonrpc::INTERNAL_ERROR, e.to_string()))?;
            Ok(deny(&reply))
        }
    }
}

fn deny(reply: &CallReply) -> Value {
    match &reply.result {
        Err(e) => {
            json!({"decision": "deny", "callId": reply.call_id, "error": {"kind": e.kind(), "message": e.to_string()}})
        }
        // Unreachable for agent tools (they only finish through a report).
        Ok(_) => {
            json!({"decision": "deny", "callId": reply.call_id, "error": {"kind": "internal", "message": "call finished without a report"}})
        }
    }
}

fn next_gate_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "g{}-{:08x}",
        NEXT.fetch_add(1, Ordering::Relaxed),
        rand::random::<u32>()
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReportParams {
    gate_id: String,
    result: Option<ReportedResult>,
    error: Option<ReportedError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReportedResult {
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    is_error: bool,
    /// The tool's structured output, passed on like an upstream server's.
    #[serde(default)]
    structured_content: Option<JsonObject>,
}

#[derive(Deserialize)]
struct ReportedError {
    message: String,
    #[serde(default)]
    kind: Option<String>,
}

/// `toolgate/report`.
pub(super) async fn report(conn: &Conn, params: Option<Value>) -> Result<Value, Refused> {
    let p: ReportParams = params_of(params)?;
    let outcome = match (p.result, p.error) {
        (Some(r), None) => Ok(ToolResult {
            content: convert::content_from_mcp(&r.content),
            is_error: r.is_error,
            structured_content: r.structured_content,
            ..ToolResult::default()
        }),
        (None, Some(e)) => Err(reported_error(e)),
        _ => {
            return Err((
                INVALID_PARAMS,
                "give exactly one of `result` or `error`".into(),
            ));
        }
    };
    let Some(pending) = conn.gates.take(&p.gate_id) else {
        return Err((
            INVALID_PARAMS,
            format!(
                "no gate `{}` is waiting on this connection (already reported, or timed out)",
                p.gate_id
            ),
        ));
    };
    // If the pipeline already gave up (timeout), the send fails and the
    // reply below says so.
    let _ = pending.report.send(outcome);
    let reply = pending
        .finish
        .await
        .map_err(|e| (super::jsonrpc::INTERNAL_ERROR, e.to_string()))?;
    Ok(convert::call_result(reply.call_id, &reply.result))
}

/// The agent's error, classified by the class it names (never by words).
/// `cancelled` is the agent's own cancellation of a call it was running
/// (an asyncio task cancelled mid-tool): audited as a client cancel, not
/// as a tool failure the breaker counts.
fn reported_error(e: ReportedError) -> CallError {
    let message = e.message;
    match e.kind.as_deref() {
        Some("cancelled") => CallError::Cancelled {
            reason: crate::cancel::CancelReason::ClientCancelled,
        },
        Some("timeout") => CallError::Timeout {
            after: std::time::Duration::ZERO,
        },
        Some("rate_limit") => CallError::RateLimited { retry_after: None },
        Some("connection") => CallError::Connection { message },
        Some("upstream_5xx") => CallError::Upstream {
            status: 500,
            message,
        },
        _ => CallError::tool_failed(message),
    }
}
