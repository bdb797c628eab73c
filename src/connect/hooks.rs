//! Installing toolgate's hooks into coding agents' settings, and taking
//! them out again, with the same atomic writes, backups and undo records
//! as MCP configs.
//!
//! What is installed per agent (events, matchers, timeouts) comes from
//! [`crate::hooks::install_spec`]; every entry runs
//! `<toolgate> hook run <client-id>`. The settings files, user scope:
//! - Claude Code: `~/.claude/settings.json`, `hooks.<Event>[]` of
//!   `{matcher, hooks: [{type: "command", command, timeout}]}`;
//! - Gemini CLI: `~/.gemini/settings.json`, the same shape (timeouts in
//!   milliseconds);
//! - Cursor: `~/.cursor/hooks.json`, `{version: 1, hooks: {<event>: [{command, timeout}]}}`.
//!
//! The person's own hooks are never touched: install only appends
//! entries, and remove takes out only entries whose command is
//! toolgate's. Remove restores the file byte for byte when nothing else
//! changed since install.

use std::path::PathBuf;

use jsonc_parser::cst::{CstArray, CstInputValue, CstObject};

use super::mcp::{read, show};
use super::record::{self, FileRecord, Record};
use super::{
    Action, ClientId, ConnectEnv, ConnectError, FileRole, FileWrite, HooksStatus, Prepared,
    RecordChange, jsonc,
};
use crate::hooks::{HookAgent, install_spec};

fn agent(client: ClientId) -> Result<HookAgent, ConnectError> {
    client
        .id()
        .parse::<HookAgent>()
        .map_err(|_| ConnectError::NoHooks { client })
}

/// The user-scope settings file toolgate's hooks go into.
pub fn settings_path(env: &ConnectEnv, agent: HookAgent) -> PathBuf {
    match agent {
        HookAgent::ClaudeCode => env.home.join(".claude/settings.json"),
        HookAgent::Cursor => env.home.join(".cursor/hooks.json"),
        HookAgent::GeminiCli => env.home.join(".gemini/settings.json"),
    }
}

/// The command every installed entry runs.
pub fn hook_command(env: &ConnectEnv, client: ClientId) -> String {
    let cmd = &env.toolgate_command;
    let cmd = if cmd.contains([' ', '"', '\'']) {
        format!("'{}'", cmd.replace('\'', r"'\''"))
    } else {
        cmd.clone()
    };
    format!("{cmd} hook run {}", client.id())
}

/// The hooks of `client`, if it has a hook system.
pub fn status(env: &ConnectEnv, client: ClientId) -> Option<HooksStatus> {
    let agent = agent(client).ok()?;
    Some(HooksStatus {
        installed: record::load(&record::hooks_path(env, client))
            .ok()
            .flatten()
            .is_some(),
        path: settings_path(env, agent).to_string_lossy().into_owned(),
    })
}

fn entry(agent: HookAgent, spec: &crate::hooks::HookEventSpec, command: &str) -> CstInputValue {
    let s = |v: &str| CstInputValue::String(v.to_owned());
    let timeout = spec
        .timeout_for_settings(agent)
        .map(|t| ("timeout".to_owned(), CstInputValue::Number(t.to_string())));
    if agent == HookAgent::Cursor {
        let mut fields = vec![("command".to_owned(), s(command))];
        fields.extend(timeout);
        return CstInputValue::Object(fields);
    }
    let mut hook = vec![
        ("type".to_owned(), s("command")),
        ("command".to_owned(), s(command)),
    ];
    hook.extend(timeout);
    let mut fields = Vec::new();
    if let Some(m) = spec.matcher {
        fields.push(("matcher".to_owned(), s(m)));
    }
    fields.push((
        "hooks".to_owned(),
        CstInputValue::Array(vec![CstInputValue::Object(hook)]),
    ));
    CstInputValue::Object(fields)
}

/// Plans installing `client`'s hooks.
pub(super) fn install(env: &ConnectEnv, client: ClientId) -> Result<Prepared, ConnectError> {
    let agent = agent(client)?;
    let record_path = record::hooks_path(env, client);
    if record::load(&record_path)?.is_some() {
        return Err(ConnectError::Hooks {
            message: format!(
                "toolgate's hooks are already installed for {}; `toolgate hook remove {}` takes them out",
                client.display_name(),
                client.id()
            ),
        });
    }
    let path = settings_path(env, agent);
    let before = read(&path)?;
    let root = jsonc::parse(before.as_deref().unwrap_or("{}"), &path)?;
    let obj = root.object_value_or_set();
    if agent == HookAgent::Cursor && obj.get("version").is_none() {
        obj.insert(0, "version", CstInputValue::Number("1".into()));
    }
    let hooks = obj.object_value_or_set("hooks");
    let command = hook_command(env, client);
    let spec = install_spec(agent);
    for s in spec {
        hooks
            .array_value_or_set(s.event)
            .append(entry(agent, s, &command));
    }
    let mut after = root.to_string();
    if !after.ends_with('\n') && before.as_deref().is_none_or(|b| b.ends_with('\n')) {
        after.push('\n');
    }
    let events: Vec<&str> = spec.iter().map(|s| s.event).collect();
    let summary = vec![
        format!(
            "Add toolgate's hook to {} for {}: {}.",
            show(env, &path),
            client.display_name(),
            events.join(", ")
        ),
        format!("Each runs `{command}`; hooks already there are kept."),
    ];
    let rec = Record {
        version: 1,
        client,
        at: super::write::utc_stamp(std::time::SystemTime::now()),
        files: vec![FileRecord {
            path: path.clone(),
            original: before.clone(),
            written_sha256: record::sha256(&after),
            maps: Vec::new(),
            backup: None,
        }],
        toolgate_servers: Vec::new(),
        reused_servers: Vec::new(),
        secrets: Vec::new(),
        hook_command: Some(command),
    };
    Ok(Prepared {
        client,
        action: Action::InstallHooks,
        writes: vec![FileWrite {
            path,
            role: FileRole::Hooks,
            before,
            after,
        }],
        summary,
        notes: Vec::new(),
        record: RecordChange::Save(record_path, Box::new(rec)),
        record_updates: Vec::new(),
        secrets_set: Vec::new(),
        secrets_delete: Vec::new(),
    })
}

/// Plans removing the hooks `install` added.
pub(super) fn remove(env: &ConnectEnv, client: ClientId) -> Result<Prepared, ConnectError> {
    agent(client)?;
    let record_path = record::hooks_path(env, client);
    let Some(rec) = record::load(&record_path)? else {
        return Err(ConnectError::Hooks {
            message: format!(
                "toolgate's hooks are not installed for {} (no undo record in {})",
                client.display_name(),
                record_path.display()
            ),
        });
    };
    let command = rec.hook_command.clone().unwrap_or_default();
    let mut writes = Vec::new();
    let mut summary = Vec::new();
    for f in &rec.files {
        let Some(now) = read(&f.path)? else {
            summary.push(format!(
                "{} is gone already; nothing to take out.",
                show(env, &f.path)
            ));
            continue;
        };
        let after = match &f.original {
            Some(original) if record::sha256(&now) == f.written_sha256 => {
                summary.push(format!("Restore {} byte for byte.", show(env, &f.path)));
                original.clone()
            }
            _ => {
                summary.push(format!(
                    "Take toolgate's hooks out of {}, keeping every other hook and setting.",
                    show(env, &f.path)
                ));
                strip(&now, &f.path, &command)?
            }
        };
        if after != now {
            writes.push(FileWrite {
                path: f.path.clone(),
                role: FileRole::Hooks,
                before: Some(now),
                after,
            });
        }
    }
    Ok(Prepared {
        client,
        action: Action::RemoveHooks,
        writes,
        summary,
        notes: Vec::new(),
        record: RecordChange::Remove(record_path),
        record_updates: Vec::new(),
        secrets_set: Vec::new(),
        secrets_delete: Vec::new(),
    })
}

/// `text` without the hook entries that run `command`; events and the
/// `hooks` table left empty by that go too.
fn strip(text: &str, path: &std::path::Path, command: &str) -> Result<String, ConnectError> {
    let root = jsonc::parse(text, path)?;
    let Some(obj) = root.object_value() else {
        return Ok(text.to_owned());
    };
    let Some(hooks) = obj.object_value("hooks") else {
        return Ok(text.to_owned());
    };
    for prop in hooks.properties() {
        let Some(arr) = prop.array_value() else {
            continue;
        };
        strip_array(&arr, command);
        if arr.elements().is_empty() {
            prop.remove();
        }
    }
    if hooks.properties().is_empty()
        && let Some(p) = obj.get("hooks")
    {
        p.remove();
    }
    Ok(root.to_string())
}

fn strip_array(arr: &CstArray, command: &str) {
    for el in arr.elements() {
        let Some(o) = el.as_object() else { continue };
        if runs(&o, command) {
            el.remove();
            continue;
        }
        if let Some(inner) = o.array_value("hooks") {
            for h in inner.elements() {
                if h.as_object().is_some_and(|ho| runs(&ho, command)) {
                    h.remove();
                }
            }
            if inner.elements().is_empty() {
                el.remove();
            }
        }
    }
}

fn runs(o: &CstObject, command: &str) -> bool {
    o.get("command")
        .and_then(|p| p.value())
        .and_then(|v| v.to_serde_value())
        .is_some_and(|v| v.as_str() == Some(command))
}
