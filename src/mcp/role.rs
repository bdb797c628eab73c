//! Methods a listener answers besides MCP, behind a credential: how the
//! control socket (the `toolgate` CLI's) rides on the same JSON-RPC server
//! as the agents' socket.
//!
//! The MCP server knows only this trait; the control transport that
//! implements it (`control::socket`) sits above, beside the console. So the
//! agent protocol depends on nothing that steers the engine, and an agent
//! listener, built without a role, cannot answer a control method at all.

use futures::future::BoxFuture;
use serde_json::Value;

use super::jsonrpc::Refused;
use crate::context::Caller;

/// An extra role for one listener: every connection must authenticate
/// first, then may call the role's methods alongside MCP's.
pub trait ControlRole: std::fmt::Debug + Send + Sync + 'static {
    /// A connection's first request, before it has authenticated: the
    /// answer to the authentication method when `method` is it and the
    /// credential is right (the connection is then authenticated), a
    /// refusal otherwise.
    ///
    /// # Errors
    /// The method is not the authentication method, or the credential is
    /// missing or wrong.
    fn authenticate(&self, method: &str, params: Option<&Value>) -> Result<Value, Refused>;

    /// Whether `method` is one of the role's.
    fn answers(&self, method: &str) -> bool;

    /// Answers one of the role's methods for `caller`, the connection's
    /// peer (recorded as who decided).
    fn handle<'a>(
        &'a self,
        caller: &'a Caller,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, Refused>>;
}
