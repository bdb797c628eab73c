//! Stage 7: path and SSRF guards. (Stub.)

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::StageName;

/// Guard settings.
#[derive(Debug, Clone, Default)]
pub struct GuardConfig {}

/// The guards stage.
pub struct Guards {
    #[allow(dead_code)]
    config: Arc<GuardConfig>,
}

impl Guards {
    /// A stage with `config`.
    pub fn new(config: Arc<GuardConfig>) -> Self {
        Self { config }
    }
}

impl Stage for Guards {
    fn name(&self) -> StageName {
        StageName::Guards
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
