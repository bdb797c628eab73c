//! toolgate's desktop shell: the engine with a window, a tray and
//! notifications (the contract: docs/architecture/overview.md, "The
//! desktop app", and docs/architecture/decisions.md, "The desktop app is a
//! console client of its own engine").
//!
//! - [`engine`]: attach to the live engine of the data dir, or start the
//!   `toolgate serve` daemon in this process; the console link.
//! - [`client`]: the console API client (snapshot, SSE stream, decisions).
//! - [`state`]: [`state::DesktopState`], the tray and notification models
//!   derived from the stream (pure, unit-tested).
//! - [`shell`]: the loop that feeds the state and renders it.
//! - [`tray`], [`notify`], [`commands`]: the Tauri tray, freedesktop
//!   notifications, the two desktop-settings commands.
//! - [`app`]: the Tauri app itself: window, single instance, autostart,
//!   lifecycle.
//! - [`args`]: `--version` and `--help`, answered before any window.

pub mod app;
pub mod args;
pub mod client;
pub mod commands;
pub mod engine;
pub mod notify;
pub mod settings;
pub mod shell;
pub mod state;
pub mod tray;
pub mod wire;

pub use app::{builder, configure, run};
