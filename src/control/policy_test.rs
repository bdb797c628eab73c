//! "What would happen to this call?": the Policy view's test box. It runs
//! the same checks, in the same order, as the pipeline before a call
//! would wait for a person (allowlist, remembered decisions, the live
//! policy) and changes nothing: no call, no approval request, no audit
//! row.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use super::{Control, ControlError};
use crate::approval::RuleEffect;
use crate::context::Caller;
use crate::policy::Verdict;
use crate::tool::Risk;

/// Body of the policy test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct PolicyTestInput {
    /// The tool, as agents name it.
    pub tool: String,
    /// Its arguments (an object; absent = `{}`).
    #[serde(default)]
    #[ts(optional, type = "unknown")]
    pub args: Option<Value>,
    /// The MCP client name to assume for a socket client whose program
    /// is unknown; absent = an anonymous socket client. Only profiles
    /// that restrict can match it: one that grants names `exe`, which
    /// this caller lacks.
    #[serde(default)]
    #[ts(optional)]
    pub caller: Option<String>,
}

/// What the pipeline would decide for the call, and which rule decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct PolicyTestResult {
    /// The tool tested.
    pub tool: String,
    /// Run, ask a person, or refuse.
    pub verdict: Verdict,
    /// The effective risk (from the policy; absent when the allowlist
    /// refuses the call before the policy is asked).
    pub risk: Option<Risk>,
    /// What decided: `allowlist`, `remembered rule #3`, `policy.rules[0]`,
    /// `preset:default`, ...
    pub rule: String,
    /// Why, in words.
    pub reason: String,
}

impl Control {
    /// Decides `input` as the pipeline would, changing nothing.
    ///
    /// # Errors
    /// [`ControlError::NotFound`] for an unknown tool,
    /// [`ControlError::Invalid`] for arguments that are not an object.
    pub fn policy_test(&self, input: PolicyTestInput) -> Result<PolicyTestResult, ControlError> {
        let args = input
            .args
            .unwrap_or_else(|| Value::Object(Default::default()));
        if !args.is_object() {
            return Err(ControlError::invalid(
                "args",
                "the arguments are a JSON object, as agents send them",
            ));
        }
        let engine = self.engine();
        let tool = engine
            .registry()
            .resolve(&input.tool)
            .map_err(|_| ControlError::NotFound {
                what: "tool",
                id: input.tool.clone(),
            })?;
        let answer = |verdict, risk, rule: String, reason: String| PolicyTestResult {
            tool: input.tool.clone(),
            verdict,
            risk,
            rule,
            reason,
        };
        if let Err(why) = engine.filter().permits(&input.tool) {
            return Ok(answer(
                Verdict::Deny,
                None,
                "allowlist".into(),
                format!("hidden from agents: {why}"),
            ));
        }
        let caller = Caller {
            client_name: input.caller,
            ..Caller::via("socket")
        };
        let policy = engine.policy().load();
        let assessed = policy.config.assess(&tool.def, &args, &caller);
        if assessed.verdict != Verdict::Deny
            && let Some(rule) = engine
                .approvals()
                .and_then(|a| a.remembered_preview(&input.tool, &args, &caller))
        {
            let (verdict, word) = match rule.effect {
                RuleEffect::Allow => (Verdict::Allow, "allow"),
                RuleEffect::Deny => (Verdict::Deny, "deny"),
            };
            let otherwise = match assessed.verdict {
                Verdict::Allow => "let it run",
                Verdict::Ask => "ask a person",
                Verdict::Deny => "refuse it",
            };
            return Ok(answer(
                verdict,
                Some(assessed.risk),
                format!("remembered rule #{}", rule.id),
                format!(
                    "a person chose to always {word} calls in scope `{}`; without that, the policy would {otherwise}",
                    rule.scope_text
                ),
            ));
        }
        Ok(answer(
            assessed.verdict,
            Some(assessed.risk),
            assessed.rule.clone(),
            assessed.reason.clone(),
        ))
    }
}
