//! The Connect view's routes (`/api/connect/clients`, `/plan`, `/apply`):
//! the MCP clients on this machine, what connecting or disconnecting one
//! would change, and carrying out a plan the person read
//! ([`crate::connect`] does the work; docs/architecture/console-api.md,
//! HTTP API).
//!
//! Like the policy editor, this answers beside the control service rather
//! than through it: connect edits files (the clients' configs and the
//! engine's own config, which the engine then reloads by itself), not the
//! engine's state, and the CLI does the same edits without an engine.
//!
//! The engine's functions read files, `/proc` and the keychain, so each
//! runs on a blocking thread; the [`ConnectEnv`] is built afresh for each
//! request, because the policy's project directories (whose project-scope
//! files count) change when the config is reloaded.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use super::api::ApiResult;
use super::error::{ApiError, Code};
use crate::connect::{
    self, Action, Applied, ClientId, ClientStatus, ConnectEnv, ConnectError, Plan,
};
use crate::secrets::SecretStore;

/// `POST /api/connect/plan`'s body.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
#[ts(rename = "ConnectPlanBody")]
pub struct PlanBody {
    /// Which client.
    pub client: ClientId,
    /// What to do to it.
    pub action: Action,
}

/// `POST /api/connect/apply`'s body: the plan exactly as the person saw
/// it; the engine plans again and refuses when anything differs.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
#[ts(rename = "ConnectApplyBody")]
pub struct ApplyBody {
    /// The plan shown.
    pub plan: Plan,
}

/// `GET /api/connect/clients`' answer.
#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
#[ts(rename = "ConnectClients")]
pub struct ClientsView {
    /// The HOME the clients were looked for in, so paths under it can be
    /// shown as `~/...`, as the CLI does.
    pub home: String,
    /// Every known client, found or not, in the engine's order.
    pub clients: Vec<ClientStatus>,
}

/// Where a running engine's connect works: this process's HOME, the
/// engine's config file (the one it watches, so connected servers start by
/// themselves), its data dir, and as projects (whose project-scope client
/// files count) the policy's project directories and the built-in tools'
/// roots (`--root`), which a person names for the project they work in.
#[derive(Debug, Clone)]
pub struct EnginePlaces {
    /// The engine, for its policy's project directories as now.
    pub engine: crate::Engine,
    /// The config file connect adds servers to.
    pub config_file: Option<PathBuf>,
    /// The engine's data dir (undo records).
    pub data_dir: PathBuf,
    /// The built-in tools' roots.
    pub roots: Vec<PathBuf>,
}

impl EnginePlaces {
    /// The environment for one request: the project directories as the
    /// policy has them now.
    pub fn env(&self) -> ConnectEnv {
        let mut projects = self.engine.policy().load().config.project_dirs.clone();
        for r in &self.roots {
            if !projects.contains(r) {
                projects.push(r.clone());
            }
        }
        ConnectEnv::from_process(
            projects,
            self.config_file.clone(),
            Some(self.data_dir.clone()),
        )
    }
}

type EnvFn = dyn Fn() -> ConnectEnv + Send + Sync;
type StoreFn = dyn Fn() -> Box<dyn SecretStore> + Send + Sync;

/// What the Connect routes need: where connect works, and the keychain.
#[derive(Clone)]
pub struct ConnectDesk {
    env: Arc<EnvFn>,
    store: Arc<StoreFn>,
}

impl std::fmt::Debug for ConnectDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectDesk").finish_non_exhaustive()
    }
}

impl ConnectDesk {
    /// A desk that builds its environment with `env` for every request and
    /// opens the keychain with `store` for every apply.
    pub fn new(
        env: impl Fn() -> ConnectEnv + Send + Sync + 'static,
        store: impl Fn() -> Box<dyn SecretStore> + Send + Sync + 'static,
    ) -> Self {
        Self {
            env: Arc::new(env),
            store: Arc::new(store),
        }
    }

    /// The engine's desk ([`EnginePlaces`]), with the OS keychain.
    pub fn for_engine(places: EnginePlaces) -> Self {
        Self::new(move || places.env(), crate::secrets::open_keychain)
    }

    /// `GET /api/connect/clients`: every known client, found or not.
    pub async fn status(&self) -> ApiResult<ClientsView> {
        let env = self.env.clone();
        blocking(move || {
            let env = env();
            Ok(ClientsView {
                home: env.home.to_string_lossy().into_owned(),
                clients: connect::status(&env),
            })
        })
        .await
    }

    /// `POST /api/connect/plan`: what an action would change. Writes
    /// nothing.
    pub async fn plan(&self, body: PlanBody) -> ApiResult<Plan> {
        let env = self.env.clone();
        blocking(move || connect::plan(&env(), body.client, body.action)).await
    }

    /// `POST /api/connect/apply`: carries out the plan the person saw, or
    /// refuses (`409 conflict`) when a file changed since.
    pub async fn apply(&self, body: ApplyBody) -> ApiResult<Applied> {
        let (env, store) = (self.env.clone(), self.store.clone());
        blocking(move || connect::apply(&env(), store().as_ref(), &body.plan)).await
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ConnectError> + Send + 'static,
) -> ApiResult<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(ApiError::from),
        Err(e) => Err(ApiError::new(
            Code::Internal,
            format!("connect stopped unexpectedly: {e}"),
        )),
    }
}

impl From<ConnectError> for ApiError {
    /// The engine's one line as the message; the code says how a client
    /// should take it: a plan overtaken by changes to the files is a
    /// `conflict` (look at the new plan), a client already (or no longer)
    /// connected is `stale` (the view is behind), a file that does not
    /// parse or a request that makes no sense for that client is
    /// `invalid`, a keychain that cannot be reached is `unavailable`.
    fn from(e: ConnectError) -> Self {
        let code = match &e {
            ConnectError::Stale { .. } => Code::Conflict,
            ConnectError::AlreadyConnected { .. }
            | ConnectError::NotConnected { .. }
            | ConnectError::Hooks { .. } => Code::Stale,
            ConnectError::Malformed { .. }
            | ConnectError::NothingToConnect { .. }
            | ConnectError::NoHooks { .. }
            | ConnectError::ToolgateConfig { .. } => Code::Invalid,
            ConnectError::Secret(_) => Code::Unavailable,
            _ => Code::Internal,
        };
        ApiError::new(code, e.to_string())
    }
}

#[cfg(test)]
#[path = "connect_tests.rs"]
mod tests;
