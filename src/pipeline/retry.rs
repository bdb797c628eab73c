//! Stage 10: retry of transient failures, with backoff, inside the call's
//! deadline.
//!
//! Contract (pipeline step 10, docs/architecture/overview.md, "Breaker,
//! retry and timeout"):
//!
//! - The stage fixes the call's deadline (`received-at-this-stage +
//!   settings.deadline`) unless one is set, so every attempt and every
//!   backoff share one budget; the timeout stage inside reads it.
//! - An error is retried only if [`CallError::is_retryable`] says so (timeout,
//!   rate limit, connection, upstream 5xx), decided by its type, never by
//!   its message. PraisonAI classifies retryable errors by keywords in the
//!   message, which misses every error not worded "timeout" or
//!   "connection"; we classify by type.
//! - `Ok` results are returned as they are, even with `is_error` set, and so
//!   is [`CallError::ToolFailed`]: a tool that *reported* a failure may have
//!   had side effects (a payment, a message), and running it again could
//!   repeat them.
//! - At most `settings.retry.max_retries` extra attempts. Each waits a
//!   full-jitter backoff ([`backoff`]), raised to the error's
//!   [`CallError::retry_after`] when the upstream asked for longer.
//! - A backoff that would leave no time before the deadline is never
//!   started: the last error is returned at once instead of after a sleep
//!   that could not help.
//!
//! Full jitter (uniform in `[0, cap]`, not `cap ± x%`) spreads the retries
//! of many callers that failed together, so they do not hit a recovering
//! upstream in lockstep. The RNG is passed in, never taken from the thread:
//! tests seed it with [`Retry::with_seed`].

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use super::{Call, CallResult, Next, Stage};
use crate::error::CallError;
use crate::events::{Event, EventBus, StageName};
use crate::settings::RetryConfig;

/// The backoff before retry number `attempt + 1` (so `attempt` 0 is the wait
/// before the first retry): uniform in
/// `[0, min(max_backoff, initial_backoff * multiplier^attempt)]`.
///
/// Never panics or overflows: a cap that is not finite (huge `attempt`, a
/// NaN multiplier) is `max_backoff`, a negative one is zero.
pub fn backoff(attempt: u32, cfg: &RetryConfig, rng: &mut impl Rng) -> Duration {
    let cap = backoff_cap(attempt, cfg);
    let nanos = u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rng.random_range(0..=nanos))
}

/// The upper bound [`backoff`] draws from.
pub fn backoff_cap(attempt: u32, cfg: &RetryConfig) -> Duration {
    let grown = cfg.initial_backoff.as_secs_f64() * cfg.multiplier.powf(f64::from(attempt));
    if !grown.is_finite() || grown >= cfg.max_backoff.as_secs_f64() {
        cfg.max_backoff
    } else if grown <= 0.0 {
        Duration::ZERO
    } else {
        Duration::from_secs_f64(grown)
    }
}

/// The wait before retrying after `err`: [`backoff`], raised to the
/// upstream's `retry_after` if that is longer. Asking again sooner than
/// the upstream said would only earn another rate-limit error.
pub fn retry_delay(
    err: &CallError,
    attempt: u32,
    cfg: &RetryConfig,
    rng: &mut impl Rng,
) -> Duration {
    let jittered = backoff(attempt, cfg, rng);
    err.retry_after()
        .map_or(jittered, |after| jittered.max(after))
}

/// Why the stage stopped retrying a retryable error.
enum GiveUp {
    Exhausted,
    PastDeadline(Duration),
}

/// The retry stage.
pub struct Retry {
    events: EventBus,
    rng: Mutex<StdRng>,
}

impl Retry {
    /// A stage reporting retries on `events`, with jitter seeded from the OS.
    pub fn new(events: EventBus) -> Self {
        // Jitter needs no cryptographic quality; if the OS has no entropy to
        // give, a clock-derived seed still spreads callers apart.
        let rng = StdRng::try_from_os_rng().unwrap_or_else(|_| StdRng::seed_from_u64(clock_seed()));
        Self::with_rng(events, rng)
    }

    /// A stage whose jitter is reproducible, for tests.
    pub fn with_seed(events: EventBus, seed: u64) -> Self {
        Self::with_rng(events, StdRng::seed_from_u64(seed))
    }

    fn with_rng(events: EventBus, rng: StdRng) -> Self {
        Self {
            events,
            rng: Mutex::new(rng),
        }
    }

    /// The wait before the next attempt, or why there is none.
    fn plan(
        &self,
        err: &CallError,
        retries: u32,
        cfg: &RetryConfig,
        deadline: Option<Instant>,
    ) -> Result<Duration, GiveUp> {
        if retries >= cfg.max_retries {
            return Err(GiveUp::Exhausted);
        }
        let wait = {
            // A poisoned RNG is still an RNG.
            let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
            retry_delay(err, retries, cfg, &mut *rng)
        };
        // `>=`: a retry that would start exactly at the deadline would have
        // no time to run.
        let too_late =
            deadline.is_some_and(|dl| Instant::now().checked_add(wait).is_none_or(|end| end >= dl));
        if too_late {
            Err(GiveUp::PastDeadline(wait))
        } else {
            Ok(wait)
        }
    }

    async fn run(&self, call: &mut Call, next: Next<'_>) -> CallResult {
        let settings = Arc::clone(&call.settings);
        if call.deadline.is_none() {
            // `None` on overflow means "no deadline" (an absurd setting).
            call.deadline = Instant::now().checked_add(settings.deadline);
        }
        let mut retries = 0;
        loop {
            let result = next.run(call).await;
            let Err(err) = &result else { return result };
            if !err.is_retryable() {
                return result;
            }
            let wait = match self.plan(err, retries, &settings.retry, call.deadline) {
                Ok(wait) => wait,
                Err(why) => {
                    note_give_up(call, retries + 1, why);
                    return result;
                }
            };
            self.announce(call, retries + 1, err, wait);
            tokio::time::sleep(wait).await;
            retries += 1;
        }
    }

    fn announce(&self, call: &mut Call, attempt: u32, err: &CallError, wait: Duration) {
        self.events.emit(Event::CallRetry {
            call_id: call.id,
            attempt,
            kind: err.kind(),
            backoff: wait,
        });
        call.note(
            StageName::Retry,
            format!(
                "attempt {attempt} failed ({}); retrying in {}ms",
                err.kind(),
                wait.as_millis()
            ),
        );
    }
}

fn note_give_up(call: &mut Call, attempt: u32, why: GiveUp) {
    let text = match why {
        GiveUp::Exhausted => format!("attempt {attempt} failed; no retries left"),
        GiveUp::PastDeadline(wait) => format!(
            "attempt {attempt} failed; a {}ms backoff would pass the deadline",
            wait.as_millis()
        ),
    };
    call.note(StageName::Retry, text);
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Stage for Retry {
    fn name(&self) -> StageName {
        StageName::Retry
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(self.run(call, next))
    }
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
