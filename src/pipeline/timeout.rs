//! Stage 10b: per-attempt timeout.
//!
//! Contract (pipeline step 10, docs/architecture/overview.md): each attempt
//! may run for
//! `min(settings.timeout, deadline - now)`, where the deadline is the one
//! the retry stage (outside this one) fixed for the whole call. So a single
//! slow attempt cannot eat the budget of the retries after it, and no
//! attempt outlives the call. On expiry the attempt's future is dropped
//! (cancelling the tool's work where it supports cancellation) and the
//! result is [`CallError::Timeout`] carrying the limit that applied, which
//! retry treats as transient.
//!
//! If the deadline has already passed, the attempt is refused without
//! running: it could only be cut off at once, after having started side
//! effects.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::{Call, CallResult, Next, Stage};
use crate::error::CallError;
use crate::events::StageName;

/// The time one attempt may take, or `None` when the deadline has passed.
pub fn attempt_limit(
    timeout: Duration,
    deadline: Option<Instant>,
    now: Instant,
) -> Option<Duration> {
    match deadline {
        None => Some(timeout),
        Some(dl) => {
            let left = dl.saturating_duration_since(now);
            (!left.is_zero()).then(|| timeout.min(left))
        }
    }
}

/// The timeout stage.
#[derive(Debug, Default)]
pub struct Timeout {}

impl Timeout {
    /// A new stage; its limits come from each call's settings and deadline.
    pub fn new() -> Self {
        Self {}
    }

    async fn run(&self, call: &mut Call, next: Next<'_>) -> CallResult {
        let Some(limit) = attempt_limit(call.settings.timeout, call.deadline, Instant::now())
        else {
            call.note(StageName::Timeout, "deadline passed; attempt not started");
            return Err(CallError::Timeout {
                after: call.settings.deadline,
            });
        };
        match tokio::time::timeout(limit, next.run(call)).await {
            Ok(result) => result,
            Err(_elapsed) => {
                call.note(
                    StageName::Timeout,
                    format!("attempt cut off after {}ms", limit.as_millis()),
                );
                Err(CallError::Timeout { after: limit })
            }
        }
    }
}

impl Stage for Timeout {
    fn name(&self) -> StageName {
        StageName::Timeout
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(self.run(call, next))
    }
}

#[cfg(test)]
#[path = "timeout_tests.rs"]
mod tests;
