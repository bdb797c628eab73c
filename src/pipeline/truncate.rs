//! Stage 12: truncation of oversized output. (Stub.)

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::StageName;

/// The truncate stage.
#[derive(Default)]
pub struct Truncate {}

impl Truncate {
    /// A new stage.
    pub fn new() -> Self {
        Self {}
    }
}

impl Stage for Truncate {
    fn name(&self) -> StageName {
        StageName::Truncate
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
