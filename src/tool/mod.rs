//! What a tool is: its definition ([`ToolDef`]), what it returns
//! ([`ToolResult`]) and how it is run ([`Tool`]).
//!
//! Every source of tools (built-ins, plugins, agents, upstream MCP servers)
//! produces the same `ToolDef`, so the pipeline governs them all alike.

mod def;
mod result;
mod typed;

use futures::future::BoxFuture;
use serde_json::Value;

pub use def::{
    Annotations, GuardKind, JsonObject, ParamGuard, Risk, Source, ToolDef, ToolName, ToolNameError,
    Trust,
};
pub(crate) use result::json_len;
pub use result::{Content, ToolResult};
pub use typed::{TypedTool, schema_for, typed_tool};

use crate::context::CallContext;
use crate::error::CallError;

/// A runnable tool. Arguments arrive already cast and validated against the
/// tool's input schema; the context carries what the agent must not be able
/// to forge (caller, session), which is why it is not part of the arguments.
pub trait Tool: Send + Sync + 'static {
    /// Runs the tool once. Retry, timeout and the breaker live outside.
    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, CallError>>;

    /// The tool's own argument rules beyond its schema (a header name the
    /// HTTP client cannot send), checked by the validate stage with the
    /// schema, before guards and policy: a call that cannot run is refused
    /// before a person is asked to approve it. Runs
    /// again in effect when the tool does, so it must be cheap and pure.
    ///
    /// # Errors
    /// [`CallError::InvalidArgs`] naming each argument that cannot work.
    fn check(&self, args: &Value) -> Result<(), CallError> {
        let _ = args;
        Ok(())
    }
}

impl<F> Tool for F
where
    F: Fn(Value, &CallContext) -> BoxFuture<'static, Result<ToolResult, CallError>>
        + Send
        + Sync
        + 'static,
{
    fn call<'a>(
        &'a self,
        args: Value,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolResult, CallError>> {
        self(args, ctx)
    }
}
