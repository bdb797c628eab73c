//! Stage 8: policy → risk → approval.
//!
//! For each call, in this order:
//! 1. The live policy ([`PolicyHandle`]) assesses it: allow, ask or deny,
//!    with the rule that decided and why. A policy deny is
//!    [`CallError::PolicyDenied`]; no person is asked.
//! 2. Remembered decisions ([`Approvals::remembered`]): an "always deny"
//!    in scope refuses the call as a person's denial ([`CallError::Denied`]
//!    with the rule's reason); an "always allow" in scope lets an `ask`
//!    run without asking again.
//! 3. `ask` waits for a person through the approval queue: approve → the
//!    call runs; deny → [`CallError::Denied`] with the person's reason;
//!    timeout → [`CallError::ApprovalTimedOut`]. Without a queue (no
//!    database), `ask` is [`CallError::NeedsApproval`]: default deny, never
//!    a silent allow.
//!
//! The stage sits outside breaker and retry (see `pipeline::build`): one
//! approval covers every attempt, and a denial or timeout never reaches the
//! breaker. Every decision leaves a note (`call.note(StageName::Policy, ..)`)
//! naming the rule, for the audit log and the UI.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Call, CallResult, Enter, Next, Stage};
use crate::approval::{Approvals, Ask, Resolution, RuleEffect};
use crate::error::CallError;
use crate::events::StageName;
use crate::policy::{Assessment, PolicyHandle, Verdict, risk_str};

/// The policy stage.
pub struct Policy {
    policy: PolicyHandle,
    approvals: Option<Approvals>,
}

impl Policy {
    /// A stage deciding by the live `policy`, asking people through
    /// `approvals` (none: `ask` refuses with `NeedsApproval`).
    pub fn new(policy: PolicyHandle, approvals: Option<Approvals>) -> Self {
        Self { policy, approvals }
    }

    /// The live policy (to swap it on config reload).
    pub fn get_ref(&self) -> &PolicyHandle {
        &self.policy
    }
}

/// The policy's assessment of `call`. A call judged as another tool (an
/// agent's own tool, see [`Call::judge_as`]) gets a reason that says so
/// first: the policy's words name the tool it was judged as
/// ("Claude Code · Bash, judged as `shell_exec`, is critical risk: …").
fn assess(config: &crate::policy::PolicyConfig, call: &Call) -> Arc<Assessment> {
    let judged = call.judged_def();
    let a = config.assess(judged, &call.args, &call.ctx.caller);
    if judged.name == call.tool.def.name {
        return a;
    }
    let mut shown = (*a).clone();
    let named = format!("`{}` ", judged.name);
    shown.reason = match a.reason.strip_prefix(&named) {
        // "`shell_exec` is critical risk: …"
        Some(rest) => format!("{}, judged as `{}`, {rest}", call.tool_name(), judged.name),
        None => format!(
            "{} is judged as `{}`: {}",
            call.tool_name(),
            judged.name,
            a.reason
        ),
    };
    Arc::new(shown)
}

impl Stage for Policy {
    fn name(&self) -> StageName {
        StageName::Policy
    }

    /// Decides without waiting when it can: a deny, a remembered
    /// decision, or an allow. Only a call that needs a person wraps.
    fn enter(&self, call: &mut Call) -> Enter {
        let policy = self.policy.load();
        let a = assess(&policy.config, call);
        if a.verdict == Verdict::Deny {
            note(call, "deny", &a);
            return Enter::Refuse(CallError::PolicyDenied {
                reason: a.reason.clone(),
            });
        }
        match self.remembered(call, &a) {
            Some(Ok(())) => Enter::Pass,
            Some(Err(e)) => Enter::Refuse(e),
            None if a.verdict == Verdict::Ask => Enter::Wrap,
            None => {
                note(call, "allow", &a);
                Enter::Pass
            }
        }
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            match self.enter(call) {
                Enter::Pass => next.run(call).await,
                Enter::Refuse(e) => Err(e),
                Enter::Wrap => {
                    // Assessed again: `enter` keeps nothing for this step
                    // (assessments are cached per tool).
                    let policy = self.policy.load();
                    let a = assess(&policy.config, call);
                    self.ask(call, next, a, policy.version).await
                }
            }
        })
    }
}

impl Policy {
    /// A remembered decision for this call: `Ok` = run, `Err` = refused,
    /// `None` = no remembered rule changes anything.
    fn remembered(&self, call: &mut Call, a: &Assessment) -> Option<Result<(), CallError>> {
        let approvals = self.approvals.as_ref()?;
        let rule = approvals.remembered(call.tool_name(), &call.args, &call.ctx.caller)?;
        match rule.effect {
            RuleEffect::Deny => {
                let why = format!(
                    "always-deny rule {} ({}){}",
                    rule.label(),
                    rule.scope_text,
                    rule.reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                );
                call.note(StageName::Policy, format!("deny: {why}"));
                Some(Err(CallError::Denied { reason: Some(why) }))
            }
            RuleEffect::Allow if a.verdict == Verdict::Ask => {
                call.note(
                    StageName::Policy,
                    format!(
                        "allow: always-allow rule {} ({}) covers this call, which would ask: {}",
                        rule.label(),
                        rule.scope_text,
                        a.reason
                    ),
                );
                Some(Ok(()))
            }
            RuleEffect::Allow => None,
        }
    }

    async fn ask(
        &self,
        call: &mut Call,
        next: Next<'_>,
        a: Arc<Assessment>,
        version: u64,
    ) -> CallResult {
        let Some(approvals) = &self.approvals else {
            note(call, "ask", &a);
            return Err(CallError::NeedsApproval {
                tool: call.tool_name().to_owned(),
                reason: a.reason.clone(),
            });
        };
        note(call, "ask", &a);
        let hash = approvals.call_hash(call.tool_name(), &call.args);
        let shown_args = call.tool.schema.redact(&call.args).into_owned();
        let ask = Ask {
            call_id: call.id,
            tool: call.tool_name(),
            args: &call.args,
            preview: crate::preview::preview(Some(&call.tool.def), &shown_args),
            shown_args,
            policy_version: version,
            assessment: &a,
            caller: &call.ctx.caller,
            session: call.ctx.session.as_str(),
            cancel: call.cancel.as_ref(),
        };
        let resolution = approvals.ask(ask).await.map_err(|e| {
            CallError::internal(format!("{e}; the call needing approval was not run"))
        })?;
        match resolution {
            Resolution::Approved { by, rule_id } => {
                self.after_approval(approvals, call, &hash, version, by, rule_id)?;
                next.run(call).await
            }
            Resolution::Denied { reason } => {
                call.note(StageName::Policy, "a person denied the call");
                Err(CallError::Denied { reason })
            }
            Resolution::TimedOut { after } => {
                call.note(StageName::Policy, "nobody answered in time: denied");
                Err(CallError::ApprovalTimedOut { after })
            }
            Resolution::Expired { why } => {
                call.note(StageName::Policy, format!("request expired: {why}"));
                Err(CallError::Denied { reason: Some(why) })
            }
            Resolution::Cancelled { reason } => {
                call.note(
                    StageName::Policy,
                    format!("request cancelled: {}", reason.describe()),
                );
                Err(CallError::Cancelled { reason })
            }
        }
    }

    /// Checks an approval still applies before the call runs: the arguments
    /// are the ones approved, and a policy changed meanwhile does not deny.
    fn after_approval(
        &self,
        approvals: &Approvals,
        call: &mut Call,
        hash: &str,
        version: u64,
        by: Option<String>,
        rule_id: Option<i64>,
    ) -> Result<(), CallError> {
        if approvals.call_hash(call.tool_name(), &call.args) != hash {
            return Err(CallError::internal(
                "the arguments changed while waiting for approval; the call was not run",
            ));
        }
        let now = self.policy.load();
        if now.version != version {
            let a = assess(&now.config, call);
            if a.verdict == Verdict::Deny {
                note(call, "deny", &a);
                return Err(CallError::PolicyDenied {
                    reason: format!(
                        "{} (policy changed to version {} while waiting)",
                        a.reason, now.version
                    ),
                });
            }
        }
        let who = by.map(|b| format!(" by {b}")).unwrap_or_default();
        let always = rule_id
            .map(|r| format!(", remembered as rule #{r}"))
            .unwrap_or_default();
        call.note(StageName::Policy, format!("approved{who}{always}"));
        Ok(())
    }
}

/// `allow (low risk) by preset:default: …`. Joined rather than formatted:
/// it runs on every call.
fn note(call: &mut Call, verdict: &str, a: &Assessment) {
    let text = [
        verdict,
        " (",
        risk_str(a.risk),
        " risk) by ",
        &a.rule,
        ": ",
        &a.reason,
    ]
    .concat();
    call.note(StageName::Policy, text);
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
