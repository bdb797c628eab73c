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
    /// The hook itself failed (a plugin's program crashed, timed out or
    /// answered nonsense). Before the call this blocks, with `reason`:
    /// an unchecked call must not run because its check broke. After it,
    /// the result goes through unchanged and the failure is noted.
    Failed {
        /// What went wrong, for the agent and the person.
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

    /// Whether the hook has anything to say about calls of `tool` (a
    /// plugin's hook scoped to some tools); one that does not is skipped.
    fn applies(&self, tool: &ToolDef) -> bool {
        let _ = tool;
        true
    }

    /// Whether a call (`after` false) or result (`after` true) it let
    /// through unchanged is noted too, so the audit names every hook that
    /// looked at the call (plugins' hooks, which a person added and wants
    /// to see at work).
    fn notes_passes(&self, after: bool) -> bool {
        let _ = after;
        false
    }

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

/// Hooks that come and go while the engine runs (plugins' hooks): the
/// stage reads the current list at each call. Cloning shares it.
#[derive(Clone, Default)]
pub struct HookSet(Arc<arc_swap::ArcSwap<Vec<Arc<dyn Hook>>>>);

impl HookSet {
    /// Replaces the list; calls already past the stage keep the old one.
    pub fn set(&self, hooks: Vec<Arc<dyn Hook>>) {
        self.0.store(Arc::new(hooks));
    }

    /// The current list.
    pub fn load(&self) -> Arc<Vec<Arc<dyn Hook>>> {
        self.0.load_full()
    }
}

impl std::fmt::Debug for HookSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.load().iter().map(|h| h.name().to_owned()))
            .finish()
    }
}

/// The hooks stage.
pub struct Hooks {
    hooks: Vec<Arc<dyn Hook>>,
    live: HookSet,
}

impl Hooks {
    /// A stage running `hooks` in order.
    pub fn new(hooks: Vec<Arc<dyn Hook>>) -> Self {
        Self::with_live(hooks, HookSet::default())
    }

    /// A stage running `hooks`, then whatever `live` holds at each call.
    pub fn with_live(hooks: Vec<Arc<dyn Hook>>, live: HookSet) -> Self {
        Self { hooks, live }
    }

    /// The hooks for one call of `tool`, in order.
    fn for_call(&self, tool: &ToolDef) -> Vec<Arc<dyn Hook>> {
        let live = self.live.load();
        self.hooks
            .iter()
            .chain(live.iter())
            .filter(|h| h.applies(tool))
            .cloned()
            .collect()
    }

    /// Runs the BEFORE hooks; `Err` if one blocked or failed.
    async fn before(&self, call: &mut Call, hooks: &[Arc<dyn Hook>]) -> Result<(), CallError> {
        for hook in hooks {
            let original = call.args.clone();
            let view = HookCall {
                tool: &call.tool.def,
                ctx: &call.ctx,
            };
            let name = hook.name();
            match hook.before(view, &mut call.args).await {
                HookVerdict::Block { reason } => {
                    call.note(StageName::Hooks, format!("blocked by `{name}`"));
                    return Err(blocked(hook.as_ref(), reason));
                }
                HookVerdict::Failed { reason } => {
                    call.args = original;
                    let text = format!("hook `{name}` failed, so the call was blocked: {reason}");
                    call.note(StageName::Hooks, text);
                    return Err(blocked(hook.as_ref(), format!("the hook failed: {reason}")));
                }
                HookVerdict::Continue if call.args != original => {
                    let text = format!("hook `{name}` rewrote the arguments");
                    call.note(StageName::Hooks, text);
                }
                HookVerdict::Continue if hook.notes_passes(false) => {
                    call.note(
                        StageName::Hooks,
                        format!("hook `{name}` let the call through"),
                    );
                }
                HookVerdict::Continue => {}
            }
        }
        Ok(())
    }

    /// Runs the AFTER hooks on a successful result.
    async fn after(
        &self,
        call: &mut Call,
        hooks: &[Arc<dyn Hook>],
        mut result: ToolResult,
    ) -> CallResult {
        for hook in hooks {
            let original = result.clone();
            let view = HookCall {
                tool: &call.tool.def,
                ctx: &call.ctx,
            };
            let name = hook.name();
            match hook.after(view, &mut result).await {
                HookVerdict::Block { reason } => {
                    let text = format!("result blocked by `{name}`");
                    call.note(StageName::Hooks, text);
                    return Err(blocked(hook.as_ref(), reason));
                }
                HookVerdict::Failed { reason } => {
                    result = original;
                    tracing::warn!(
                        hook = name,
                        "after-hook failed; result passed unchanged: {reason}"
                    );
                    let text = format!(
                        "hook `{name}` failed after the call, so the result went through unchanged: {reason}"
                    );
                    call.note(StageName::Hooks, text);
                }
                HookVerdict::Continue if result != original => {
                    call.note(
                        StageName::Hooks,
                        format!("hook `{name}` rewrote the result"),
                    );
                }
                HookVerdict::Continue if hook.notes_passes(true) => {
                    call.note(
                        StageName::Hooks,
                        format!("hook `{name}` let the result through"),
                    );
                }
                HookVerdict::Continue => {}
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

    fn enter(&self, call: &mut Call) -> Enter {
        // Hooks may wait (a plugin's hook is a round trip); with none for
        // this tool the stage has nothing to hold.
        let tool = &call.tool.def;
        if self
            .hooks
            .iter()
            .chain(self.live.load().iter())
            .any(|h| h.applies(tool))
        {
            Enter::Wrap
        } else {
            Enter::Pass
        }
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let hooks = self.for_call(&call.tool.def);
            self.before(call, &hooks).await?;
            match next.run(call).await {
                Ok(result) => self.after(call, &hooks, result).await,
                Err(e) => Err(e),
            }
        })
    }
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
