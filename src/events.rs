//! One broadcast stream of engine events. The UI, the audit log and tracing
//! all read this same stream, so what a person sees live is what is recorded.
//!
//! Events never carry call arguments or output: those may hold secrets, and
//! the stream fans out to places (UI, logs) that must not see them.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::approval::{ApprovalStatus, CallerInfo, RuleEffect};
use crate::error::ErrorKind;
use crate::slices::{Revisions, Slice};
use crate::tool::{Risk, Source, ToolName};
use crate::upstream::ServerState;
use crate::wire::{BreakerState, LoopLevel, Outcome};

/// A pipeline stage, in `pipeline::build`'s order (outermost first; the
/// numbered order is in docs/architecture/overview.md, "The pipeline").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum StageName {
    /// Allowlist, denylist, quarantine.
    Allowlist,
    /// BEFORE and AFTER hooks.
    Hooks,
    /// Trust-wrapping of external output.
    Trust,
    /// Output truncation.
    Truncate,
    /// Loop guard.
    LoopGuard,
    /// Casting and schema validation.
    Validate,
    /// Path and SSRF guards.
    Guards,
    /// Policy, risk and approval.
    Policy,
    /// Circuit breaker.
    Breaker,
    /// Retry with backoff.
    Retry,
    /// Per-attempt timeout.
    Timeout,
    /// The tool itself.
    Execute,
}

impl StageName {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowlist => "allowlist",
            Self::Hooks => "hooks",
            Self::Trust => "trust",
            Self::Truncate => "truncate",
            Self::LoopGuard => "loop_guard",
            Self::Validate => "validate",
            Self::Guards => "guards",
            Self::Policy => "policy",
            Self::Breaker => "breaker",
            Self::Retry => "retry",
            Self::Timeout => "timeout",
            Self::Execute => "execute",
        }
    }
}

/// Something that happened in the engine.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A call arrived (stage 1).
    CallReceived {
        /// Call id.
        call_id: u64,
        /// Requested tool name, as sent (it may not exist).
        tool: Arc<str>,
        /// Caller description.
        caller: Arc<str>,
        /// Session id.
        session: Arc<str>,
        /// The arguments in one line, secrets hidden ([`crate::preview`]).
        preview: Arc<str>,
    },
    /// A stage finished its part of a call.
    CallStage {
        /// Call id.
        call_id: u64,
        /// The stage.
        stage: StageName,
        /// Time spent inside the stage and everything it wrapped.
        #[serde(with = "micros")]
        #[ts(type = "number")]
        elapsed: Duration,
        /// What the stage did, if noteworthy ("cast `count` from string").
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        note: Option<String>,
    },
    /// A retry is about to happen.
    CallRetry {
        /// Call id.
        call_id: u64,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Its error class.
        kind: ErrorKind,
        /// The backoff before the next attempt.
        #[serde(with = "micros")]
        #[ts(type = "number")]
        backoff: Duration,
    },
    /// A call finished (stage 14).
    CallFinished {
        /// Call id.
        call_id: u64,
        /// Tool name as requested.
        tool: Arc<str>,
        /// How it ended.
        outcome: Outcome,
        /// Total time in the pipeline.
        #[serde(with = "micros")]
        #[ts(type = "number")]
        elapsed: Duration,
    },
    /// A circuit breaker changed state.
    BreakerTransition {
        /// The tool.
        tool: ToolName,
        /// How people see it, when not by its name (a hooked agent's own
        /// tool: "Claude Code · Bash"); the name its calls' events carry.
        shown_as: Option<String>,
        /// Old state.
        from: BreakerState,
        /// New state.
        to: BreakerState,
    },
    /// A tool was added to the registry.
    ToolRegistered {
        /// The tool.
        tool: ToolName,
        /// Its source.
        source: Source,
    },
    /// A tool's definition was replaced.
    ToolReplaced {
        /// The tool.
        tool: ToolName,
        /// Its source.
        source: Source,
    },
    /// A tool was removed.
    ToolUnregistered {
        /// The tool.
        tool: ToolName,
        /// Its former source.
        source: Source,
    },
    /// The loop guard warned, blocked or halted.
    LoopGuard {
        /// Session id.
        session: String,
        /// Tool name.
        tool: ToolName,
        /// How far it went.
        level: LoopLevel,
    },

    // --- Upstream MCP servers (src/upstream) ---
    /// An upstream MCP server changed state.
    ServerStatus {
        /// The server's configured name.
        server: Arc<str>,
        /// Its new state.
        state: ServerState,
        /// Tools it currently contributes to the registry.
        tools: usize,
        /// Why it failed or restarted, if it did.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        error: Option<String>,
    },
    /// An upstream tool was held back from the registry until a person
    /// approves it: its description or schema changed since it was pinned,
    /// or its description carries injection markers.
    ToolQuarantined {
        /// The server.
        server: Arc<str>,
        /// The tool's registry name (`<server>__<tool>`).
        tool: String,
        /// `changed` or `flagged`.
        reason: &'static str,
        /// Injection markers found in the description.
        flags: Vec<String>,
    },
    // ---- approvals and policy -------------------------------------------
    // Like every event, these carry no call arguments: a UI that wants to
    // show them asks `Approvals::pending`, which redacts secret ones. A
    // request carries only its redacted one-line preview.
    /// A call waits for a person.
    ApprovalRequested {
        /// Request id (what `toolgate approve` takes).
        id: i64,
        /// The waiting call.
        call_id: u64,
        /// The tool.
        tool: String,
        /// Its arguments in one line, secrets hidden and cut to 120
        /// characters ([`crate::preview`]): what tells four waiting calls
        /// of one tool apart. A summary made for people, not the
        /// arguments themselves.
        preview: String,
        /// The call's risk.
        risk: Risk,
        /// Which rule asked.
        rule: String,
        /// Why, in words.
        reason: String,
        /// Who asks, as the snapshot's pending requests show it (the UI
        /// words it one way for both).
        caller: CallerInfo,
        /// Unix ms when it times out.
        expires_ms: i64,
    },
    /// A request was closed: approved, denied, timed out, expired or
    /// cancelled.
    ApprovalDecided {
        /// Request id.
        id: i64,
        /// The tool.
        tool: String,
        /// How it ended.
        status: ApprovalStatus,
        /// Who closed it (`timeout`, `startup`, a person's name, ...).
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        by: Option<String>,
        /// A person's reason, or why it expired.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        reason: Option<String>,
        /// The "always" rule made with the decision.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        rule_id: Option<i64>,
        /// How it ended, in words.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        ended: Option<crate::approval::Ended>,
    },
    /// A remembered decision was added, edited or revoked.
    ApprovalRuleChanged {
        /// Rule id.
        rule_id: i64,
        /// What happened.
        change: RuleChange,
        /// Allow or deny.
        effect: RuleEffect,
        /// Its scope in SCOPE syntax.
        scope: String,
    },
    /// The policy was replaced (config reload); calls from now on are
    /// assessed under this version.
    PolicyReloaded {
        /// The new version.
        version: u64,
    },
    /// A slice of engine state changed (from any source): a view showing
    /// it reads it again (see [`crate::slices`]).
    StateChanged {
        /// Which part.
        slice: Slice,
        /// Its revision after the change.
        #[ts(type = "number")]
        revision: u64,
    },
}

/// What happened to a remembered rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum RuleChange {
    /// Made (from a decision or directly).
    Added,
    /// Effect, reason or expiry changed.
    Edited,
    /// Revoked.
    Revoked,
}

mod micros {
    use std::time::Duration;

    pub(super) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }
}

impl Event {
    /// Whether the console's live stream carries the event: everything but
    /// the per-stage trace ([`Event::CallStage`]), which the console reads
    /// from a call's detail instead of a dozen events per call.
    pub fn is_console(&self) -> bool {
        !matches!(self, Self::CallStage { .. })
    }

    /// Whether the event is worth keeping in a record of what happened:
    /// everything but the per-call trace ([`Self::is_call_trace`]) and
    /// [`Event::StateChanged`], which only tells live views to read again
    /// (the change itself has its own event or none worth recording).
    pub fn is_notable(&self) -> bool {
        !self.is_call_trace() && !matches!(self, Self::StateChanged { .. })
    }

    /// Bytes the event takes as JSON: what the console's ring counts it
    /// as (a measure of its text, without an allocation).
    pub fn weight(&self) -> usize {
        struct Count(usize);
        impl std::io::Write for Count {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0 += b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut n = Count(0);
        // Writing into a counter cannot fail for the engine's own types.
        let _ = serde_json::to_writer(&mut n, self);
        n.0
    }

    /// Whether the event traces one call's way through the pipeline
    /// (received, stage, retry, finished): a live view shows these, the
    /// audit log has them in the call's own row.
    pub fn is_call_trace(&self) -> bool {
        matches!(
            self,
            Self::CallReceived { .. }
                | Self::CallStage { .. }
                | Self::CallFinished { .. }
                | Self::CallRetry { .. }
        )
    }
}

/// Longest text an event carries in one field (a tool name as requested,
/// an error message): the rest is cut with "…", so what an agent sends
/// cannot make the events that fan out to the console and the audit log
/// large. 1 KiB keeps any message a person reads whole.
pub const MAX_EVENT_TEXT: usize = 1024;

/// `text`, cut to at most [`MAX_EVENT_TEXT`] bytes on a character boundary.
pub fn event_text(text: &str) -> std::borrow::Cow<'_, str> {
    cut_text(text, MAX_EVENT_TEXT)
}

/// `text`, cut to at most `max` bytes on a character boundary, ending in
/// "…" when cut.
pub fn cut_text(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return text.into();
    }
    let end = text.floor_char_boundary(max.saturating_sub('…'.len_utf8()));
    format!("{}…", &text[..end]).into()
}

/// `value` as text, cut as [`cut_text`] cuts it, without ever writing out
/// more than `max` bytes (and a character): an error that quotes an 8 MiB
/// argument costs a few KiB here, not another 8 MiB copy of it.
pub fn display_text(value: &(impl std::fmt::Display + ?Sized), max: usize) -> String {
    use std::fmt::Write;
    let mut out = Bounded {
        text: String::new(),
        // Past the limit by a whole character (a cut on a character
        // boundary loses at most three bytes): a cut text stays longer
        // than `max`, so `cut_text` tells it from one that fit.
        room: max + 4,
    };
    let _ = write!(out, "{value}");
    cut_text(&out.text, max).into_owned()
}

/// Keeps the first `room` bytes written to it (whole characters), then
/// stops the formatting with an error.
struct Bounded {
    text: String,
    room: usize,
}

impl std::fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let left = self.room - self.text.len();
        if s.len() <= left {
            self.text.push_str(s);
            return Ok(());
        }
        self.text.push_str(&s[..s.floor_char_boundary(left)]);
        self.room = self.text.len();
        Err(std::fmt::Error)
    }
}

/// Receives the console's events synchronously, in the emitting thread, as
/// they are published: the console's sequencer numbers them there, so no
/// event can be lost between the engine and the live stream however busy
/// the machine is (a broadcast ring that a task drains can overflow).
pub trait ConsoleSink: Send + Sync {
    /// One event ([`Event::is_console`]). Must be quick and must not emit.
    fn publish(&self, event: &Event);
    /// The bus is gone: nothing more will be published.
    fn close(&self);
}

/// The registered sinks; closes them when the last bus clone goes.
struct Sinks(arc_swap::ArcSwap<Vec<Weak<dyn ConsoleSink>>>);

impl Drop for Sinks {
    fn drop(&mut self) {
        for sink in self.0.load().iter().filter_map(Weak::upgrade) {
            sink.close();
        }
    }
}

impl std::fmt::Debug for Sinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sinks({})", self.0.load().len())
    }
}

/// The engine's event stream. Cloning shares the stream.
///
/// Two rings and the console's sinks: every event, the notable ones only
/// (everything except the per-call trace), and, handed straight to each
/// [`ConsoleSink`], every event except the per-stage ones
/// ([`Event::is_console`]). The trace is a dozen events per call; a
/// subscriber that keeps only state changes (the audit log's event table)
/// takes the notable ring, so a daemon without a live view builds no trace
/// at all. The console shows calls arriving and finishing but fetches a
/// call's stages with its detail, so while only the console listens, calls
/// emit their two `call_*` events and no stage events.
#[derive(Debug, Clone)]
pub struct EventBus {
    all: broadcast::Sender<Event>,
    notable: broadcast::Sender<Event>,
    sinks: Arc<Sinks>,
    revisions: Arc<Revisions>,
}

impl EventBus {
    /// Capacity of the ring each subscriber reads from; a subscriber that
    /// falls further behind skips events (and is told how many) instead of
    /// slowing calls down.
    pub const CAPACITY: usize = 4096;

    /// A bus with [`Self::CAPACITY`].
    pub fn new() -> Self {
        Self {
            all: broadcast::channel(Self::CAPACITY).0,
            notable: broadcast::channel(Self::CAPACITY).0,
            sinks: Arc::new(Sinks(arc_swap::ArcSwap::from_pointee(Vec::new()))),
            revisions: Arc::default(),
        }
    }

    /// Announces that `slice` changed: bumps its revision and emits
    /// [`Event::StateChanged`]. Call it after the change is visible to
    /// readers (see [`crate::slices`]). Returns the new revision.
    pub fn changed(&self, slice: Slice) -> u64 {
        let revision = self.revisions.bump(slice);
        self.emit(Event::StateChanged { slice, revision });
        revision
    }

    /// The revision of `slice` now; read it before reading the slice.
    pub fn revision(&self, slice: Slice) -> u64 {
        self.revisions.get(slice)
    }

    /// Publishes an event. Cheap when nobody listens.
    pub fn emit(&self, event: Event) {
        // Err only means "no subscribers", which is fine.
        if event.is_notable() && self.notable.receiver_count() > 0 {
            let _ = self.notable.send(event.clone());
        }
        if event.is_console() {
            let sinks = self.sinks.0.load();
            for sink in sinks.iter().filter_map(Weak::upgrade) {
                sink.publish(&event);
            }
        }
        let _ = self.all.send(event);
    }

    /// Whether anyone listens to the per-call trace; lets hot paths skip
    /// building it.
    pub fn is_watched(&self) -> bool {
        self.all.receiver_count() > 0
    }

    /// Whether anyone wants calls arriving and finishing
    /// ([`Event::CallReceived`], [`Event::CallFinished`]): a full
    /// subscriber or a console sink. Per-stage events need
    /// [`Self::is_watched`].
    pub fn follows_calls(&self) -> bool {
        self.all.receiver_count() > 0 || !self.sinks.0.load().is_empty()
    }

    /// Hands every console event ([`Event::is_console`]) to `sink` from now
    /// on, until it is dropped (the bus keeps only a weak reference), and
    /// tells it when the bus is gone.
    pub fn add_console_sink(&self, sink: Weak<dyn ConsoleSink>) {
        self.sinks.0.rcu(|old| {
            let mut next: Vec<Weak<dyn ConsoleSink>> = old
                .iter()
                .filter(|w| w.strong_count() > 0)
                .cloned()
                .collect();
            next.push(sink.clone());
            next
        });
    }

    /// A new subscriber that sees every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.all.subscribe()
    }

    /// A new subscriber that sees the notable events ([`Event::is_notable`])
    /// from now on.
    pub fn subscribe_notable(&self) -> broadcast::Receiver<Event> {
        self.notable.subscribe()
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        assert_eq!(event_text("short"), "short");
        let long = "é".repeat(MAX_EVENT_TEXT);
        let cut = event_text(&long);
        assert!(
            cut.len() <= MAX_EVENT_TEXT && cut.ends_with('…'),
            "{}",
            cut.len()
        );
        assert_eq!(cut_text("abcdef", 5), "ab…");
    }

    #[test]
    fn displayed_text_is_cut_as_the_whole_text_would_be() {
        struct Parts(&'static str, usize);
        impl std::fmt::Display for Parts {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                (0..self.1).try_for_each(|_| f.write_str(self.0))
            }
        }
        for (part, n, max) in [
            ("é", 3000, 1024),
            ("ab", 10, 20),
            ("ab", 10, 19),
            ("😀x", 700, 999),
        ] {
            let whole = Parts(part, n).to_string();
            assert_eq!(
                display_text(&Parts(part, n), max),
                cut_text(&whole, max),
                "{part} x {n} at {max}"
            );
        }
        assert_eq!(display_text("short", 1024), "short");
    }

    fn trace() -> Event {
        Event::CallStage {
            call_id: 1,
            stage: StageName::Policy,
            elapsed: Duration::from_micros(3),
            note: None,
        }
    }

    fn breaker() -> Event {
        Event::BreakerTransition {
            tool: ToolName::new("t").unwrap(),
            shown_as: None,
            from: BreakerState::Closed,
            to: BreakerState::Open,
        }
    }

    #[test]
    fn a_notable_subscriber_gets_state_changes_and_no_call_trace() {
        let bus = EventBus::new();
        let mut notable = bus.subscribe_notable();
        assert!(!bus.is_watched(), "nobody wants the trace yet");
        bus.emit(trace());
        bus.emit(breaker());
        assert!(matches!(
            notable.try_recv(),
            Ok(Event::BreakerTransition { .. })
        ));
        assert!(notable.try_recv().is_err());
    }

    #[test]
    fn a_full_subscriber_gets_everything_in_order() {
        let bus = EventBus::new();
        let mut all = bus.subscribe();
        assert!(bus.is_watched());
        bus.emit(trace());
        bus.emit(breaker());
        assert!(matches!(all.try_recv(), Ok(Event::CallStage { .. })));
        assert!(matches!(
            all.try_recv(),
            Ok(Event::BreakerTransition { .. })
        ));
    }
}
