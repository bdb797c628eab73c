//! The runner of an agent's tool: it never runs anything. When a hooked
//! call reaches the execution stage, the runner hands the cast arguments
//! to the before-hook (the agent may run the tool) and waits for the
//! after-hook's report, which becomes the call's result: breaker
//! bookkeeping, the audit row and the live feed then see how the agent's
//! tool ended. The same pause as gate mode ([`crate::mcp`]'s
//! `toolgate/gate`), except that the two halves arrive as two processes.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::prepare::REPORT_WINDOW;
use crate::context::CallContext;
use crate::error::CallError;
pub(super) use crate::pause::Ticket;
use crate::tool::{Tool, ToolResult};

tokio::task_local! {
    static TICKET: Arc<Ticket>;
}

/// Runs `f` with `ticket` as the one the runner finds.
pub(super) async fn scope<F: std::future::Future>(ticket: Arc<Ticket>, f: F) -> F::Output {
    TICKET.scope(ticket, f).await
}

/// See the module docs.
pub(super) struct HookRunner;

impl Tool for HookRunner {
    fn call<'a>(
        &'a self,
        args: Value,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, CallError>> {
        Box::pin(async move {
            let Ok(ticket) = TICKET.try_with(Arc::clone) else {
                return Err(CallError::caller_error(
                    "an agent's own tool runs inside the agent; toolgate only judges it through the agent's hooks",
                ));
            };
            let Some((allowed, report)) = ticket.take() else {
                return Err(CallError::internal("hook ticket used twice"));
            };
            if allowed.send(args).is_err() {
                return Err(CallError::caller_error(
                    "the agent's hook stopped waiting for the answer",
                ));
            }
            match tokio::time::timeout(REPORT_WINDOW, report).await {
                Ok(Ok(outcome)) => outcome,
                // Not the tool's failure: the agent never said how it
                // ended (its own prompt may have refused it, or it
                // stopped), so the breaker does not count it.
                Ok(Err(_)) | Err(_) => Err(CallError::caller_error(format!(
                    "the agent did not report how the call ended within {} minutes of toolgate allowing it \
                     (it may have refused the call itself, or stopped)",
                    REPORT_WINDOW.as_secs() / 60
                ))),
            }
        })
    }
}
