//! [`EngineConsole`]: the console routes the engine answers today, straight
//! from its parts (approval queue, remembered rules, breakers, pins,
//! registry), until the control service is wired in.
//!
//! Interim by design: the lead replaces it with `impl ConsoleApi for
//! Control` when `src/control/` is merged; the transport and its tests do
//! not change. Snapshot, events, call details, audit and the policy test
//! answer `unavailable` (the trait's defaults) here.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;

use super::api::{Actor, ApiResult, ConsoleApi, DecisionBody};
use super::error::{ApiError, Code};
use crate::Engine;
use crate::approval::{ApprovalError, Approvals, Decision};
use crate::upstream::{PinError, Upstreams};

/// The console over the engine's own parts; see the module doc.
#[derive(Debug, Clone)]
pub struct EngineConsole {
    engine: Engine,
    upstreams: Option<Upstreams>,
}

impl EngineConsole {
    /// The console of `engine` (and its upstream servers, if any).
    pub fn new(engine: Engine, upstreams: Option<Upstreams>) -> Self {
        Self { engine, upstreams }
    }

    fn approvals(&self) -> ApiResult<&Approvals> {
        self.engine.approvals().ok_or_else(|| {
            ApiError::new(
                Code::Unavailable,
                "this engine runs without an approval queue",
            )
        })
    }

    fn upstreams(&self) -> ApiResult<&Upstreams> {
        self.upstreams.as_ref().ok_or_else(|| {
            ApiError::new(Code::Unavailable, "this engine manages no upstream servers")
        })
    }

    async fn decide(
        &self,
        id: i64,
        mut d: Decision,
        body: DecisionBody,
        by: Actor,
    ) -> ApiResult<impl Serialize + Send> {
        if let Some(always) = body.always {
            d = d.always(always.scope, always.ttl_s.map(Duration::from_secs));
        }
        let decided = self.approvals()?.decide(id, d.by(by.to_string())).await;
        decided.map_err(approval_error)
    }
}

fn approval_error(e: ApprovalError) -> ApiError {
    match e {
        ApprovalError::NotFound { .. } | ApprovalError::RuleNotFound { .. } => ApiError::new(
            Code::NotFound,
            format!("{e}; reload to see the current list"),
        ),
        ApprovalError::AlreadyDecided { .. } => {
            ApiError::new(Code::Stale, format!("{e}; nothing was changed"))
        }
        ApprovalError::Scope(_) => ApiError::invalid("always.scope", e.to_string()),
        other => ApiError::new(Code::Internal, other.to_string()),
    }
}

fn pin_error(e: PinError) -> ApiError {
    match e {
        PinError::NotFound(_) => ApiError::new(Code::NotFound, e.to_string()),
        PinError::NothingPending(_) => ApiError::new(Code::Stale, e.to_string()),
        other => ApiError::new(Code::Internal, other.to_string()),
    }
}

/// `{lines: [{n, text}], next}` of `GET /api/servers/{name}/stderr`.
#[derive(Debug, Serialize)]
struct StderrPage {
    lines: Vec<StderrLine>,
    next: u64,
}

#[derive(Debug, Serialize)]
struct StderrLine {
    n: u64,
    text: String,
}

impl ConsoleApi for EngineConsole {
    type AuditQuery = HashMap<String, String>;

    async fn approval(&self, id: i64) -> ApiResult<impl Serialize + Send> {
        let request = self.approvals()?.get(id).await.map_err(approval_error)?;
        Ok(serde_json::json!({"request": request, "caller_recent": []}))
    }

    async fn approve(
        &self,
        id: i64,
        body: DecisionBody,
        by: Actor,
    ) -> ApiResult<impl Serialize + Send> {
        if body.reason.is_some() {
            return Err(ApiError::invalid(
                "reason",
                "a reason goes with a denial, not an approval",
            ));
        }
        self.decide(id, Decision::approve(), body, by).await
    }

    async fn deny(
        &self,
        id: i64,
        body: DecisionBody,
        by: Actor,
    ) -> ApiResult<impl Serialize + Send> {
        let d = Decision::deny(body.reason.clone());
        self.decide(id, d, body, by).await
    }

    async fn rules(&self) -> ApiResult<impl Serialize + Send> {
        Ok(self.approvals()?.rules())
    }

    async fn revoke_rule(&self, id: i64) -> ApiResult<impl Serialize + Send> {
        self.approvals()?
            .revoke_rule(id)
            .await
            .map_err(approval_error)
    }

    async fn reset_breaker(&self, tool: String) -> ApiResult<impl Serialize + Send> {
        if self.engine.registry().resolve(&tool).is_err() {
            return Err(ApiError::new(
                Code::NotFound,
                format!("no tool named `{tool}`"),
            ));
        }
        Ok(serde_json::json!({"reset": self.engine.breaker().reset(&tool)}))
    }

    async fn server_stderr(&self, name: String, after: u64) -> ApiResult<impl Serialize + Send> {
        let lines = self.upstreams()?.stderr(&name).ok_or_else(|| {
            ApiError::new(Code::NotFound, format!("no upstream server named `{name}`"))
        })?;
        let lines: Vec<StderrLine> = (1u64..)
            .zip(lines)
            .filter(|(n, _)| *n > after)
            .map(|(n, text)| StderrLine { n, text })
            .collect();
        let next = lines.last().map_or(after, |l| l.n);
        Ok(StderrPage { lines, next })
    }

    async fn approve_pin(&self, tool: String) -> ApiResult<impl Serialize + Send> {
        self.upstreams()?.approve(&tool).await.map_err(pin_error)
    }

    async fn tool(&self, name: String) -> ApiResult<impl Serialize + Send> {
        let tool = self
            .engine
            .registry()
            .resolve(&name)
            .map_err(|e| ApiError::new(Code::NotFound, e.to_string()))?;
        Ok(tool.def.clone())
    }
}
