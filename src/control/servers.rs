//! Upstream servers and pins: statuses, restart, the stderr tail, and
//! quarantined tools with both versions for a diff.

use serde_json::Value;

use super::types::{PinDiff, PinSide, StderrLine, StderrPage};
use super::{Control, ControlError};
use crate::upstream::{PinRecord, PinStatus, PinVersion, ServerStatus, Upstreams};

impl Control {
    fn upstreams(&self) -> Result<&Upstreams, ControlError> {
        self.inner.upstreams.as_ref().ok_or_else(|| {
            ControlError::Unavailable(
                "this engine manages no upstream MCP servers (add [[servers]] to the config)"
                    .into(),
            )
        })
    }

    /// Every configured server's status, by name (none without upstreams).
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.inner
            .upstreams
            .as_ref()
            .map(Upstreams::statuses)
            .unwrap_or_default()
    }

    /// Stops `server` and starts it again with the same config; returns
    /// its status once the new process is starting.
    ///
    /// # Errors
    /// No such server running, or no upstreams.
    pub async fn restart_server(&self, server: &str) -> Result<ServerStatus, ControlError> {
        self.upstreams()?
            .restart(server)
            .await
            .ok_or_else(|| ControlError::not_found("server", server))
    }

    /// `server`'s stderr lines numbered above `after` (0: all kept).
    ///
    /// # Errors
    /// No such server, or no upstreams.
    pub fn server_stderr(&self, server: &str, after: u64) -> Result<StderrPage, ControlError> {
        let tail = self
            .upstreams()?
            .stderr_since(server, after)
            .ok_or_else(|| ControlError::not_found("server", server))?;
        Ok(StderrPage {
            lines: tail
                .lines
                .into_iter()
                .map(|(n, text)| StderrLine { n, text })
                .collect(),
            next: tail.next,
            skipped: tail.skipped,
        })
    }

    /// Every pinned upstream tool (none without upstreams).
    ///
    /// # Errors
    /// The pin store failed.
    pub async fn pins(&self) -> Result<Vec<PinRecord>, ControlError> {
        match &self.inner.upstreams {
            Some(up) => Ok(up.pins().list().await?),
            None => Ok(Vec::new()),
        }
    }

    /// Upstream tools held back until a person approves them.
    ///
    /// # Errors
    /// The pin store failed.
    pub async fn quarantined(&self) -> Result<Vec<PinRecord>, ControlError> {
        let mut pins = self.pins().await?;
        pins.retain(|p| p.status == PinStatus::Quarantined);
        Ok(pins)
    }

    /// A pinned tool's approved and offered versions, for a diff.
    ///
    /// # Errors
    /// No pin of that name, or no upstreams.
    pub async fn pin_diff(&self, tool: &str) -> Result<PinDiff, ControlError> {
        let pin = self.upstreams()?.pins().get(tool).await?;
        Ok(PinDiff {
            pinned: pin.approved.as_ref().map(side),
            current: pin.pending.as_ref().or(pin.approved.as_ref()).map(side),
            flags: pin
                .pending
                .as_ref()
                .or(pin.approved.as_ref())
                .map(|v| v.flags.clone())
                .unwrap_or_default(),
            pin,
        })
    }

    /// Accepts the offered version of a quarantined tool; the server's
    /// tools are re-read, so it is registered without a restart.
    ///
    /// # Errors
    /// No pin of that name, [`ControlError::Stale`] if nothing waits for
    /// approval, or the store.
    pub async fn approve_pin(&self, tool: &str) -> Result<PinRecord, ControlError> {
        Ok(self.upstreams()?.approve(tool).await?)
    }
}

fn side(v: &PinVersion) -> PinSide {
    PinSide {
        description: v.description.clone(),
        schema: match &v.input_schema {
            Value::Null => Value::Object(serde_json::Map::new()),
            s => s.clone(),
        },
    }
}
