//! `toolgate/hook`: the agent-socket method `toolgate hook run` asks. A
//! coding agent's own tool call, as one of its hooks reports it
//! ([`crate::hooks::call::HookCall`]): before it runs, the answer is
//! allow, deny, ask or abstain with a reason; after, the call allowed
//! before is finished with the tool's outcome. See `docs/agent-protocol.md`.

use std::sync::Arc;

use serde_json::Value;

use super::jsonrpc::Refused;
use super::server::{Conn, params_of};
use crate::cancel::Cancel;
use crate::engine::Engine;
use crate::hooks::call::{HookCall, Phase};
use crate::hooks::gating;

/// `toolgate/hook`. `request` is the request's token, `root` the server's
/// (see [`gating::before`]).
pub(super) async fn hook(
    engine: &Engine,
    conn: &Arc<Conn>,
    params: Option<Value>,
    request: &Cancel,
    root: &Cancel,
) -> Result<Value, Refused> {
    let call: HookCall = params_of(params)?;
    let session = conn.session();
    Ok(match call.phase {
        Phase::Before => {
            let answer = gating::before(engine, &session, call, request, root).await;
            serde_json::to_value(answer).unwrap_or_default()
        }
        Phase::After => gating::after(engine, call).await,
    })
}
