//! Stages 4 and 14: BEFORE / AFTER hooks.
//!
//! Contract:
//! - BEFORE hooks run in order on the raw call. Each may rewrite the
//!   arguments (recorded as a note, so the audit shows the call was changed)
//!   or block it with [`CallError::Blocked`]; a block stops the remaining
//!   hooks and the call never runs.
//! - AFTER hooks run in order on successful results only (a refusal or
//!   failure has nothing for them to inspect). Each may rewrite the result or
//!   block it; a block replaces the result with [`CallError::Blocked`], so a
//!   hook can keep leaked data from reaching the model.
//!
//! The trait returns boxed futures so plugin hooks, which talk to another
//! process, implement the same trait as in-process ones.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{Call, CallResult, Enter, Next, Stage};
use crate::context::CallContext;
use crate::error::CallError;
use crate::events::StageName;
use crate::tool::{ToolDef, ToolResult};

/// What a hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    /// Let the call (or result) through, possibly rewritten.
    Continue,
    /// Refuse it; `reason` is passed to the agent verbatim.
    Block {
        /// Why, in words the agent can act on.
        reason: String,
    },
}

/// What a hook may look at besides the arguments or result it is given:
/// the tool's definition and the call's context, read-only, so a hook
/// cannot change who is calling.
#[derive(Debug, Clone, Copy)]
pub struct HookCall<'a> {
    /// The tool being called.
    pub tool: &'a ToolDef,
    /// Caller, session and session state.
    pub ctx: &'a CallContext,
}

/// An in-process hook; plugins implement it later through a proxy. Both
/// methods default to [`HookVerdict::Continue`], so a hook implements only
/// the side it cares about.
pub trait Hook: Send + Sync + 'static {
    /// The hook's name, shown when it blocks a call.
    fn name(&self) -> &str;

    /// Runs before the call; may rewrite `args` in place or block.
    fn before<'a>(&'a self, call: HookCall<'a>, args: &'a mut Value) -> BoxFuture<'a, HookVerdict> {
        let _ = (call, args);
        Box::pin(async { HookVerdict::Continue })
    }

    /// Runs after a successful call; may rewrite `result` in place or block.
    /// A hook that hides data must look at `result.structured_content` as
    /// well as the content: clients receive both.
    fn after<'a>(
        &'a self,
        call: HookCall<'a>,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, HookVerdict> {
        let _ = (call, result);
        Box::pin(async { HookVerdict::Continue })
    }
}

/// The hooks stage.
pub struct Hooks {
    hooks: Vec<Arc<dyn Hook>>,
}

impl Hooks {
    /// A stage running `hooks` in order.
    pub fn new(hooks: Vec<Arc<dyn Hook>>) -> Self {
        Self { hooks }
    }

    /// Runs the BEFORE hooks; `Err` if one blocked.
    async fn before(&self, call: &mut Call) -> Result<(), CallError> {
        for hook in &self.hooks {
            let original = call.args.clone();
            let view = HookCall {
                tool: &call.tool.def,
                ctx: &call.ctx,
            };
            let verdict = hook.before(view, &mut call.args).await;
            if let HookVerdict::Block { reason } = verdict {
                call.note(StageName::Hooks, format!("blocked by `{}`", hook.name()));
                return Err(blocked(hook.as_ref(), reason));
            }
            if call.args != original {
                let text = format!("hook `{}` rewrote the arguments", hook.name());
                call.note(StageName::Hooks, text);
            }
        }
        Ok(())
    }

    /// Runs the AFTER hooks on a successful result.
    async fn after(&self, call: &mut Call, mut result: ToolResult) -> CallResult {
        for hook in &self.hooks {
            let original = result.clone();
            let view = HookCall {
                tool: &call.tool.def,
                ctx: &call.ctx,
            };
            if let HookVerdict::Block { reason } = hook.after(view, &mut result).await {
                let text = format!("result blocked by `{}`", hook.name());
                call.note(StageName::Hooks, text);
                return Err(blocked(hook.as_ref(), reason));
            }
            if result != original {
                let text = format!("hook `{}` rewrote the result", hook.name());
                call.note(StageName::Hooks, text);
            }
        }
        Ok(result)
    }
}

fn blocked(hook: &dyn Hook, reason: String) -> CallError {
    CallError::Blocked {
        hook: hook.name().to_owned(),
        reason,
    }
}

impl Stage for Hooks {
    fn name(&self) -> StageName {
        StageName::Hooks
    }

    fn enter(&self, _call: &mut Call) -> Enter {
        // Hooks may wait (a plugin's hook is a round trip); with none
        // configured the stage has nothing to hold.
        if self.hooks.is_empty() {
            Enter::Pass
        } else {
            Enter::Wrap
        }
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            self.before(call).await?;
            match next.run(call).await {
                Ok(result) => self.after(call, result).await,
                Err(e) => Err(e),
            }
        })
    }
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
