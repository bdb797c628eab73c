//! The governed call path.
//!
//! A call runs through an onion of [`Stage`]s, each a small middleware in its
//! own module: it may inspect or change the call, refuse it, or call
//! [`Next::run`] and then inspect or change the result. Stages listed first
//! see the request first and the result last (as in tower's
//! `ServiceBuilder`). The order is written once, in [`build`], with the
//! reason for each position.
//!
//! Why not tower `Service`s: the stages need no back-pressure
//! (`poll_ready`), retry would force every request to be `Clone`, and each
//! layer would add its own future type to the stack. One trait keeps each
//! stage testable on its own (give it a scripted `Next`). Most stages only
//! decide before the call and adjust the result after it
//! ([`Stage::enter`], [`Stage::leave`]); the pipeline runs a row of those
//! in one frame. Only stages that must hold the rest of the call (policy
//! while a person decides, breaker, retry, timeout) get a boxed future of
//! their own ([`Stage::handle`]). On a cold call, as an agent makes them,
//! running the pre-call stages in one frame instead of a boxed future each
//! saved 2–3 µs of CPU per call (`docs/architecture/decisions.md`).

pub mod allowlist;
pub mod breaker;
pub mod guards;
pub mod hooks;
pub mod loop_guard;
pub mod policy;
pub mod retry;
pub mod timeout;
pub mod truncate;
pub mod trust;
pub mod validate;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use crate::cancel::Cancel;
use crate::context::CallContext;
use crate::error::CallError;
use crate::events::{Event, EventBus, StageName};
use crate::registry::RegisteredTool;
use crate::settings::ToolSettings;
use crate::tool::{ToolDef, ToolResult};

/// What a stage (and the whole pipeline) produces.
pub type CallResult = Result<ToolResult, CallError>;

/// One call on its way through the pipeline. Stages may change `args`
/// (casting, hooks) and leave notices for the model and notes for people.
#[derive(Debug)]
pub struct Call {
    /// Engine-wide call id.
    pub id: u64,
    /// The resolved tool.
    pub tool: Arc<RegisteredTool>,
    /// Current arguments (cast and rewritten as stages go).
    pub args: Value,
    /// Caller, session, injected state.
    pub ctx: CallContext,
    /// Limits for this tool.
    pub settings: Arc<ToolSettings>,
    /// When the call arrived.
    pub received: Instant,
    /// When all attempts must be done; set by the retry stage, read by the
    /// per-attempt timeout so no attempt outlives the call.
    pub deadline: Option<Instant>,
    /// The call's cancellation token, when its owner can cancel it (see
    /// [`crate::cancel`]). The engine races the pipeline against it; stages
    /// only read it, to say why they were cut short (the approval queue
    /// closes a pending request with its reason).
    pub cancel: Option<Cancel>,
    /// When the tool's current attempt began, while it runs: a call cut
    /// short then still records that the tool ran, and for how long.
    executing: Option<Instant>,
    notices: Vec<String>,
    notes: Vec<(StageName, String)>,
    trace: Vec<(StageName, Duration)>,
    /// When each stage entered in a frame of [`Next::run`] began, a stack
    /// the frames share: kept here rather than in each frame's future, so
    /// the futures that wrapping stages box stay small.
    starts: Vec<Instant>,
    /// Keep a copy of what the tool returned (see [`Call::keep_raw`]).
    keep_raw: bool,
    /// What the tool's last attempt returned, before any stage changed it.
    raw: Option<ToolResult>,
    /// The name people see, when it is not the tool's registered name
    /// (see [`Call::show_as`]).
    shown: Option<Arc<str>>,
    /// The definition the policy judges the call by, when it is not the
    /// tool's own (see [`Call::judge_as`]).
    judged_as: Option<Arc<ToolDef>>,
}

impl Call {
    /// A call about to enter the pipeline.
    pub fn new(
        id: u64,
        tool: Arc<RegisteredTool>,
        args: Value,
        ctx: CallContext,
        settings: Arc<ToolSettings>,
    ) -> Self {
        Self {
            id,
            tool,
            args,
            ctx,
            settings,
            received: Instant::now(),
            deadline: None,
            cancel: None,
            executing: None,
            notices: Vec::new(),
            notes: Vec::new(),
            trace: Vec::with_capacity(12),
            starts: Vec::with_capacity(12),
            keep_raw: false,
            raw: None,
            shown: None,
            judged_as: None,
        }
    }

    /// Shows the call to people (approvals, the live feed, the audit log,
    /// refusals) as `name` instead of the tool's registered name: a coding
    /// agent's own tool gated through its hooks reads "Claude Code · Bash".
    /// Remembered rules and the loop guard key on it too, so they stay
    /// per agent tool.
    pub fn show_as(&mut self, name: Arc<str>) {
        self.shown = Some(name);
    }

    /// Judges the call by `def` in the policy: an agent's shell command is
    /// judged like `shell_exec`, so every rule that names `shell_exec`
    /// applies to it too. (The allowlist, which says which tools are
    /// listed, still sees the tool's registered name.)
    pub fn judge_as(&mut self, def: Arc<ToolDef>) {
        self.judged_as = Some(def);
    }

    /// The definition the policy judges the call by.
    pub fn judged_def(&self) -> &ToolDef {
        self.judged_as.as_deref().unwrap_or(&self.tool.def)
    }

    /// Keeps a copy of the tool's own output (the last attempt's, before
    /// truncation, trust-wrapping and notices), returned in
    /// [`CallParts::raw`]: for the console's "raw | as the model saw it".
    /// Off by default, so the copy costs nothing unless someone keeps it.
    pub fn keep_raw(&mut self) {
        self.keep_raw = true;
    }

    /// The tool's name, as people see it (see [`Call::show_as`]).
    pub fn tool_name(&self) -> &str {
        self.shown
            .as_deref()
            .unwrap_or_else(|| self.tool.def.name.as_str())
    }

    /// Leaves a message for the model, appended to the result by the engine
    /// *outside* any trust wrapper (it comes from toolgate, not the tool).
    pub fn notice(&mut self, text: impl Into<String>) {
        self.notices.push(text.into());
    }

    /// Records what a stage did, for people (events, audit log).
    pub fn note(&mut self, stage: StageName, text: impl Into<String>) {
        self.notes.push((stage, text.into()));
    }

    /// Messages for the model.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// What stages did.
    pub fn notes(&self) -> &[(StageName, String)] {
        &self.notes
    }

    /// Time spent in each stage including what it wrapped, innermost first.
    pub fn trace(&self) -> &[(StageName, Duration)] {
        &self.trace
    }

    /// When the stage entered at `depth` of the frames' stack began (see
    /// [`Next::run`]); now, should the stack ever be shorter, so a trace
    /// entry is short rather than the call failing.
    fn start(&self, depth: usize) -> Instant {
        self.starts.get(depth).copied().unwrap_or_else(Instant::now)
    }

    /// Records, for a call whose pipeline was dropped mid-way (cancelled),
    /// the attempt of the tool that was running, so the trace (and the
    /// audit row's `allowed`) says the tool ran. The stages around it left
    /// no trace entry: they never finished.
    pub fn cut_short(&mut self) {
        if let Some(started) = self.executing.take() {
            self.trace.push((StageName::Execute, started.elapsed()));
        }
    }

    /// What the call ended with, taken apart without copying: the final
    /// arguments, notices, notes and trace.
    pub fn into_parts(self) -> CallParts {
        CallParts {
            args: self.args,
            notices: self.notices,
            notes: self.notes,
            trace: self.trace,
            raw: self.raw,
        }
    }
}

/// A finished [`Call`]'s parts, see [`Call::into_parts`].
#[derive(Debug)]
pub struct CallParts {
    /// The arguments as the stages left them.
    pub args: Value,
    /// Messages for the model.
    pub notices: Vec<String>,
    /// What stages did.
    pub notes: Vec<(StageName, String)>,
    /// Time per stage, innermost first.
    pub trace: Vec<(StageName, Duration)>,
    /// The tool's own output, if [`Call::keep_raw`] asked for it and the
    /// last attempt returned one.
    pub raw: Option<ToolResult>,
}

/// How a stage takes part in a call, decided as the call reaches it.
#[derive(Debug)]
pub enum Enter {
    /// Go on to the inner stages now; [`Stage::leave`] sees their result.
    /// The pipeline runs a row of such stages in one frame, without a
    /// boxed future each.
    Pass,
    /// Refuse the call: no inner stage runs, and outer stages see this
    /// error on the way out.
    Refuse(CallError),
    /// Run [`Stage::handle`], which holds the rest of the call itself
    /// (to wait for a person, retry it, time it, or count its outcome).
    Wrap,
}

/// A pipeline stage.
///
/// Most stages decide before the call and touch the result after it:
/// they implement [`enter`](Self::enter) and [`leave`](Self::leave), which
/// the pipeline calls in one frame for a whole row of stages. Stages that
/// must hold the rest of the call (await it more than once, race it with a
/// timer, keep a permit across it) return [`Enter::Wrap`] and implement
/// [`handle`](Self::handle).
pub trait Stage: Send + Sync + 'static {
    /// Which stage this is.
    fn name(&self) -> StageName;

    /// Decides, before the inner stages, how this stage takes part.
    fn enter(&self, call: &mut Call) -> Enter {
        let _ = call;
        Enter::Wrap
    }

    /// After the inner stages of a call this stage passed on
    /// ([`Enter::Pass`]), outer stages later: may change the result.
    fn leave(&self, call: &mut Call, result: &mut CallResult) {
        let _ = (call, result);
    }

    /// Handles the call as one boxed step: refuse it, or pass it on with
    /// `next.run(call)`. The pipeline calls this when [`enter`](Self::enter)
    /// says [`Enter::Wrap`]. The default is `enter`, the rest, then `leave`,
    /// which is exactly what the pipeline does in its frame; stage tests
    /// run stages one at a time through it.
    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            match self.enter(call) {
                Enter::Pass => {
                    let mut result = next.run(call).await;
                    self.leave(call, &mut result);
                    result
                }
                Enter::Refuse(e) => Err(e),
                Enter::Wrap => next.run(call).await,
            }
        })
    }
}

/// The rest of the pipeline after the current stage. `Copy`, so a stage
/// such as retry can run it more than once.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    rest: &'a [Arc<dyn Stage>],
    /// Where stage events go, if anyone watched the trace when the call
    /// began (asked once per call: asking takes the stream's lock).
    trace: Option<&'a EventBus>,
}

impl<'a> Next<'a> {
    /// A `Next` over `rest`, ending in the tool itself. Stage tests use this
    /// to run one stage against a scripted inner stage.
    pub fn new(rest: &'a [Arc<dyn Stage>], events: &'a EventBus) -> Self {
        Self {
            rest,
            trace: events.is_watched().then_some(events),
        }
    }

    /// Runs the remaining stages, then the tool.
    ///
    /// Stages that pass on ([`Enter::Pass`]) are entered one after the
    /// other in this frame and left in reverse once the inner result is
    /// there: the onion's order, without a boxed future and a nested poll
    /// per stage. The first stage that wraps gets the rest of the call;
    /// its own `next.run` opens the next frame.
    pub async fn run(self, call: &mut Call) -> CallResult {
        // Each entered stage's start is pushed on the call's stack; the end
        // of one stage's `enter` is the start of the next, so a boundary
        // costs one clock read. A frame dropped midway (a timed-out
        // attempt) leaves entries above `base`, which only its outer
        // frames' truncation clears: every frame reads from its own base.
        let base = call.starts.len();
        call.starts.push(Instant::now());
        let mut passed = 0;
        let mut result = loop {
            let started = call.start(base + passed);
            let Some((stage, rest)) = self.rest[passed..].split_first() else {
                let args = call.args.clone();
                call.executing = Some(started);
                let result = call.tool.runner.call(args, &call.ctx).await;
                call.executing = None;
                if call.keep_raw {
                    call.raw = result.as_ref().ok().cloned();
                }
                self.record(call, StageName::Execute, started);
                break result;
            };
            match stage.enter(call) {
                Enter::Pass => {
                    passed += 1;
                    call.starts.push(Instant::now());
                }
                Enter::Refuse(e) => {
                    self.record(call, stage.name(), started);
                    break Err(e);
                }
                Enter::Wrap => {
                    let next = Next {
                        rest,
                        trace: self.trace,
                    };
                    let result = stage.handle(call, next).await;
                    self.record(call, stage.name(), started);
                    break result;
                }
            }
        };
        for (k, stage) in self.rest[..passed].iter().enumerate().rev() {
            stage.leave(call, &mut result);
            let started = call.start(base + k);
            self.record(call, stage.name(), started);
        }
        call.starts.truncate(base);
        result
    }

    /// Adds a finished stage to the call's trace and, if watched, the
    /// event stream.
    fn record(&self, call: &mut Call, name: StageName, started: Instant) {
        let elapsed = started.elapsed();
        call.trace.push((name, elapsed));
        if let Some(events) = self.trace {
            let note = call
                .notes
                .iter()
                .rev()
                .find(|(s, _)| *s == name)
                .map(|(_, n)| n.clone());
            events.emit(Event::CallStage {
                call_id: call.id,
                stage: name,
                elapsed,
                note,
            });
        }
    }
}

/// An ordered list of stages.
#[derive(Clone)]
pub struct Pipeline {
    stages: Arc<[Arc<dyn Stage>]>,
    events: EventBus,
}

impl Pipeline {
    /// A pipeline of exactly these stages, in this order. Prefer [`build`],
    /// which fixes the stage order; this exists for tests and benchmarks.
    pub fn from_stages(stages: Vec<Arc<dyn Stage>>, events: EventBus) -> Self {
        Self {
            stages: stages.into(),
            events,
        }
    }

    /// Runs `call` through every stage and the tool.
    pub async fn run(&self, call: &mut Call) -> CallResult {
        Next::new(&self.stages, &self.events).run(call).await
    }

    /// The stage order, outermost first.
    pub fn stage_names(&self) -> Vec<StageName> {
        self.stages.iter().map(|s| s.name()).collect()
    }
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.stage_names()).finish()
    }
}

/// What [`build`] needs to construct the stages.
#[derive(Clone)]
pub struct Parts {
    /// Event stream for breaker transitions, retries, loop-guard levels.
    pub events: EventBus,
    /// Allow/deny lists.
    pub filter: allowlist::FilterHandle,
    /// BEFORE/AFTER hooks, in order.
    pub hooks: Vec<Arc<dyn hooks::Hook>>,
    /// Hooks that come and go (plugins'), run after `hooks`.
    pub live_hooks: hooks::HookSet,
    /// Path and SSRF guard settings.
    pub guards: Arc<guards::GuardConfig>,
    /// The live policy (swapped on config reload).
    pub policy: crate::policy::PolicyHandle,
    /// The approval queue; `None` = `ask` refuses with `NeedsApproval`.
    pub approvals: Option<crate::approval::Approvals>,
    /// The breaker stage, shared so the engine can show and reset breakers.
    pub breaker: Arc<breaker::Breaker>,
    /// The loop guard, shared so the engine can reset halted sessions.
    pub loop_guard: Arc<loop_guard::LoopGuard>,
}

/// The pipeline, its stages numbered as in docs/architecture/overview.md
/// ("The pipeline"). Onion semantics: a stage's code before `next.run` runs
/// in list order, its code after `next.run` in reverse.
pub fn build(parts: Parts) -> Pipeline {
    let events = parts.events.clone();
    let stages: Vec<Arc<dyn Stage>> = vec![
        // 3. Hidden tools are refused before anything else looks at the call.
        Arc::new(allowlist::Allowlist::new(parts.filter)),
        // 4/14. BEFORE hooks see the raw call; AFTER hooks run last on the
        // way out, so they see exactly what the agent will get.
        Arc::new(hooks::Hooks::with_live(parts.hooks, parts.live_hooks)),
        // 13. Trust-wrapping acts on the way out only; it sits outside
        // truncation so the wrapper itself is never cut off.
        Arc::new(trust::TrustWrap::new()),
        // 12. Truncation acts on the way out, before wrapping.
        Arc::new(truncate::Truncate::new()),
        // 5. The loop guard counts every attempt, even ones validation would
        // refuse: a model repeating a broken call is looping too.
        parts.loop_guard,
        // 6. Casting and validation before guards and policy, so those read
        // typed, well-formed arguments.
        Arc::new(validate::Validate::new()),
        // 7. Path/SSRF guards before policy: an escape attempt is refused
        // outright, never put in front of a person.
        Arc::new(guards::Guards::new(parts.guards)),
        // 8. Policy and approval outside breaker and retry: one approval
        // covers every attempt, and a denial never reaches the breaker.
        Arc::new(policy::Policy::new(parts.policy, parts.approvals)),
        // 9/11. The breaker sees the final outcome of all attempts, so one
        // flaky call counts once, and fails fast before any attempt.
        parts.breaker,
        // 10. Retry wraps the per-attempt timeout, so each attempt gets its
        // own limit and all of them share the call's deadline.
        Arc::new(retry::Retry::new(events)),
        Arc::new(timeout::Timeout::new()),
    ];
    Pipeline::from_stages(stages, parts.events)
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests;
