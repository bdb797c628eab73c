//! The control socket's transport (the CLI's, never an agent's): inspect
//! and steer the engine: tools with their full definitions, breakers,
//! approvals and remembered rules, upstream servers and pins.
//!
//! It rides on the MCP server's JSON-RPC loop as a [`ControlRole`], and
//! sits beside the console's HTTP transport: both are thin layers over
//! one [`Control`]. The console is reached only through [`LoginLinks`],
//! so this transport and the console's know nothing of each other.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Value, json};

use super::Control;
use super::types::{ApproveInput, DenyInput};
use crate::approval::Decider;
use crate::barrier::credential::Credential;
use crate::context::Caller;
use crate::mcp::ControlRole;
use crate::mcp::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, Refused, UNAUTHENTICATED};
use crate::wire::{AUTH_METHOD, AlwaysInput, CONTROL_METHODS, Surface};

/// Mints the console's one-time login links (`toolgate/console/login`,
/// for `toolgate console` and the desktop app). The console implements it;
/// a trait, so this transport needs nothing else of the console.
pub trait LoginLinks: Send + Sync + 'static {
    /// A fresh login URL for a session shown on `surface`.
    fn login_url_for(&self, surface: Surface) -> String;
}

/// The control socket's role on the MCP server: the [`CONTROL_METHODS`], after a
/// connection presents the control credential ([`AUTH_METHOD`]).
pub struct ControlSocket {
    control: Control,
    credential: Credential,
    console: Option<Arc<dyn LoginLinks>>,
}

impl std::fmt::Debug for ControlSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlSocket").finish_non_exhaustive()
    }
}

impl ControlSocket {
    /// Answers through `control`, to connections that present
    /// `credential`; `console` mints login links when the daemon serves a
    /// console (`None`: `--no-http`).
    pub fn new(
        control: Control,
        credential: Credential,
        console: Option<Arc<dyn LoginLinks>>,
    ) -> Self {
        Self {
            control,
            credential,
            console,
        }
    }
}

impl ControlRole for ControlSocket {
    fn authenticate(&self, method: &str, params: Option<&Value>) -> Result<Value, Refused> {
        if method == AUTH_METHOD {
            authenticate(&self.credential, params)
        } else {
            Err(unauthenticated(method))
        }
    }

    fn answers(&self, method: &str) -> bool {
        is_control(method)
    }

    fn handle<'a>(
        &'a self,
        caller: &'a Caller,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, Refused>> {
        Box::pin(handle(
            &self.control,
            self.console.as_deref(),
            caller,
            method,
            params,
        ))
    }
}

/// Checks a connection's `toolgate/auth`.
fn authenticate(required: &Credential, params: Option<&Value>) -> Result<Value, Refused> {
    let presented = params
        .and_then(|p| p.get("credential"))
        .and_then(Value::as_str)
        .ok_or((INVALID_PARAMS, "missing string `credential`".to_owned()))?;
    if required.matches(presented) {
        Ok(json!({"authenticated": true}))
    } else {
        Err((
            UNAUTHENTICATED,
            "wrong control credential: it is the contents of control.token in the engine's data dir"
                .to_owned(),
        ))
    }
}

/// What the control socket answers before `toolgate/auth`.
fn unauthenticated(method: &str) -> Refused {
    (
        UNAUTHENTICATED,
        format!(
            "`{method}` needs the control credential first: send `{AUTH_METHOD}` with the contents of control.token in the engine's data dir (processes toolgate governs cannot read it)"
        ),
    )
}

/// Whether `method` is a control method.
fn is_control(method: &str) -> bool {
    CONTROL_METHODS.contains(&method)
}

fn json_of(v: impl Serialize) -> Result<Value, Refused> {
    serde_json::to_value(v).map_err(|e| (INTERNAL_ERROR, e.to_string()))
}

fn str_param<'a>(p: &'a Option<Value>, key: &str) -> Option<&'a str> {
    p.as_ref().and_then(|p| p.get(key)).and_then(Value::as_str)
}

fn id_param(p: &Option<Value>) -> Result<i64, Refused> {
    p.as_ref()
        .and_then(|p| p.get("id"))
        .and_then(Value::as_i64)
        .ok_or((INVALID_PARAMS, "missing integer `id`".into()))
}

/// `toolgate/tools`: every visible tool; with `search`, those matching it
/// ranked; with `as`, what that client is listed and why.
fn tools(control: &Control, params: Option<&Value>) -> Result<Value, Refused> {
    let engine = control.engine();
    let get = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_str);
    let limit = params
        .and_then(|p| p.get("limit"))
        .and_then(Value::as_u64)
        .map_or(20, |n| usize::try_from(n).unwrap_or(usize::MAX));
    match (get("search"), get("as")) {
        (Some(_), Some(_)) => Err((INVALID_PARAMS, "give `search` or `as`, not both".into())),
        (Some(q), None) => {
            let found: Vec<_> = engine
                .search_tools(q, limit)
                .into_iter()
                .map(|h| h.tool.def.clone())
                .collect();
            Ok(json!({"tools": json_of(found)?}))
        }
        (None, Some(client)) => {
            let connected = engine
                .disclosure()
                .clients()
                .names()
                .iter()
                .any(|c| c == client);
            let listed = engine.plan(Some(client)).listed();
            Ok(
                json!({"tools": json_of(listed)?, "client": json_of(engine.client_view(client, connected))?}),
            )
        }
        (None, None) => Ok(json!({"tools": json_of(engine.tools())?})),
    }
}

fn refused(e: impl std::fmt::Display) -> Refused {
    (INVALID_PARAMS, e.to_string())
}

/// Answers one control method from `caller`, the control socket's peer
/// (recorded as who decided), through the control service: the console
/// and this socket are two transports over the same [`Control`].
async fn handle(
    control: &Control,
    console: Option<&dyn LoginLinks>,
    caller: &Caller,
    method: &str,
    params: Option<Value>,
) -> Result<Value, Refused> {
    let by = Decider::cli(caller);
    let engine = control.engine();
    match method {
        "toolgate/tools" => tools(control, params.as_ref()),
        "toolgate/tools/core" => {
            let name =
                str_param(&params, "name").ok_or((INVALID_PARAMS, "missing `name`".to_owned()))?;
            let pinned = params
                .as_ref()
                .and_then(|p| p.get("pinned"))
                .and_then(Value::as_bool)
                .ok_or((INVALID_PARAMS, "missing boolean `pinned`".to_owned()))?;
            json_of(control.pin_core(name, pinned).await.map_err(refused)?)
        }
        "toolgate/breakers" => Ok(json!({"breakers": json_of(engine.breaker().snapshot())?})),
        "toolgate/breakers/reset" => {
            let tool = str_param(&params, "tool").unwrap_or_default();
            json_of(control.reset_breaker(tool))
        }
        "toolgate/approvals" => {
            Ok(json!({"pending": json_of(control.pending().map_err(refused)?)?}))
        }
        "toolgate/approve" => {
            let input = ApproveInput {
                always: str_param(&params, "always").map(|scope| AlwaysInput {
                    scope: scope.to_owned(),
                    ttl_s: None,
                }),
            };
            json_of(
                control
                    .approve(id_param(&params)?, &by, input)
                    .await
                    .map_err(refused)?,
            )
        }
        "toolgate/deny" => {
            let input = DenyInput {
                reason: str_param(&params, "reason").map(str::to_owned),
                always: None,
            };
            json_of(
                control
                    .deny(id_param(&params)?, &by, input)
                    .await
                    .map_err(refused)?,
            )
        }
        "toolgate/rules" => Ok(json!({"rules": json_of(control.rules().map_err(refused)?)?})),
        "toolgate/rules/rm" => json_of(
            control
                .revoke_rule(id_param(&params)?)
                .await
                .map_err(refused)?,
        ),
        "toolgate/servers" => Ok(json!({"servers": json_of(control.servers())?})),
        "toolgate/pins" => Ok(json!({"pins": json_of(control.pins().await.map_err(refused)?)?})),
        "toolgate/pins/approve" => {
            let name =
                str_param(&params, "name").ok_or((INVALID_PARAMS, "missing `name`".to_owned()))?;
            json_of(control.approve_pin(name).await.map_err(refused)?)
        }
        "toolgate/console/login" => {
            let auth = console.ok_or((
                INVALID_PARAMS,
                "this daemon serves no console (it was started with --no-http)".to_owned(),
            ))?;
            // The desktop app asks for its window's link, so decisions made
            // there are recorded as the desktop window's.
            let surface = match str_param(&params, "for") {
                Some("desktop") => Surface::DesktopWindow,
                None | Some("browser") => Surface::Browser,
                Some(other) => {
                    return Err((
                        INVALID_PARAMS,
                        format!("`for` is `browser` or `desktop`, not `{other}`"),
                    ));
                }
            };
            Ok(json!({"url": auth.login_url_for(surface)}))
        }
        other => Err((INVALID_PARAMS, format!("`{other}` is not a control method"))),
    }
}
