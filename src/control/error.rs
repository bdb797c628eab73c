//! [`ControlError`]: what a person's request to the control service can
//! fail with. Each variant maps onto one HTTP status and one JSON-RPC
//! error by its [`code`](ControlError::code), so the transports stay thin:
//!
//! | variant       | code          | HTTP | meaning                                   |
//! |---------------|---------------|------|-------------------------------------------|
//! | `NotFound`    | `not_found`   | 404  | no such call, approval, rule, tool, server |
//! | `Stale`       | `stale`       | 409  | it ended already (decided, expired, ...)   |
//! | `Forbidden`   | `forbidden`   | 403  | this person may not do it (says who may)   |
//! | `Invalid`     | `invalid`     | 422  | a field is malformed (names the field)     |
//! | `Unavailable` | `unavailable` | 503  | this engine runs without that part         |
//! | `Internal`    | `internal`    | 500  | the store failed; a bug or the disk        |
//!
//! Messages say what to do next: a person reads them in the console.

use crate::approval::ApprovalError;
use crate::audit::AuditError;
use crate::upstream::PinError;

/// Why a control request failed. Nothing changed when it fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// No such thing.
    #[error("{what} `{id}` does not exist; reload to see the current list")]
    NotFound {
        /// What was looked for (`approval request`, `tool`, ...).
        what: &'static str,
        /// The id or name asked for.
        id: String,
    },
    /// It exists but has ended, so it can no longer be acted on.
    #[error("{what} is already {state}; nothing was changed")]
    Stale {
        /// What (`approval request #12`).
        what: String,
        /// Its state (`approved`, `timed_out`, `expired`, `cancelled`).
        state: String,
    },
    /// The person at this engine may not do it (e.g. decide a request
    /// whose engine names other deciders); the words say who may.
    #[error("{0}")]
    Forbidden(String),
    /// A field of the request is malformed.
    #[error("{field}: {message}")]
    Invalid {
        /// The field (`scope`, `limit`, `outcome`, ...).
        field: &'static str,
        /// What is wrong and what would be accepted.
        message: String,
    },
    /// This engine runs without the part the request needs.
    #[error("{0}")]
    Unavailable(String),
    /// A store failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ControlError {
    /// The stable code transports map to a status: `not_found`, `stale`,
    /// `forbidden`, `invalid`, `unavailable` or `internal`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::Stale { .. } => "stale",
            Self::Forbidden(_) => "forbidden",
            Self::Invalid { .. } => "invalid",
            Self::Unavailable(_) => "unavailable",
            Self::Internal(_) => "internal",
        }
    }

    /// The HTTP status for [`Self::code`].
    pub fn http_status(&self) -> u16 {
        match self {
            Self::NotFound { .. } => 404,
            Self::Stale { .. } => 409,
            Self::Forbidden(_) => 403,
            Self::Invalid { .. } => 422,
            Self::Unavailable(_) => 503,
            Self::Internal(_) => 500,
        }
    }

    /// The field an `invalid` error is about.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The error as the console's wire body (`{"error": ...}` holds it).
    pub fn body(&self) -> super::types::ErrorBody {
        super::types::ErrorBody {
            code: self.code().to_owned(),
            message: self.to_string(),
            field: self.field().map(str::to_owned),
        }
    }

    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid {
            field,
            message: message.into(),
        }
    }

    pub(crate) fn not_found(what: &'static str, id: impl ToString) -> Self {
        Self::NotFound {
            what,
            id: id.to_string(),
        }
    }

    pub(crate) fn internal(e: impl std::fmt::Display) -> Self {
        Self::Internal(e.to_string())
    }
}

impl From<ApprovalError> for ControlError {
    fn from(e: ApprovalError) -> Self {
        match e {
            ApprovalError::NotFound { id } => Self::not_found("approval request", id),
            ApprovalError::AlreadyDecided { id, status } => Self::Stale {
                what: format!("approval request #{id}"),
                state: status.to_string(),
            },
            ApprovalError::RuleNotFound { id } => Self::not_found("remembered rule", id),
            ApprovalError::Scope(e) => Self::invalid("scope", e.to_string()),
            other => Self::internal(other),
        }
    }
}

impl From<AuditError> for ControlError {
    fn from(e: AuditError) -> Self {
        Self::internal(e)
    }
}

impl From<PinError> for ControlError {
    fn from(e: PinError) -> Self {
        match e {
            PinError::NotFound(name) => Self::not_found("pinned tool", name),
            PinError::NothingPending(name) => Self::Stale {
                what: format!("`{name}`"),
                state: "pinned (no change waits for approval)".into(),
            },
            other => Self::internal(other),
        }
    }
}

impl From<sqlx::Error> for ControlError {
    fn from(e: sqlx::Error) -> Self {
        Self::internal(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::ApprovalStatus;

    #[test]
    fn every_variant_has_its_code_and_status() {
        let cases = [
            (ControlError::not_found("tool", "x"), "not_found", 404),
            (
                ApprovalError::AlreadyDecided {
                    id: 3,
                    status: ApprovalStatus::TimedOut,
                }
                .into(),
                "stale",
                409,
            ),
            (ControlError::invalid("limit", "too big"), "invalid", 422),
            (
                ControlError::Forbidden("only alice".into()),
                "forbidden",
                403,
            ),
            (ControlError::Unavailable("no".into()), "unavailable", 503),
            (ControlError::internal("disk"), "internal", 500),
        ];
        for (e, code, status) in cases {
            assert_eq!((e.code(), e.http_status()), (code, status), "{e}");
            assert_eq!(e.body().code, code);
        }
        let stale: ControlError = ApprovalError::AlreadyDecided {
            id: 3,
            status: ApprovalStatus::TimedOut,
        }
        .into();
        assert_eq!(
            stale.to_string(),
            "approval request #3 is already timed_out; nothing was changed"
        );
        assert_eq!(
            ControlError::invalid("limit", "too big")
                .body()
                .field
                .as_deref(),
            Some("limit")
        );
    }
}
