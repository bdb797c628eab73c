//! Stage 9/11: circuit breaker. (Stub.)

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::{EventBus, StageName};

/// The breaker stage.
pub struct Breaker {
    #[allow(dead_code)]
    events: EventBus,
}

impl Breaker {
    /// A stage reporting transitions on `events`.
    pub fn new(events: EventBus) -> Self {
        Self { events }
    }
}

impl Stage for Breaker {
    fn name(&self) -> StageName {
        StageName::Breaker
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
