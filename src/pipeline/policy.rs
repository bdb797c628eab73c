//! Stage 8: policy → risk → approval.
//!
//! Decides allow / deny / ask for each call. A tool's risk is its declared
//! base risk, raised or lowered by per-tool configuration; calls at or above
//! `ask_at` need a person. Until a person can be asked (the approval queue),
//! `ask` answers a clear "needs approval" refusal: default deny, never a
//! silent allow.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::{Call, CallResult, Next, Stage};
use crate::error::CallError;
use crate::events::StageName;
use crate::tool::{Risk, ToolDef};

/// A policy verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run without asking.
    Allow,
    /// Never run.
    Deny,
    /// Run only if a person approves.
    Ask,
}

/// Policy settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Calls whose risk is at or above this need approval. Default `High`:
    /// like the seed's "default" preset, reading and editing files passes
    /// while shell and code execution (and anything marked high) is asked.
    pub ask_at: Risk,
    /// Per-tool verdicts that override the risk rule.
    pub per_tool: HashMap<String, Verdict>,
    /// Per-tool risk overrides (a config may know a tool is dangerous).
    pub risk: HashMap<String, Risk>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            ask_at: Risk::High,
            per_tool: HashMap::new(),
            risk: HashMap::new(),
        }
    }
}

/// A decision and the reason a person can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// The effective risk.
    pub risk: Risk,
    /// Which rule decided, in words.
    pub reason: String,
}

impl PolicyConfig {
    /// Decides for `tool`.
    pub fn decide(&self, tool: &ToolDef) -> Decision {
        let name = tool.name.as_str();
        let risk = self.risk.get(name).copied().unwrap_or(tool.risk);
        if let Some(v) = self.per_tool.get(name) {
            return Decision {
                verdict: *v,
                risk,
                reason: format!("tools.{name}.policy = {}", verdict_str(*v)),
            };
        }
        if risk >= self.ask_at {
            Decision {
                verdict: Verdict::Ask,
                risk,
                reason: format!(
                    "risk {} is at or above policy.ask_at ({})",
                    risk_str(risk),
                    risk_str(self.ask_at)
                ),
            }
        } else {
            Decision {
                verdict: Verdict::Allow,
                risk,
                reason: format!("risk {} is below policy.ask_at", risk_str(risk)),
            }
        }
    }
}

fn verdict_str(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "allow",
        Verdict::Deny => "deny",
        Verdict::Ask => "ask",
    }
}

fn risk_str(r: Risk) -> &'static str {
    match r {
        Risk::Low => "low",
        Risk::Medium => "medium",
        Risk::High => "high",
        Risk::Critical => "critical",
    }
}

/// The policy stage.
pub struct Policy {
    config: Arc<PolicyConfig>,
}

impl Policy {
    /// A stage deciding by `config`.
    pub fn new(config: Arc<PolicyConfig>) -> Self {
        Self { config }
    }
}

impl Stage for Policy {
    fn name(&self) -> StageName {
        StageName::Policy
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let d = self.config.decide(&call.tool.def);
            call.note(
                StageName::Policy,
                format!("{}: {}", verdict_str(d.verdict), d.reason),
            );
            match d.verdict {
                Verdict::Allow => next.run(call).await,
                Verdict::Deny => Err(CallError::PolicyDenied { reason: d.reason }),
                Verdict::Ask => Err(CallError::NeedsApproval {
                    tool: call.tool_name().to_owned(),
                    reason: d.reason,
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::pipeline::testing::{Script, call_of, def, run_stage};
    use serde_json::json;

    fn stage(cfg: PolicyConfig) -> Policy {
        Policy::new(Arc::new(cfg))
    }

    #[tokio::test]
    async fn low_risk_passes_and_critical_needs_approval() {
        let script = Script::new(vec![]);
        let mut call = call_of(def("t", json!({"type": "object"})), json!({}));
        assert!(
            run_stage(&stage(PolicyConfig::default()), &mut call, &script)
                .await
                .is_ok()
        );
        let mut call = call_of(
            def("sh", json!({"type": "object"})).with_risk(Risk::Critical),
            json!({}),
        );
        let e = run_stage(&stage(PolicyConfig::default()), &mut call, &script)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NeedsApproval);
        assert!(
            e.to_string()
                .contains("risk critical is at or above policy.ask_at (high)"),
            "{e}"
        );
        assert_eq!(script.calls(), 1, "the refused call never ran");
    }

    #[tokio::test]
    async fn per_tool_verdicts_and_risks_override() {
        let script = Script::new(vec![]);
        let mut cfg = PolicyConfig::default();
        cfg.per_tool.insert("sh".into(), Verdict::Allow);
        cfg.per_tool.insert("t".into(), Verdict::Deny);
        cfg.risk.insert("w".into(), Risk::High);
        let s = stage(cfg);
        let mut call = call_of(
            def("sh", json!({"type": "object"})).with_risk(Risk::Critical),
            json!({}),
        );
        assert!(run_stage(&s, &mut call, &script).await.is_ok());
        let mut call = call_of(def("t", json!({"type": "object"})), json!({}));
        let e = run_stage(&s, &mut call, &script).await.unwrap_err();
        assert_eq!(e.to_string(), "denied by policy: tools.t.policy = deny");
        let mut call = call_of(def("w", json!({"type": "object"})), json!({}));
        assert_eq!(
            run_stage(&s, &mut call, &script).await.unwrap_err().kind(),
            ErrorKind::NeedsApproval
        );
        assert_eq!(script.calls(), 1);
    }
}
