//! Installing toolgate's hooks into coding agents' settings (filled in
//! with the hook spec).

use super::{ClientId, ConnectEnv, ConnectError, HooksStatus, Prepared};

/// The hooks of `client`, if it has a hook system.
pub fn status(_env: &ConnectEnv, _client: ClientId) -> Option<HooksStatus> {
    None
}

pub(super) fn install(_env: &ConnectEnv, client: ClientId) -> Result<Prepared, ConnectError> {
    Err(ConnectError::NoHooks { client })
}

pub(super) fn remove(_env: &ConnectEnv, client: ClientId) -> Result<Prepared, ConnectError> {
    Err(ConnectError::NoHooks { client })
}
