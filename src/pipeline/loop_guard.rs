//! Stage 5: loop guard. (Stub.)

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::{EventBus, StageName};

/// The loop-guard stage.
pub struct LoopGuard {
    #[allow(dead_code)]
    events: EventBus,
}

impl LoopGuard {
    /// A stage reporting levels on `events`.
    pub fn new(events: EventBus) -> Self {
        Self { events }
    }
}

impl Stage for LoopGuard {
    fn name(&self) -> StageName {
        StageName::LoopGuard
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
