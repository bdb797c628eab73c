//! The console transport: the person's side of the engine over the
//! localhost HTTP server that also serves `/mcp`, under its own role and
//! token (docs/architecture/decisions.md, "The console is a third role on
//! the HTTP listener"; docs/architecture/console-api.md is the contract).
//!
//! - [`auth`]: one-time login links, session cookies and the console
//!   bearer token; the console role never accepts the agents' token.
//!   [`sessions`]: the sessions' digests on disk, so a tab stays signed in
//!   across an engine restart.
//! - [`guard`]: Host/Origin checks, authentication and security headers.
//! - [`routes`]: the JSON API (`/api/...`), the SSE event stream and the
//!   login exchange; [`assets`]: the web UI.
//! - [`connect`]: the Connect view's routes, beside the control service
//!   like the policy editor (they edit files, not engine state).
//! - [`api`]: [`ConsoleApi`], what the routes ask of the engine;
//!   `control_api`: its implementation, the control service
//!   ([`crate::control::Control`]), which the CLI's control socket also
//!   serves.
//!
//! [`router`] builds the console's routes; the daemon merges them with the
//! `/mcp` endpoint's on one listener, each with its own guard.

pub mod api;
pub mod assets;
pub mod auth;
pub mod bindings;
pub mod connect;
mod control_api;
pub mod error;
mod guard;
mod routes;
pub mod sessions;

use std::sync::Arc;

use axum::Router;

pub use api::{ConsoleApi, FeedItem};
pub use assets::UiSource;
pub use auth::ConsoleAuth;
pub use error::{ApiError, Code};
pub use guard::CSP;

use crate::policy::editor::PolicyEditor;

/// Everything the console's routes need.
#[derive(Debug, Clone)]
pub struct Console<A> {
    /// The engine's side.
    pub api: A,
    /// The console's secrets.
    pub auth: ConsoleAuth,
    /// The policy editor.
    pub editor: PolicyEditor,
    /// Connecting MCP clients; `None` answers `503 unavailable`.
    pub connect: Option<connect::ConnectDesk>,
    /// Where the UI comes from.
    pub ui: UiSource,
    /// The port we listen on (Host/Origin checks).
    pub port: u16,
    /// The agents' MCP token, recognised only to refuse it with a message.
    pub agent_token: Arc<str>,
}

/// The console's routes: `/login`, `/api/...` and the UI at `/`.
pub fn router<A: ConsoleApi>(console: Console<A>) -> Router {
    routes::router(console)
}
