//! toolgate: one governed pipeline for every tool call an AI agent makes.
//!
//! The engine owns all logic (registry, schemas, pipeline stages, built-in
//! tools); the CLI, the agent socket and the desktop shell are thin hosts
//! around [`Engine`]. See `docs/architecture/` for the decisions behind it.

pub mod agent_ids;
pub mod approval;
pub mod atomic_file;
pub mod audit;
pub mod barrier;
pub mod bridge;
pub mod builtin;
pub mod call_key;
pub mod cancel;
pub mod canonical;
pub mod client;
pub mod config;
pub mod connect;
pub mod console;
pub mod context;
pub mod control;
pub mod daemon;
pub mod discovery;
pub mod engine;
pub mod error;
pub mod events;
pub mod guard;
pub mod hooks;
pub mod json_sketch;
pub mod last_port;
pub mod local_http;
pub mod mcp;
pub mod open_files;
pub mod paths;
pub(crate) mod pause;
pub mod pipeline;
pub mod plugins;
pub mod policy;
pub mod preview;
pub mod private_file;
pub mod process_stats;
pub mod registry;
pub mod schema;
pub mod scrub;
pub mod search;
pub mod secrets;
pub mod settings;
pub mod setup;
pub mod slices;
pub mod socket;
pub mod spawn;
pub mod team;
pub mod tool;
pub mod upstream;
pub mod wire;

pub use engine::{CallReply, Engine};
pub use error::{CallError, ErrorKind};
