//! Assembling an engine from a validated config: the allowlist from the
//! environment and the file, the guard roots, the built-in tools, and the
//! startup checks. Every host (CLI, daemon, desktop) starts the engine
//! through here, so they all apply the same rules.

use std::path::PathBuf;
use std::sync::Arc;

use crate::barrier::{Barrier, Shield};
use crate::builtin::{fs, http, shell};
use crate::config::Config;
use crate::engine::{Engine, EngineBuilder};
use crate::guard::path::{PathError, PathRoots};
use crate::guard::protect::{OwnFiles, Protected};
use crate::guard::ssrf::SsrfConfig;
use crate::pipeline::allowlist::{ALLOWED_TOOLS_ENV, FilterError, ToolFilter};
use crate::pipeline::guards::GuardConfig;
use crate::registry::RegistryError;

/// Why an engine could not be assembled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The allowlist or denylist is unusable (empty, bad glob, or in strict
    /// mode names that match no tool).
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// A configured root cannot be used.
    #[error("builtin.roots: {0}")]
    Roots(#[from] PathError),
    /// A built-in tool failed to build or register.
    #[error("built-in tool: {0}")]
    Builtin(String),
    /// Registration failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// Everything the environment contributes, read in one place so tests can
/// pass their own.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// Value of `TOOLGATE_ALLOWED_TOOLS`, if set.
    pub allowed_tools: Option<String>,
    /// toolgate's own files on this machine, which governed tools may not
    /// change (the config file in use and its data dir are added from the
    /// config). The daemon passes the ones it really uses.
    pub own_files: OwnFiles,
    /// The toolgate binary that runs governed processes as their warden
    /// (see [`crate::barrier`]); `None`: this host has none, and governed
    /// processes are refused or run unconfined as `[barrier]` says.
    pub warden: Option<PathBuf>,
}

impl Env {
    /// The process environment, with the default locations of toolgate's
    /// own files.
    pub fn from_process() -> Self {
        Self {
            allowed_tools: std::env::var(ALLOWED_TOOLS_ENV).ok(),
            own_files: OwnFiles::defaults(),
            warden: Barrier::preferred_warden(),
        }
    }
}

/// Builds the engine for `config` with the built-in tools registered,
/// reading the process environment.
///
/// # Errors
/// See [`SetupError`].
pub fn engine(config: Config) -> Result<Engine, SetupError> {
    engine_with(config, &Env::from_process(), |b| b)
}

/// Like [`engine`] with an explicit environment and a chance to adjust the
/// builder (add hooks, an audit log) before the tools are registered.
///
/// # Errors
/// See [`SetupError`].
pub fn engine_with(
    config: Config,
    env: &Env,
    adjust: impl FnOnce(EngineBuilder) -> EngineBuilder,
) -> Result<Engine, SetupError> {
    let filter = tool_filter(&config, env)?;
    let roots = Arc::new(PathRoots::new(&config.builtin.roots)?);
    let ssrf = SsrfConfig {
        allow_local: config.builtin.allow_local,
        allowed_hosts: config.builtin.allowed_hosts.clone(),
    };
    let strict = config.strict;
    let upstream_prefixes: Vec<String> = config
        .servers
        .iter()
        .map(|s| format!("{}__", s.name))
        .collect();
    let own = own_files(&config, env);
    let barrier = barrier_for(&config, &own, env);
    let builtins = builtin_tools(&config, &roots, &ssrf, &barrier)?;
    let protected = Protected::new(&own, roots.roots());
    let guards = GuardConfig {
        roots,
        ssrf,
        protected,
        barrier,
        shell_overrides: config.shell_overrides.clone(),
    };
    let engine = adjust(
        Engine::builder(config)
            .filter(filter.clone())
            .guards(guards),
    )
    .build();
    for (def, tool) in builtins {
        engine.registry().register(def, tool)?;
    }
    let snapshot = engine.registry().snapshot();
    let names: Vec<&str> = snapshot
        .sorted()
        .iter()
        .map(|t| t.def.name.as_str())
        .collect();
    for warning in filter.check_unmatched(&names, &upstream_prefixes, strict)? {
        tracing::warn!("{warning}");
    }
    Ok(engine)
}

/// The barrier an engine of `config` runs governed processes under, as
/// `toolgate doctor` shows it: it starts a warden to see what holds.
pub fn barrier(config: &Config, env: &Env) -> Barrier {
    barrier_for(config, &own_files(config, env), env)
}

fn barrier_for(config: &Config, own: &OwnFiles, env: &Env) -> Barrier {
    Barrier::start(
        env.warden.clone(),
        Shield::new()
            .hiding(own.hidden_paths())
            .read_only(&config.barrier.read_only)
            // Plugins' programs run from there: readable and runnable,
            // never changed by what they (or any governed process) start,
            // even when the config dir around it is hidden.
            .read_only(config.path.as_deref().map(crate::plugins::dir_for)),
        config.barrier.clone(),
    )
}

/// What the environment says plus the config file in use and the data dir
/// it names.
fn own_files(config: &Config, env: &Env) -> OwnFiles {
    let mut own = env.own_files.clone();
    if let Some(path) = &config.path {
        own = own.config_file(path);
    }
    if let Some(dir) = &config.data_dir {
        own = own.data_dir(dir);
    }
    own
}

/// The allow/deny lists for `config`: `TOOLGATE_ALLOWED_TOOLS` (in `env`)
/// over the file's `allowed_tools`, plus `denied_tools`. The daemon builds
/// them again on every reload, with the same environment.
///
/// # Errors
/// An empty allowlist or a bad glob.
pub fn tool_filter(config: &Config, env: &Env) -> Result<ToolFilter, FilterError> {
    ToolFilter::from_sources(
        env.allowed_tools.as_deref(),
        config.allowed_tools.clone(),
        config.denied_tools.clone(),
    )
}

/// The built-in tools that are not disabled.
fn builtin_tools(
    config: &Config,
    roots: &Arc<PathRoots>,
    ssrf: &SsrfConfig,
    barrier: &Barrier,
) -> Result<Vec<fs::BuiltTool>, SetupError> {
    let err = |e: &dyn std::fmt::Display| SetupError::Builtin(e.to_string());
    let mut tools = fs::tools(roots.clone()).map_err(|e| err(&e))?;
    tools.push(
        shell::tool(
            roots.clone(),
            config.builtin.shell_max_timeout,
            barrier.clone(),
        )
        .map_err(|e| err(&e))?,
    );
    tools.push(http::tool(ssrf.clone()).map_err(|e| err(&e))?);
    let disabled = &config.builtin.disabled;
    if let Some(unknown) = disabled
        .iter()
        .find(|d| !tools.iter().any(|(def, _)| def.name.as_str() == d.as_str()))
    {
        return Err(SetupError::Builtin(format!(
            "builtin.disabled names `{unknown}`, which is not a built-in tool"
        )));
    }
    tools.retain(|(def, _)| !disabled.iter().any(|d| d == def.name.as_str()));
    Ok(tools)
}
