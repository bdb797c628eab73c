//! Methods of the control socket (the CLI's, never an agent's): inspect
//! and steer the engine: tools with their full definitions, breakers,
//! approvals and remembered rules, upstream servers and pins.

use serde::Serialize;
use serde_json::{Value, json};

use super::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS};
use super::server::Refused;
use crate::Engine;
use crate::approval::{Decider, Decision};
use crate::console::ConsoleAuth;
use crate::context::Caller;
use crate::upstream::Upstreams;

/// Every control method. Only the control role answers them; on the agent
/// socket and the agent HTTP endpoint they are unknown methods (-32601), so
/// an agent cannot approve its own call through the protocol it uses for
/// tools.
pub const METHODS: [&str; 12] = [
    "toolgate/tools",
    "toolgate/breakers",
    "toolgate/breakers/reset",
    "toolgate/approvals",
    "toolgate/approve",
    "toolgate/deny",
    "toolgate/rules",
    "toolgate/rules/rm",
    "toolgate/servers",
    "toolgate/pins",
    "toolgate/pins/approve",
    "toolgate/console/login",
];

/// Whether `method` is a control method.
pub(super) fn is_control(method: &str) -> bool {
    METHODS.contains(&method)
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

fn refused(e: impl std::fmt::Display) -> Refused {
    (INVALID_PARAMS, e.to_string())
}

/// Answers one control method from `caller`, the control socket's peer
/// (recorded as who decided).
pub(super) async fn handle(
    engine: &Engine,
    upstreams: Option<&Upstreams>,
    console: Option<&ConsoleAuth>,
    caller: &Caller,
    method: &str,
    params: Option<Value>,
) -> Result<Value, Refused> {
    let by = || Decider::cli(caller).to_string();
    let no_approvals = || {
        (
            INVALID_PARAMS,
            "this daemon runs without an approval queue".to_owned(),
        )
    };
    let no_upstreams = || {
        (
            INVALID_PARAMS,
            "this daemon manages no upstream servers".to_owned(),
        )
    };
    match method {
        "toolgate/tools" => Ok(json!({"tools": json_of(engine.tools())?})),
        "toolgate/breakers" => Ok(json!({"breakers": json_of(engine.breaker().snapshot())?})),
        "toolgate/breakers/reset" => Ok(
            json!({"reset": engine.breaker().reset(str_param(&params, "tool").unwrap_or_default())}),
        ),
        "toolgate/approvals" => {
            Ok(json!({"pending": json_of(engine.approvals().ok_or_else(no_approvals)?.pending())?}))
        }
        "toolgate/approve" => {
            let a = engine.approvals().ok_or_else(no_approvals)?;
            let mut decision = Decision::approve().by(by());
            if let Some(scope) = str_param(&params, "always") {
                decision = decision.always(scope, None);
            }
            json_of(
                a.decide(id_param(&params)?, decision)
                    .await
                    .map_err(refused)?,
            )
        }
        "toolgate/deny" => {
            let a = engine.approvals().ok_or_else(no_approvals)?;
            let reason = str_param(&params, "reason").map(str::to_owned);
            let decision = Decision::deny(reason).by(by());
            json_of(
                a.decide(id_param(&params)?, decision)
                    .await
                    .map_err(refused)?,
            )
        }
        "toolgate/rules" => {
            Ok(json!({"rules": json_of(engine.approvals().ok_or_else(no_approvals)?.rules())?}))
        }
        "toolgate/rules/rm" => {
            let a = engine.approvals().ok_or_else(no_approvals)?;
            json_of(a.revoke_rule(id_param(&params)?).await.map_err(refused)?)
        }
        "toolgate/servers" => {
            Ok(json!({"servers": json_of(upstreams.ok_or_else(no_upstreams)?.statuses())?}))
        }
        "toolgate/pins" => {
            let up = upstreams.ok_or_else(no_upstreams)?;
            Ok(json!({"pins": json_of(up.pins().list().await.map_err(refused)?)?}))
        }
        "toolgate/pins/approve" => {
            let up = upstreams.ok_or_else(no_upstreams)?;
            let name =
                str_param(&params, "name").ok_or((INVALID_PARAMS, "missing `name`".to_owned()))?;
            json_of(up.approve(name).await.map_err(refused)?)
        }
        "toolgate/console/login" => {
            let auth = console.ok_or((
                INVALID_PARAMS,
                "this daemon serves no console (it was started with --no-http)".to_owned(),
            ))?;
            Ok(json!({"url": auth.login_url()}))
        }
        other => Err((INVALID_PARAMS, format!("`{other}` is not a control method"))),
    }
}
