//! Validation of `[policy]` (and the policy part of `[tools.NAME]`) into
//! [`PolicyConfig`]. Every problem is reported with its key path, like the
//! rest of the config (`policy.rules[2]: set either risk or verdict`).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::raw::{RawCallerPolicy, RawConfig, RawRule};
use crate::policy::{
    ArgCondition, CallerMatch, CallerPolicy, Effect, Pattern, PatternKind, PolicyConfig, Rule,
    pointer_of, tool_glob,
};

/// Builds the policy. `roots` (the built-in tools' roots, `~` expanded) are
/// the project directories unless `policy.project_dirs` says otherwise.
pub(crate) fn policy_config(
    raw: &RawConfig,
    roots: &[PathBuf],
    problems: &mut Vec<String>,
) -> PolicyConfig {
    let p = &raw.policy;
    let project_dirs: Vec<PathBuf> = match &p.project_dirs {
        Some(dirs) => dirs.iter().map(|d| crate::paths::expand_home(d)).collect(),
        None => roots.to_vec(),
    };
    let base = project_dirs.first().cloned();
    let mut policy = PolicyConfig::with_defaults(project_dirs);
    if p.default_rules == Some(false) {
        policy.default_rules.clear();
        policy.risk_table.clear();
    }
    policy.preset = p.preset.unwrap_or_default();
    policy.ask_at = p.ask_at;
    if let Some(t) = timeout(p.approval_timeout_s, "policy.approval_timeout_s", problems) {
        policy.approval_timeout = t;
    }
    for (name, o) in &raw.tools {
        if let Some(v) = o.policy {
            let at = format!("tools.{name}.policy");
            if let Ok(tool) = tool_glob(&globset::escape(name)) {
                policy.rules.push(Rule {
                    id: at,
                    tool,
                    tool_glob: name.clone(),
                    when: None,
                    effect: Effect::Verdict(v),
                    timeout: None,
                    reason: None,
                });
            }
        }
        if let Some(r) = o.risk {
            policy.risk.insert(name.clone(), r);
        }
    }
    for (i, r) in p.rules.iter().enumerate() {
        if let Some(rule) = rule(r, &format!("policy.rules[{i}]"), base.clone(), problems) {
            policy.rules.push(rule);
        }
    }
    for (i, c) in p.callers.iter().enumerate() {
        let at = format!("policy.callers[{i}]");
        if let Some(cp) = caller(c, &at, base.clone(), problems) {
            if let Some(problem) = unproven_grant(&policy, c, &cp) {
                problems.push(problem);
            }
            policy.callers.push(cp);
        }
    }
    policy
}

/// A profile that grants more than `[policy]` to callers it picks by facts
/// any local program can claim (its client name, a free agent id, the uid
/// all of them share): refused, saying what to write instead. See
/// [`crate::policy::CallerMatch`] and `docs/policy.md`, "Who is calling".
fn unproven_grant(
    policy: &PolicyConfig,
    raw: &RawCallerPolicy,
    cp: &CallerPolicy,
) -> Option<String> {
    if cp.matcher.names_program() {
        return None;
    }
    let grants = policy.loosening(cp)?;
    let mut by = Vec::new();
    if raw.client.is_some() {
        by.push("`client`, the name an MCP client reports about itself, which any local program can claim");
    }
    if raw.agent.is_some() {
        by.push("`agent`, an id any local program can register while it is free");
    }
    if raw.uid.is_some() {
        by.push("`uid`, which every program that reaches the agent socket has");
    }
    Some(format!(
        "{}: gives these callers more than [policy] does ({grants}) but picks them only by {}; \
         add `exe = \"…\"` (the client program as the kernel reports it; for a client started \
         through `toolgate mcp-bridge`, the program that started the bridge) so the grant goes to \
         a program, or make the profile only restrict (a stricter preset or ask_at, \
         `verdict = \"deny\"` rules)",
        cp.id,
        by.join(" and ")
    ))
}

fn timeout(s: Option<u64>, at: &str, problems: &mut Vec<String>) -> Option<Duration> {
    match s {
        Some(0) => {
            problems.push(format!("{at}: must be at least 1"));
            None
        }
        Some(s) => Some(Duration::from_secs(s)),
        None => None,
    }
}

fn rule(r: &RawRule, at: &str, base: Option<PathBuf>, problems: &mut Vec<String>) -> Option<Rule> {
    let before = problems.len();
    let tool = tool_glob(&r.tool)
        .map_err(|e| problems.push(format!("{at}.tool: {e}")))
        .ok();
    let effect = match (r.risk, r.verdict) {
        (Some(risk), None) => Some(Effect::Risk(risk)),
        (None, Some(v)) => Some(Effect::Verdict(v)),
        _ => {
            problems.push(format!("{at}: set exactly one of `risk` or `verdict`"));
            None
        }
    };
    let when = condition(r, at, base, problems);
    let timeout = timeout(r.timeout_s, &format!("{at}.timeout_s"), problems);
    if problems.len() > before {
        return None;
    }
    Some(Rule {
        id: at.to_owned(),
        tool: tool?,
        tool_glob: r.tool.clone(),
        when: when?,
        effect: effect?,
        timeout,
        reason: r.reason.clone(),
    })
}

/// `Some(None)`: no condition; `None`: invalid (a problem was recorded).
fn condition(
    r: &RawRule,
    at: &str,
    base: Option<PathBuf>,
    problems: &mut Vec<String>,
) -> Option<Option<ArgCondition>> {
    let patterns: Vec<(PatternKind, &String)> = [
        (PatternKind::Glob, &r.glob),
        (PatternKind::Path, &r.path),
        (PatternKind::Regex, &r.regex),
    ]
    .into_iter()
    .filter_map(|(k, p)| p.as_ref().map(|p| (k, p)))
    .collect();
    match (&r.arg, patterns.as_slice()) {
        (None, []) if !r.negate => Some(None),
        (None, _) => {
            problems.push(format!(
                "{at}: `glob`, `path`, `regex` and `negate` need `arg` (the argument to look at)"
            ));
            None
        }
        (Some(arg), [(kind, pattern)]) => match Pattern::new(*kind, pattern, base) {
            Ok(pattern) => Some(Some(ArgCondition {
                pointer: pointer_of(arg),
                pattern,
                negate: r.negate,
            })),
            Err(e) => {
                problems.push(format!("{at}.{}: {e}", key_of(*kind)));
                None
            }
        },
        (Some(_), _) => {
            problems.push(format!(
                "{at}: with `arg`, set exactly one of `glob`, `path` or `regex`"
            ));
            None
        }
    }
}

/// The config key a pattern kind is written under.
fn key_of(kind: PatternKind) -> &'static str {
    match kind {
        PatternKind::Glob => "glob",
        PatternKind::Path => "path",
        PatternKind::Regex => "regex",
    }
}

fn caller(
    c: &RawCallerPolicy,
    at: &str,
    base: Option<PathBuf>,
    problems: &mut Vec<String>,
) -> Option<CallerPolicy> {
    let before = problems.len();
    let mut glob = |v: &Option<String>, key: &str| {
        v.as_ref().and_then(|g| {
            tool_glob(g)
                .map_err(|e| problems.push(format!("{at}.{key}: {e}")))
                .ok()
        })
    };
    let matcher = CallerMatch {
        uid: c.uid,
        exe: glob(&c.exe, "exe"),
        client: glob(&c.client, "client"),
        agent: glob(&c.agent, "agent"),
    };
    if c.uid.is_none() && c.exe.is_none() && c.client.is_none() && c.agent.is_none() {
        problems.push(format!(
            "{at}: set at least one of uid, exe, client, agent (an entry matching every caller belongs in [policy])"
        ));
    }
    let rules: Vec<Rule> = c
        .rules
        .iter()
        .enumerate()
        .filter_map(|(i, r)| rule(r, &format!("{at}.rules[{i}]"), base.clone(), problems))
        .collect();
    let timeout = timeout(
        c.approval_timeout_s,
        &format!("{at}.approval_timeout_s"),
        problems,
    );
    if problems.len() > before {
        return None;
    }
    Some(CallerPolicy {
        id: at.to_owned(),
        matcher,
        preset: c.preset,
        ask_at: c.ask_at,
        timeout,
        rules,
    })
}
