//! Stage 13: trust-wrapping of external output. (Stub.)

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::StageName;

/// The trust stage.
#[derive(Default)]
pub struct TrustWrap {}

impl TrustWrap {
    /// A new stage.
    pub fn new() -> Self {
        Self {}
    }
}

impl Stage for TrustWrap {
    fn name(&self) -> StageName {
        StageName::Trust
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
