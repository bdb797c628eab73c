//! The Tools view: every tool an agent could see (registered ones, active
//! or hidden by the allow/deny lists) and every upstream tool held back by
//! pinning, with the detail a person inspects.

use std::sync::Arc;

use serde_json::Value;

use super::types::{ToolDetail, ToolState, ToolSummary};
use super::{Control, ControlError};
use crate::context::Caller;
use crate::tool::{JsonObject, Risk, Source, ToolDef, ToolName, Trust};
use crate::upstream::{PinRecord, PinStatus};

impl Control {
    /// Every tool, by name: registered ones (active, or denied with the
    /// rule that hides them) and quarantined upstream tools.
    ///
    /// # Errors
    /// The pin store failed.
    pub async fn tools(&self) -> Result<Vec<ToolSummary>, ControlError> {
        let snap = self.engine().registry().snapshot();
        let mut out: Vec<ToolSummary> =
            snap.sorted().iter().map(|t| self.summary(&t.def)).collect();
        for pin in self.quarantined().await? {
            if snap.get(&pin.name).is_none()
                && let Some(def) = pending_def(&pin)
            {
                out.push(self.summary(&def));
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        let deferring = self.deferring();
        for t in &mut out {
            t.deferred_for = deferring
                .iter()
                .filter(|(_, names)| names.contains(&t.name))
                .map(|(client, _)| client.clone())
                .collect();
        }
        Ok(out)
    }

    /// One tool in full: its description, schemas, guards and pin.
    ///
    /// # Errors
    /// No tool (registered or quarantined) of that name.
    pub async fn tool(&self, name: &str) -> Result<ToolDetail, ControlError> {
        let pin = match &self.inner.upstreams {
            Some(up) => up.pins().get(name).await.ok(),
            None => None,
        };
        let registered = self.engine().registry().snapshot().get(name).cloned();
        let def = match (&registered, &pin) {
            (Some(t), _) => t.def.clone(),
            (None, Some(p)) if p.status == PinStatus::Quarantined => {
                pending_def(p).ok_or_else(|| ControlError::not_found("tool", name))?
            }
            _ => return Err(ControlError::not_found("tool", name)),
        };
        Ok(ToolDetail {
            summary: self.summary(&def),
            description: def.description.clone(),
            input_schema: Value::Object((*def.input_schema).clone()),
            output_schema: def
                .output_schema
                .as_ref()
                .map(|s| Value::Object((**s).clone())),
            guards: def.guards.clone(),
            pin,
        })
    }

    pub(super) fn summary(&self, def: &ToolDef) -> ToolSummary {
        let quarantined = matches!(def.source, Source::Mcp(_))
            && self
                .engine()
                .registry()
                .snapshot()
                .get(def.name.as_str())
                .is_none();
        let permits = self.engine().filter().permits(def.name.as_str());
        let state = match (&permits, quarantined) {
            (_, true) => ToolState::Quarantined,
            (Err(_), false) => ToolState::Denied,
            (Ok(()), false) => ToolState::Active,
        };
        ToolSummary {
            name: def.name.to_string(),
            summary: def
                .description
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned(),
            source: def.source.to_string(),
            plugin: self.plugin_of(&def.source),
            trust: def.trust,
            risk: self.base_risk(def),
            state,
            denied_by: permits.err(),
            annotations: def.annotations.clone(),
            deferred_for: Vec::new(),
            core: self.engine().core_view(def),
        }
    }

    /// The plugin a tool from `source` came with, if any.
    fn plugin_of(&self, source: &Source) -> Option<String> {
        match source {
            Source::Plugin(name) => Some(name.to_string()),
            Source::Mcp(server) => self
                .engine()
                .plugins()
                .iter()
                .find(|p| p.servers.iter().any(|s| s.as_str() == &**server))
                .map(|p| p.name.clone()),
            Source::Builtin | Source::Agent(_) => None,
        }
    }

    /// The risk the policy gives the tool by its name, table and hints,
    /// before any argument rule (assessed with no arguments).
    fn base_risk(&self, def: &ToolDef) -> Risk {
        let policy = self.engine().policy().load();
        let nobody = Caller::via("console");
        let empty = Value::Object(JsonObject::new());
        policy.config.assess(def, &empty, &nobody).risk
    }
}

/// The definition a quarantined tool would have, from its offered version;
/// trust and risk as upstream tools get by default (the pin keeps no
/// annotations, so no destructive hint raises it), so a quarantined tool
/// does not look safer than its registered siblings.
fn pending_def(pin: &PinRecord) -> Option<ToolDef> {
    let v = pin.pending.as_ref()?;
    let name = ToolName::new(&pin.name).ok()?;
    let schema = match &v.input_schema {
        Value::Object(o) => o.clone(),
        _ => JsonObject::new(),
    };
    Some(
        ToolDef::new(name, v.description.clone(), schema)
            .with_source(Source::Mcp(Arc::from(pin.server.as_str())))
            .with_trust(Trust::External)
            .with_risk(crate::upstream::upstream_risk(&Default::default())),
    )
}
