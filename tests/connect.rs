//! `toolgate::connect` against realistic config files of every client
//! (`tests/fixtures/connect/<client>/`, shaped like their docs), in a
//! temporary HOME: connect, disconnect, edits in between, dry runs,
//! modes, backups and malformed files.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use toolgate::connect::{self, Action, ClientId, ConnectEnv, ConnectError};
use toolgate::secrets::{MemoryStore, SecretName, SecretStore};

/// The secret values in the fixtures: none may reach toolgate's config.
const SECRETS: &[&str] = &[
    "ghp_fixtureToken0123456789",
    "sntrys_fixtureToken42",
    "patFixtureAirtableKey",
    "fixture-cursor-api-key",
    "ctx7-fixture-key",
    "ghp_windsurfFixtureToken",
    "figd_fixture",
    "gemini-fixture-token",
    "codex-fixture-token",
    "zed-fixture-token",
];

/// Per client: the servers connect moves, and the ones that stay.
fn expected(c: ClientId) -> (&'static [&'static str], &'static [&'static str]) {
    match c {
        ClientId::ClaudeDesktop => (&["filesystem", "github"], &[]),
        ClientId::ClaudeCode => (&["sentry", "postgres", "airtable"], &["api-server"]),
        ClientId::Cursor => (&["playwright", "server-name", "context7"], &[]),
        ClientId::Vscode => (&["fetch", "github", "playwright"], &["Perplexity"]),
        ClientId::Windsurf => (&["github", "figma", "git"], &[]),
        ClientId::GeminiCli => (&["remote", "sseServer"], &["pythonTools"]),
        ClientId::Codex => (&["context7", "docs", "local-http"], &["figma"]),
        ClientId::Zed => (&["local-mcp-server", "remote-mcp-server"], &[]),
    }
}

pub(crate) struct Home {
    _dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
    pub(crate) project: PathBuf,
}

impl Home {
    /// A temporary HOME and project laid out from the client's fixtures.
    pub(crate) fn with(client: ClientId) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("work/app");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/connect")
            .join(client.id());
        copy_tree(&src.join("home"), &home, &project);
        copy_tree(&src.join("project"), &project, &project);
        Self {
            _dir: dir,
            home,
            project,
        }
    }

    pub(crate) fn env(&self) -> ConnectEnv {
        ConnectEnv {
            projects: vec![self.project.clone()],
            ..ConnectEnv::in_home(&self.home)
        }
    }

    /// Every file under HOME and the project, by path, except toolgate's.
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for root in [&self.home, &self.project] {
            walk(root, &mut |p| {
                if !p.starts_with(self.home.join(".config/toolgate"))
                    && !p.starts_with(self.home.join(".local"))
                {
                    out.insert(p.to_owned(), std::fs::read(p).unwrap());
                }
            });
        }
        out
    }
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, f);
        } else {
            f(&p);
        }
    }
}

pub(crate) fn copy_tree(src: &Path, dst: &Path, project: &Path) {
    walk(src, &mut |p| {
        let to = dst.join(p.strip_prefix(src).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let text = std::fs::read_to_string(p).unwrap();
        std::fs::write(&to, text.replace("@PROJECT@", &project.to_string_lossy())).unwrap();
    });
}

fn connect_all(env: &ConnectEnv, store: &MemoryStore, client: ClientId) -> connect::Applied {
    let plan = connect::plan(env, client, Action::Connect).unwrap();
    connect::apply(env, store, &plan).unwrap()
}

/// Server names in each of the client's existing files, after the fact.
fn servers_now(env: &ConnectEnv, client: ClientId) -> Vec<(String, Vec<String>)> {
    let st = connect::status(env);
    let c = st.iter().find(|c| c.id == client).unwrap();
    c.files
        .iter()
        .filter(|f| f.exists)
        .map(|f| {
            assert!(f.error.is_none(), "{:?}", f.error);
            (
                f.path.clone(),
                f.servers.iter().map(|s| s.name.clone()).collect(),
            )
        })
        .collect()
}

#[test]
fn every_client_connects_and_disconnects_byte_for_byte() {
    for client in ClientId::ALL {
        let h = Home::with(client);
        let env = h.env();
        let before = h.snapshot();
        let (moved, stays) = expected(client);
        let st = connect::status(&env);
        let found = st.iter().find(|c| c.id == client).unwrap();
        assert!(found.detected && !found.connected, "{client}");
        // The first file is made private: its mode must survive.
        let first = before.keys().next().unwrap().clone();
        std::fs::set_permissions(&first, std::fs::Permissions::from_mode(0o600)).unwrap();

        let store = MemoryStore::new();
        let applied = connect_all(&env, &store, client);
        assert!(!applied.backups.is_empty(), "{client}: backups");
        for b in &applied.backups {
            assert!(Path::new(b).exists(), "{client}: backup {b}");
        }
        let mode = std::fs::metadata(&first).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{client}: {}", first.display());

        // The client's config: only the toolgate entry, plus what must stay.
        for (path, names) in servers_now(&env, client) {
            assert!(
                names.contains(&"toolgate".to_owned()),
                "{client}: {path}: {names:?}"
            );
            for n in &names {
                assert!(
                    n == "toolgate" || stays.contains(&n.as_str()) || n == "other",
                    "{client}: {path} still has {n}"
                );
            }
        }
        // toolgate's config: the servers, secrets as references.
        let text = std::fs::read_to_string(&env.toolgate_config).unwrap();
        let config = toolgate::config::Config::parse(&text, &env.toolgate_config).unwrap();
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        let mut want: Vec<&str> = moved.to_vec();
        want.sort_unstable();
        let mut got = names.clone();
        got.sort_unstable();
        assert_eq!(got, want, "{client}");
        for s in SECRETS {
            assert!(!text.contains(s), "{client}: secret in toolgate's config");
        }
        for spec in &config.servers {
            for name in toolgate::secrets::referenced_names(spec) {
                let v = store.get(&SecretName::new(&name).unwrap()).unwrap();
                assert!(
                    SECRETS.iter().any(|s| v.expose().contains(s)),
                    "{client}: {name}"
                );
            }
        }
        let status = connect::status(&env);
        assert!(status.iter().find(|c| c.id == client).unwrap().connected);

        let plan = connect::plan(&env, client, Action::Disconnect).unwrap();
        assert!(
            plan.summary.iter().any(|s| s.contains("byte for byte")),
            "{client}: {:?}",
            plan.summary
        );
        connect::apply(&env, &store, &plan).unwrap();
        let after = h.snapshot();
        for (path, bytes) in &before {
            assert_eq!(
                after.get(path),
                Some(bytes),
                "{client}: {} is not restored byte for byte",
                path.display()
            );
        }
        let text = std::fs::read_to_string(&env.toolgate_config).unwrap();
        let config = toolgate::config::Config::parse(&text, &env.toolgate_config).unwrap();
        assert!(config.servers.is_empty(), "{client}: {text}");
        for s in &["github_GITHUB_PERSONAL_ACCESS_TOKEN", "docs_DOCS_API_TOKEN"] {
            assert!(
                store.get(&SecretName::new(s).unwrap()).is_err(),
                "{client}: {s}"
            );
        }
        assert!(!connect::status(&env).iter().any(|c| c.connected));
    }
}

#[test]
fn an_edit_after_connect_survives_disconnect() {
    // JSON (Cursor), JSONC with comments (Zed) and TOML (Codex).
    for client in [ClientId::Cursor, ClientId::Zed, ClientId::Codex] {
        let h = Home::with(client);
        let env = h.env();
        let store = MemoryStore::new();
        connect_all(&env, &store, client);
        let file = connect::status(&env)
            .into_iter()
            .find(|c| c.id == client)
            .unwrap()
            .files
            .into_iter()
            .find(|f| f.exists && f.servers.iter().any(|s| s.is_toolgate))
            .unwrap()
            .path;
        let text = std::fs::read_to_string(&file).unwrap();
        let edited = match client {
            ClientId::Codex => format!(
                "{}\n[mcp_servers.mine]\ncommand = \"my-server\"\n",
                text.replace(
                    "approval_policy = \"on-request\"",
                    "approval_policy = \"never\""
                )
            ),
            ClientId::Zed => text
                .replace("\"vim_mode\": false", "\"vim_mode\": true")
                .replace(
                    "\"context_servers\": {",
                    "\"context_servers\": {\n    \"mine\": { \"command\": \"my-server\" },",
                ),
            _ => text.replace(
                "\"mcpServers\": {",
                "\"mcpServers\": {\n    \"mine\": { \"command\": \"my-server\" },",
            ),
        };
        assert_ne!(edited, text);
        std::fs::write(&file, &edited).unwrap();

        let plan = connect::plan(&env, client, Action::Disconnect).unwrap();
        assert!(
            plan.summary
                .iter()
                .any(|s| s.contains("keeping the changes")),
            "{client}: {:?}",
            plan.summary
        );
        connect::apply(&env, &store, &plan).unwrap();
        let restored = std::fs::read_to_string(&file).unwrap();
        let names = servers_now(&env, client)
            .into_iter()
            .find(|(p, _)| *p == file)
            .unwrap()
            .1;
        assert!(names.contains(&"mine".to_owned()), "{client}: {names:?}");
        assert!(
            !names.contains(&"toolgate".to_owned()),
            "{client}: {names:?}"
        );
        let (moved, _) = expected(client);
        let original = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/connect")
                .join(client.id())
                .join("home")
                .join(Path::new(&file).strip_prefix(&h.home).unwrap()),
        )
        .unwrap();
        for m in moved.iter().filter(|m| original.contains(*m)) {
            assert!(
                names.contains(&(*m).to_owned()),
                "{client}: {m} missing: {restored}"
            );
        }
        match client {
            ClientId::Codex => assert!(restored.contains("approval_policy = \"never\"")),
            ClientId::Zed => {
                assert!(restored.contains("\"vim_mode\": true"));
                assert!(
                    restored.contains("// A local server started by Zed."),
                    "{restored}"
                );
            }
            _ => {}
        }
        for s in SECRETS.iter().filter(|s| original.contains(*s)) {
            assert!(
                restored.contains(s),
                "{client}: the secret is back in the file"
            );
        }
    }
}

#[test]
fn a_dry_run_writes_nothing() {
    let h = Home::with(ClientId::GeminiCli);
    let env = h.env();
    let before = h.snapshot();
    let plan = connect::plan(&env, ClientId::GeminiCli, Action::Connect).unwrap();
    assert_eq!(plan.restart, None, "not running");
    assert_eq!(h.snapshot(), before);
    assert!(!env.toolgate_config.exists());
    assert!(!env.data_dir.exists());
    // The diff is exact and hides the secret it moves.
    let settings = plan
        .files
        .iter()
        .find(|f| f.path.ends_with("/home/.gemini/settings.json"))
        .unwrap();
    assert!(
        settings.diff.contains("+    \"toolgate\": {"),
        "{}",
        settings.diff
    );
    assert!(
        settings.diff.contains("-    \"remote\": {"),
        "{}",
        settings.diff
    );
    assert!(
        !settings.diff.contains("gemini-fixture-token"),
        "{}",
        settings.diff
    );
    assert!(settings.diff.contains("<secret>"), "{}", settings.diff);
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("pythonTools") && n.contains("$MY_API_TOKEN")),
        "{:?}",
        plan.notes
    );
}

#[test]
fn a_malformed_config_is_named_with_its_line_and_nothing_is_written() {
    let h = Home::with(ClientId::Cursor);
    let env = h.env();
    let file = h.home.join(".cursor/mcp.json");
    std::fs::write(
        &file,
        "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" \n  }\n",
    )
    .unwrap();
    let before = h.snapshot();
    let err = connect::plan(&env, ClientId::Cursor, Action::Connect).unwrap_err();
    match &err {
        ConnectError::Malformed { path, line, .. } => {
            assert_eq!(path, &file);
            assert!(*line >= 2, "{err}");
        }
        other => panic!("{other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains(".cursor/mcp.json:") && msg.contains("nothing was changed"),
        "{msg}"
    );
    assert_eq!(h.snapshot(), before);
    let toml = Home::with(ClientId::Codex);
    std::fs::write(toml.home.join(".codex/config.toml"), "model = \n").unwrap();
    let err = connect::plan(&toml.env(), ClientId::Codex, Action::Connect).unwrap_err();
    assert!(
        matches!(err, ConnectError::Malformed { line: 1, .. }),
        "{err}"
    );
}

#[test]
fn apply_refuses_a_plan_the_files_no_longer_match() {
    let h = Home::with(ClientId::Windsurf);
    let env = h.env();
    let plan = connect::plan(&env, ClientId::Windsurf, Action::Connect).unwrap();
    let file = h.home.join(".codeium/windsurf/mcp_config.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("mcp-server-git", "mcp-server-git2")).unwrap();
    let err = connect::apply(&env, &MemoryStore::new(), &plan).unwrap_err();
    assert!(matches!(err, ConnectError::Stale { .. }), "{err}");
    assert!(!env.toolgate_config.exists());
    // Connecting twice is refused; so is disconnecting what is not connected.
    let store = MemoryStore::new();
    connect_all(&env, &store, ClientId::Windsurf);
    let again = connect::plan(&env, ClientId::Windsurf, Action::Connect).unwrap_err();
    assert!(
        matches!(again, ConnectError::AlreadyConnected { .. }),
        "{again}"
    );
    let none = connect::plan(&env, ClientId::Zed, Action::Disconnect).unwrap_err();
    assert!(matches!(none, ConnectError::NotConnected { .. }), "{none}");
}

#[test]
fn a_server_toolgate_already_has_is_not_added_twice() {
    let h = Home::with(ClientId::Cursor);
    let env = h.env();
    std::fs::create_dir_all(env.toolgate_config.parent().unwrap()).unwrap();
    let mine = "# my own\n[[servers]]\nname = \"pw\"\ntransport = \"stdio\"\ncommand = \"npx\"\nargs = [\"-y\", \"@playwright/mcp@latest\"]\n";
    std::fs::write(&env.toolgate_config, mine).unwrap();
    let plan = connect::plan(&env, ClientId::Cursor, Action::Connect).unwrap();
    assert!(
        plan.summary
            .iter()
            .any(|s| s.contains("`playwright` is already in toolgate's config as `pw`")),
        "{:?}",
        plan.summary
    );
    let store = MemoryStore::new();
    connect::apply(&env, &store, &plan).unwrap();
    let text = std::fs::read_to_string(&env.toolgate_config).unwrap();
    assert!(text.starts_with(mine), "{text}");
    assert_eq!(text.matches("[[servers]]").count(), 3, "{text}");
    let plan = connect::plan(&env, ClientId::Cursor, Action::Disconnect).unwrap();
    connect::apply(&env, &store, &plan).unwrap();
    assert_eq!(std::fs::read_to_string(&env.toolgate_config).unwrap(), mine);
}

#[test]
fn hooks_install_beside_the_persons_own_and_come_out_exactly() {
    for client in [ClientId::ClaudeCode, ClientId::Cursor, ClientId::GeminiCli] {
        let h = Home::with(client);
        let env = h.env();
        let before = h.snapshot();
        let status = connect::status(&env);
        let hooks = status
            .iter()
            .find(|c| c.id == client)
            .unwrap()
            .hooks
            .clone()
            .unwrap();
        assert!(!hooks.installed, "{client}");
        let store = MemoryStore::new();
        let plan = connect::plan(&env, client, Action::InstallHooks).unwrap();
        assert_eq!(h.snapshot(), before, "{client}: plan wrote");
        connect::apply(&env, &store, &plan).unwrap();
        let text = std::fs::read_to_string(&hooks.path).unwrap();
        let json: serde_json::Value = jsonc_value(&text);
        let command = format!("toolgate hook run {}", client.id());
        let agent: toolgate::hooks::HookAgent = client.id().parse().unwrap();
        for spec in toolgate::hooks::install_spec(agent) {
            let entries = json["hooks"][spec.event].as_array().unwrap();
            let ours = entries.iter().any(|e| {
                e["command"] == command.as_str()
                    || e["hooks"]
                        .as_array()
                        .is_some_and(|hs| hs.iter().any(|x| x["command"] == command.as_str()))
            });
            assert!(ours, "{client}: {} missing in {text}", spec.event);
        }
        // The person's own hooks and settings are still there.
        match client {
            ClientId::ClaudeCode => {
                assert!(text.contains("npx prettier --write") && text.contains("\"model\""));
                assert_eq!(json["hooks"]["PostToolUse"].as_array().unwrap().len(), 2);
            }
            ClientId::Cursor => assert!(text.contains("./hooks/format.sh")),
            _ => assert!(text.contains("\"mcpServers\"") && text.contains("\"theme\"")),
        }
        let st = connect::status(&env);
        assert!(
            st.iter()
                .find(|c| c.id == client)
                .unwrap()
                .hooks
                .as_ref()
                .unwrap()
                .installed
        );
        let again = connect::plan(&env, client, Action::InstallHooks).unwrap_err();
        assert!(again.to_string().contains("already installed"), "{again}");

        let plan = connect::plan(&env, client, Action::RemoveHooks).unwrap();
        connect::apply(&env, &store, &plan).unwrap();
        let after = h.snapshot();
        for (path, bytes) in &before {
            assert!(
                after.get(path) == Some(bytes),
                "{client}: {} not restored byte for byte",
                path.display()
            );
        }
    }
    let h = Home::with(ClientId::Zed);
    let err = connect::plan(&h.env(), ClientId::Zed, Action::InstallHooks).unwrap_err();
    assert!(matches!(err, ConnectError::NoHooks { .. }), "{err}");
}

#[test]
fn removing_hooks_after_the_person_edited_the_file_keeps_their_edit() {
    let h = Home::with(ClientId::ClaudeCode);
    let env = h.env();
    let store = MemoryStore::new();
    let plan = connect::plan(&env, ClientId::ClaudeCode, Action::InstallHooks).unwrap();
    connect::apply(&env, &store, &plan).unwrap();
    let file = h.home.join(".claude/settings.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("claude-sonnet-4-5", "claude-opus-4-1")).unwrap();
    let plan = connect::plan(&env, ClientId::ClaudeCode, Action::RemoveHooks).unwrap();
    connect::apply(&env, &store, &plan).unwrap();
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.contains("claude-opus-4-1"), "{after}");
    assert!(!after.contains("hook run"), "{after}");
    assert!(after.contains("npx prettier --write"), "{after}");
    let json = jsonc_value(&after);
    assert!(json["hooks"].get("PreToolUse").is_none(), "{after}");
    assert_eq!(json["hooks"]["PostToolUse"].as_array().unwrap().len(), 1);
}

fn jsonc_value(text: &str) -> serde_json::Value {
    let root = jsonc_parser::cst::CstRootNode::parse(text, &Default::default()).unwrap();
    root.value().unwrap().to_serde_value().unwrap()
}

/// The entry connect writes, started the way a client built on the
/// official Python SDK starts it, reaches the client's server through a
/// real `toolgate serve` found from HOME alone, and the engine names the
/// caller by the client.
#[tokio::test]
async fn the_rewritten_entry_reaches_the_same_tools_under_the_clients_name() {
    use crate::common::python::python_str;
    const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("app");
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/py_server.py");
    let mcp_json = home.join(".cursor/mcp.json");
    std::fs::write(
        &mcp_json,
        serde_json::to_string_pretty(&serde_json::json!({"mcpServers": {
            "py": {"command": python_str(), "args": [server]}
        }}))
        .unwrap(),
    )
    .unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(TOOLGATE)
            .args(args)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&project)
            .output()
            .unwrap()
    };
    let out = run(&["connect", "cursor", "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mcp_json).unwrap()).unwrap();
    let entry = &config["mcpServers"]["toolgate"];
    assert_eq!(
        entry["args"],
        serde_json::json!(["mcp-bridge", "--client", "Cursor"])
    );
    assert_eq!(
        config["mcpServers"].as_object().unwrap().len(),
        1,
        "{config}"
    );

    // The person's policy lets the moved server's `add` run unasked.
    let config_path = home.join(".config/toolgate/config.toml");
    let mut toml = std::fs::read_to_string(&config_path).unwrap();
    assert!(toml.contains("name = \"py\""), "{toml}");
    toml.push_str("\n[[policy.rules]]\ntool = \"py__add\"\nverdict = \"allow\"\n");
    std::fs::write(&config_path, toml).unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut serve = tokio::process::Command::new(TOOLGATE)
        .args(["serve", "--no-http"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", "/usr/bin:/bin")
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    crate::common::serve::ready(&mut serve, std::time::Duration::from_secs(30)).await;
    // The engine starts the moved server from its config: wait until its
    // tools are listed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let tools = run(&["tools", "--json"]);
        if String::from_utf8_lossy(&tools.stdout).contains("py__add") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "py__add never listed: {}",
            String::from_utf8_lossy(&tools.stderr)
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The client runs as the person: their HOME, nothing else of ours.
    let out = tokio::process::Command::new(crate::common::python::python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/connect_client.py"))
        .arg(&mcp_json)
        .args(["mcpServers", "py__add", r#"{"a": 2, "b": 3}"#])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(
        tools.contains(&"py__add") && tools.contains(&"py__counter"),
        "{seen}"
    );
    // The answer, trust-wrapped as toolgate wraps external output.
    assert!(seen["text"].as_str().unwrap().contains("\n5\n"), "{seen}");
    assert_eq!(seen["is_error"], false, "{seen}");
    let audit = run(&["audit", "--json", "--limit", "5"]);
    let rows = String::from_utf8_lossy(&audit.stdout);
    let named = rows.lines().any(|l| {
        let row: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
        row["tool"] == "py__add" && row["caller"].to_string().contains("Cursor")
    });
    assert!(named, "the audit names the caller Cursor: {rows}");
    let pid = rustix::process::Pid::from_raw(serve.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(20), serve.wait()).await;
}

/// `toolgate` as a person runs it, in their HOME.
fn cli(h: &Home, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .env_clear()
        .env("HOME", &h.home)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&h.project)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_lists_shows_the_diff_and_never_writes_unasked() {
    let h = Home::with(ClientId::Vscode);
    let before = h.snapshot();
    let (code, out, _) = cli(&h, &["connect"]);
    assert_eq!(code, 0);
    assert!(out.contains("VS Code (vscode): not connected"), "{out}");
    assert!(
        out.contains("Claude Desktop (claude-desktop): not found"),
        "{out}"
    );
    assert!(out.contains("~/.config/Code/User/mcp.json:"), "{out}");
    assert!(
        out.contains("Perplexity: stays in the client: it uses `${input:perplexity-key}`"),
        "{out}"
    );
    assert!(
        out.contains("Claude Code (claude-code): not found, hooks not installed"),
        "{out}"
    );

    let (code, out, _) = cli(&h, &["connect", "vscode", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(out.contains("+    \"toolgate\": {"), "{out}");
    assert!(
        out.contains("\"args\": [\"mcp-bridge\", \"--client\", \"VS Code\"]"),
        "{out}"
    );
    assert!(out.contains("Dry run: nothing was written."), "{out}");

    // No terminal and no --yes: refused, nothing written.
    let (code, _, err) = cli(&h, &["connect", "vscode"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("pass --yes"), "{err}");
    assert_eq!(h.snapshot(), before);
    assert!(!h.home.join(".config/toolgate").exists());

    let (code, _, err) = cli(&h, &["connect", "vs-code"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown client `vs-code`; one of claude-desktop,"),
        "{err}"
    );

    let (code, out, _) = cli(&h, &["hook", "install", "claude-code", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(out.contains("--- /dev/null\n+++ b"), "{out}");
    assert!(out.contains("hook run claude-code"), "{out}");
    assert!(!h.home.join(".claude").exists());

    std::fs::write(
        h.home.join(".config/Code/User/mcp.json"),
        "{\n  \"servers\": {\n    \"a\": { \"command\": \"x\" ]\n  }\n}\n",
    )
    .unwrap();
    let (code, _, err) = cli(&h, &["connect", "vscode", "--yes"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/.config/Code/User/mcp.json:3:") && err.contains("nothing was changed"),
        "{err}"
    );
}

/// Gemini CLI keeps its MCP servers and its hooks in one file: connect,
/// hook install, disconnect and hook remove in that order leave it as it
/// was, each undo keeping what the other added.
#[test]
fn mcp_and_hooks_in_one_file_undo_independently() {
    let h = Home::with(ClientId::GeminiCli);
    let env = h.env();
    let store = MemoryStore::new();
    let file = h.home.join(".gemini/settings.json");
    let original = std::fs::read_to_string(&file).unwrap();
    for action in [Action::Connect, Action::InstallHooks, Action::Disconnect] {
        let plan = connect::plan(&env, ClientId::GeminiCli, action).unwrap();
        connect::apply(&env, &store, &plan).unwrap();
    }
    let mid = jsonc_value(&std::fs::read_to_string(&file).unwrap());
    assert!(mid["hooks"]["BeforeTool"].is_array(), "{mid}");
    assert!(mid["mcpServers"]["remote"].is_object(), "{mid}");
    assert!(mid["mcpServers"].get("toolgate").is_none(), "{mid}");
    let plan = connect::plan(&env, ClientId::GeminiCli, Action::RemoveHooks).unwrap();
    connect::apply(&env, &store, &plan).unwrap();
    let end = std::fs::read_to_string(&file).unwrap();
    assert_eq!(jsonc_value(&end), jsonc_value(&original), "{end}");
}

/// Claude Desktop and Windsurf both run the same GitHub server: the second
/// connect reuses it, and it stays in toolgate's config (with its secret)
/// until the last of the two disconnects.
#[test]
fn a_server_two_clients_share_leaves_with_the_last_of_them() {
    let h = Home::with(ClientId::ClaudeDesktop);
    let ws = Home::with(ClientId::Windsurf);
    copy_tree(&ws.home, &h.home, &h.project);
    let env = h.env();
    let store = MemoryStore::new();
    connect_all(&env, &store, ClientId::ClaudeDesktop);
    let plan = connect::plan(&env, ClientId::Windsurf, Action::Connect).unwrap();
    assert!(
        plan.summary
            .iter()
            .any(|s| s.contains("`github` is already in toolgate's config as `github`")),
        "{:?}",
        plan.summary
    );
    connect::apply(&env, &store, &plan).unwrap();
    let secret = SecretName::new("github_GITHUB_PERSONAL_ACCESS_TOKEN").unwrap();
    let names = |env: &ConnectEnv| -> Vec<String> {
        let text = std::fs::read_to_string(&env.toolgate_config).unwrap();
        toolgate::config::Config::parse(&text, &env.toolgate_config)
            .unwrap()
            .servers
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    let plan = connect::plan(&env, ClientId::ClaudeDesktop, Action::Disconnect).unwrap();
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("`github` stays in toolgate's config: Windsurf uses it too")),
        "{:?}",
        plan.notes
    );
    connect::apply(&env, &store, &plan).unwrap();
    assert!(names(&env).contains(&"github".to_owned()));
    assert!(!names(&env).contains(&"filesystem".to_owned()));
    assert!(
        store.get(&secret).is_ok(),
        "the shared server's secret stays"
    );
    let plan = connect::plan(&env, ClientId::Windsurf, Action::Disconnect).unwrap();
    connect::apply(&env, &store, &plan).unwrap();
    assert!(names(&env).is_empty(), "{:?}", names(&env));
    assert!(store.get(&secret).is_err(), "gone with the last client");
}

/// What `toolgate hook install` writes is what the agent runs: the
/// installed command, run through a shell with the agent's documented
/// payload on stdin, answers in the agent's format (here the fallback of
/// an engine that is not running: hand the decision back to the agent).
#[test]
fn the_installed_hook_command_answers_as_the_agent_runs_it() {
    for (client, payload) in [
        (ClientId::ClaudeCode, "claude-code/pre_tool_use_bash.json"),
        (ClientId::Cursor, "cursor/before_shell_execution.json"),
        (ClientId::GeminiCli, "gemini-cli/before_tool_shell.json"),
    ] {
        let h = Home::with(client);
        let before = h.snapshot();
        let (code, _, err) = cli(&h, &["hook", "install", client.id(), "--yes"]);
        assert_eq!(code, 0, "{client}: {err}");
        let agent: toolgate::hooks::HookAgent = client.id().parse().unwrap();
        let settings = connect::hooks::settings_path(&h.env(), agent);
        let json = jsonc_value(&std::fs::read_to_string(&settings).unwrap());
        let gate = toolgate::hooks::install_spec(agent)[0].event;
        let entry = json["hooks"][gate]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        let command = entry["command"]
            .as_str()
            .or(entry["hooks"][0]["command"].as_str())
            .unwrap()
            .to_owned();
        assert!(
            command.ends_with(&format!(" hook run {}", client.id())),
            "{command}"
        );
        let payload = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/hooks")
                .join(payload),
        )
        .unwrap();
        let mut child = std::process::Command::new("sh")
            .args(["-c", &command])
            .env_clear()
            .env("HOME", &h.home)
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), &payload).unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stdout.contains("\"ask\"") && !stdout.contains("allow"),
            "{client}: {stdout}"
        );
        assert!(
            stderr.contains("toolgate is not running"),
            "{client}: {stderr}"
        );

        let (code, _, err) = cli(&h, &["hook", "remove", client.id(), "--yes"]);
        assert_eq!(code, 0, "{client}: {err}");
        let after = h.snapshot();
        for (path, bytes) in &before {
            assert!(
                after.get(path) == Some(bytes),
                "{client}: {}",
                path.display()
            );
        }
    }
}
