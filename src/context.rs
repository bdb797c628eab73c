//! Who is calling, and the per-session state tools may read: PraisonAI's
//! `Injected[T]`. None of it is part of a tool's arguments, so an agent
//! cannot forge its identity or another session's state through them; the
//! socket layer fills it from the peer's credentials.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::wire::write_caller;

/// Who is calling, as the entry point established it; never the caller's
/// own words, except `client_name`, which is kept apart for that reason.
///
/// What may *grant* anything (a caller profile looser than `[policy]`, a
/// remembered rule tied to a caller) is `pid`/`uid`/`exe`, read from the
/// kernel, and `agent_id`, held by the connection that registered it; see
/// `docs/policy.md`, "Who is calling".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Caller {
    /// `cli`, `socket`, `http`, `test`, ...
    pub via: &'static str,
    /// The client's process id (Unix socket peers): the peer's, or, when
    /// the peer is toolgate's own stdio bridge, the bridge's parent's, the
    /// process that started it (as the kernel reports it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Peer user id (Unix socket peers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// The client's executable, when readable: the process `pid` names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// The pid of toolgate's stdio bridge, when the peer was one and
    /// `pid`/`exe` are therefore its parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bridge_pid: Option<i32>,
    /// The MCP client's self-reported name: shown to people and usable to
    /// narrow a caller profile, never enough to grant (any process can
    /// claim any name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    /// The agent id the connection registered in gate mode; the
    /// connection holds it, and no other can take it, until it closes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The call came through the `tool_call` bridge tool (see
    /// [`crate::search`]): the same caller, marked so people see how the
    /// model reached the tool. Not part of any identity a rule remembers.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub through_tool_call: bool,
}

impl Caller {
    /// A caller known only by its entry point.
    pub fn via(via: &'static str) -> Self {
        Self {
            via,
            ..Self::default()
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_caller(
            f,
            self.via,
            self.client_name.as_deref(),
            self.pid,
            self.bridge_pid,
            self.through_tool_call,
        )
    }
}

/// Identifies one agent session (one socket connection, one CLI run).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SessionId(Arc<str>);

impl SessionId {
    /// Wraps an id chosen by the entry point.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as a shared string (a reference count, no copy).
    pub fn shared(&self) -> Arc<str> {
        self.0.clone()
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Typed per-session state shared by all calls of one session. Keyed by
/// type, like `http::Extensions`, so two tools cannot clash on a string key.
#[derive(Clone, Default)]
pub struct SessionState(Arc<Mutex<HashMap<TypeId, Box<dyn Any + Send>>>>);

impl SessionState {
    /// Runs `f` on the session's value of type `T`, creating it with
    /// `Default` on first use.
    pub fn with<T: Any + Send + Default, R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // A panic inside `f` cannot leave the map itself inconsistent.
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()));
        match slot.downcast_mut::<T>() {
            Some(v) => f(v),
            // Unreachable by construction (keyed by TypeId), but recover
            // rather than panic.
            None => {
                let mut fresh = T::default();
                let r = f(&mut fresh);
                *slot = Box::new(fresh);
                r
            }
        }
    }
}

impl fmt::Debug for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionState { .. }")
    }
}

/// One agent session as an entry point sees it: created per connection (or
/// per CLI run), it ties calls together for the loop guard and shares state.
#[derive(Debug, Clone)]
pub struct Session {
    /// The session id.
    pub id: SessionId,
    /// Who is on the other end, as the entry point established it.
    pub caller: Arc<Caller>,
    /// State shared by the session's calls.
    pub state: SessionState,
}

impl Session {
    /// A fresh session for `caller`.
    pub fn new(id: impl Into<Arc<str>>, caller: Caller) -> Self {
        Self {
            id: SessionId::new(id),
            caller: Arc::new(caller),
            state: SessionState::default(),
        }
    }
}

/// What a tool receives besides its arguments.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The pipeline's id for this call (also in the audit log).
    pub call_id: u64,
    /// Who is calling.
    pub caller: Arc<Caller>,
    /// Which session the call belongs to.
    pub session: SessionId,
    /// State shared by the session's calls.
    pub state: SessionState,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Counter(u32);

    #[test]
    fn state_is_shared_within_a_session_and_typed() {
        let s = SessionState::default();
        let s2 = s.clone();
        s.with(|c: &mut Counter| c.0 += 1);
        assert_eq!(s2.with(|c: &mut Counter| c.0), 1);
        assert_eq!(SessionState::default().with(|c: &mut Counter| c.0), 0);
    }
}
