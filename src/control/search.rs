//! The Tools view's search and the "What this agent sees" panels: ranked
//! by the engine's index, decided by the engine's disclosure plan, so the
//! console shows what agents get and never works it out itself.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use super::types::{ClientView, CorePinned, ToolMatch};
use super::{Control, ControlError};
use crate::search::DeferMode;
use crate::search::ToolIndex;
use crate::tool::{Source, ToolDef, ToolName};

/// The most results one search of the Tools view gives.
pub const MAX_MATCHES: usize = 200;

impl Control {
    /// Every tool matching `query`, best first (at most `limit`, capped
    /// at [`MAX_MATCHES`]): registered tools as the index ranks them
    /// (active and hidden alike: the view lists both), then quarantined
    /// tools whose name or summary has a matched word.
    ///
    /// # Errors
    /// The pin store failed.
    pub async fn search_tools(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<ToolMatch>, ControlError> {
        let limit = limit.clamp(1, MAX_MATCHES);
        let engine = self.engine();
        let index = engine.disclosure().index();
        index.sync(engine.registry());
        let stems = index.matching(query);
        let all = self.tools().await?;
        let found: Vec<String> = index
            .search(query, limit, |_| true)
            .into_iter()
            .map(|h| h.tool.def.name.as_str().to_owned())
            .collect();
        let snap = engine.registry().snapshot();
        let mark = |t: &super::types::ToolSummary| ToolMatch {
            name: index.marks(&stems, &t.name),
            summary: index.marks(&stems, &t.summary),
            matched_in: snap
                .get(&t.name)
                .map(|r| matched_in(index, &stems, &r.def))
                .unwrap_or_default(),
            tool: t.clone(),
        };
        let mut out: Vec<ToolMatch> = found
            .iter()
            .filter_map(|n| all.iter().find(|t| &t.name == n))
            .map(mark)
            .collect();
        let held = all
            .iter()
            .filter(|t| t.state == super::types::ToolState::Quarantined)
            .map(mark)
            .filter(|m| m.name.iter().chain(&m.summary).any(|r| r.hit));
        out.extend(held);
        out.truncate(limit);
        Ok(out)
    }

    /// What every agent client connected now, or one a person chose a
    /// mode for, is listed.
    pub fn clients(&self) -> Vec<ClientView> {
        let d = self.engine().disclosure();
        let connected: HashSet<String> = d.clients().names().into_iter().collect();
        let names: BTreeSet<String> = connected
            .iter()
            .cloned()
            .chain(d.all_chosen().into_keys())
            .collect();
        names
            .into_iter()
            .map(|n| self.client_view(&n, connected.contains(&n)))
            .collect()
    }

    /// Chooses deferral for `client` (`None`: back to the config) and
    /// returns what it is listed now. Its connections hear
    /// `list_changed`.
    ///
    /// # Errors
    /// An empty client name.
    pub fn choose_deferral(
        &self,
        client: &str,
        mode: Option<DeferMode>,
    ) -> Result<ClientView, ControlError> {
        if client.trim().is_empty() {
            return Err(ControlError::invalid("client", "name a client"));
        }
        if self.engine().choose_deferral(client, mode) {
            self.engine().events().changed(crate::slices::Slice::Tools);
        }
        let connected = self.engine().disclosure().clients().names();
        Ok(self.client_view(client, connected.iter().any(|c| c == client)))
    }

    /// Pins `tool` as core (never deferred, for every client), or unpins
    /// it, and returns the tool's row and every client's plan. The name
    /// need not be registered: a person may pin a tool of a server that is
    /// down. Connected agents hear `list_changed`.
    ///
    /// # Errors
    /// A name that is not a valid tool name, or one pin too many.
    pub async fn pin_core(&self, tool: &str, pinned: bool) -> Result<CorePinned, ControlError> {
        let name = ToolName::new(tool).map_err(|e| ControlError::invalid("name", e.to_string()))?;
        let changed = self
            .engine()
            .pin_core(&name, pinned)
            .map_err(|e| ControlError::invalid("pinned", e.to_string()))?;
        if changed {
            let what = if pinned {
                "pinned as core"
            } else {
                "no longer pinned as core"
            };
            tracing::info!("{tool}: {what}");
        }
        let summary = self.tools().await?.into_iter().find(|t| t.name == tool);
        Ok(CorePinned {
            tool: tool.to_owned(),
            pinned,
            changed,
            summary,
            clients: self.clients(),
        })
    }

    /// The connected clients each with the names of the tools deferred
    /// for them.
    pub(super) fn deferring(&self) -> Vec<(String, HashSet<String>)> {
        self.engine()
            .disclosure()
            .clients()
            .names()
            .into_iter()
            .map(|c| {
                let plan = self.engine().plan(Some(&c));
                let names = if plan.deferring {
                    plan.deferrable.iter().map(|t| t.name.to_string()).collect()
                } else {
                    HashSet::new()
                };
                (c, names)
            })
            .collect()
    }

    fn client_view(&self, client: &str, connected: bool) -> ClientView {
        self.engine().client_view(client, connected)
    }
}

/// The parts of `def` beyond its name and summary line where `stems`
/// match, in words.
fn matched_in(index: &ToolIndex, stems: &HashSet<String>, def: &ToolDef) -> Vec<String> {
    let hit = |text: &str| index.marks(stems, text).iter().any(|m| m.hit);
    let mut out = Vec::new();
    let rest: String = def
        .description
        .lines()
        .skip(1)
        .collect::<Vec<_>>()
        .join("\n");
    if hit(&rest) {
        out.push("the description".to_owned());
    }
    if let Source::Mcp(server) | Source::Plugin(server) | Source::Agent(server) = &def.source
        && hit(server)
    {
        out.push("the server's name".to_owned());
    }
    if let Some(Value::Object(props)) = def.input_schema.get("properties") {
        for (param, schema) in props {
            let described = schema
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            if hit(param) || hit(described) {
                out.push(format!("argument {param}"));
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
