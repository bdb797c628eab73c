//! Stage 6: casting and validation. (Stub.)

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::StageName;

/// The validate stage.
#[derive(Default)]
pub struct Validate {}

impl Validate {
    /// A new stage.
    pub fn new() -> Self {
        Self {}
    }
}

impl Stage for Validate {
    fn name(&self) -> StageName {
        StageName::Validate
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
