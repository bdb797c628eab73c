//! The engine: registry + pipeline + event stream, behind one `call`.
//!
//! Every entry point (CLI, agent socket, HTTP, desktop shell) holds an
//! [`Engine`] and nothing else, so all of them get exactly the same
//! governance. `Engine::call` performs stages 1, 2 and 14 of the pipeline
//! (docs/architecture/overview.md, "The pipeline") itself (receive,
//! resolve, finish) and runs stages 3–13 and the AFTER hooks of 14 through
//! the [`Pipeline`].
//!
//! Every call that starts ends in exactly one audit row and one
//! `call.finished` event, whatever ends it: entry points whose client can
//! cancel or leave use [`Engine::call_cancellable`], which turns a fired
//! [`Cancel`] into a `cancelled` outcome instead of a dropped future.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::agent_ids::AgentIds;
use crate::approval::Approvals;
use crate::audit::AuditLog;
use crate::cancel::Cancel;
use crate::config::Config;
use crate::context::{CallContext, Session};
use crate::error::CallError;
use crate::events::{Event, EventBus, StageName};
use crate::pipeline::allowlist::{FilterHandle, ToolFilter};
use crate::pipeline::breaker::Breaker;
use crate::pipeline::guards::GuardConfig;
use crate::pipeline::hooks::Hook;
use crate::pipeline::loop_guard::LoopGuard;
use crate::pipeline::{self, Call, CallResult, Parts, Pipeline};
use crate::policy::PolicyHandle;
use crate::registry::Registry;
use crate::settings::Settings;
use crate::tool::{Content, ToolDef, ToolResult};
use crate::wire::Outcome;

/// What a call produced, plus what the pipeline recorded about it.
#[derive(Debug)]
pub struct CallReply {
    /// Engine-wide call id.
    pub call_id: u64,
    /// The result the agent gets (notices already appended).
    pub result: Result<ToolResult, CallError>,
    /// Time from arrival to reply.
    pub elapsed: Duration,
    /// What stages did, for people.
    pub notes: Vec<(StageName, String)>,
    /// Inclusive time per stage, innermost first.
    pub trace: Vec<(StageName, Duration)>,
}

/// Keeps what recent calls returned, raw and as the agent got it: the
/// console's call detail (`control::outputs::RecentOutputs`). Set once on
/// an engine ([`Engine::record_outputs`]); without one, no output is
/// copied.
pub trait OutputRecorder: Send + Sync + 'static {
    /// A call finished: `raw` is the tool's own output (its last attempt,
    /// `None` if it did not run or failed), `seen` what the agent got.
    fn record(&self, call_id: u64, raw: Option<ToolResult>, seen: &Result<ToolResult, CallError>);
}

struct Inner {
    registry: Registry,
    agent_ids: AgentIds,
    events: EventBus,
    settings: Settings,
    pipeline: Pipeline,
    filter: FilterHandle,
    breaker: Arc<Breaker>,
    loop_guard: Arc<LoopGuard>,
    audit: Option<AuditLog>,
    policy: PolicyHandle,
    approvals: Option<Approvals>,
    guards: Arc<GuardConfig>,
    next_id: AtomicU64,
    outputs: OnceLock<Arc<dyn OutputRecorder>>,
    config_problem: arc_swap::ArcSwapOption<String>,
    restart_note: arc_swap::ArcSwapOption<String>,
    connections: Arc<OpenConnections>,
    disclosure: crate::search::Disclosure,
    hook_gates: crate::hooks::gating::HookGates,
    /// Plugins' hooks, swapped as plugins come and go.
    live_hooks: crate::pipeline::hooks::HookSet,
    /// What the plugin directory holds, for the console.
    plugins: arc_swap::ArcSwap<Vec<crate::plugins::PluginView>>,
}

/// Connections open now, by who is on the other end.
#[derive(Debug, Default)]
struct OpenConnections {
    agents: AtomicU64,
    control: AtomicU64,
}

/// One open connection, counted while it lives ([`Engine::connection_opened`]).
#[derive(Debug)]
pub struct OpenConnection {
    counts: Arc<OpenConnections>,
    control: bool,
}

impl OpenConnection {
    fn counter(&self) -> &AtomicU64 {
        if self.control {
            &self.counts.control
        } else {
            &self.counts.agents
        }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.counter().fetch_sub(1, Ordering::Relaxed);
    }
}

/// The governed tool engine. Cloning shares it.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Builds an [`Engine`]; see [`Engine::builder`].
pub struct EngineBuilder {
    config: Config,
    hooks: Vec<Arc<dyn Hook>>,
    filter: Option<ToolFilter>,
    events: EventBus,
    audit: Option<AuditLog>,
    guards: GuardConfig,
    approvals: Option<Approvals>,
}

impl EngineBuilder {
    /// Uses these path roots and SSRF rules for guarded arguments.
    pub fn guards(mut self, guards: GuardConfig) -> Self {
        self.guards = guards;
        self
    }

    /// Uses `events` as the engine's event bus. Needed when a component
    /// made before the engine publishes on it, such as [`Approvals`].
    pub fn events(mut self, events: EventBus) -> Self {
        self.events = events;
        self
    }

    /// Puts `ask` verdicts in front of a person through `approvals` (open it
    /// on the same bus, see [`Self::events`]). Without it, `ask` refuses
    /// with `NeedsApproval`.
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// Adds a BEFORE/AFTER hook (run in the order added).
    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Uses this tool filter instead of the one from the config.
    pub fn filter(mut self, filter: ToolFilter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Records every call in `audit` before its reply is returned.
    pub fn audit(mut self, audit: AuditLog) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Builds the engine with an empty registry.
    pub fn build(self) -> Engine {
        let events = self.events;
        let registry = Registry::new(events.clone(), self.config.strict_schemas);
        let filter = FilterHandle::new(self.filter.unwrap_or_else(ToolFilter::allow_all));
        let breaker = Arc::new(Breaker::new(events.clone()));
        let loop_guard = Arc::new(LoopGuard::new(events.clone()));
        let policy = PolicyHandle::new(self.config.policy.clone(), events.clone());
        let guards = Arc::new(self.guards);
        let live_hooks = crate::pipeline::hooks::HookSet::default();
        let pipeline = pipeline::build(Parts {
            events: events.clone(),
            filter: filter.clone(),
            hooks: self.hooks,
            live_hooks: live_hooks.clone(),
            guards: guards.clone(),
            policy: policy.clone(),
            approvals: self.approvals.clone(),
            breaker: breaker.clone(),
            loop_guard: loop_guard.clone(),
        });
        Engine {
            inner: Arc::new(Inner {
                agent_ids: AgentIds::new(registry.clone()),
                registry,
                events,
                settings: self.config.settings.clone(),
                pipeline,
                filter,
                breaker,
                loop_guard,
                audit: self.audit,
                policy,
                approvals: self.approvals,
                guards,
                next_id: AtomicU64::new(1),
                outputs: OnceLock::new(),
                config_problem: arc_swap::ArcSwapOption::empty(),
                restart_note: arc_swap::ArcSwapOption::empty(),
                connections: Arc::default(),
                disclosure: crate::search::Disclosure::new(self.config.search.clone()),
                hook_gates: crate::hooks::gating::HookGates::default(),
                live_hooks,
                plugins: arc_swap::ArcSwap::from_pointee(Vec::new()),
            }),
        }
    }
}

impl Engine {
    /// The barrier every process started for a governed call runs under
    /// (see [`crate::barrier`]).
    pub fn barrier(&self) -> &crate::barrier::Barrier {
        &self.inner.guards.barrier
    }

    /// A builder from a validated config.
    pub fn builder(config: Config) -> EngineBuilder {
        EngineBuilder {
            config,
            hooks: Vec::new(),
            filter: None,
            events: EventBus::new(),
            audit: None,
            guards: GuardConfig::default(),
            approvals: None,
        }
    }

    /// The hooks plugins add, run after the built-in ones; replacing the
    /// list takes effect from the next call.
    pub fn live_hooks(&self) -> &crate::pipeline::hooks::HookSet {
        &self.inner.live_hooks
    }

    /// Every plugin as the console shows it (empty without a plugin
    /// directory).
    pub fn plugins(&self) -> Arc<Vec<crate::plugins::PluginView>> {
        self.inner.plugins.load_full()
    }

    /// Records what the plugin directory holds now; live views of the
    /// servers slice are told.
    pub fn set_plugins(&self, plugins: Vec<crate::plugins::PluginView>) {
        self.inner.plugins.store(Arc::new(plugins));
        self.inner.events.changed(crate::slices::Slice::Servers);
    }

    /// The registry, for entry points that add or remove tools.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Coding agents' calls gated through their hooks (see
    /// [`crate::hooks`]), between their before- and after-hook.
    pub fn hook_gates(&self) -> &crate::hooks::gating::HookGates {
        &self.inner.hook_gates
    }

    /// The gate-mode agent ids live connections hold.
    pub fn agent_ids(&self) -> &AgentIds {
        &self.inner.agent_ids
    }

    /// A subscriber to every engine event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// The event bus (for components that publish, such as upstream clients).
    pub fn events(&self) -> &EventBus {
        &self.inner.events
    }

    /// The per-tool limits; components that add tools at run time (upstream
    /// MCP servers) set their overrides here.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The circuit breakers.
    pub fn breaker(&self) -> &Breaker {
        &self.inner.breaker
    }

    /// The loop guard (to reset halted sessions).
    pub fn loop_guard(&self) -> &LoopGuard {
        &self.inner.loop_guard
    }

    /// The tools an agent may see: the registry through the allowlist,
    /// sorted by name.
    pub fn tools(&self) -> Vec<ToolDef> {
        let snap = self.inner.registry.snapshot();
        let filter = self.inner.filter.load();
        snap.sorted()
            .into_iter()
            .filter(|t| filter.permits(t.def.name.as_str()).is_ok())
            .map(|t| t.def.clone())
            .collect()
    }

    /// Tool search and progressive disclosure (see [`crate::search`]).
    pub fn disclosure(&self) -> &crate::search::Disclosure {
        &self.inner.disclosure
    }

    /// The allow/deny lists in force.
    pub fn filter(&self) -> Arc<ToolFilter> {
        self.inner.filter.load()
    }

    /// Puts new allow/deny lists in force without a restart: the next call
    /// and the next `tools/list` see them. When the lists differ from the
    /// old ones, every connected agent is sent `tools/list_changed` (through
    /// the registry's change channel). Returns whether they differed.
    pub fn set_filter(&self, filter: ToolFilter) -> bool {
        let changed = self.inner.filter.swap(filter);
        if changed {
            self.inner.registry.touch();
            self.inner.events.changed(crate::slices::Slice::Policy);
        }
        changed
    }

    /// Counts a connection (an agent's, or the CLI's on the control
    /// socket) while the returned guard lives.
    pub fn connection_opened(&self, control: bool) -> OpenConnection {
        let open = OpenConnection {
            counts: self.inner.connections.clone(),
            control,
        };
        open.counter().fetch_add(1, Ordering::Relaxed);
        open
    }

    /// Connections open now: `(agents, control)`.
    pub fn open_connections(&self) -> (u64, u64) {
        let c = &self.inner.connections;
        (
            c.agents.load(Ordering::Relaxed),
            c.control.load(Ordering::Relaxed),
        )
    }

    /// Why the last edit of the config file was not applied (`None` once
    /// an edit applies). The config watcher sets it; people see it in the
    /// policy slice, since an edit that silently did nothing is the worst
    /// outcome of editing a file by hand.
    pub fn set_config_problem(&self, problem: Option<String>) {
        self.set_policy_note(&self.inner.config_problem, problem);
    }

    /// Which saved edits of the config file wait for a restart, in words
    /// (`None` when none do); see [`crate::config::restart`].
    pub fn set_restart_note(&self, note: Option<String>) {
        self.set_policy_note(&self.inner.restart_note, note);
    }

    /// See [`Self::set_restart_note`].
    pub fn restart_note(&self) -> Option<Arc<String>> {
        self.inner.restart_note.load_full()
    }

    fn set_policy_note(&self, slot: &arc_swap::ArcSwapOption<String>, note: Option<String>) {
        let new = note.map(Arc::new);
        let old = slot.swap(new.clone());
        if old.as_deref() != new.as_deref() {
            self.inner.events.changed(crate::slices::Slice::Policy);
        }
    }

    /// See [`Self::set_config_problem`].
    pub fn config_problem(&self) -> Option<Arc<String>> {
        self.inner.config_problem.load_full()
    }

    /// The live policy; the config watcher calls `policy().swap(..)`.
    pub fn policy(&self) -> &PolicyHandle {
        &self.inner.policy
    }

    /// The approval queue and remembered decisions, if configured.
    pub fn approvals(&self) -> Option<&Approvals> {
        self.inner.approvals.as_ref()
    }

    /// The audit log, if the engine records calls.
    pub fn audit(&self) -> Option<&AuditLog> {
        self.inner.audit.as_ref()
    }

    /// Hands every finished call's output to `recorder` from now on (the
    /// console's store of recent outputs). Only one recorder per engine:
    /// false if one was set already.
    pub fn record_outputs(&self, recorder: Arc<dyn OutputRecorder>) -> bool {
        self.inner.outputs.set(recorder).is_ok()
    }

    /// Runs one call through the governed pipeline. With an audit log, the
    /// call's row is committed before this returns; if it cannot be, the
    /// agent gets an error instead of an unrecorded result (fail closed).
    ///
    /// Dropping the returned future abandons the call without a row: entry
    /// points whose client can cancel or leave use
    /// [`Self::call_cancellable`].
    pub async fn call(&self, session: &Session, tool: &str, args: Value) -> CallReply {
        self.call_with(session, Target::Named(tool), args, None)
            .await
    }

    /// Like [`Self::call`], cancelled when `cancel` fires: the pipeline is
    /// dropped at once (a running shell command's process group is killed,
    /// a pending approval is closed as `cancelled` with the token's
    /// reason, so nobody can approve it any more), and the call still ends
    /// in its audit row and `call.finished` event, with
    /// [`CallError::Cancelled`] and the reason. A call whose token fired
    /// before it started never reaches the pipeline.
    pub async fn call_cancellable(
        &self,
        session: &Session,
        tool: &str,
        args: Value,
        cancel: &Cancel,
    ) -> CallReply {
        self.call_with(session, Target::Named(tool), args, Some(cancel))
            .await
    }

    /// Like [`Self::call_cancellable`], for a tool that is not in the
    /// registry, so no agent can list or call it: a coding agent's own
    /// tool, gated through its hooks (see [`crate::hooks`]). The call is
    /// shown as [`Prepared::shown`] and judged by [`Prepared::judged_as`].
    pub async fn call_prepared(
        &self,
        session: &Session,
        prepared: &Prepared,
        args: Value,
        cancel: &Cancel,
    ) -> CallReply {
        self.call_with(session, Target::Prepared(prepared), args, Some(cancel))
            .await
    }

    async fn call_with(
        &self,
        session: &Session,
        target: Target<'_>,
        args: Value,
        cancel: Option<&Cancel>,
    ) -> CallReply {
        let tool = target.shown();
        let inner = &*self.inner;
        let call_id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        let ts_ms = crate::audit::now_ms();
        let started = Instant::now();
        // Asked once: asking takes the event stream's lock. The console
        // follows calls without their per-stage trace (see `EventBus`).
        let watched = inner.events.follows_calls();
        // The name as events carry it, made only when someone watches.
        let tool_name: Option<Arc<str>> =
            watched.then(|| Arc::from(crate::events::event_text(tool)));
        if let Some(tool_name) = &tool_name {
            inner.events.emit(Event::CallReceived {
                call_id,
                tool: tool_name.clone(),
                caller: Arc::from(session.caller.to_string()),
                session: session.id.shared(),
                preview: Arc::from(crate::preview::preview(None, &args)),
            });
        }
        let recorder = inner.outputs.get();
        let resolved = match target {
            Target::Named(name) => self.resolve(name),
            Target::Prepared(p) => Ok(p.tool.clone()),
        };
        let (mut reply, args, schema, raw) = match resolved {
            Err(e) => (reply(call_id, Err(e), started), args, None, None),
            Ok(resolved) => {
                // Only a schema that marks something secret is walked for
                // the audit row (decided once per definition).
                let schema = resolved
                    .schema
                    .has_secrets()
                    .then(|| resolved.schema.schema().clone());
                let prepared = match target {
                    Target::Prepared(p) => Some(p),
                    Target::Named(_) => None,
                };
                let (reply, args, raw) = self
                    .run(
                        session,
                        call_id,
                        (resolved, prepared),
                        args,
                        started,
                        cancel,
                    )
                    .await;
                (reply, args, schema, raw)
            }
        };
        if let Some(audit) = &inner.audit {
            let recorded =
                audit.record_reply(ts_ms, session, tool, &args, schema.as_deref(), &reply);
            if let Err(e) = recorded {
                reply.result = Err(CallError::internal(format!(
                    "{e}; the reply was withheld because it could not be recorded (the tool may have run)"
                )));
            }
        }
        if let Some(recorder) = recorder {
            recorder.record(call_id, raw, &reply.result);
        }
        if let Some(tool_name) = tool_name {
            inner.events.emit(Event::CallFinished {
                call_id,
                tool: tool_name,
                outcome: outcome(&reply.result),
                elapsed: reply.elapsed,
            });
        }
        reply
    }

    async fn run(
        &self,
        session: &Session,
        call_id: u64,
        (tool, prepared): (Arc<crate::registry::RegisteredTool>, Option<&Prepared>),
        args: Value,
        started: Instant,
        cancel: Option<&Cancel>,
    ) -> (CallReply, Value, Option<ToolResult>) {
        let ctx = CallContext {
            call_id,
            caller: session.caller.clone(),
            session: session.id.clone(),
            state: session.state.clone(),
        };
        let mut settings = self.inner.settings.resolve(tool.def.name.as_str());
        if matches!(tool.def.source, crate::tool::Source::Agent(_))
            && settings.retry.max_retries > 0
        {
            // The agent runs its own tools: toolgate cannot re-run them.
            let mut s = (*settings).clone();
            s.retry.max_retries = 0;
            settings = Arc::new(s);
        }
        if let Some(p) = prepared {
            settings = p.settings.clone();
        }
        let mut call = Call::new(call_id, tool, args, ctx, settings);
        if let Some(p) = prepared {
            call.show_as(p.shown.clone());
            if let Some(def) = &p.judged_as {
                call.judge_as(def.clone());
            }
        }
        // The raw output is copied only for a recorder (the console).
        if self.inner.outputs.get().is_some() {
            call.keep_raw();
        }
        let result = match cancel {
            None => self.inner.pipeline.run(&mut call).await,
            Some(cancel) => self.run_cancellable(&mut call, cancel).await,
        };
        let parts = call.into_parts();
        let mut reply = reply(
            call_id,
            result.map(|r| with_notices(r, &parts.notices)),
            started,
        );
        reply.notes = parts.notes;
        reply.trace = parts.trace;
        (reply, parts.args, parts.raw)
    }
}

impl Engine {
    /// The pipeline raced against `cancel`. The pipeline is polled first,
    /// so a call that finishes on its first poll (most built-in calls)
    /// never touches the token, and a call that finished is reported as
    /// such even if its token fired meanwhile.
    async fn run_cancellable(&self, call: &mut Call, cancel: &Cancel) -> CallResult {
        if let Some(reason) = cancel.reason() {
            return Err(CallError::Cancelled { reason });
        }
        call.cancel = Some(cancel.clone());
        let result = tokio::select! {
            biased;
            result = self.inner.pipeline.run(call) => Ok(result),
            reason = cancel.cancelled() => Err(reason),
        };
        // The pipeline's future is gone here: whatever it held (a child
        // process group, a pending approval) was released as it dropped.
        result.unwrap_or_else(|reason| {
            call.cut_short();
            Err(CallError::Cancelled { reason })
        })
    }
}

/// A tool prepared outside the registry, for [`Engine::call_prepared`].
#[derive(Clone)]
pub struct Prepared {
    /// The tool (never registered).
    pub tool: Arc<crate::registry::RegisteredTool>,
    /// How people see it: approvals, the live feed, the audit log.
    pub shown: Arc<str>,
    /// The definition the policy judges it by, if not its own.
    pub judged_as: Option<Arc<ToolDef>>,
    /// Its limits.
    pub settings: Arc<crate::settings::ToolSettings>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("tool", &self.tool.def.name)
            .field("shown", &self.shown)
            .finish_non_exhaustive()
    }
}

/// What a call names: a registered tool, or a prepared one.
#[derive(Clone, Copy)]
enum Target<'a> {
    Named(&'a str),
    Prepared(&'a Prepared),
}

impl<'a> Target<'a> {
    /// The name the call is recorded and shown under.
    fn shown(self) -> &'a str {
        match self {
            Target::Named(name) => name,
            Target::Prepared(p) => &p.shown,
        }
    }
}

fn reply(call_id: u64, result: Result<ToolResult, CallError>, started: Instant) -> CallReply {
    CallReply {
        call_id,
        result,
        elapsed: started.elapsed(),
        notes: Vec::new(),
        trace: Vec::new(),
    }
}

/// Appends toolgate's own messages after the (possibly wrapped) output, so
/// they are never inside an untrusted wrapper.
fn with_notices(mut r: ToolResult, notices: &[String]) -> ToolResult {
    for n in notices {
        r.content.push(Content::text(format!("[toolgate] {n}")));
    }
    r
}

fn outcome(result: &Result<ToolResult, CallError>) -> Outcome {
    match result {
        Ok(r) => Outcome::Ok {
            is_error: r.is_error,
            size: r.size(),
        },
        Err(CallError::Cancelled { reason }) => Outcome::Cancelled { reason: *reason },
        Err(e) => Outcome::Err {
            kind: e.kind(),
            message: crate::events::display_text(e, crate::events::MAX_EVENT_TEXT),
            counts_as_failure: e.counts_as_failure(),
        },
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("registry", &self.inner.registry)
            .finish_non_exhaustive()
    }
}
