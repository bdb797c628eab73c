//! Connect and disconnect of a client's MCP servers, as plans: what each
//! file becomes, what toolgate's config gains or loses, which secrets
//! go to or leave the keychain, and the undo record. Nothing here
//! writes; [`super::apply`] does.
//!
//! Disconnect restores a file byte for byte when it still holds exactly
//! what connect wrote. When the person changed it since, it is merged
//! per server entry instead of per line: starting from the file as it is
//! now, the `toolgate` entry is taken out and the original entries put
//! back where it was (with their keys in their old order). Every other
//! change (a server the person added, an unrelated key) survives; an
//! original entry whose name the person has since reused is left out and
//! said so (see docs/architecture/decisions.md, "Disconnect merges per
//! server entry").

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde_json::Value;
use toml_edit::DocumentMut;

use super::catalog::{self, Dialect, Location};
use super::record::{self, FileRecord, MapRecord, Record};
use super::toolgate_config::{self, NewServer};
use super::{
    Action, ClientId, ConnectEnv, ConnectError, FileRole, FileWrite, Prepared, RecordChange, entry,
    jsonc, tomlfile,
};
use crate::config::import;

/// The key of the entry connect writes into a client's server map.
pub const BRIDGE_KEY: &str = "toolgate";

/// A client file, parsed.
pub(super) enum Doc {
    Json(CstRootNode),
    Toml(DocumentMut),
}

impl Doc {
    pub(super) fn parse(text: &str, path: &Path, dialect: Dialect) -> Result<Self, ConnectError> {
        if dialect == Dialect::Codex {
            tomlfile::parse(text, path).map(Self::Toml)
        } else {
            jsonc::parse(text, path).map(Self::Json)
        }
    }

    /// The entries of the map at `keys`; `None` when there is no map.
    pub(super) fn entries(&self, keys: &[String]) -> Option<Vec<(String, Value)>> {
        match self {
            Self::Json(root) => jsonc::map(root, keys).map(|m| jsonc::entries(&m)),
            Self::Toml(doc) => {
                let e = tomlfile::entries(doc, keys);
                (!e.is_empty()).then_some(e)
            }
        }
    }

    pub(super) fn text(&self) -> String {
        match self {
            Self::Json(root) => root.to_string(),
            Self::Toml(doc) => doc.to_string(),
        }
    }
}

/// Reads `path`: `None` when it does not exist.
pub(super) fn read(path: &Path) -> Result<Option<String>, ConnectError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConnectError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// `locs` grouped by file, first appearance first.
pub(super) fn by_file(locs: Vec<Location>) -> Vec<(PathBuf, Vec<Location>)> {
    let mut out: Vec<(PathBuf, Vec<Location>)> = Vec::new();
    for l in locs {
        match out.iter_mut().find(|(p, _)| *p == l.path) {
            Some((_, v)) => v.push(l),
            None => out.push((l.path.clone(), vec![l])),
        }
    }
    out
}

/// Whether an entry already starts toolgate's bridge.
pub(super) fn is_bridge(v: &Value) -> bool {
    let cmd = v.get("command").and_then(Value::as_str).unwrap_or("");
    let first = v
        .get("args")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str);
    (cmd == "toolgate" || cmd.ends_with("/toolgate")) && first == Some("mcp-bridge")
}

/// A server already in toolgate's config: command, args, URL, name.
type Known = (Option<String>, Vec<String>, Option<String>, String);

/// What connect does to toolgate's config and the keychain, built up
/// while the client's files are read.
struct Moves {
    config_path: PathBuf,
    specs: Vec<Known>,
    names: HashSet<String>,
    secret_names: HashSet<String>,
    added: Vec<NewServer>,
    reused: Vec<(String, String)>,
    moved: Vec<String>,
    notes: Vec<String>,
}

impl Moves {
    fn new(env: &ConnectEnv, text: &str) -> Result<Self, ConnectError> {
        let config = toolgate_config::current(text, &env.toolgate_config)?;
        let mut specs = Vec::new();
        let mut names = HashSet::new();
        let mut secret_names = HashSet::new();
        for s in &config.servers {
            names.insert(s.name.clone());
            secret_names.extend(crate::secrets::referenced_names(s));
            let (cmd, args, url) = match &s.transport {
                crate::config::servers::TransportSpec::Stdio { command, args, .. } => {
                    (Some(command.clone()), args.clone(), None)
                }
                crate::config::servers::TransportSpec::Sse { url, .. }
                | crate::config::servers::TransportSpec::StreamableHttp { url, .. }
                | crate::config::servers::TransportSpec::Websocket { url, .. } => {
                    (None, Vec::new(), Some(url.clone()))
                }
            };
            specs.push((cmd, args, url, s.name.clone()));
        }
        Ok(Self {
            config_path: env.toolgate_config.clone(),
            specs,
            names,
            secret_names,
            added: Vec::new(),
            reused: Vec::new(),
            moved: Vec::new(),
            notes: Vec::new(),
        })
    }

    /// Takes `m` (called `name` in the client) into toolgate's config,
    /// unless the same server is there already.
    fn take(&mut self, name: &str, m: &entry::Movable, origin: &str) {
        self.moved.push(name.to_owned());
        if let Some((.., existing)) = self
            .specs
            .iter()
            .find(|(c, a, u, _)| m.same_server(c.as_deref(), a, u.as_deref()))
        {
            self.reused.push((name.to_owned(), existing.clone()));
            return;
        }
        let tg_name = import::unique(import::sanitize_name(name), &mut self.names);
        if tg_name != name {
            self.notes.push(format!(
                "`{name}` is called `{tg_name}` in toolgate's config."
            ));
        }
        if !m.ignored.is_empty() {
            self.notes.push(format!(
                "`{name}`: toolgate has no counterpart for {}; disconnect brings them back.",
                m.ignored
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let server = toolgate_config::server(&tg_name, m, origin, &mut self.secret_names);
        self.specs.push((
            m.command.clone(),
            m.args.clone(),
            m.url.clone(),
            tg_name.clone(),
        ));
        self.added.push(server);
    }
}

/// The bridge entry for `dialect`.
fn bridge_json(env: &ConnectEnv, client: ClientId, dialect: Dialect) -> CstInputValue {
    let mut fields = Vec::new();
    if dialect == Dialect::Vscode {
        fields.push(("type".to_owned(), CstInputValue::String("stdio".into())));
    }
    fields.push((
        "command".to_owned(),
        CstInputValue::String(env.toolgate_command.clone()),
    ));
    fields.push((
        "args".to_owned(),
        CstInputValue::Array(
            bridge_args(client)
                .into_iter()
                .map(CstInputValue::String)
                .collect(),
        ),
    ));
    if !env.data_dir_is_default {
        fields.push((
            "env".to_owned(),
            CstInputValue::Object(vec![(
                "TOOLGATE_DATA_DIR".to_owned(),
                CstInputValue::String(env.data_dir.to_string_lossy().into_owned()),
            )]),
        ));
    }
    CstInputValue::Object(fields)
}

fn bridge_toml(env: &ConnectEnv, client: ClientId) -> toml_edit::Table {
    let mut t = toml_edit::Table::new();
    t.insert("command", toml_edit::value(env.toolgate_command.as_str()));
    t.insert(
        "args",
        toml_edit::value(
            bridge_args(client)
                .into_iter()
                .collect::<toml_edit::Array>(),
        ),
    );
    if !env.data_dir_is_default {
        let mut e = toml_edit::InlineTable::new();
        e.insert(
            "TOOLGATE_DATA_DIR",
            env.data_dir.to_string_lossy().as_ref().into(),
        );
        t.insert("env", toml_edit::value(e));
    }
    t
}

/// `mcp-bridge --client "<Display Name>"`.
pub fn bridge_args(client: ClientId) -> Vec<String> {
    vec![
        "mcp-bridge".into(),
        "--client".into(),
        client.display_name().into(),
    ]
}

/// `~/…` for paths under home, for messages.
pub(super) fn show(env: &ConnectEnv, p: &Path) -> String {
    match p.strip_prefix(&env.home) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => p.display().to_string(),
    }
}

/// Plans connecting `client`.
pub(super) fn connect(env: &ConnectEnv, client: ClientId) -> Result<Prepared, ConnectError> {
    let record_path = record::mcp_path(env, client);
    if record::load(&record_path)?.is_some() {
        return Err(ConnectError::AlreadyConnected { client });
    }
    let config_before = read(&env.toolgate_config)?;
    let mut moves = Moves::new(env, config_before.as_deref().unwrap_or(""))?;
    let mut writes = Vec::new();
    let mut files = Vec::new();
    let mut looked = Vec::new();
    for (path, locs) in by_file(catalog::locations(client, env)) {
        looked.push(show(env, &path));
        if let Some((write, file)) = connect_file(env, client, &path, &locs, &mut moves)? {
            writes.push(write);
            files.push(file);
        }
    }
    if writes.is_empty() {
        return Err(ConnectError::NothingToConnect {
            client,
            files: looked.join(", "),
        });
    }
    let config_after = toolgate_config::add(
        config_before.as_deref().unwrap_or(""),
        &moves.config_path,
        &moves.added,
    )?;
    toolgate_config::check(&config_after, &moves.config_path)?;
    if !moves.added.is_empty() {
        writes.push(FileWrite {
            path: env.toolgate_config.clone(),
            role: FileRole::ToolgateConfig,
            before: config_before,
            after: config_after,
        });
    }
    let secrets: Vec<(String, crate::secrets::Secret)> = moves
        .added
        .iter()
        .flat_map(|s| s.secrets.iter().cloned())
        .collect();
    let summary = connect_summary(env, client, &moves, &secrets);
    let record = Record {
        version: 1,
        client,
        at: super::write::utc_stamp(std::time::SystemTime::now()),
        files,
        toolgate_servers: moves.added.iter().map(|s| s.name.clone()).collect(),
        reused_servers: moves.reused.iter().map(|(_, e)| e.clone()).collect(),
        secrets: secrets.iter().map(|(n, _)| n.clone()).collect(),
        hook_command: None,
    };
    Ok(Prepared {
        client,
        action: Action::Connect,
        writes,
        summary,
        notes: moves.notes,
        record: RecordChange::Save(record_path, Box::new(record)),
        record_updates: Vec::new(),
        secrets_set: secrets,
        secrets_delete: Vec::new(),
    })
}

/// Connect's change to one file, if it has servers to move.
fn connect_file(
    env: &ConnectEnv,
    client: ClientId,
    path: &Path,
    locs: &[Location],
    moves: &mut Moves,
) -> Result<Option<(FileWrite, FileRecord)>, ConnectError> {
    let Some(before) = read(path)? else {
        return Ok(None);
    };
    let mut doc = Doc::parse(&before, path, locs[0].dialect)?;
    let maps: Vec<MapRecord> = locs
        .iter()
        .filter_map(|loc| connect_map(env, client, &mut doc, loc, moves))
        .collect();
    if maps.is_empty() {
        return Ok(None);
    }
    let after = doc.text();
    let file = FileRecord {
        path: path.to_owned(),
        original: Some(before.clone()),
        written_sha256: record::sha256(&after),
        maps,
        backup: None,
    };
    let write = FileWrite {
        path: path.to_owned(),
        role: FileRole::Client,
        before: Some(before),
        after,
    };
    Ok(Some((write, file)))
}

/// Moves the servers of one map out of `doc` and puts the bridge entry in
/// their place; `None` when the map has nothing toolgate can take.
fn connect_map(
    env: &ConnectEnv,
    client: ClientId,
    doc: &mut Doc,
    loc: &Location,
    moves: &mut Moves,
) -> Option<MapRecord> {
    let entries = doc.entries(&loc.keys)?;
    let shown = show(env, &loc.path);
    let origin = format!("{} ({shown})", client.display_name());
    let mut moved = Vec::new();
    for (name, v) in &entries {
        if name == BRIDGE_KEY {
            // Replaced by the new entry; disconnect puts it back.
            moved.push(name.clone());
        } else if is_bridge(v) {
            moves.notes.push(format!(
                "`{name}` in {shown} already goes through toolgate."
            ));
        } else {
            match entry::read(loc.dialect, v) {
                Ok(m) => {
                    moves.take(name, &m, &origin);
                    moved.push(name.clone());
                }
                Err(why) => moves
                    .notes
                    .push(format!("`{name}` stays in {shown}: it {why}.")),
            }
        }
    }
    if moved.iter().all(|n| n == BRIDGE_KEY) {
        return None;
    }
    match doc {
        Doc::Json(root) => {
            let obj = jsonc::map(root, &loc.keys)?;
            jsonc::replace(
                &obj,
                &moved,
                BRIDGE_KEY,
                bridge_json(env, client, loc.dialect),
            );
        }
        Doc::Toml(d) => {
            tomlfile::replace(d, &loc.keys, &moved, BRIDGE_KEY, bridge_toml(env, client));
        }
    }
    Some(MapRecord {
        keys: loc.keys.clone(),
        moved,
    })
}

/// The sentences a person reads about a connect.
fn connect_summary(
    env: &ConnectEnv,
    client: ClientId,
    moves: &Moves,
    secrets: &[(String, crate::secrets::Secret)],
) -> Vec<String> {
    let mut summary = vec![format!(
        "Move {} from {} into toolgate: {}.",
        count(moves.moved.len(), "server"),
        client.display_name(),
        moves.moved.join(", ")
    )];
    for (name, existing) in &moves.reused {
        summary.push(format!(
            "`{name}` is already in toolgate's config as `{existing}`; it is not added twice."
        ));
    }
    if !secrets.is_empty() {
        let names: Vec<&str> = secrets.iter().map(|(n, _)| n.as_str()).collect();
        summary.push(format!(
            "Store {} in the keychain: {}.",
            count(secrets.len(), "secret"),
            names.join(", ")
        ));
    }
    let args: Vec<String> = bridge_args(client)
        .into_iter()
        .map(|a| {
            if a.contains(' ') {
                format!("\"{a}\"")
            } else {
                a
            }
        })
        .collect();
    summary.push(format!(
        "{} then starts `{} {}` instead.",
        client.display_name(),
        env.toolgate_command,
        args.join(" ")
    ));
    summary
}

/// "1 server", "3 servers".
pub(super) fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Plans disconnecting `client`.
pub(super) fn disconnect(env: &ConnectEnv, client: ClientId) -> Result<Prepared, ConnectError> {
    let record_path = record::mcp_path(env, client);
    let Some(rec) = record::load(&record_path)? else {
        return Err(ConnectError::NotConnected {
            client,
            record: record_path,
        });
    };
    let mut writes = Vec::new();
    let mut summary = Vec::new();
    let mut notes = Vec::new();
    for f in &rec.files {
        let now = read(&f.path)?;
        let (after, line) = restore_file(env, f, now.as_deref(), &mut notes)?;
        summary.push(line);
        if now.as_deref() != Some(after.as_str()) {
            writes.push(FileWrite {
                path: f.path.clone(),
                role: FileRole::Client,
                before: now,
                after,
            });
        }
    }
    let config_before = read(&env.toolgate_config)?;
    let mut secrets_delete = Vec::new();
    let (removed, record_updates) = hand_over(env, &rec, &mut notes)?;
    if let Some(text) = &config_before {
        let after = toolgate_config::remove(text, &env.toolgate_config, &removed)?;
        let config = toolgate_config::check(&after, &env.toolgate_config)?;
        let still: HashSet<String> = config
            .servers
            .iter()
            .flat_map(crate::secrets::referenced_names)
            .collect();
        secrets_delete = rec
            .secrets
            .iter()
            .filter(|s| !still.contains(*s))
            .cloned()
            .collect();
        if after != *text {
            summary.push(format!(
                "Remove {} from toolgate's config: {}.",
                count(removed.len(), "server"),
                removed.join(", ")
            ));
            writes.push(FileWrite {
                path: env.toolgate_config.clone(),
                role: FileRole::ToolgateConfig,
                before: config_before.clone(),
                after,
            });
        }
    }
    if !secrets_delete.is_empty() {
        summary.push(format!(
            "Delete {} that connect stored from the keychain (the values are back in {}'s file): {}.",
            count(secrets_delete.len(), "secret"),
            client.display_name(),
            secrets_delete.join(", ")
        ));
    }
    Ok(Prepared {
        client,
        action: Action::Disconnect,
        writes,
        summary,
        notes,
        record: RecordChange::Remove(record_path),
        record_updates,
        secrets_set: Vec::new(),
        secrets_delete,
    })
}

/// Other clients' undo records to save, with where.
type RecordUpdates = Vec<(PathBuf, Record)>;

/// The servers `rec`'s disconnect takes out of toolgate's config, and the
/// other clients' records that take over the ones they rely on (so the
/// last of them to disconnect removes the server, and its secrets).
fn hand_over(
    env: &ConnectEnv,
    rec: &Record,
    notes: &mut Vec<String>,
) -> Result<(Vec<String>, RecordUpdates), ConnectError> {
    let mut others = record::others(env, rec.client)?;
    let text = read(&env.toolgate_config)?.unwrap_or_default();
    let config = toolgate_config::current(&text, &env.toolgate_config)?;
    let mut changed = HashSet::new();
    let mut removed = Vec::new();
    for name in &rec.toolgate_servers {
        let Some(heir) = others.iter_mut().find(|o| o.reused_servers.contains(name)) else {
            removed.push(name.clone());
            continue;
        };
        heir.reused_servers.retain(|n| n != name);
        heir.toolgate_servers.push(name.clone());
        let uses: Vec<String> = config
            .servers
            .iter()
            .filter(|s| s.name == *name)
            .flat_map(crate::secrets::referenced_names)
            .collect();
        heir.secrets
            .extend(rec.secrets.iter().filter(|s| uses.contains(s)).cloned());
        notes.push(format!(
            "`{name}` stays in toolgate's config: {} uses it too.",
            heir.client.display_name()
        ));
        changed.insert(heir.client);
    }
    let updates = others
        .into_iter()
        .filter(|o| changed.contains(&o.client))
        .map(|o| (record::mcp_path(env, o.client), o))
        .collect();
    Ok((removed, updates))
}

/// What `f` becomes on disconnect, and one line saying how.
fn restore_file(
    env: &ConnectEnv,
    f: &FileRecord,
    now: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<(String, String), ConnectError> {
    let shown = show(env, &f.path);
    let original = f.original.clone().unwrap_or_default();
    let Some(now) = now else {
        notes.push(format!(
            "{shown} was deleted since connect; it is written back as it was."
        ));
        return Ok((
            original,
            format!("Restore {shown} as it was before connect."),
        ));
    };
    if record::sha256(now) == f.written_sha256 {
        return Ok((original, format!("Restore {shown} byte for byte.")));
    }
    let dialect = if f.path.extension().is_some_and(|e| e == "toml") {
        Dialect::Codex
    } else {
        Dialect::McpServers
    };
    let orig_doc = Doc::parse(&original, &f.path, dialect)?;
    let mut doc = Doc::parse(now, &f.path, dialect)?;
    let mut conflicts = Vec::new();
    for m in &f.maps {
        match (&mut doc, &orig_doc) {
            (Doc::Json(root), Doc::Json(orig)) => {
                let Some(orig_map) = jsonc::map(orig, &m.keys) else {
                    continue;
                };
                let originals: Vec<(String, CstInputValue)> = jsonc::inputs(&orig_map)
                    .into_iter()
                    .filter(|(n, _)| m.moved.contains(n))
                    .collect();
                let obj = jsonc::map_or_create(root, &m.keys);
                conflicts.extend(jsonc::restore(&obj, BRIDGE_KEY, &originals));
            }
            (Doc::Toml(d), Doc::Toml(orig)) => {
                let originals = tomlfile::items(orig, &m.keys)
                    .into_iter()
                    .filter(|(n, _)| m.moved.contains(n))
                    .collect();
                conflicts.extend(tomlfile::restore(d, &m.keys, BRIDGE_KEY, originals));
            }
            _ => {}
        }
    }
    for c in &conflicts {
        notes.push(format!(
            "`{c}` is not put back in {shown}: an entry of that name was added since connect and is kept."
        ));
    }
    Ok((
        doc.text(),
        format!(
            "Put the original servers back in {shown}, keeping the changes made since connect."
        ),
    ))
}
