//! How an approval request ended, in the words people read: one sentence
//! for a request's detail and a few words for a list row. Made here, from
//! the recorded status, decider and reason, so the console, the desktop
//! and the CLI say it alike; a host only swaps in "by you" for a decision
//! its own window made.

use serde::Serialize;
use ts_rs::TS;

use super::ApprovalStatus;
use super::decider::recorded_words;

/// A closed request's ending, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Ended {
    /// One sentence: `Denied from the CLI (pid 42) — “not now”`.
    pub cause: String,
    /// A few words for a row: `From the CLI (pid 42)`.
    pub short: String,
}

/// The ending of a request in `status`, closed by `by` (the recorded
/// decider) with `reason`; `None` while it waits.
pub fn ended(status: ApprovalStatus, by: Option<&str>, reason: Option<&str>) -> Option<Ended> {
    let why = reason.map(|r| format!(" — “{r}”")).unwrap_or_default();
    let place = by.map_or_else(|| "elsewhere".to_owned(), recorded_words);
    let (cause, short) = match status {
        ApprovalStatus::Pending => return None,
        ApprovalStatus::Approved => (format!("Approved {place}{why}"), capitalised(&place)),
        ApprovalStatus::Denied => (format!("Denied {place}{why}"), capitalised(&place)),
        ApprovalStatus::TimedOut => (
            format!(
                "{} — nobody answered, so the call was denied",
                status.label()
            ),
            "Nobody answered in time".to_owned(),
        ),
        ApprovalStatus::Expired => (
            match (reason, by) {
                (Some(r), _) => format!("Expired — {r}"),
                (None, Some("startup")) => {
                    "Expired — toolgate restarted and the agent was gone".to_owned()
                }
                (None, _) => "Expired — nobody was waiting for it any more".to_owned(),
            },
            if by == Some("startup") {
                "toolgate restarted"
            } else {
                "Expired"
            }
            .to_owned(),
        ),
        ApprovalStatus::Cancelled => (
            match (reason, by) {
                (Some(r), _) => format!("Cancelled — {r}"),
                (None, Some("shutdown")) => {
                    "Cancelled — toolgate shut down before a decision".to_owned()
                }
                (None, _) => {
                    "Cancelled — the agent cancelled the call or left before a decision".to_owned()
                }
            },
            match by {
                Some("caller") => "The agent left",
                Some("shutdown") => "toolgate shut down",
                _ => "Cancelled",
            }
            .to_owned(),
        ),
    };
    Some(Ended { cause, short })
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|first| first.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_name_where_a_person_decided_and_why() {
        let e = ended(
            ApprovalStatus::Denied,
            Some("cli pid 42 (/usr/bin/toolgate)"),
            Some("not now"),
        )
        .unwrap();
        assert_eq!(e.cause, "Denied from the CLI (pid 42) — “not now”");
        assert_eq!(e.short, "From the CLI (pid 42)");
        let e = ended(ApprovalStatus::Approved, Some("console session ab"), None).unwrap();
        assert_eq!(
            (e.cause.as_str(), e.short.as_str()),
            ("Approved in the console", "In the console")
        );
        assert!(ended(ApprovalStatus::Pending, None, None).is_none());
    }

    #[test]
    fn the_engines_own_closings_say_what_happened() {
        let t = ended(ApprovalStatus::TimedOut, Some("timeout"), None).unwrap();
        assert_eq!(
            t.cause,
            "No decision in time — nobody answered, so the call was denied"
        );
        let c = ended(ApprovalStatus::Cancelled, Some("caller"), None).unwrap();
        assert_eq!(c.short, "The agent left");
        let s = ended(ApprovalStatus::Cancelled, Some("shutdown"), None).unwrap();
        assert_eq!(s.cause, "Cancelled — toolgate shut down before a decision");
        let x = ended(ApprovalStatus::Expired, Some("startup"), None).unwrap();
        assert_eq!(x.short, "toolgate restarted");
    }
}
