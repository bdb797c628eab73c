//! Stage 10b: per-attempt timeout. (Stub.)

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::StageName;

/// The timeout stage.
#[derive(Default)]
pub struct Timeout {}

impl Timeout {
    /// A new stage.
    pub fn new() -> Self {
        Self {}
    }
}

impl Stage for Timeout {
    fn name(&self) -> StageName {
        StageName::Timeout
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
