//! The console's routes answered by the control service: one method, one
//! [`Control`] call. This is the only place that turns a console request
//! into a control request, so what the console can do is exactly what
//! the control service offers, for every transport alike.

use futures::StreamExt;
use serde::Serialize;

use super::api::{
    Actor, ApiResult, ConsoleApi, CorePinBody, DeferralBody, EventFeed, Export, FeedItem,
    PolicyTestBody, ScopeBody,
};
use super::error::ApiError;
use crate::control::types::{ApproveInput, AuditQuery, DenyInput, ExportFormat};
use crate::control::{Control, ControlError, Decider, StreamItem};
use crate::wire::{DecisionBody, Surface, Via};

impl From<ControlError> for ApiError {
    fn from(e: ControlError) -> Self {
        ApiError::from_parts(e.code(), e.to_string(), e.field())
    }
}

/// Who decided: the session or bearer client the request came with, or,
/// for the desktop shell (bearer only), its tray or a notification. A
/// browser session cannot claim to be the tray: it decides as itself.
fn decider(by: Actor, via: Option<Via>) -> ApiResult<Decider> {
    match (by, via) {
        (
            Actor::Session {
                session,
                surface: Surface::Browser,
            },
            None,
        ) => Ok(Decider::Console {
            session: Some(session),
        }),
        (
            Actor::Session {
                session,
                surface: Surface::DesktopWindow,
            },
            None,
        ) => Ok(Decider::DesktopWindow {
            session: Some(session),
        }),
        (Actor::Bearer, None) => Ok(Decider::Console { session: None }),
        (Actor::Bearer, Some(Via::Tray)) => Ok(Decider::Tray),
        (Actor::Bearer, Some(Via::Notification)) => Ok(Decider::Notification),
        (Actor::Session { .. }, Some(_)) => Err(ApiError::invalid(
            "decider",
            "only the desktop app's tray and notifications name a decider; \
             leave it out and the decision is recorded as this console session's",
        )),
    }
}

fn feed_item(item: StreamItem) -> Option<FeedItem> {
    match item {
        StreamItem::Event(env) => Some(FeedItem::Event {
            seq: env.seq,
            json: serde_json::to_string(&*env).ok()?,
        }),
        StreamItem::Reload(r) => Some(FeedItem::Reload { seq: r.seq }),
    }
}

impl ConsoleApi for Control {
    type AuditQuery = AuditQuery;

    async fn snapshot(&self) -> ApiResult<impl Serialize + Send> {
        Ok(Control::snapshot(self).await?)
    }

    fn events(&self, after: Option<u64>) -> ApiResult<EventFeed> {
        let feed = self.live(after).filter_map(|item| {
            let item = feed_item(item);
            async move { item }
        });
        Ok(feed.boxed())
    }

    async fn call(&self, call_id: i64) -> ApiResult<impl Serialize + Send> {
        Ok(Control::call(self, call_id).await?)
    }

    async fn audit(&self, query: AuditQuery) -> ApiResult<impl Serialize + Send> {
        Ok(self.audit_page(&query).await?)
    }

    async fn audit_export(&self, query: AuditQuery, format: ExportFormat) -> ApiResult<Export> {
        let (content_type, ext) = match format {
            ExportFormat::Jsonl => ("application/x-ndjson", "jsonl"),
            ExportFormat::Csv => ("text/csv; charset=utf-8", "csv"),
        };
        let body = Control::audit_export(self, &query, format).await?;
        Ok(Export {
            content_type,
            filename: format!("toolgate-audit.{ext}"),
            body: body.map(|chunk| chunk.map_err(ApiError::from)).boxed(),
        })
    }

    async fn approval(&self, id: i64) -> ApiResult<impl Serialize + Send> {
        Ok(Control::approval(self, id).await?)
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
        let by = decider(by, body.decider)?;
        let input = ApproveInput {
            always: body.always,
        };
        Ok(Control::approve(self, id, &by, input).await?)
    }

    async fn deny(
        &self,
        id: i64,
        body: DecisionBody,
        by: Actor,
    ) -> ApiResult<impl Serialize + Send> {
        let by = decider(by, body.decider)?;
        let input = DenyInput {
            always: body.always,
            reason: body.reason,
        };
        Ok(Control::deny(self, id, &by, input).await?)
    }

    async fn preview_scope(&self, id: i64, body: ScopeBody) -> ApiResult<impl Serialize + Send> {
        Ok(Control::preview_scope(self, id, &body.scope, body.ttl_s).await?)
    }

    async fn team(&self) -> ApiResult<impl Serialize + Send> {
        Ok(Control::team_now(self)?)
    }

    async fn team_calls(
        &self,
        query: crate::team::TeamCallsQuery,
    ) -> ApiResult<impl Serialize + Send> {
        Ok(Control::team_calls(self, &query).await?)
    }

    async fn team_approve(
        &self,
        engine: String,
        id: i64,
        body: DecisionBody,
    ) -> ApiResult<impl Serialize + Send> {
        if body.reason.is_some() {
            return Err(ApiError::invalid(
                "reason",
                "a reason goes with a denial, not an approval",
            ));
        }
        let input = ApproveInput {
            always: body.always,
        };
        Ok(Control::team_approve(self, &engine, id, input).await?)
    }

    async fn team_deny(
        &self,
        engine: String,
        id: i64,
        body: DecisionBody,
    ) -> ApiResult<impl Serialize + Send> {
        let input = DenyInput {
            always: body.always,
            reason: body.reason,
        };
        Ok(Control::team_deny(self, &engine, id, input).await?)
    }

    async fn rules(&self) -> ApiResult<impl Serialize + Send> {
        Ok(Control::rules(self)?)
    }

    async fn revoke_rule(&self, id: i64) -> ApiResult<impl Serialize + Send> {
        Ok(Control::revoke_rule(self, id).await?)
    }

    async fn reset_breaker(&self, tool: String) -> ApiResult<impl Serialize + Send> {
        if self.engine().registry().resolve(&tool).is_err() {
            return Err(ControlError::NotFound {
                what: "tool",
                id: tool,
            }
            .into());
        }
        Ok(Control::reset_breaker(self, &tool))
    }

    async fn restart_server(&self, name: String) -> ApiResult<impl Serialize + Send> {
        Ok(Control::restart_server(self, &name).await?)
    }

    async fn server_stderr(&self, name: String, after: u64) -> ApiResult<impl Serialize + Send> {
        Ok(Control::server_stderr(self, &name, after)?)
    }

    async fn pin_diff(&self, tool: String) -> ApiResult<impl Serialize + Send> {
        Ok(Control::pin_diff(self, &tool).await?)
    }

    async fn approve_pin(&self, tool: String) -> ApiResult<impl Serialize + Send> {
        Ok(Control::approve_pin(self, &tool).await?)
    }

    async fn tool(&self, name: String) -> ApiResult<impl Serialize + Send> {
        Ok(Control::tool(self, &name).await?)
    }

    async fn search_tools(&self, query: String, limit: usize) -> ApiResult<impl Serialize + Send> {
        Ok(Control::search_tools(self, &query, limit).await?)
    }

    async fn choose_deferral(
        &self,
        client: String,
        body: DeferralBody,
    ) -> ApiResult<impl Serialize + Send> {
        Ok(Control::choose_deferral(self, &client, body.mode)?)
    }

    async fn pin_core(&self, tool: String, body: CorePinBody) -> ApiResult<impl Serialize + Send> {
        Ok(Control::pin_core(self, &tool, body.pinned).await?)
    }

    async fn policy_test(&self, body: PolicyTestBody) -> ApiResult<impl Serialize + Send> {
        Ok(Control::policy_test(self, body)?)
    }

    async fn connect(&self) -> ApiResult<impl Serialize + Send> {
        Ok(Control::connect(self))
    }

    async fn health(&self) -> ApiResult<impl Serialize + Send> {
        Ok(Control::health(self))
    }

    async fn slice(&self, slice: crate::slices::Slice) -> ApiResult<impl Serialize + Send> {
        Ok(Control::slice(self, slice).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_decides_as_itself_and_only_the_shell_names_the_tray() {
        let session = || Actor::Session {
            session: "ab12".into(),
            surface: Surface::Browser,
        };
        assert_eq!(
            decider(session(), None).unwrap().to_string(),
            "console session ab12"
        );
        let window = Actor::Session {
            session: "cd34".into(),
            surface: Surface::DesktopWindow,
        };
        assert_eq!(
            decider(window, None).unwrap().to_string(),
            "desktop window cd34"
        );
        assert_eq!(
            decider(Actor::Bearer, Some(Via::Tray)).unwrap(),
            Decider::Tray
        );
        assert_eq!(
            decider(Actor::Bearer, Some(Via::Notification)).unwrap(),
            Decider::Notification
        );
        let refused = decider(session(), Some(Via::Tray)).unwrap_err();
        assert_eq!(refused.field.as_deref(), Some("decider"));
    }
}
