//! [`CallDetail`]: one call as a person inspects it: its audit row
//! (caller, redacted arguments, decision, per-stage timings, notes), the
//! policy's verdict and the rule that decided (read from the policy
//! stage's note, which names it), the approval it waited on, and its
//! output raw and as the agent saw it while [`RecentOutputs`] keeps it.
//!
//! Engine call ids restart at 1 with every run of the engine, so a call is
//! looked up by call id among this run's rows (those above the newest row
//! id when the control service started); older rows are found by their row
//! id, and have no kept output.
//!
//! [`RecentOutputs`]: super::outputs::RecentOutputs

use serde_json::Value;

use super::types::{CallDetail, CallSummary};
use super::{Control, ControlError};
use crate::approval::CallerInfo;
use crate::audit::CallRow;
use crate::error::ErrorKind;
use crate::wire::CallOutcome;

impl Control {
    /// The call with engine call id `call_id` in this run of the engine.
    ///
    /// # Errors
    /// No such call in this run, no audit log, or the store.
    pub async fn call(&self, call_id: i64) -> Result<CallDetail, ControlError> {
        let audit = self.audit()?;
        audit.flush().await;
        let row: Option<CallRow> = sqlx::query_as(
            "SELECT * FROM calls WHERE id > ? AND call_id = ? ORDER BY id DESC LIMIT 1",
        )
        .bind(self.inner.first_row)
        .bind(call_id)
        .fetch_optional(audit.pool())
        .await?;
        let row = row.ok_or_else(|| ControlError::not_found("call", call_id))?;
        self.detail(row).await
    }

    /// The call in audit row `id` (any run of the engine).
    ///
    /// # Errors
    /// No such row, no audit log, or the store.
    pub async fn call_row(&self, id: i64) -> Result<CallDetail, ControlError> {
        let audit = self.audit()?;
        audit.flush().await;
        let row: Option<CallRow> = sqlx::query_as("SELECT * FROM calls WHERE id = ?")
            .bind(id)
            .fetch_optional(audit.pool())
            .await?;
        let row = row.ok_or_else(|| ControlError::not_found("audit row", id))?;
        self.detail(row).await
    }

    async fn detail(&self, row: CallRow) -> Result<CallDetail, ControlError> {
        let notes: Vec<(String, String)> = serde_json::from_str(&row.notes).unwrap_or_default();
        let (verdict, rule) = decided_by(&notes);
        let approval = self.approval_of(&row).await?;
        let decided = self
            .decided_words(verdict.as_deref(), rule.as_deref(), approval.is_some())
            .await?;
        let this_run = row.id > self.inner.first_row;
        let (output, output_missing) = if CallOutcome::parse(&row.outcome) == CallOutcome::Error {
            let why = "the call ended in an error (see its message); it produced no output";
            (None, Some(why.to_owned()))
        } else if !this_run {
            let why = "from an earlier run of the engine; outputs are kept in memory only";
            (None, Some(why.to_owned()))
        } else {
            let outputs = &self.inner.outputs;
            match outputs.get(u64::try_from(row.call_id).unwrap_or(0)) {
                Ok(o) => (Some(o), None),
                Err(m) => (None, Some(m.explain(&outputs.limits()))),
            }
        };
        let (args, args_shortened) = detail_args(&row.args);
        Ok(CallDetail {
            args,
            args_shortened,
            verdict,
            rule,
            decided,
            notes,
            approval,
            output,
            output_missing,
            summary: summary_of(&row),
        })
    }

    /// [`CallDetail::decided`]: a remembered rule is a person's decision,
    /// so it says whose, where and when, not "allowed by policy".
    async fn decided_words(
        &self,
        verdict: Option<&str>,
        rule: Option<&str>,
        asked: bool,
    ) -> Result<Option<String>, ControlError> {
        let remembered = rule
            .and_then(|r| r.rsplit_once(" rule #"))
            .and_then(|(_, id)| id.parse::<i64>().ok());
        if let (Some(id), Some(approvals)) = (remembered, self.engine().approvals()) {
            let did = if verdict == Some("deny") {
                "refused"
            } else {
                "allowed"
            };
            let Some(r) = approvals.rule(id).await? else {
                return Ok(Some(format!(
                    "A person {did} calls like this one ahead of time (rule #{id}, since deleted)."
                )));
            };
            let who = r
                .created_by
                .as_deref()
                .map_or_else(|| "somewhere".to_owned(), crate::approval::recorded_words);
            return Ok(Some(format!(
                "A person {did} calls like this one ahead of time: rule #{id}, made {who} on {}.",
                date_of_ms(r.created_ms)
            )));
        }
        Ok(match verdict {
            Some("allow") => Some("Policy allowed it without asking.".to_owned()),
            Some("deny") => Some("Policy refused it.".to_owned()),
            Some("ask") if asked => {
                Some("Policy asked a person (see the request below).".to_owned())
            }
            Some("ask") => Some("Policy would ask a person.".to_owned()),
            _ => None,
        })
    }

    /// The approval request a call waited on: same call id, made after
    /// the call arrived (ids repeat across runs, times do not).
    async fn approval_of(
        &self,
        row: &CallRow,
    ) -> Result<Option<crate::approval::ApprovalRequest>, ControlError> {
        let Some(approvals) = self.engine().approvals() else {
            return Ok(None);
        };
        let id: Option<(i64,)> = sqlx::query_as(
            "SELECT id FROM approval_requests WHERE call_id = ? AND created_ms >= ? \
             ORDER BY id LIMIT 1",
        )
        .bind(row.call_id)
        .bind(row.ts_ms)
        .fetch_optional(self.audit()?.pool())
        .await?;
        match id {
            Some((id,)) => Ok(Some(approvals.get(id).await?)),
            None => Ok(None),
        }
    }
}

/// Array elements and object members of a call's arguments a list's
/// preview reads (the preview shows a few; see [`crate::json_sketch`]).
const PREVIEW_VALUES: usize = 256;

/// Array elements and object members of a call's arguments its detail
/// shows: far more than a person reads, and a bound on what an agent's
/// arguments cost the engine when a person opens the call.
pub const DETAIL_VALUES: usize = 20_000;

/// A call's stored arguments for its detail, and why they are not whole.
fn detail_args(text: &str) -> (Value, Option<String>) {
    match crate::json_sketch::sketch(text, DETAIL_VALUES) {
        Ok(s) if s.cut => (
            s.value,
            Some(format!(
                "Shortened: the arguments hold more than {DETAIL_VALUES} values; \
                 the audit export has them whole."
            )),
        ),
        Ok(s) => (s.value, None),
        Err(_) => (Value::Null, None),
    }
}

/// The policy's verdict and deciding rule, from the policy stage's notes:
/// `allow (low risk) by preset:default: …`, `deny: always-deny rule #3
/// (…)`, `allow: always-allow rule #3 (…) covers this call, …`.
pub(crate) fn decided_by(notes: &[(String, String)]) -> (Option<String>, Option<String>) {
    for (stage, note) in notes {
        if stage != "policy" {
            continue;
        }
        for (prefix, verdict) in [("deny: ", "deny"), ("allow: ", "allow")] {
            if let Some(rest) = note.strip_prefix(prefix) {
                let rule = rest.split(" (").next().unwrap_or(rest);
                return (Some(verdict.into()), Some(rule.to_owned()));
            }
        }
        let Some((verdict, rest)) = note.split_once(" (") else {
            continue;
        };
        if !matches!(verdict, "allow" | "ask" | "deny") {
            continue;
        }
        let rule = rest
            .split_once(" by ")
            .and_then(|(_, r)| r.split_once(": ").map(|(rule, _)| rule));
        return (Some(verdict.to_owned()), rule.map(str::to_owned));
    }
    (None, None)
}

/// The caller stored with an audit row.
pub(crate) fn caller_of(json: &str) -> Option<CallerInfo> {
    serde_json::from_str(json).ok()
}

/// An audit row as the console lists it.
pub(crate) fn summary_of(row: &CallRow) -> CallSummary {
    CallSummary {
        id: row.id,
        call_id: row.call_id,
        ts_ms: row.ts_ms,
        tool: row.tool.clone(),
        preview: crate::json_sketch::sketch(&row.args, PREVIEW_VALUES)
            .map(|args| crate::preview::preview(None, &args.value))
            .unwrap_or_default(),
        caller: CallerInfo::stored_words(&row.caller),
        session: row.session.clone(),
        decision: row.decision.clone(),
        outcome: CallOutcome::parse(&row.outcome),
        error_kind: row.error_kind.as_deref().and_then(ErrorKind::parse),
        error_message: row.error_message.clone(),
        elapsed_us: row.elapsed_us,
        stages: serde_json::from_str(&row.stages).unwrap_or_default(),
        output_size: row.output_size,
    }
}

/// Unix ms as an HTTP date (`Thu, 03 Dec 2026 19:08:41 GMT`), for words.
pub fn date_of_ms(ms: i64) -> String {
    let t =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    httpdate::fmt_http_date(t)
}

#[cfg(test)]
#[path = "calls_tests.rs"]
mod tests;
