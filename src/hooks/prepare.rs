//! The tools an agent's calls are judged as: prepared once per agent tool,
//! never registered (no agent can list or call them), and given to
//! [`Engine::call_prepared`](crate::Engine::call_prepared).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::json;

use super::HookAgent;
use super::mapping::Judge;
use super::runner::HookRunner;
use crate::builtin::{fs, http, shell};
use crate::engine::{Engine, Prepared};
use crate::guard::shell_like::ShellLike;
use crate::registry::RegisteredTool;
use crate::schema::CompiledSchema;
use crate::settings::LoopGuardConfig;
use crate::tool::{Source, ToolDef, ToolName, Trust, TypedTool, schema_for};

/// How long the engine waits for the after-hook of an allowed call. The
/// agent's own limits are shorter (Claude Code stops a Bash command after
/// 10 minutes at most); past this, the call's audit row says the agent
/// never reported how it ended.
pub const REPORT_WINDOW: Duration = Duration::from_secs(30 * 60);

/// Most agent tools kept prepared; past it the cache starts over (MCP tool
/// names are the agent's to choose, so they are not trusted to stay few).
const MAX_PREPARED: usize = 512;

/// Prepared tools by agent and tool name.
#[derive(Debug, Default)]
pub struct PreparedTools(Mutex<HashMap<(HookAgent, String), Arc<Prepared>>>);

impl PreparedTools {
    /// The prepared tool for `agent`'s `tool`, judged as `judge`.
    ///
    /// # Errors
    /// The tool's schema does not compile (a bug: the built-ins' schemas
    /// and the open object schema always do).
    pub fn get(
        &self,
        engine: &Engine,
        agent: HookAgent,
        tool: &str,
        judge: Judge,
    ) -> Result<Arc<Prepared>, String> {
        let key = (agent, tool.to_owned());
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = map.get(&key) {
            return Ok(p.clone());
        }
        if map.len() >= MAX_PREPARED {
            map.clear();
        }
        let p = Arc::new(prepare(engine, agent, tool, judge)?);
        map.insert(key, p.clone());
        Ok(p)
    }
}

impl PreparedTools {
    /// The definition of the agent tool people see as `shown` ("Claude
    /// Code · Bash"), once one of its calls was prepared: what the
    /// console's "Approve & always…" reads to offer a command's shape.
    pub fn def_shown_as(&self, shown: &str) -> Option<ToolDef> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.values()
            .find(|p| &*p.shown == shown)
            .map(|p| p.tool.def.clone())
    }
}

/// "Claude Code · Bash": how people see an agent's tool.
pub fn shown_name(agent: HookAgent, tool: &str) -> String {
    format!("{} · {tool}", agent.display_name())
}

fn prepare(
    engine: &Engine,
    agent: HookAgent,
    tool: &str,
    judge: Judge,
) -> Result<Prepared, String> {
    let shown: Arc<str> = shown_name(agent, tool).into();
    // `<agent>__<tool>`, the way upstream tools are named: what policy
    // rules, `[tools.NAME]` overrides and the breakers see.
    let name = crate::upstream::tool_name(agent.id(), tool).map_err(|e| e.to_string())?;
    let judged_as = builtin_def(judge).map(Arc::new);
    let mut def = match &judged_as {
        Some(b) => ToolDef {
            name: name.clone(),
            ..(**b).clone()
        },
        None => ToolDef::new(
            name.clone(),
            format!(
                "{}'s own {tool} tool, gated through its hooks",
                agent.display_name()
            ),
            json!({"type": "object"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
    };
    if let Judge::Other(risk) = judge {
        def.risk = risk;
    }
    def.source = Source::Agent(agent.id().into());
    def.trust = Trust::Trusted;
    def.annotations.title = Some(shown.to_string());
    let schema = CompiledSchema::compile(name.as_str(), &def.input_schema, false)
        .map_err(|e| e.to_string())?;
    let tool = Arc::new(RegisteredTool {
        shell_like: ShellLike::of(&def),
        def,
        schema,
        runner: Arc::new(HookRunner),
    });
    let mut settings = (*engine.settings().resolve(name.as_str())).clone();
    if !engine.settings().has_own(name.as_str()) {
        settings.loop_guard = AGENT_LOOP_GUARD;
    }
    // The agent runs its tool: toolgate cannot re-run it, and the tool may
    // run as long as the agent lets it. The runner gives up first.
    settings.retry.max_retries = 0;
    settings.timeout = REPORT_WINDOW + Duration::from_secs(60);
    settings.deadline = settings.timeout;
    Ok(Prepared {
        tool,
        shown,
        judged_as,
        settings: Arc::new(settings),
    })
}

/// The loop guard of a coding agent's own tool without `[tools.NAME]`
/// settings. A coding agent re-runs the same command on purpose (the tests
/// after every edit), so it is warned at 5 identical calls in two minutes
/// and refused from 12, and its session is never halted: halting would
/// refuse every later tool of the person's agent session, which only the
/// agent's own restart would end.
const AGENT_LOOP_GUARD: LoopGuardConfig = LoopGuardConfig {
    window: Duration::from_secs(120),
    warn_at: 5,
    block_at: 12,
    halt_at: 0,
};

/// The built-in's definition, exactly as it is registered.
fn builtin_def(judge: Judge) -> Option<ToolDef> {
    match judge {
        Judge::Shell => typed_def::<shell::ShellExec>(),
        Judge::Write => typed_def::<fs::FsWrite>(),
        Judge::Read => typed_def::<fs::FsRead>(),
        Judge::Fetch => typed_def::<http::HttpFetch>(),
        Judge::Other(_) => None,
    }
}

fn typed_def<T: TypedTool>() -> Option<ToolDef> {
    let name = ToolName::new(T::NAME).ok()?;
    let (schema, description) = schema_for::<T::Args>();
    Some(T::configure(ToolDef::new(
        name,
        description.unwrap_or_default(),
        schema,
    )))
}
