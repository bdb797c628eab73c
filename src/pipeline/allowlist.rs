//! Stage 3: allowlist / denylist. (Stub.)

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::StageName;

/// Which tool names are visible and callable.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {}

impl ToolFilter {
    /// Everything allowed, nothing denied.
    pub fn allow_all() -> Self {
        Self {}
    }

    /// Whether `name` may be listed and called; `Err` says which rule hid it.
    pub fn permits(&self, _name: &str) -> Result<(), String> {
        Ok(())
    }
}

/// The allowlist stage.
pub struct Allowlist {
    filter: Arc<ToolFilter>,
}

impl Allowlist {
    /// A stage enforcing `filter`.
    pub fn new(filter: Arc<ToolFilter>) -> Self {
        Self { filter }
    }
}

impl Stage for Allowlist {
    fn name(&self) -> StageName {
        StageName::Allowlist
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            let _ = self.filter.permits(call.tool_name());
            next.run(call).await
        })
    }
}
