//! What the console transport asks of the engine: [`ConsoleApi`], one
//! method per route of the table in docs/architecture/console-api.md,
//! HTTP API.
//!
//! The control service is the implementation
//! ([`control_api`](super::control_api)): each method is one call of
//! `Control`. The trait keeps the transport testable on its own (its tests
//! answer with fakes), and every method has a default answering
//! `unavailable`, so a fake implements only what its test needs.
//!
//! Answers are any `Serialize` value: the transport only turns them into
//! JSON, so the wire types stay with the service that defines them.

use std::future::Future;

use futures::stream::BoxStream;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use crate::control::types::ExportFormat;
use crate::wire::DecisionBody;

/// A console answer or its error.
pub type ApiResult<T> = Result<T, ApiError>;

/// One item of the live stream (`GET /api/events`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedItem {
    /// An event: its sequence number and its envelope as JSON
    /// (`{"seq", "ts_ms", "event"}`).
    Event {
        /// Gap-free sequence number.
        seq: u64,
        /// The envelope, serialised once for every subscriber.
        json: String,
    },
    /// The subscriber cannot be given every event after the one it asked
    /// for: fetch a snapshot and resubscribe from its `seq`. Always last.
    Reload {
        /// The newest sequence number.
        seq: u64,
    },
}

/// The live stream of one subscriber.
pub type EventFeed = BoxStream<'static, FeedItem>;

/// Who made a decision from the console (recorded as `decided_by`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A browser session; `session` is a digest label, never the id.
    Session {
        /// See [`super::auth::ConsoleAuth::session_label`].
        session: String,
        /// A browser tab or the desktop app's window.
        surface: crate::wire::Surface,
    },
    /// A client with the console bearer token.
    Bearer,
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Session { session, .. } => write!(f, "console session {session}"),
            Self::Bearer => f.write_str("console (bearer token)"),
        }
    }
}

/// Body of `POST /api/approvals/{id}/scope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ScopeBody {
    /// The scope to preview.
    pub scope: String,
    /// The expiry the rule would have, seconds; absent = until revoked
    /// (as in the decision's `always`). Only the words use it.
    #[serde(default)]
    #[ts(optional, type = "number")]
    pub ttl_s: Option<u64>,
}

/// Body of `PUT /api/policy`: the edited document and the policy version
/// it was made from (a newer running policy makes the edit stale).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct PolicyPut {
    /// The whole policy as edited.
    pub doc: crate::policy::document::PolicyDoc,
    /// `version` of the policy the edit started from.
    #[ts(type = "number")]
    pub base_version: u64,
}

/// Body of `POST /api/policy/test`: the control service's input.
pub type PolicyTestBody = crate::control::policy_test::PolicyTestInput;

/// `PUT /api/clients/{name}/deferral`'s body.
#[derive(Debug, Clone, serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct DeferralBody {
    /// `auto`, `on`, `off`, or `null` to follow the config again.
    pub mode: Option<crate::search::DeferMode>,
}

/// `PUT /api/tools/{name}/core`'s body.
#[derive(Debug, Clone, serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct CorePinBody {
    /// `true` pins the tool as core (never deferred); `false` unpins it.
    pub pinned: bool,
}

/// A file to download.
pub struct Export {
    /// `application/x-ndjson`, `text/csv`.
    pub content_type: &'static str,
    /// Suggested file name.
    pub filename: String,
    /// The content, streamed: an audit log can be large. An error ends
    /// the download early (the client sees a short file and the log a
    /// line), since the status was sent with the first chunk.
    pub body: BoxStream<'static, Result<Vec<u8>, ApiError>>,
}

fn unwired<T>(what: &str) -> impl Future<Output = ApiResult<T>> + Send + use<T> {
    let e = ApiError::unwired(what);
    async move { Err(e) }
}

/// Everything the console's routes ask for; see the module doc.
#[allow(unused_variables)]
pub trait ConsoleApi: Clone + Send + Sync + 'static {
    /// Audit filters, read from the query string of `/api/audit` and
    /// `/api/audit/export` (`tool`, `caller`, `outcome`, `since_ms`,
    /// `until_ms`, `before`, `limit`).
    type AuditQuery: DeserializeOwned + Send + 'static;

    /// `GET /api/snapshot`.
    fn snapshot(&self) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("the snapshot")
    }

    /// `GET /api/events`: the stream after `after` (from the next event
    /// on when `None`).
    fn events(&self, after: Option<u64>) -> ApiResult<EventFeed> {
        Err(ApiError::unwired("the event stream"))
    }

    /// `GET /api/calls/{call_id}`.
    fn call(&self, call_id: i64) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("call details")
    }

    /// `GET /api/audit`.
    fn audit(
        &self,
        query: Self::AuditQuery,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("the audit query")
    }

    /// `GET /api/audit/export`.
    fn audit_export(
        &self,
        query: Self::AuditQuery,
        format: ExportFormat,
    ) -> impl Future<Output = ApiResult<Export>> + Send {
        unwired::<Export>("the audit export")
    }

    /// `GET /api/approvals/{id}`.
    fn approval(&self, id: i64) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("approval details")
    }

    /// `POST /api/approvals/{id}/approve`.
    fn approve(
        &self,
        id: i64,
        body: DecisionBody,
        by: Actor,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("approving")
    }

    /// `POST /api/approvals/{id}/deny`.
    fn deny(
        &self,
        id: i64,
        body: DecisionBody,
        by: Actor,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("denying")
    }

    /// `POST /api/approvals/{id}/scope` (changes nothing).
    fn preview_scope(
        &self,
        id: i64,
        body: ScopeBody,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("the scope preview")
    }

    /// `GET /api/team`: the team link's state and the other engines'
    /// requests.
    fn team(&self) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("the team's queue")
    }

    /// `GET /api/team/calls`: the team's audit log, newest first, by
    /// engine and tool.
    fn team_calls(
        &self,
        query: crate::team::TeamCallsQuery,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("the team's audit log")
    }

    /// `POST /api/team/{engine}/{id}/approve`: sent to the engine that
    /// raised it, which decides it.
    fn team_approve(
        &self,
        engine: String,
        id: i64,
        body: DecisionBody,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("deciding the team's requests")
    }

    /// `POST /api/team/{engine}/{id}/deny`.
    fn team_deny(
        &self,
        engine: String,
        id: i64,
        body: DecisionBody,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("deciding the team's requests")
    }

    /// `GET /api/rules`.
    fn rules(&self) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("remembered rules")
    }

    /// `DELETE /api/rules/{id}`.
    fn revoke_rule(
        &self,
        id: i64,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("revoking rules")
    }

    /// `POST /api/breakers/{tool}/reset`.
    fn reset_breaker(
        &self,
        tool: String,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("breaker reset")
    }

    /// `POST /api/servers/{name}/restart`.
    fn restart_server(
        &self,
        name: String,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("server restart")
    }

    /// `GET /api/servers/{name}/stderr`.
    fn server_stderr(
        &self,
        name: String,
        after: u64,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("server stderr")
    }

    /// `GET /api/pins/{tool}`.
    fn pin_diff(
        &self,
        tool: String,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("pin details")
    }

    /// `POST /api/pins/{tool}/approve`.
    fn approve_pin(
        &self,
        tool: String,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("pin approval")
    }

    /// `GET /api/tools/{name}`.
    fn tool(&self, name: String) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("tool details")
    }

    /// `GET /api/tools/search?q=…&limit=…`: tools ranked by the engine's
    /// index, the matched words marked.
    fn search_tools(
        &self,
        query: String,
        limit: usize,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("tool search")
    }

    /// `PUT /api/clients/{name}/deferral`: a person's choice of deferral
    /// for one agent client (`null` follows the config again).
    fn choose_deferral(
        &self,
        client: String,
        body: DeferralBody,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("choosing deferral")
    }

    /// `PUT /api/tools/{name}/core`: a person pins a tool as core, never
    /// deferred for any client, or unpins it.
    fn pin_core(
        &self,
        tool: String,
        body: CorePinBody,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("pinning tools as core")
    }

    /// `POST /api/policy/test` (changes nothing).
    fn policy_test(
        &self,
        body: PolicyTestBody,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("the policy test")
    }

    /// `GET /api/state/{slice}`: one slice read again with its revision.
    fn slice(
        &self,
        slice: crate::slices::Slice,
    ) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("state slices")
    }

    /// `GET /api/connect`.
    fn connect(&self) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("connection snippets")
    }

    /// `GET /api/health`: the engine's memory, descriptors and connections.
    fn health(&self) -> impl Future<Output = ApiResult<impl Serialize + Send>> + Send {
        unwired::<()>("engine health")
    }
}
