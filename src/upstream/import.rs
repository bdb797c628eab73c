//! A server's tool list → registry entries.
//!
//! Each tool becomes `<server>__<tool>` (see `naming`) with
//! [`Source::Mcp`], the server's trust, and its own `inputSchema`, so
//! casting and validation apply exactly as for built-ins. Annotations are
//! hints from the server and only ever *raise* risk (`destructiveHint` →
//! high, which asks a person under the default policy); they never lower
//! it. Every tool passes its pin first; a quarantined tool is not
//! registered. Re-importing is a diff: unchanged tools are left alone (no
//! registry event, so agents are not told the list changed when it did
//! not), gone tools are removed, new names that collide with another source
//! are refused with an error naming both.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::Tool as McpTool;

use super::naming::tool_name;
use super::pins::{PinCheck, PinStore, PinVersion};
use super::remote_tool::{PeerSlot, RemoteTool};
use crate::config::servers::ServerSpec;
use crate::engine::Engine;
use crate::events::Event;
use crate::settings::ToolSettings;
use crate::tool::{Annotations, Risk, Source, ToolDef, ToolName};

/// What a server currently has in the registry: name → fingerprint of the
/// registered definition.
pub(crate) type Imported = HashMap<ToolName, String>;

/// Everything an import needs about one server.
pub(crate) struct ImportCtx<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) pins: &'a PinStore,
    pub(crate) spec: &'a ServerSpec,
    pub(crate) server: &'a Arc<str>,
    pub(crate) peer: &'a PeerSlot,
    /// Hides the server's secret values in its tools' error messages.
    pub(crate) scrub: &'a crate::scrub::Scrubber,
}

/// The result of one import.
#[derive(Debug, Default)]
pub(crate) struct ImportOutcome {
    /// Tools quarantined by pinning.
    pub(crate) quarantined: usize,
    /// Tools that could not be registered, with why.
    pub(crate) errors: Vec<String>,
}

struct Wanted {
    def: ToolDef,
    runner: Arc<RemoteTool>,
    fingerprint: String,
}

/// Brings the registry in line with `tools`.
pub(crate) async fn import(
    cx: &ImportCtx<'_>,
    imported: &mut Imported,
    tools: Vec<McpTool>,
) -> ImportOutcome {
    let mut out = ImportOutcome::default();
    let mut wanted: HashMap<ToolName, Wanted> = HashMap::new();
    for t in tools {
        match admit(cx, &mut out, t).await {
            Some(w) if wanted.contains_key(&w.def.name) => out.errors.push(format!(
                "two tools of server `{}` map to the name `{}`; the second was skipped",
                cx.server, w.def.name
            )),
            Some(w) => {
                wanted.insert(w.def.name.clone(), w);
            }
            None => {}
        }
    }
    let gone: Vec<ToolName> = imported
        .keys()
        .filter(|n| !wanted.contains_key(*n))
        .cloned()
        .collect();
    for name in gone {
        let _ = cx.engine.registry().unregister(name.as_str());
        cx.engine.settings().clear_tool(name.as_str());
        imported.remove(&name);
    }
    let limits = server_settings(cx.engine.settings().defaults(), cx.spec);
    for (name, w) in wanted {
        if imported.get(&name) == Some(&w.fingerprint) {
            continue;
        }
        let registry = cx.engine.registry();
        let done = if imported.contains_key(&name) {
            registry.upsert(w.def, w.runner)
        } else {
            registry.register(w.def, w.runner)
        };
        match done {
            Ok(()) => {
                match &limits {
                    Some(s) => cx.engine.settings().set_tool(name.as_str(), s.clone()),
                    None => cx.engine.settings().clear_tool(name.as_str()),
                }
                imported.insert(name, w.fingerprint);
            }
            Err(e) => out.errors.push(e.to_string()),
        }
    }
    out
}

/// Names, pins and builds one tool; `None` when it must not be registered.
async fn admit(cx: &ImportCtx<'_>, out: &mut ImportOutcome, t: McpTool) -> Option<Wanted> {
    let name = match tool_name(cx.server, &t.name) {
        Ok(n) => n,
        Err(e) => {
            out.errors.push(e.to_string());
            return None;
        }
    };
    let description = t.description.as_deref().unwrap_or_default().to_owned();
    let version = PinVersion::of(&description, &t.input_schema);
    match cx
        .pins
        .check(cx.server, &t.name, name.as_str(), &version)
        .await
    {
        Ok(PinCheck::Trusted) => {}
        Ok(PinCheck::Quarantined {
            newly,
            reason,
            flags,
        }) => {
            out.quarantined += 1;
            if newly {
                cx.engine.events().emit(Event::ToolQuarantined {
                    server: cx.server.clone(),
                    tool: name.to_string(),
                    reason,
                    flags: flags.iter().map(|f| f.as_str().to_owned()).collect(),
                });
                cx.engine.events().changed(crate::slices::Slice::Tools);
            }
            return None;
        }
        // Fail closed: a tool whose pin cannot be checked is not offered.
        Err(e) => {
            out.errors.push(format!("`{name}` held back: {e}"));
            return None;
        }
    }
    let annotations = annotations(&t);
    let fingerprint = format!("{}:{:?}:{:?}", version.hash, annotations, t.output_schema);
    let mut def = ToolDef::new(name.clone(), description, (*t.input_schema).clone())
        .with_source(Source::Mcp(cx.server.clone()))
        .with_trust(cx.spec.trust)
        .with_risk(risk(&annotations))
        .with_annotations(annotations);
    def.output_schema = t.output_schema.clone();
    let runner = Arc::new(RemoteTool {
        server: cx.server.clone(),
        remote: t.name,
        name: Arc::from(name.as_str()),
        peer: cx.peer.clone(),
        scrub: cx.scrub.clone(),
    });
    Some(Wanted {
        def,
        runner,
        fingerprint,
    })
}

fn annotations(t: &McpTool) -> Annotations {
    let a = t.annotations.as_ref();
    Annotations {
        title: t.title.clone().or_else(|| a.and_then(|a| a.title.clone())),
        read_only_hint: a.and_then(|a| a.read_only_hint),
        destructive_hint: a.and_then(|a| a.destructive_hint),
        idempotent_hint: a.and_then(|a| a.idempotent_hint),
        open_world_hint: a.and_then(|a| a.open_world_hint),
    }
}

/// Medium by default: an upstream tool can do anything its server can.
/// A destructive hint raises it; no hint lowers it (hints are untrusted).
pub(crate) fn risk(a: &Annotations) -> Risk {
    if a.destructive_hint == Some(true) {
        Risk::High
    } else {
        Risk::Medium
    }
}

/// The limits for a server's tools: the defaults with the server's
/// overrides, or `None` when it overrides nothing.
pub(crate) fn server_settings(defaults: &ToolSettings, spec: &ServerSpec) -> Option<ToolSettings> {
    if spec.timeout.is_none()
        && spec.max_retries.is_none()
        && spec.breaker_failure_threshold.is_none()
        && spec.breaker_cooldown.is_none()
        && !spec.breaker_counts_is_error
    {
        return None;
    }
    let mut s = defaults.clone();
    if let Some(t) = spec.timeout {
        s.timeout = t;
        // The whole-call deadline must leave room for at least one attempt.
        s.deadline = s.deadline.max(t);
    }
    if let Some(n) = spec.max_retries {
        s.retry.max_retries = n;
    }
    if let Some(n) = spec.breaker_failure_threshold {
        s.breaker.failure_threshold = n;
    }
    if let Some(c) = spec.breaker_cooldown {
        s.breaker.cooldown = c;
    }
    s.breaker.count_is_error |= spec.breaker_counts_is_error;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::servers::TransportSpec;
    use std::time::Duration;

    fn spec() -> ServerSpec {
        ServerSpec::new(
            "s",
            TransportSpec::Stdio {
                command: "x".into(),
                args: vec![],
                env: Default::default(),
                cwd: None,
            },
        )
    }

    #[test]
    fn server_overrides_reach_tool_settings() {
        let d = ToolSettings::default();
        assert_eq!(server_settings(&d, &spec()), None);
        let mut sp = spec();
        sp.timeout = Some(Duration::from_secs(300));
        sp.max_retries = Some(0);
        sp.breaker_cooldown = Some(Duration::from_secs(5));
        let s = server_settings(&d, &sp).unwrap();
        assert_eq!(s.timeout, Duration::from_secs(300));
        assert!(s.deadline >= s.timeout);
        assert_eq!(s.retry.max_retries, 0);
        assert_eq!(s.breaker.cooldown, Duration::from_secs(5));
        assert_eq!(s.breaker.failure_threshold, d.breaker.failure_threshold);
        assert!(
            !s.breaker.count_is_error,
            "isError results do not count by default"
        );
        let mut sp = spec();
        sp.breaker_counts_is_error = true;
        let s = server_settings(&d, &sp).expect("an override");
        assert!(s.breaker.count_is_error);
    }

    #[test]
    fn hints_only_raise_risk() {
        let mut a = Annotations::default();
        assert_eq!(risk(&a), Risk::Medium);
        a.read_only_hint = Some(true);
        assert_eq!(risk(&a), Risk::Medium);
        a.destructive_hint = Some(true);
        assert_eq!(risk(&a), Risk::High);
    }
}
