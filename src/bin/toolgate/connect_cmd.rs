//! `toolgate connect [CLIENT]` and `toolgate disconnect CLIENT`: thin glue
//! over `toolgate::connect`. Shows the plan (its diffs and summary), asks
//! on a terminal unless `--yes`, then applies it.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toolgate::connect::{self, Action, ClientId, ClientStatus, ConnectEnv, Plan};

use crate::Cli;

/// Options every connect-like command takes.
#[derive(clap::Args, Clone)]
pub(crate) struct PlanArgs {
    /// Show the plan (the diff of every file) and write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Project directory whose project-scope configs count (repeatable;
    /// default: the current directory).
    #[arg(long = "project", value_name = "DIR")]
    pub(crate) projects: Vec<PathBuf>,
    /// Apply without asking.
    #[arg(long, short)]
    pub(crate) yes: bool,
    /// Machine-readable output (the plan, then what was applied).
    #[arg(long)]
    pub(crate) json: bool,
}

/// The environment connect works in, from the process and the flags.
pub(crate) fn env(cli: &Cli, projects: &[PathBuf]) -> anyhow::Result<ConnectEnv> {
    let projects = if projects.is_empty() {
        vec![std::env::current_dir().context("no current directory; pass --project DIR")?]
    } else {
        projects.to_vec()
    };
    let data_dir = crate::client_data_dir(cli);
    let config = cli.config.clone();
    Ok(ConnectEnv::from_process(projects, config, Some(data_dir)))
}

/// `toolgate connect` without a client: what is found, and its state.
pub(crate) fn list(cli: &Cli, args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let env = env(cli, &args.projects)?;
    let all = connect::status(&env);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(ExitCode::SUCCESS);
    }
    for c in &all {
        print_status(&env, c);
    }
    println!("Connect one with `toolgate connect CLIENT` (add --dry-run to see the diff only).");
    Ok(ExitCode::SUCCESS)
}

fn print_status(env: &ConnectEnv, c: &ClientStatus) {
    let mut state = vec![if !c.detected {
        "not found".to_owned()
    } else if c.connected {
        "connected".to_owned()
    } else {
        "not connected".to_owned()
    }];
    if let Some(h) = &c.hooks {
        state.push(
            if h.installed {
                "hooks installed"
            } else {
                "hooks not installed"
            }
            .to_owned(),
        );
    }
    if c.running {
        state.push("running".to_owned());
    }
    println!("{} ({}): {}", c.name, c.id, state.join(", "));
    for f in c.files.iter().filter(|f| f.exists) {
        let scope = serde_json::to_value(f.scope)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let path = shown(env, &f.path);
        if let Some(e) = &f.error {
            println!("  {scope:<8}{path}: cannot be read: {e}");
            continue;
        }
        if f.servers.is_empty() {
            println!("  {scope:<8}{path}: no servers");
            continue;
        }
        println!("  {scope:<8}{path}:");
        for s in &f.servers {
            let what = if s.is_toolgate {
                "toolgate's bridge".to_owned()
            } else if let Some(why) = &s.stays {
                format!("stays in the client: it {why}")
            } else {
                s.target.clone()
            };
            println!("            {}: {what}", s.name);
        }
    }
}

fn shown(env: &ConnectEnv, path: &str) -> String {
    match std::path::Path::new(path).strip_prefix(&env.home) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => path.to_owned(),
    }
}

/// `toolgate connect CLIENT`, `toolgate disconnect CLIENT` and the hook
/// installs: plan, show, ask, apply.
pub(crate) fn run(
    cli: &Cli,
    client: &str,
    action: Action,
    args: &PlanArgs,
) -> anyhow::Result<ExitCode> {
    let client: ClientId = client.parse()?;
    let env = env(cli, &args.projects)?;
    let plan = connect::plan(&env, client, action)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan)?);
    } else {
        print_plan(&plan);
    }
    if args.dry_run {
        if !args.json {
            println!("Dry run: nothing was written.");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes && !confirm()? {
        eprintln!("toolgate: nothing was written");
        return Ok(ExitCode::from(1));
    }
    let store = toolgate::secrets::open_keychain();
    let applied = connect::apply(&env, store.as_ref(), &plan)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&applied)?);
        return Ok(ExitCode::SUCCESS);
    }
    for w in &applied.warnings {
        eprintln!("toolgate: warning: {w}");
    }
    for b in &applied.backups {
        println!("Backup: {}", shown(&env, b));
    }
    println!("Done.");
    if let Some(r) = &applied.plan.restart {
        println!("{} is running. {r}", plan.client_name);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_plan(plan: &Plan) {
    for f in &plan.files {
        print!("{}", f.diff);
        if !f.diff.ends_with('\n') {
            println!();
        }
    }
    for s in &plan.summary {
        println!("{s}");
    }
    for n in &plan.notes {
        println!("Note: {n}");
    }
    if let Some(r) = &plan.restart {
        println!("{} is running; after this: {r}", plan.client_name);
    }
}

/// Asks on a terminal; elsewhere `--yes` is required.
fn confirm() -> anyhow::Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        anyhow::bail!(
            "not asking without a terminal: pass --yes to apply, or --dry-run to only look"
        );
    }
    print!("Apply these changes? [y/N] ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    stdin.lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes"))
}
