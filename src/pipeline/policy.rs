//! Stage 8: policy, risk and approval. (Stub.)

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::StageName;

/// Policy settings.
#[derive(Debug, Clone, Default)]
pub struct PolicyConfig {}

/// The policy stage.
pub struct Policy {
    #[allow(dead_code)]
    config: Arc<PolicyConfig>,
}

impl Policy {
    /// A stage with `config`.
    pub fn new(config: Arc<PolicyConfig>) -> Self {
        Self { config }
    }
}

impl Stage for Policy {
    fn name(&self) -> StageName {
        StageName::Policy
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
