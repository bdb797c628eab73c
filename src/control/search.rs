//! The Tools view's search and the "What this agent sees" panels: ranked
//! by the engine's index, decided by the engine's disclosure plan, so the
//! console shows what agents get and never works it out itself.

use std::collections::{BTreeSet, HashSet};

use super::types::{ClientView, ToolMatch};
use super::{Control, ControlError};
use crate::search::DeferMode;

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
        let mark = |t: &super::types::ToolSummary| ToolMatch {
            name: index.marks(&stems, &t.name),
            summary: index.marks(&stems, &t.summary),
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
