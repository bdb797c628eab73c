//! The `toolgate` command: thin glue over the engine library. All behaviour
//! lives in the library; this binary parses flags, picks the local engine or
//! the running daemon, and prints. Errors are one line on stderr and a
//! non-zero exit (1: the call failed or was refused; 2: bad usage or
//! configuration).

mod allocator;
mod calls;
mod config_cmd;
mod connect_cmd;
mod decide;
mod hook_cmd;
mod inspect;
mod serve;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use toolgate::barrier::credential::Credential;
use toolgate::client::ControlClient;

use toolgate::config::Config;
use toolgate::daemon::ServeOptions;
use toolgate::discovery::{self, Located};

/// See the note on `tikv-jemallocator` in Cargo.toml, and `allocator`.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Governs the tool calls of AI agents.
#[derive(Parser)]
#[command(name = "toolgate", version, about)]
struct Cli {
    /// Config file (default: ~/.config/toolgate/config.toml).
    #[arg(long, global = true, env = "TOOLGATE_CONFIG")]
    config: Option<PathBuf>,
    /// Data directory (default: ~/.local/share/toolgate).
    #[arg(long, global = true, env = "TOOLGATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Agent socket (default: the running engine's, from DATA_DIR/engine.json;
    /// else $XDG_RUNTIME_DIR/toolgate/agent.sock).
    #[arg(long, global = true, env = "TOOLGATE_SOCKET")]
    socket: Option<PathBuf>,
    /// Extra root directory for the file tools and shell_exec (repeatable).
    #[arg(long = "root", global = true)]
    roots: Vec<PathBuf>,
    /// Treat warnings as errors (also when CI=true).
    #[arg(long, global = true)]
    strict: bool,
    /// Never use a running daemon; run calls in this process.
    #[arg(long, global = true)]
    local: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the headless daemon: engine, audit log, agent socket, localhost HTTP.
    Serve {
        /// Port of the localhost MCP-over-HTTP endpoint and the console
        /// (0 = the port this data dir's engine used last if it is free,
        /// else a free one).
        #[arg(long, default_value_t = 0)]
        http_port: u16,
        /// Do not serve MCP over HTTP (nor the console).
        #[arg(long)]
        no_http: bool,
        /// Internal, used by `mcp-bridge --spawn`: run in a session of our
        /// own, and exit with success if another engine owns the data dir.
        #[arg(long, hide = true)]
        detach: bool,
        /// Serve the console UI from this directory instead of the
        /// built-in bundle (UI development: `npm --prefix ui run build`).
        #[arg(long, value_name = "DIR")]
        ui_dir: Option<PathBuf>,
    },
    /// Open the running daemon's console in the default browser.
    Console {
        /// Only print the one-time login URL.
        #[arg(long)]
        print: bool,
        /// Print the `mcpServers` snippet for a stdio MCP client (the
        /// console's "Connect an agent"), with the command as it resolves
        /// on this machine; which case applied goes to stderr. Needs no
        /// running engine.
        #[arg(long, conflicts_with = "print")]
        print_snippet: bool,
    },
    /// Coding agents' hooks: what their settings run before and after
    /// each of their own tools.
    Hook {
        #[command(subcommand)]
        cmd: hook_cmd::HookCmd,
    },
    /// Relay stdio to the daemon's socket, for stdio-only MCP clients.
    McpBridge {
        /// Start a daemon (detached, logging to DATA_DIR/engine.log) if none
        /// owns the data dir.
        #[arg(long)]
        spawn: bool,
        /// Name the client behind the bridge ("Cursor"): approvals, Live
        /// and the audit call the caller this, whatever the client's own
        /// MCP name is. A label only: it grants nothing.
        #[arg(long, value_name = "NAME")]
        client: Option<String>,
    },
    /// List the tools agents can see.
    Tools {
        /// Rank the tools matching these words (the index agents' tool_search uses).
        #[arg(long, value_name = "WORDS", conflicts_with = "as_client")]
        search: Option<String>,
        /// Show what this client (its MCP `initialize` name, e.g. claude-code) is listed, and why.
        #[arg(long = "as", value_name = "CLIENT")]
        as_client: Option<String>,
        /// How many search results.
        #[arg(long, default_value_t = 20, requires = "search")]
        limit: usize,
        /// Pin this tool as core in the running engine: never deferred,
        /// listed directly to every agent (kept across restarts).
        #[arg(long, value_name = "TOOL", conflicts_with_all = ["search", "as_client", "unpin_core"])]
        pin_core: Option<String>,
        /// Take back a tool's pin as core.
        #[arg(long, value_name = "TOOL", conflicts_with_all = ["search", "as_client"])]
        unpin_core: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the governed pipeline.
    Call {
        /// Tool name.
        tool: String,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Show the circuit breakers of the running daemon.
    Breakers {
        /// Close this tool's breaker instead of listing.
        #[arg(long, value_name = "TOOL")]
        reset: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// List calls waiting for a person's decision.
    Approvals {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Approve a waiting call.
    Approve {
        /// The request id from `toolgate approvals`.
        id: i64,
        /// Also allow matching future calls: `tool`, `caller`, or
        /// `args:/path=GLOB` (see docs/policy.md).
        #[arg(long, value_name = "SCOPE")]
        always: Option<String>,
        /// Print the decided request (and rule) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Deny a waiting call.
    Deny {
        /// The request id from `toolgate approvals`.
        id: i64,
        /// Told to the agent.
        #[arg(long)]
        reason: Option<String>,
        /// Print the decided request as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remembered "always allow/deny" decisions, with the IDs `--rm` takes.
    Rules {
        /// Revoke this rule instead of listing.
        #[arg(long, value_name = "ID")]
        rm: Option<i64>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Upstream MCP servers of the running daemon.
    Servers {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Pinned upstream tool definitions; quarantined ones wait for approval.
    Pins {
        /// Approve the changed definition of this tool.
        #[arg(long, value_name = "TOOL")]
        approve: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print another MCP client's servers as `[[servers]]` TOML to stdout.
    Import {
        #[command(subcommand)]
        from: config_cmd::ImportFrom,
    },
    /// Manage keychain secrets that the config refers to as `keyring:NAME`.
    Secret {
        #[command(subcommand)]
        action: config_cmd::SecretAction,
    },
    /// Check what the barrier between governed processes and toolgate
    /// holds on this machine (exit 1 when it is off).
    Doctor {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Put an MCP client's servers under toolgate (without CLIENT: list
    /// the clients found, their servers and whether they are connected).
    Connect {
        /// claude-desktop, claude-code, cursor, vscode, windsurf,
        /// gemini-cli, codex or zed.
        client: Option<String>,
        #[command(flatten)]
        args: connect_cmd::PlanArgs,
    },
    /// Undo `toolgate connect CLIENT`: the client's config as it was (with
    /// any later edits kept), its servers out of toolgate's config.
    Disconnect {
        /// The client.
        client: String,
        #[command(flatten)]
        args: connect_cmd::PlanArgs,
    },
    /// Show the audit log (read straight from the database).
    Audit {
        /// Keep printing new calls as they are recorded.
        #[arg(long)]
        tail: bool,
        /// How many recent calls to show first.
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    // A governed process's warden runs before anything else: no runtime,
    // no threads, no logging.
    toolgate::barrier::warden::run_if_asked();
    init_tracing();
    let cli = Cli::parse();
    if matches!(cli.command, Command::Serve { .. }) {
        allocator::return_freed_memory();
    }
    // A hook runs before every tool call of a coding agent, and waits on
    // one socket: a runtime on this thread starts faster than a pool.
    let runtime = if matches!(cli.command, Command::Hook { .. }) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Runtime::new()
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => return fail(2, &format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => fail(2, &format!("{e:#}")),
    }
}

/// Prints the one-line error and returns the exit code.
fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("toolgate: error: {message}");
    ExitCode::from(code)
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // A log line that cannot be written (stderr on a full disk) is
    // dropped: reporting it would `eprintln!` to the same stderr, which
    // panics, and a panic in a call's task fails the call.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .init();
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Serve {
            http_port,
            no_http,
            detach,
            ui_dir,
        } => {
            let http = (!no_http).then_some(*http_port);
            serve::serve(&cli, http, *detach, ui_dir.clone()).await
        }
        Command::Console {
            print_snippet: true,
            ..
        } => Ok(print_snippet(&cli)),
        Command::Console { print, .. } => inspect::console(&cli, *print).await,
        Command::McpBridge { spawn, client } => {
            serve::bridge(&cli, *spawn, client.as_deref()).await
        }
        Command::Hook {
            cmd: hook_cmd::HookCmd::Run { client },
        } => hook_cmd::run(&cli, *client).await,
        Command::Tools {
            pin_core: Some(name),
            json,
            ..
        } => calls::pin_core(&cli, name, true, *json).await,
        Command::Tools {
            unpin_core: Some(name),
            json,
            ..
        } => calls::pin_core(&cli, name, false, *json).await,
        Command::Tools {
            search,
            as_client,
            limit,
            json,
            ..
        } => {
            let ask = calls::ToolsAsk {
                search: search.as_deref(),
                as_client: as_client.as_deref(),
                limit: *limit,
            };
            calls::tools(&cli, ask, *json).await
        }
        Command::Call { tool, args, json } => calls::call(&cli, tool, args, *json).await,
        Command::Breakers { reset, json } => inspect::breakers(&cli, reset.as_deref(), *json).await,
        Command::Audit { tail, limit, json } => inspect::audit(&cli, *tail, *limit, *json).await,
        Command::Doctor { json } => inspect::doctor(&cli, *json),
        Command::Approvals { json } => inspect::approvals(&cli, *json).await,
        Command::Approve { id, always, json } => {
            decide::approve(&cli, *id, always.as_deref(), *json).await
        }
        Command::Deny { id, reason, json } => {
            decide::deny(&cli, *id, reason.as_deref(), *json).await
        }
        Command::Rules { rm: Some(id), json } => decide::revoke(&cli, *id, *json).await,
        Command::Rules { rm: None, json } => decide::rules(&cli, *json).await,
        Command::Servers { json } => {
            inspect::control(
                &cli,
                "toolgate/servers",
                serde_json::json!({}),
                "servers",
                *json,
            )
            .await
        }
        Command::Pins {
            approve: Some(name),
            ..
        } => {
            inspect::control(
                &cli,
                "toolgate/pins/approve",
                serde_json::json!({"name": name}),
                "",
                true,
            )
            .await
        }
        Command::Pins {
            approve: None,
            json,
        } => inspect::control(&cli, "toolgate/pins", serde_json::json!({}), "pins", *json).await,
        Command::Connect { client: None, args } => connect_cmd::list(&cli, args),
        Command::Connect {
            client: Some(client),
            args,
        } => connect_cmd::run(&cli, client, toolgate::connect::Action::Connect, args),
        Command::Disconnect { client, args } => {
            connect_cmd::run(&cli, client, toolgate::connect::Action::Disconnect, args)
        }
        Command::Hook {
            cmd: hook_cmd::HookCmd::Install { client, args },
        } => connect_cmd::run(&cli, client, toolgate::connect::Action::InstallHooks, args),
        Command::Hook {
            cmd: hook_cmd::HookCmd::Remove { client, args },
        } => connect_cmd::run(&cli, client, toolgate::connect::Action::RemoveHooks, args),
        Command::Import { .. } | Command::Secret { .. } => {
            Ok(config_cmd::run(&cli.command)?.unwrap_or(ExitCode::SUCCESS))
        }
    }
}

/// The data dir: `--data-dir`, else the config's `data_dir`, else the XDG
/// default (`~/.local/share/toolgate`).
fn data_dir(cli: &Cli, config: Option<&Config>) -> PathBuf {
    cli.data_dir
        .clone()
        .or_else(|| config.and_then(|c| c.data_dir.clone()))
        .unwrap_or_else(toolgate::paths::default_data_dir)
}

/// The agent socket an engine of `data_dir` listens on unless told
/// otherwise: in the runtime dir, or in the data dir without one.
fn default_socket(data_dir: &Path) -> PathBuf {
    ServeOptions::for_data_dir(data_dir.to_owned()).socket
}

/// Daemon paths from the flags over the config and the XDG defaults.
fn serve_options(cli: &Cli, config: &Config) -> ServeOptions {
    let data_dir = data_dir(cli, Some(config));
    ServeOptions {
        socket: cli
            .socket
            .clone()
            .unwrap_or_else(|| default_socket(&data_dir)),
        data_dir,
        ..ServeOptions::defaults()
    }
}

/// The data dir of a command that only talks to the engine: a config that
/// does not load must not keep a person from reaching the engine (which
/// runs on its last good config), so it is warned about and skipped.
/// `toolgate console --print-snippet`: the snippet on stdout, the case
/// that chose its command on stderr.
fn print_snippet(cli: &Cli) -> ExitCode {
    use toolgate::connect::command;
    let resolved = command::resolved();
    let snippet = command::snippet(&resolved, &client_data_dir(cli));
    match serde_json::to_string_pretty(&snippet) {
        Ok(text) => println!("{text}"),
        Err(e) => return fail(2, &format!("cannot print the snippet: {e}")),
    }
    eprintln!("{}", resolved.explain());
    ExitCode::SUCCESS
}

fn client_data_dir(cli: &Cli) -> PathBuf {
    if cli.data_dir.is_some() {
        return data_dir(cli, None);
    }
    match config(cli) {
        Ok(c) => data_dir(cli, Some(&c)),
        Err(e) => {
            tracing::warn!("{e:#}; looking for the engine of the default data dir");
            data_dir(cli, None)
        }
    }
}

/// Where the running engine is: `--socket`, else the data dir's discovery
/// file, else the default socket (see `toolgate::discovery::locate`).
async fn locate(cli: &Cli) -> Located {
    let data_dir = client_data_dir(cli);
    discovery::locate(cli.socket.as_deref(), &data_dir, &default_socket(&data_dir)).await
}

/// A connection to the running daemon's control socket, with the control
/// credential presented (a process toolgate governs cannot read it).
async fn control_client(cli: &Cli) -> anyhow::Result<ControlClient> {
    let at = locate(cli).await;
    let credential = Credential::read_file(&at.credential).with_context(|| {
        format!(
            "no engine runs for this data dir (its control credential {} cannot be read; pass --data-dir if the engine uses another); start `toolgate serve` first",
            at.credential.display()
        )
    })?;
    ControlClient::connect(&at.control, &credential)
        .await
        .with_context(|| {
            format!(
                "no daemon answers on {}; start `toolgate serve` first",
                at.control.display()
            )
        })
}

/// The config file with the command-line overrides applied.
fn config(cli: &Cli) -> anyhow::Result<Config> {
    let mut config = Config::load(cli.config.as_deref())?;
    config.strict |= cli.strict || std::env::var("CI").is_ok_and(|v| v == "true");
    config.builtin.roots.extend(cli.roots.iter().cloned());
    Ok(config)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use toolgate::guard::protect::{CONTROL_SUBCOMMANDS, HARMLESS_SUBCOMMANDS, Protected};

    /// The guard's lists of subcommands are this CLI's: a subcommand added
    /// here fails this test until it is classified, and every one that is
    /// not harmless is refused when a governed tool runs it.
    #[test]
    fn every_subcommand_is_classified_for_self_protection() {
        let mut cli = super::Cli::command();
        cli.build();
        let mut names: Vec<String> = cli
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        names.sort();
        let mut classified: Vec<String> = CONTROL_SUBCOMMANDS
            .iter()
            .chain(HARMLESS_SUBCOMMANDS.iter())
            .map(|s| (*s).to_owned())
            .collect();
        classified.sort();
        assert_eq!(names, classified);
        let p = Protected::default();
        for name in &names {
            let refused = p.check_command(&format!("toolgate {name}")).is_err();
            assert_eq!(
                refused,
                !HARMLESS_SUBCOMMANDS.contains(&name.as_str()),
                "{name}"
            );
        }
    }
}
