//! MCP for agents: the server agents talk to (over the Unix socket, stdio
//! via `toolgate mcp-bridge`, or streamable HTTP), with toolgate's gate-mode
//! extensions. See `docs/agent-protocol.md` for the wire contract.

pub mod budget;
pub mod convert;
pub mod frame;
mod gate;
mod hook;
pub mod http;
pub mod jsonrpc;
pub mod leading_id;
pub mod role;
pub mod server;
pub mod shape;

pub use role::ControlRole;
pub use server::{McpServer, ServerOptions};
