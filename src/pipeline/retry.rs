//! Stage 10: retry with backoff. (Stub.)

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::{EventBus, StageName};

/// The retry stage.
pub struct Retry {
    #[allow(dead_code)]
    events: EventBus,
}

impl Retry {
    /// A stage reporting retries on `events`.
    pub fn new(events: EventBus) -> Self {
        Self { events }
    }
}

impl Stage for Retry {
    fn name(&self) -> StageName {
        StageName::Retry
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
