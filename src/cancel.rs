//! Cancellation as a value: every call has a live owner
//! (docs/architecture/decisions.md, "Every call has a live owner;
//! cancellation is a value").
//!
//! A call is cancelled by firing its [`Cancel`], never by dropping the
//! future that runs it: [`crate::Engine::call_cancellable`] races the
//! pipeline against the token, drops the pipeline when it fires (which
//! kills a shell command's process group and closes a pending approval as
//! `cancelled`), and still writes the call's audit row and its
//! `call.finished` event. A dropped future would leave neither.
//!
//! Tokens form a tree, as the owners do: the server's root (fired with
//! [`CancelReason::Shutdown`] when the shutdown grace runs out), one per
//! connection or HTTP session (fired when the client goes away), one per
//! request (fired by `notifications/cancelled`). Each carries the reason
//! it was fired with; a token fired through an ancestor reports the
//! ancestor's reason, so the audit row says who ended the call.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// Why a call was cancelled. Written to the audit log and sent to agents,
/// so variants are only ever added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CancelReason {
    /// The client sent `notifications/cancelled` for the request.
    ClientCancelled,
    /// The client went away: its connection closed or stopped taking
    /// replies, or it ended its HTTP session.
    ClientDisconnected,
    /// toolgate is shutting down and the call outlived the grace period
    /// (or was waiting for a person, who can no longer answer).
    Shutdown,
}

impl CancelReason {
    /// The snake_case name used on the wire and in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClientCancelled => "client_cancelled",
            Self::ClientDisconnected => "client_disconnected",
            Self::Shutdown => "shutdown",
        }
    }

    /// Why, in words, completing "the call was cancelled because …".
    pub fn describe(self) -> &'static str {
        match self {
            Self::ClientCancelled => "the client cancelled it",
            Self::ClientDisconnected => "the client disconnected",
            Self::Shutdown => "toolgate is shutting down",
        }
    }
}

impl std::fmt::Display for CancelReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One node of the tree: the reason it was fired with, and its parent's.
#[derive(Debug, Default)]
struct Node {
    reason: OnceLock<CancelReason>,
    parent: Option<Arc<Node>>,
}

/// A cancellation token that says why it fired. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    token: CancellationToken,
    node: Arc<Node>,
}

impl Cancel {
    /// A root token, fired only by [`Self::cancel`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A token fired with this one (reporting this one's reason) or on
    /// its own (reporting its own).
    pub fn child(&self) -> Self {
        Self {
            token: self.token.child_token(),
            node: Arc::new(Node {
                reason: OnceLock::new(),
                parent: Some(self.node.clone()),
            }),
        }
    }

    /// Fires the token and its descendants. The first reason sticks, along
    /// the whole line of ancestors: a call the client cancelled stays
    /// client-cancelled if the server shuts down a moment later, and a
    /// connection dropped after shutdown cut its calls reports shutdown.
    pub fn cancel(&self, reason: CancelReason) {
        if self.token.is_cancelled() {
            return;
        }
        // Set before firing: whoever wakes on the token reads it.
        let _ = self.node.reason.set(reason);
        self.token.cancel();
    }

    /// Whether it fired (directly or through an ancestor).
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Why it fired; `None` while it has not. Its own reason first, else
    /// the nearest ancestor's.
    pub fn reason(&self) -> Option<CancelReason> {
        if !self.token.is_cancelled() {
            return None;
        }
        let mut node = Some(&self.node);
        while let Some(n) = node {
            if let Some(r) = n.reason.get() {
                return Some(*r);
            }
            node = n.parent.as_ref();
        }
        None
    }

    /// Whether it fired through [`Self::cancel`] on this very token (not
    /// an ancestor) with `reason`.
    pub fn cancelled_here(&self, reason: CancelReason) -> bool {
        self.node.reason.get() == Some(&reason)
    }

    /// Whether `other` is this very token (a clone of it), not merely one
    /// of the same tree.
    pub fn same_as(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }

    /// Waits until it fires; returns why.
    pub async fn cancelled(&self) -> CancelReason {
        self.token.cancelled().await;
        // Every path that fires a token sets a reason first; the fallback
        // only covers a token fired by a plain `CancellationToken` parent,
        // which this type never makes.
        self.reason().unwrap_or(CancelReason::ClientDisconnected)
    }

    /// A guard that fires the token with `reason` when dropped, unless
    /// [`CancelOnDrop::disarm`]ed: for owners that are futures, such as an
    /// HTTP handler that the server drops when its client disconnects.
    pub fn cancel_on_drop(&self, reason: CancelReason) -> CancelOnDrop {
        CancelOnDrop {
            cancel: Some(self.clone()),
            reason,
        }
    }
}

/// See [`Cancel::cancel_on_drop`].
#[derive(Debug)]
pub struct CancelOnDrop {
    cancel: Option<Cancel>,
    reason: CancelReason,
}

impl CancelOnDrop {
    /// The owner finished normally: dropping no longer cancels.
    pub fn disarm(mut self) {
        self.cancel = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.cancel.take() {
            c.cancel(self.reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_reports_its_ancestors_reason_unless_it_has_its_own() {
        let root = Cancel::new();
        let conn = root.child();
        let (a, b) = (conn.child(), conn.child());
        assert_eq!(a.reason(), None);
        a.cancel(CancelReason::ClientCancelled);
        assert!(a.is_cancelled() && !b.is_cancelled() && !conn.is_cancelled());
        root.cancel(CancelReason::Shutdown);
        assert_eq!(a.reason(), Some(CancelReason::ClientCancelled));
        assert_eq!(b.reason(), Some(CancelReason::Shutdown));
        assert_eq!(conn.reason(), Some(CancelReason::Shutdown));
        assert!(a.cancelled_here(CancelReason::ClientCancelled));
        assert!(!b.cancelled_here(CancelReason::Shutdown));
    }

    #[test]
    fn the_first_reason_sticks_along_the_line_of_ancestors() {
        let c = Cancel::new();
        c.cancel(CancelReason::ClientDisconnected);
        c.cancel(CancelReason::Shutdown);
        assert_eq!(c.reason(), Some(CancelReason::ClientDisconnected));
        let root = Cancel::new();
        let conn = root.child();
        let call = conn.child();
        root.cancel(CancelReason::Shutdown);
        conn.cancel(CancelReason::ClientDisconnected);
        assert_eq!(call.reason(), Some(CancelReason::Shutdown));
        assert!(!conn.cancelled_here(CancelReason::ClientDisconnected));
    }

    #[tokio::test]
    async fn waiting_wakes_with_the_reason() {
        let conn = Cancel::new();
        let call = conn.child();
        let waiter = tokio::spawn(async move { call.cancelled().await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        conn.cancel(CancelReason::ClientDisconnected);
        assert_eq!(waiter.await.unwrap(), CancelReason::ClientDisconnected);
    }

    #[test]
    fn a_drop_guard_cancels_unless_disarmed() {
        let c = Cancel::new();
        c.cancel_on_drop(CancelReason::ClientDisconnected).disarm();
        assert!(!c.is_cancelled());
        drop(c.cancel_on_drop(CancelReason::ClientDisconnected));
        assert_eq!(c.reason(), Some(CancelReason::ClientDisconnected));
    }

    #[test]
    fn names_are_stable() {
        let names: Vec<_> = [
            CancelReason::ClientCancelled,
            CancelReason::ClientDisconnected,
            CancelReason::Shutdown,
        ]
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
        assert_eq!(
            names,
            ["client_cancelled", "client_disconnected", "shutdown"]
        );
    }
}
