//! `toolgate hook …`: the command coding agents run as their hook, and
//! installing it into their settings (`install`/`remove`, through
//! `toolgate::connect` like the MCP configs, see `connect_cmd`).
//!
//! `toolgate hook run CLIENT` reads one hook payload on stdin, asks the
//! running engine over the agent socket (`toolgate/hook`), and prints the
//! answer in the agent's format. It finds the engine like the bridge does
//! (the data dir's discovery file, from HOME alone), and when nothing
//! answers it follows `[hooks] when_engine_down` (default: the agent asks
//! its user) and says so in one line on stderr. It never answers allow
//! without the engine.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use toolgate::config::raw::RawConfig;
use toolgate::discovery;
use toolgate::hooks::HookAgent;
use toolgate::hooks::call::{Answer, Decision, Phase};
use toolgate::hooks::fallback::WhenEngineDown;
use toolgate::hooks::install_spec::hook_wait_limit;
use toolgate::hooks::protocol::{self, Parsed, Rendered};

use crate::{Cli, default_socket};

/// `toolgate hook` subcommands.
#[derive(Subcommand)]
pub(crate) enum HookCmd {
    /// Answer one hook event of a coding agent: its payload on stdin, the
    /// answer on stdout, in the agent's own format (what the agent's
    /// settings run, one command for every event).
    Run {
        /// The agent: claude-code, cursor or gemini-cli.
        client: HookAgent,
    },
    /// Install toolgate's hooks into an agent's settings (claude-code,
    /// cursor, gemini-cli), beside the person's own hooks.
    Install {
        /// The agent.
        client: String,
        #[command(flatten)]
        args: crate::connect_cmd::PlanArgs,
    },
    /// Remove the hooks `hook install` added, keeping the person's own.
    Remove {
        /// The agent.
        client: String,
        #[command(flatten)]
        args: crate::connect_cmd::PlanArgs,
    },
}

/// Largest payload read (Cursor's `beforeReadFile` carries the file).
const MAX_PAYLOAD: u64 = 64 * 1024 * 1024;

/// How long reaching the engine may take: the fallback must come at once
/// when it is not running.
const CONNECT_LIMIT: Duration = Duration::from_millis(500);

/// How long an after-hook waits for the engine to record the outcome.
const REPORT_LIMIT: Duration = Duration::from_secs(20);

/// `toolgate hook run CLIENT`.
pub(crate) async fn run(cli: &Cli, client: HookAgent) -> anyhow::Result<ExitCode> {
    let rendered = answer(cli, client).await;
    let mut out = std::io::stdout().lock();
    if !rendered.stdout.is_empty() {
        writeln!(out, "{}", rendered.stdout)?;
    }
    out.flush()?;
    if !rendered.stderr.is_empty() {
        eprintln!("{}", rendered.stderr);
    }
    Ok(ExitCode::from(rendered.exit))
}

async fn answer(cli: &Cli, agent: HookAgent) -> Rendered {
    let mut payload = Vec::new();
    if let Err(e) = std::io::stdin().take(MAX_PAYLOAD).read_to_end(&mut payload) {
        return protocol::render_unusable(
            agent,
            &protocol::HookInputError {
                agent: agent.display_name(),
                problem: format!("could not be read from stdin ({e})"),
                event: None,
            },
        );
    }
    let parsed = match protocol::parse(agent, &payload) {
        Ok(p) => p,
        Err(e) => return protocol::render_unusable(agent, &e),
    };
    drop(payload);
    let phase = parsed.call.phase;
    if parsed.own_tool {
        let abstain = Answer::new(Decision::Abstain, "");
        return protocol::render(agent, &parsed.event, phase, &abstain);
    }
    let settings = HookSettings::read(cli);
    match ask_engine(cli, &settings, &parsed).await {
        Ok(reply) if phase == Phase::Before => before_reply(agent, &parsed, &reply),
        Ok(_) => protocol::render(
            agent,
            &parsed.event,
            phase,
            &Answer::new(Decision::Abstain, ""),
        ),
        Err(why) => unreachable_engine(&settings, agent, &parsed, &why),
    }
}

/// What the hook needs from toolgate's config file: where the engine's
/// data dir is, and `[hooks]`. Only parsed, not validated (policy, servers
/// and the rest are the engine's): a hook runs before every tool call.
struct HookSettings {
    data_dir: std::path::PathBuf,
    when_engine_down: WhenEngineDown,
    /// Why the file could not be used, if it could not.
    problem: Option<String>,
}

impl HookSettings {
    fn read(cli: &Cli) -> Self {
        let (raw, problem) = match Self::raw(cli) {
            Ok(raw) => (raw, None),
            Err(e) => (RawConfig::default(), Some(e)),
        };
        let data_dir = cli
            .data_dir
            .clone()
            .or_else(|| raw.data_dir.as_deref().map(toolgate::paths::expand_home))
            .unwrap_or_else(toolgate::paths::default_data_dir);
        Self {
            data_dir,
            when_engine_down: raw.hooks.when_engine_down.unwrap_or_default(),
            problem,
        }
    }

    fn raw(cli: &Cli) -> Result<RawConfig, String> {
        let (path, must_exist) = match &cli.config {
            Some(p) => (p.clone(), true),
            None => match toolgate::paths::default_config_file() {
                Some(p) => (p, false),
                None => return Ok(RawConfig::default()),
            },
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))
            }
            Err(e) if !must_exist && e.kind() == std::io::ErrorKind::NotFound => {
                Ok(RawConfig::default())
            }
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }
}

/// The engine's answer to a before-hook, rendered; a reply that is not an
/// answer is treated as no answer at all (never as an allow).
fn before_reply(agent: HookAgent, parsed: &Parsed, reply: &Value) -> Rendered {
    match serde_json::from_value::<Answer>(reply.clone()) {
        Ok(answer) => protocol::render(agent, &parsed.event, Phase::Before, &answer),
        Err(e) => {
            let answer = Answer::new(
                Decision::Ask,
                format!(
                    "toolgate gave an answer this hook cannot read ({e}), so {} asks you",
                    agent.display_name()
                ),
            );
            protocol::render(agent, &parsed.event, Phase::Before, &answer)
        }
    }
}

/// Without the engine: the configured fallback for a before-hook, one line
/// on stderr either way.
fn unreachable_engine(
    settings: &HookSettings,
    agent: HookAgent,
    parsed: &Parsed,
    why: &str,
) -> Rendered {
    let mode = settings.when_engine_down;
    let config_note = settings
        .problem
        .as_ref()
        .map_or_else(String::new, |p| format!(" (config not read: {p})"));
    if parsed.call.phase == Phase::After {
        let line = format!(
            "toolgate {why}; the result of this {} call was not recorded",
            parsed.call.tool
        );
        return protocol::render(
            agent,
            &parsed.event,
            Phase::After,
            &Answer::new(Decision::Abstain, ""),
        )
        .with_note(&line);
    }
    let answer = mode.answer(agent, why);
    let line = format!("{}{config_note}", answer.reason);
    protocol::render(agent, &parsed.event, Phase::Before, &answer).with_note(&line)
}

/// The engine's agent socket: `--socket`, else the one the data dir's
/// discovery file names (its engine's pid alive), else the default. Unlike
/// [`discovery::locate`], it does not try the sockets first: the one
/// connection the hook makes is the test, and a hook runs before every
/// tool call.
fn agent_socket(cli: &Cli, data_dir: &std::path::Path) -> std::path::PathBuf {
    if let Some(socket) = &cli.socket {
        return socket.clone();
    }
    match discovery::read(data_dir) {
        Ok(Some(info)) if discovery::pid_alive(info.pid) => info.agent_socket,
        _ => default_socket(data_dir),
    }
}

/// Sends the call to the engine and waits for its answer. The error says
/// why there is none, completing "toolgate …".
async fn ask_engine(cli: &Cli, settings: &HookSettings, parsed: &Parsed) -> Result<Value, String> {
    let socket = agent_socket(cli, &settings.data_dir);
    let stream = match tokio::time::timeout(CONNECT_LIMIT, UnixStream::connect(&socket)).await {
        Ok(Ok(s)) => s,
        Ok(Err(_)) => return Err("is not running".into()),
        Err(_) => return Err("did not answer within half a second".into()),
    };
    let limit = match parsed.call.phase {
        Phase::Before => hook_wait_limit(),
        Phase::After => REPORT_LIMIT,
    };
    match tokio::time::timeout(limit, exchange(stream, &parsed.call)).await {
        Ok(result) => result,
        Err(_) => Err(format!("did not decide within {} seconds", limit.as_secs())),
    }
}

async fn exchange(
    stream: UnixStream,
    call: &toolgate::hooks::call::HookCall,
) -> Result<Value, String> {
    let (rd, mut wr) = stream.into_split();
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "toolgate/hook", "params": call,
    }))
    .map_err(|e| format!("could not be asked ({e})"))?;
    line.push(b'\n');
    wr.write_all(&line)
        .await
        .map_err(|_| "closed the connection".to_owned())?;
    let mut reply = String::new();
    let mut reader = BufReader::new(rd);
    let n = reader
        .read_line(&mut reply)
        .await
        .map_err(|_| "closed the connection before answering".to_owned())?;
    if n == 0 {
        return Err("closed the connection before answering".into());
    }
    let v: Value =
        serde_json::from_str(&reply).map_err(|e| format!("answered something unreadable ({e})"))?;
    if let Some(result) = v.get("result") {
        return Ok(result.clone());
    }
    let message = v
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("no message");
    Err(format!("refused the hook's question ({message})"))
}
