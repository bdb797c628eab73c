//! Agent ids and the connections that hold them.
//!
//! In gate mode an agent registers its tools under an id (they join the
//! registry as `agent:<id>`); the id is what `toolgate/gate` checks, and it
//! names the caller to the policy (`[[policy.callers]] agent = "…"`). If any
//! connection could register under any id, a second connection could
//! replace another agent's tool descriptions for every client and gate its
//! tools. So an id belongs to the connection that claimed it first, for as
//! long as that connection lives: nobody else can claim it, and when the
//! holder's [`AgentClaim`] is dropped (the connection ended) its tools
//! leave the registry and the id is free again.
//!
//! What holding an id proves, and what it does not: only that this
//! connection got there first. Any program of the user can claim an id
//! nobody holds, so an id alone never grants anything (see
//! `docs/policy.md`, "Who is calling").

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::registry::Registry;
use crate::tool::Source;

/// An agent id another connection holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "agent id `{id}` is held by another connection ({holder}); an agent id belongs to the \
     connection that registered it first until that connection closes, so choose another id \
     or stop that agent first"
)]
pub struct AgentIdTaken {
    /// The id.
    pub id: String,
    /// Who holds it, as the caller wording shows it (`socket pid 4242`).
    pub holder: String,
}

/// Longest agent id, in bytes. An id names an agent to people and to the
/// policy, and it is written into every call's caller (the audit row, the
/// approval request, the live feed): an unbounded one let one agent make
/// every row of its calls as large as a frame.
pub const MAX_ID_BYTES: usize = 128;

/// Why `id` cannot be an agent id, if it cannot: empty, longer than
/// [`MAX_ID_BYTES`], or holding control characters (which would forge
/// line breaks wherever it is shown).
pub fn check_id(id: &str) -> Result<(), String> {
    if id.trim().is_empty() {
        return Err("`agentId` must not be empty".into());
    }
    if id.len() > MAX_ID_BYTES {
        return Err(format!(
            "`agentId` is {} bytes; an agent id is a name of at most {MAX_ID_BYTES} bytes",
            id.len()
        ));
    }
    if id.chars().any(char::is_control) {
        return Err("`agentId` must not hold control characters (line breaks, tabs, NUL)".into());
    }
    Ok(())
}

/// The agent ids held by live connections, for one engine. Cloning shares
/// it.
#[derive(Clone)]
pub struct AgentIds {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    held: Mutex<HashMap<Arc<str>, Holder>>,
    next: AtomicU64,
}

struct Holder {
    /// Tells this claim from a later one of the same id.
    token: u64,
    /// Who, in the caller wording.
    who: String,
}

impl AgentIds {
    /// No id held yet; released claims remove their tools from `registry`.
    pub fn new(registry: Registry) -> Self {
        Self {
            inner: Arc::new(Inner {
                registry,
                held: Mutex::new(HashMap::new()),
                next: AtomicU64::new(1),
            }),
        }
    }

    fn held(&self) -> MutexGuard<'_, HashMap<Arc<str>, Holder>> {
        self.inner
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims `id` for the connection of `who` (the caller wording, for the
    /// error another claimant gets).
    ///
    /// # Errors
    /// [`AgentIdTaken`] while another claim of `id` lives.
    pub fn claim(&self, id: &str, who: &str) -> Result<AgentClaim, AgentIdTaken> {
        let mut held = self.held();
        if let Some(h) = held.get(id) {
            return Err(AgentIdTaken {
                id: id.to_owned(),
                holder: h.who.clone(),
            });
        }
        let id: Arc<str> = id.into();
        let token = self.inner.next.fetch_add(1, Ordering::Relaxed);
        held.insert(
            id.clone(),
            Holder {
                token,
                who: who.to_owned(),
            },
        );
        Ok(AgentClaim {
            ids: self.clone(),
            id,
            token,
        })
    }

    /// Who holds `id`, in the caller wording; `None` if nobody does.
    pub fn holder(&self, id: &str) -> Option<String> {
        self.held().get(id).map(|h| h.who.clone())
    }
}

impl fmt::Debug for AgentIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentIds")
            .field("held", &self.held().len())
            .finish()
    }
}

/// One connection's hold on an agent id. Dropping it removes the agent's
/// tools and frees the id, in that order and under the lock claims take,
/// so a new holder never inherits (or loses) tools of the old one.
pub struct AgentClaim {
    ids: AgentIds,
    id: Arc<str>,
    token: u64,
}

impl AgentClaim {
    /// The id held.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The registry source of the agent's tools, `agent:<id>`.
    pub fn source(&self) -> Source {
        Source::Agent(self.id.clone())
    }
}

impl fmt::Debug for AgentClaim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentClaim").field("id", &self.id).finish()
    }
}

impl Drop for AgentClaim {
    fn drop(&mut self) {
        let mut held = self.ids.held();
        self.ids.inner.registry.unregister_source(&self.source());
        if held.get(&self.id).is_some_and(|h| h.token == self.token) {
            held.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_short_printable_names() {
        assert_eq!(super::check_id("researcher-1"), Ok(()));
        assert_eq!(super::check_id("Research Agent ✓"), Ok(()));
        assert!(super::check_id("  ").unwrap_err().contains("empty"));
        let long = "a".repeat(super::MAX_ID_BYTES + 1);
        assert!(super::check_id(&long).unwrap_err().contains("129 bytes"));
        assert_eq!(super::check_id(&long[1..]), Ok(()));
        assert!(super::check_id("a\nb").unwrap_err().contains("control"));
        assert!(super::check_id("a\u{0}b").unwrap_err().contains("control"));
    }

    use std::sync::Arc;

    use futures::FutureExt;
    use serde_json::json;

    use super::*;
    use crate::context::CallContext;
    use crate::events::EventBus;
    use crate::pipeline::testing::def;
    use crate::tool::{Tool, ToolResult};

    #[test]
    fn an_id_is_held_until_its_claim_is_dropped_and_takes_its_tools_along() {
        let registry = Registry::new(EventBus::new(), false);
        let ids = AgentIds::new(registry.clone());
        let first = ids.claim("x", "socket pid 1").unwrap();
        let tool = def("lookup", json!({"type": "object"})).with_source(first.source());
        let runner: Arc<dyn Tool> =
            Arc::new(|_, _: &CallContext| async { Ok(ToolResult::text("ran")) }.boxed());
        registry.upsert(tool, runner).unwrap();

        let taken = ids.claim("x", "socket pid 2").unwrap_err();
        assert_eq!(taken.holder, "socket pid 1");
        assert!(
            taken
                .to_string()
                .contains("agent id `x` is held by another connection (socket pid 1)")
        );
        assert_eq!(ids.holder("x").as_deref(), Some("socket pid 1"));
        let other = ids.claim("y", "socket pid 2").unwrap();
        assert_eq!(other.id(), "y");

        drop(first);
        assert!(
            registry.snapshot().get("lookup").is_none(),
            "its tools left"
        );
        assert_eq!(ids.holder("x"), None);
        let second = ids.claim("x", "socket pid 2").unwrap();
        assert_eq!(ids.holder("x").as_deref(), Some("socket pid 2"));
        drop(second);
        assert_eq!(ids.holder("x"), None);
        assert_eq!(ids.holder("y").as_deref(), Some("socket pid 2"));
    }
}
