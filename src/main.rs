//! The `toolgate` command: thin glue over the engine library. All behaviour
//! lives in the library; this file parses flags, builds an engine and
//! prints. Errors are one line on stderr and a non-zero exit (1: the call
//! failed or was refused; 2: bad usage or configuration).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use toolgate::config::Config;
use toolgate::context::{Caller, Session};
use toolgate::{CallReply, Engine};

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
    /// Extra root directory for the file tools and shell_exec (repeatable).
    #[arg(long = "root", global = true)]
    roots: Vec<PathBuf>,
    /// Treat warnings as errors (also when CI=true).
    #[arg(long, global = true)]
    strict: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the tools agents can see.
    Tools {
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
    // ---- config commands (issue 5): import, secret — see `config_cmd` ----
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
    // ---- end config commands ----
}

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return fail(2, &format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => fail(2, &format!("{e:#}")),
    }
}

fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("toolgate: error: {message}");
    ExitCode::from(code)
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(code) = config_cmd::run(&cli.command)? {
        return Ok(code);
    }
    let engine = engine(&cli)?;
    match cli.command {
        Command::Import { .. } | Command::Secret { .. } => {
            anyhow::bail!("internal: config commands run before the engine is built")
        }
        Command::Tools { json } => {
            print_tools(&engine, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { tool, args, json } => {
            let args: Value = serde_json::from_str(&args).context("--args is not valid JSON")?;
            anyhow::ensure!(
                args.is_object(),
                "--args must be a JSON object, got {}",
                kind_of(&args)
            );
            let session = Session::new(format!("cli-{}", std::process::id()), cli_caller());
            let reply = engine.call(&session, &tool, args).await;
            print_reply(&reply, json)
        }
    }
}

fn engine(cli: &Cli) -> anyhow::Result<Engine> {
    let mut config = Config::load(cli.config.as_deref())?;
    config.strict |= cli.strict || std::env::var("CI").is_ok_and(|v| v == "true");
    config.builtin.roots.extend(cli.roots.iter().cloned());
    if let Some(dir) = &cli.data_dir {
        config.data_dir = Some(dir.clone());
    }
    Ok(toolgate::setup::engine(config)?)
}

fn cli_caller() -> Caller {
    Caller {
        pid: i32::try_from(std::process::id()).ok(),
        ..Caller::via("cli")
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn print_tools(engine: &Engine, json: bool) -> anyhow::Result<()> {
    let tools = engine.tools();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &tools)?;
        writeln!(out)?;
        return Ok(());
    }
    let width = tools
        .iter()
        .map(|t| t.name.as_str().len())
        .max()
        .unwrap_or(4);
    for t in &tools {
        let summary = t.description.lines().next().unwrap_or("");
        let risk = format!("{:?}", t.risk).to_lowercase();
        writeln!(
            out,
            "{:width$}  {:8}  {:8}  {summary}",
            t.name.as_str(),
            t.source.to_string(),
            risk
        )?;
    }
    Ok(())
}

fn print_reply(reply: &CallReply, json: bool) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let failed = match &reply.result {
        Ok(r) => r.is_error,
        Err(_) => true,
    };
    if json {
        let body = match &reply.result {
            Ok(r) => json!({"call_id": reply.call_id, "ok": !r.is_error, "result": r}),
            Err(e) => json!({"call_id": reply.call_id, "ok": false,
                             "error": {"kind": e.kind(), "message": e.to_string()}}),
        };
        serde_json::to_writer_pretty(&mut out, &body)?;
        writeln!(out)?;
    } else {
        match &reply.result {
            Ok(r) => writeln!(out, "{}", r.joined_text())?,
            Err(e) => {
                drop(out);
                return Ok(fail(1, &format!("{} ({})", e, e.kind())));
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

// ---- config commands (issue 5): `toolgate import …`, `toolgate secret …` ----
// Thin glue over `toolgate::config::import` and `toolgate::secrets`; neither
// needs an engine, so they run before one is built.
mod config_cmd {
    use std::io::{Read, Write};
    use std::path::PathBuf;
    use std::process::ExitCode;

    use anyhow::Context;
    use clap::Subcommand;
    use toolgate::config::import;
    use toolgate::secrets::{self, KeyringStore, SecretName, SecretStore};

    use super::Command;

    /// Where to import from.
    #[derive(Subcommand)]
    pub(super) enum ImportFrom {
        /// Claude Desktop's `claude_desktop_config.json`.
        ClaudeDesktop {
            /// The file (default: the platform's Claude config dir).
            path: Option<PathBuf>,
            /// Also store the secrets found in the file in the keychain.
            #[arg(long)]
            store_secrets: bool,
        },
        /// Cursor's `mcp.json` (same format).
        Cursor {
            /// The file (default: ~/.cursor/mcp.json).
            path: Option<PathBuf>,
            /// Also store the secrets found in the file in the keychain.
            #[arg(long)]
            store_secrets: bool,
        },
    }

    /// `toolgate secret …`.
    #[derive(Subcommand)]
    pub(super) enum SecretAction {
        /// Store a secret; the value is read from stdin, never from argv.
        Set {
            /// The name used in `keyring:NAME`.
            name: String,
        },
        /// Say whether a secret is set (its value only with --reveal).
        Get {
            /// The name used in `keyring:NAME`.
            name: String,
            /// Print the value itself to stdout.
            #[arg(long)]
            reveal: bool,
        },
        /// Delete a secret.
        Rm {
            /// The name used in `keyring:NAME`.
            name: String,
        },
    }

    /// Runs `command` if it is a config command.
    pub(super) fn run(command: &Command) -> anyhow::Result<Option<ExitCode>> {
        match command {
            Command::Import { from } => import_cmd(from).map(Some),
            Command::Secret { action } => secret_cmd(action).map(Some),
            _ => Ok(None),
        }
    }

    fn import_cmd(from: &ImportFrom) -> anyhow::Result<ExitCode> {
        let (path, default, store_secrets) = match from {
            ImportFrom::ClaudeDesktop {
                path,
                store_secrets,
            } => (path, import::claude_desktop_default_path(), *store_secrets),
            ImportFrom::Cursor {
                path,
                store_secrets,
            } => (path, import::cursor_default_path(), *store_secrets),
        };
        let path = path
            .clone()
            .or(default)
            .context("no home directory; pass the file's path")?;
        let out = import::import_file(&path)?;
        for note in &out.notes {
            eprintln!("toolgate: note: {note}");
        }
        if store_secrets && !out.secrets.is_empty() {
            let store = KeyringStore::new()?;
            for (name, value) in &out.secrets {
                store.set(&SecretName::new(name)?, value)?;
                eprintln!("toolgate: stored secret `{name}` in the keychain");
            }
        } else if !out.secrets.is_empty() {
            let names: Vec<&str> = out.secrets.iter().map(|(n, _)| n.as_str()).collect();
            eprintln!(
                "toolgate: note: {} secret(s) to store with `toolgate secret set NAME` (or re-run with --store-secrets): {}",
                names.len(),
                names.join(", ")
            );
        }
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(out.toml.as_bytes())?;
        Ok(ExitCode::SUCCESS)
    }

    fn secret_cmd(action: &SecretAction) -> anyhow::Result<ExitCode> {
        let store = KeyringStore::new()?;
        match action {
            SecretAction::Set { name } => {
                if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                    eprintln!("toolgate: enter the value for `{name}`, then Ctrl-D:");
                }
                secrets::cli_set(&store, name, std::io::stdin().lock().take(1 << 20))?;
                eprintln!("toolgate: stored secret `{name}`");
            }
            SecretAction::Get { name, reveal } => {
                let value = secrets::cli_get(&store, name)?;
                if *reveal {
                    println!("{}", value.expose());
                } else {
                    println!(
                        "`{name}` is set ({} bytes); --reveal prints it",
                        value.expose().len()
                    );
                }
            }
            SecretAction::Rm { name } => {
                secrets::cli_rm(&store, name)?;
                eprintln!("toolgate: removed secret `{name}`");
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
// ---- end config commands ----
