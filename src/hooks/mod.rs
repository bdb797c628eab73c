//! Gating coding agents' built-in tools through their hook systems.
//!
//! Claude Code, Cursor and Gemini CLI run a command before (and after) each
//! of their own tools — a shell command, a file edit, a fetch — and let it
//! answer allow, deny or ask. `toolgate hook run CLIENT` is that command: it
//! turns the agent's payload into one [`call::HookCall`], asks the engine
//! over the agent socket, and renders the engine's answer in the agent's
//! format. See `docs/hooks.md`.

pub mod agent;
pub mod call;
mod claude_code;
mod cursor;
pub mod fallback;
pub mod gating;
mod gemini_cli;
pub mod install_spec;
pub mod mapping;
pub mod prepare;
pub mod protocol;
mod runner;

pub use agent::{HookAgent, UnknownHookAgent};
pub use install_spec::{HookEventSpec, install_spec};
