//! The built-in dangerous-tool table and argument rules.
//!
//! PraisonAI's `DEFAULT_DANGEROUS_TOOLS` is a name list (`execute_command` =
//! critical, `write_file` = high, ...), which its own authors list as a
//! limitation: a harmless `ls` and an `rm -rf ~` look the same. Here names
//! give a *base* risk (globs, so `desktop__execute_command` from an MCP
//! server is covered too) and argument rules look at what the call would do.
//! Both can be switched off with `policy.default_rules = false` and
//! overridden by config rules; `docs/policy.md` lists them for people.

use std::path::PathBuf;

use super::matcher::{ArgCondition, Pattern, PatternKind, normalize};
use super::rules::{Effect, Rule, tool_glob};
use crate::tool::Risk;

/// Name globs and their base risk. A tool's base risk is the highest of its
/// declared risk and every matching entry: the table only ever raises.
pub const RISK_TABLE: &[(&str, Risk)] = &[
    // Running arbitrary commands or code: anything the user can do.
    ("shell_exec", Risk::Critical),
    ("*execute_command*", Risk::Critical),
    ("*execute_code*", Risk::Critical),
    ("*run_command*", Risk::Critical),
    ("*run_code*", Risk::Critical),
    ("*run_shell*", Risk::Critical),
    ("*kill_process*", Risk::Critical),
    // Hard to undo, or acting on the world on the user's behalf.
    ("*delete*", Risk::High),
    ("*remove_file*", Risk::High),
    ("*move_file*", Risk::High),
    ("*execute_query*", Risk::High),
    ("*run_*", Risk::High),
    ("*send_*", Risk::High),
    ("*deploy*", Risk::High),
    ("*push*", Risk::High),
    // Changes local files in a recoverable way, or reaches the network.
    ("fs_write", Risk::Medium),
    ("*write_file*", Risk::Medium),
    ("*edit_file*", Risk::Medium),
    ("*create_file*", Risk::Medium),
    ("*copy_file*", Risk::Medium),
    ("*create_directory*", Risk::Medium),
    ("http_fetch", Risk::Medium),
    ("*fetch*", Risk::Medium),
    ("*crawl*", Risk::Medium),
    ("*scrape*", Risk::Medium),
    ("*evaluate*", Risk::Medium),
    // Reads: listed so the table documents them; they raise nothing.
    ("fs_read", Risk::Low),
    ("fs_list", Risk::Low),
    ("*read_file*", Risk::Low),
    ("*list_*", Risk::Low),
    ("*search*", Risk::Low),
];

/// Tools that run a shell command given in `/command`.
pub const SHELL_TOOLS: &str = "{shell_exec,*execute_command*,*run_command*,*run_shell*}";
/// Tools that write the file named in `/path`.
pub const WRITE_TOOLS: &str =
    "{fs_write,*write_file*,*edit_file*,*create_file*,*move_file*,*delete_file*}";
/// Tools that read the file named in `/path`.
pub const READ_TOOLS: &str = "{fs_read,*read_file*}";

/// Shell patterns that make a command critical, with the reason people see.
const SHELL_DANGER: &[(&str, &str, &str)] = &[
    (
        "rm-recursive",
        r"(^|[;&|(`\s])rm\s(.*\s)?(-[a-zA-Z]*[rRf]|--recursive|--force)",
        "recursive or forced delete",
    ),
    (
        "privilege",
        r"(^|[;&|(`\s])(sudo|doas|su|pkexec)(\s|$)",
        "runs as another user",
    ),
    (
        "disk",
        r"\b(mkfs(\.\w+)?|shred|wipefs|fdisk|parted)\b|\bdd\s.*\bof=|>\s*/dev/(sd|nvme|hd|disk)",
        "writes raw disks or filesystems",
    ),
    (
        "pipe-to-shell",
        r"\b(curl|wget|fetch)\b.*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b",
        "downloads and runs code",
    ),
    (
        "system",
        r"\b(shutdown|reboot|halt|poweroff)\b|\bkill(all)?\s+-(9|KILL)\b|\bchmod\s+(-R\s+)?0?777\b|\bgit\s+push\s.*(--force|-f\b)|:\(\)\s*\{",
        "stops the system, kills processes, opens permissions or rewrites shared history",
    ),
];

/// Files that name code a person's own programs run later — git's config
/// (`core.fsmonitor`, `core.pager`, aliases, hooks' paths), a shell's
/// aliases, a directory on `PATH`, session autostart: writing one is
/// critical, because what it plants runs outside toolgate, as the person,
/// the next time they use git or a shell. Reading them is ordinary.
const RUN_LATER_PATHS: &str = "{**/.git/config,**/.gitconfig,**/.config/git/**,**/.gitmodules,**/.bash_aliases,**/.local/bin/**,**/.config/autostart/**,**/.config/systemd/**}";

/// Credential and shell-startup files: writing one is critical, reading one
/// is high (it is how secrets leave the machine).
const SECRET_PATHS: &str = "{**/.ssh/**,**/.gnupg/**,**/.aws/**,**/.config/gcloud/**,**/.kube/config,**/.env,**/.env.*,**/.netrc,**/.git-credentials,**/.git/hooks/**,**/.bashrc,**/.zshrc,**/.profile,**/.bash_profile,**/*.pem,**/id_rsa*,**/id_ed25519*}";

/// The name table, compiled.
pub fn risk_table() -> Vec<(globset::GlobMatcher, String, Risk)> {
    RISK_TABLE
        .iter()
        .filter_map(|(g, r)| tool_glob(g).ok().map(|m| (m, (*g).to_owned(), *r)))
        .collect()
}

/// The built-in argument rules. `project_dirs` decides what "outside the
/// project" means; relative paths are resolved against the first of them.
pub fn default_rules(project_dirs: &[PathBuf]) -> Vec<Rule> {
    let base = project_dirs.first().cloned();
    let mut rules = Vec::new();
    for (id, re, why) in SHELL_DANGER {
        rules.extend(rule(
            &format!("default:shell-{id}"),
            SHELL_TOOLS,
            "/command",
            PatternKind::Regex,
            re,
            false,
            Effect::Risk(Risk::Critical),
            why,
            None,
        ));
    }
    rules.extend(rule(
        "default:shell-simple",
        SHELL_TOOLS,
        "/command",
        PatternKind::Regex,
        &super::inert::regex(),
        false,
        Effect::Risk(Risk::High),
        "a single inert command (it runs no configurable code) with plain arguments inside the working directory; any shell command still runs as you",
        None,
    ));
    rules.extend(outside_project(project_dirs, base.clone()));
    rules.extend(rule(
        "default:write-secret-file",
        WRITE_TOOLS,
        "/path",
        PatternKind::Path,
        SECRET_PATHS,
        false,
        Effect::Risk(Risk::Critical),
        "writes a credential or shell start-up file",
        base.clone(),
    ));
    rules.extend(rule(
        "default:write-run-later",
        WRITE_TOOLS,
        "/path",
        PatternKind::Path,
        RUN_LATER_PATHS,
        false,
        Effect::Risk(Risk::Critical),
        "writes configuration whose commands run later, as you, when you use git or a shell",
        base.clone(),
    ));
    rules.extend(rule(
        "default:read-secret-file",
        READ_TOOLS,
        "/path",
        PatternKind::Path,
        SECRET_PATHS,
        false,
        Effect::Risk(Risk::High),
        "reads a credential file",
        base,
    ));
    rules
}

/// No project directories, no rule: the path guard already confines the
/// built-in file tools to their roots, and a rule that called every write
/// "outside the project" would only teach people to click approve.
fn outside_project(project_dirs: &[PathBuf], base: Option<PathBuf>) -> Option<Rule> {
    if project_dirs.is_empty() {
        return None;
    }
    let globs: Vec<String> = project_dirs
        .iter()
        .map(|d| format!("{}/**", globset::escape(&normalize(d).to_string_lossy())))
        .collect();
    let shown: Vec<String> = project_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    rule(
        "default:write-outside-project",
        WRITE_TOOLS,
        "/path",
        PatternKind::Path,
        &format!("{{{}}}", globs.join(",")),
        true,
        Effect::Risk(Risk::Critical),
        &format!("writes outside the project ({})", shown.join(", ")),
        base,
    )
}

#[allow(clippy::too_many_arguments)]
fn rule(
    id: &str,
    tools: &str,
    pointer: &str,
    kind: PatternKind,
    pattern: &str,
    negate: bool,
    effect: Effect,
    why: &str,
    base: Option<PathBuf>,
) -> Option<Rule> {
    // The built-in patterns are constants covered by tests; a project
    // directory that breaks a glob drops only that rule, loudly.
    let compiled = tool_glob(tools).and_then(|t| Ok((t, Pattern::new(kind, pattern, base)?)));
    match compiled {
        Ok((tool, pattern)) => Some(Rule {
            id: id.to_owned(),
            tool,
            tool_glob: tools.to_owned(),
            when: Some(ArgCondition {
                pointer: pointer.to_owned(),
                pattern,
                negate,
            }),
            effect,
            timeout: None,
            reason: Some(why.to_owned()),
        }),
        Err(e) => {
            tracing::error!("built-in policy rule {id} is disabled: {e}");
            None
        }
    }
}
