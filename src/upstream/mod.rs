//! Upstream MCP servers (stdio, SSE, streamable HTTP, WebSocket) as governed
//! tools.
//!
//! Every tool of every configured MCP server joins the [`Registry`] as
//! `<server>__<tool>` with [`Source::Mcp`], the server's trust level and the
//! tool's own `inputSchema`, so a call to it runs through exactly the same
//! pipeline as a built-in (casting, validation, policy, approval, timeout,
//! retry, breaker, truncation, trust-wrapping, audit). Nothing here decides
//! whether a call may run; this module only connects, keeps connected, and
//! translates.
//!
//! Layout, one concept per module:
//! - [`Upstreams`] (`manager`): the set of running servers; `apply` is the
//!   hot-reload entry point, `shutdown` ends them all.
//! - `supervisor`: one task per server: connect, import tools, watch for
//!   exit and `list_changed`, reconnect with capped exponential backoff.
//! - `transport/*`: one file per transport (stdio, legacy SSE, streamable
//!   HTTP, WebSocket); each yields an rmcp client service.
//! - `import`: turns a server's tool list into registry entries (naming,
//!   pins, per-server limits).
//! - `remote_tool`: the [`crate::tool::Tool`] that forwards one call.
//! - `errors`: typed mapping of transport and JSON-RPC failures onto
//!   [`crate::CallError`] classes (see the table there).
//! - [`PinStore`] (`pins`) and `inspect`: rug-pull detection and injection
//!   markers.
//!
//! Wiring (daemon startup):
//!
//! ```no_run
//! # async fn demo(engine: toolgate::Engine, audit: toolgate::audit::AuditLog,
//! #               specs: Vec<toolgate::config::servers::ServerSpec>) -> Result<(), Box<dyn std::error::Error>> {
//! use toolgate::upstream::{PinStore, UpstreamOptions, Upstreams};
//! let pins = PinStore::open(audit.pool().clone()).await?;
//! let upstreams = Upstreams::new(engine.clone(), pins, UpstreamOptions::default());
//! upstreams.apply(specs).await; // again on every config reload
//! // ... serve ...
//! upstreams.shutdown().await; // before exit: ends every server process group
//! # Ok(()) }
//! ```
//!
//! [`Registry`]: crate::registry::Registry
//! [`Source::Mcp`]: crate::tool::Source::Mcp

mod errors;
mod import;
pub(crate) use import::risk as upstream_risk;
mod inspect;
mod manager;
mod naming;
mod pins;
mod remote_tool;
mod status;
mod stderr;
mod supervisor;
pub mod transport;

pub use errors::{UpstreamError, map_service_error};
pub use inspect::{InjectionFlag, scan_description};
pub use manager::{UpstreamOptions, Upstreams};
pub use naming::tool_name;
pub use pins::{PinError, PinRecord, PinStatus, PinStore, PinVersion};
pub use status::{ServerState, ServerStatus};
pub use stderr::StderrTail;
