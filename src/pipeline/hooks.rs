//! Stages 4 and 14: BEFORE / AFTER hooks. (Stub.)

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Call, CallResult, Next, Stage};
use crate::events::StageName;

/// An in-process hook (plugins implement it later).
pub trait Hook: Send + Sync + 'static {
    /// The hook's name, shown when it blocks a call.
    fn name(&self) -> &str;
}

/// The hooks stage.
pub struct Hooks {
    #[allow(dead_code)]
    hooks: Vec<Arc<dyn Hook>>,
}

impl Hooks {
    /// A stage running `hooks` in order.
    pub fn new(hooks: Vec<Arc<dyn Hook>>) -> Self {
        Self { hooks }
    }
}

impl Stage for Hooks {
    fn name(&self) -> StageName {
        StageName::Hooks
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}
