//! toolgate protects itself from the tools it governs. A governed call
//! that would use toolgate's control plane (`toolgate approve`, `toolgate
//! console --print`), or read or change its config, data or runtime files
//! in any spelling a shell expands, is refused before policy, without
//! asking anyone, with a reason naming what it touched; so is one by an
//! upstream tool that runs shell commands, and a write through a hard link
//! into toolgate's data dir. Control methods never answer on the agent
//! socket or the agent's HTTP endpoint; a decision records which process
//! made it. Real daemon, real sockets, a real upstream MCP server, raw
//! JSON-RPC clients, the real `toolgate` binary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast;
use toolgate::config::Config;
use toolgate::events::Event;
use toolgate::mcp::ServerOptions;
use toolgate::wire::CONTROL_METHODS;

use crate::common::daemon::{Raw, TestDaemon};
use crate::common::{drain, types};

fn kind(reply: &Value) -> &str {
    reply["result"]["_meta"]["toolgate/error"]["kind"]
        .as_str()
        .unwrap_or("")
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or("")
}

/// A daemon whose file root is its whole temp dir, so its data dir
/// (`data/`), runtime dir (`run/`) and config file (`config.toml`) are all
/// inside the root: only self-protection stands between a tool and them.
async fn exposed_daemon() -> TestDaemon {
    TestDaemon::start_adjusted("", ServerOptions::default(), |c: &mut Config, dir| {
        let config = dir.join("config.toml");
        std::fs::write(&config, "").unwrap();
        c.path = Some(config);
        c.builtin.roots = vec![dir.to_owned()];
    })
    .await
}

fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap()
}

/// Sends one call and expects a refusal at once (a call waiting for a
/// person would run into the deadline).
async fn refused(c: &mut Raw, id: u64, tool: &str, args: Value) -> Value {
    let r = tokio::time::timeout(Duration::from_secs(10), c.call(id, tool, args))
        .await
        .expect("refused at once, not left waiting for a person");
    assert_eq!(kind(&r), "guard_denied", "{r}");
    r
}

fn assert_nobody_asked(d: &TestDaemon, events: &mut broadcast::Receiver<Event>) {
    assert!(d.engine.approvals().unwrap().pending().is_empty());
    let seen = types(&drain(events));
    assert!(
        !seen.iter().any(|t| t == "approval_requested"),
        "nobody was asked: {seen:?}"
    );
}

/// A daemon like [`exposed_daemon`] whose `shell_exec` runs without asking
/// (`[tools.shell_exec] policy = "allow"`): a refusal can only come from
/// the guard stage, and a command it lets through really runs.
async fn exposed_shell_daemon() -> TestDaemon {
    TestDaemon::start_adjusted(
        "[tools.shell_exec]\npolicy = \"allow\"\n",
        ServerOptions::default(),
        |c: &mut Config, dir| {
            let config = dir.join("config.toml");
            std::fs::write(&config, "").unwrap();
            c.path = Some(config);
            c.builtin.roots = vec![dir.to_owned()];
        },
    )
    .await
}

#[tokio::test]
async fn a_shell_command_that_uses_toolgates_control_plane_is_refused_without_asking() {
    let d = exposed_daemon().await;
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;
    for (i, (command, named)) in [
        ("toolgate approve 1", "toolgate approve"),
        ("toolgate console --print", "toolgate console"),
        ("toolgate approvals", "toolgate approvals"),
        ("toolgate audit --limit 5", "toolgate audit"),
        (
            "toolgate secret get github_token --reveal",
            "toolgate secret",
        ),
        ("/usr/bin/toolgate deny 2", "toolgate deny"),
        ("env toolgate rules --rm 3", "toolgate rules"),
        ("sh -c 'toolgate approve 1'", "toolgate approve"),
        ("t''oolgate pins --approve x", "toolgate pins"),
        ("TG=toolgate; $TG breakers --reset x", "toolgate breakers"),
        (
            "toolgate some-future-subcommand",
            "toolgate some-future-subcommand",
        ),
        (
            "echo '{\"method\":\"toolgate/console/login\"}' | nc -U x",
            "toolgate/console/login",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let r = refused(
            &mut c,
            i as u64 + 1,
            "shell_exec",
            json!({"command": command}),
        )
        .await;
        assert!(text(&r).starts_with("argument `command` refused:"), "{r}");
        assert!(
            text(&r).contains(&format!("it runs `{named}`, which steers toolgate itself")),
            "{r}"
        );
    }
    assert_nobody_asked(&d, &mut events);
    d.stop().await;
}

/// The user name whose home is `home`, from `/etc/passwd`.
fn user_of(home: &Path) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 5 && Path::new(f[5]) == home).then(|| f[0].to_owned())
    })
}

#[tokio::test]
async fn shell_spellings_of_toolgates_files_are_refused_without_asking() {
    let d = exposed_shell_daemon().await;
    let dir = real(d.dir.path());
    let home = directories::BaseDirs::new()
        .expect("a home directory")
        .home_dir()
        .to_owned();
    // The default config dir is protected whether or not it exists.
    let config_dir = real(&home).join(".config/toolgate");
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;
    let mut home_spellings: Vec<String> = [
        r#"cat "$HOME"/.config/toolgate/config.toml"#,
        "cat ${HOME}/.config/toolgate/config.toml",
        "cat $HOME/.config/toolgate/config.toml",
        "cat ~/.config/toolgate/config.toml",
        r#"cat "$HOME/.config/toolgate"'/config.toml'"#,
        "cd ~/.config/toolgate && cat config.toml",
        "cd ~/.config && cat toolgate/config.toml",
        "cat ~/.config/toolgate/config.tom?",
        "cat ~/.config/toolg*/config.toml",
        "cat ~/.config/[t]oolgate/config.toml",
        "cat ${XDG_CONFIG_HOME:-$HOME/.config}/toolgate/config.toml",
        "echo \"$(cat ~/.config/toolgate/config.toml)\"",
        "bash -c 'cat ~/.config/toolgate/config.toml'",
    ]
    .map(str::to_owned)
    .to_vec();
    let user = user_of(&home);
    if let Some(user) = &user {
        home_spellings.push(format!("cat ~{user}/.config/toolgate/config.toml"));
    } else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI's HOME is a user's home in /etc/passwd"
        );
    }
    let mut id = 0;
    for command in &home_spellings {
        id += 1;
        let r = refused(&mut c, id, "shell_exec", json!({"command": command})).await;
        assert!(
            text(&r).contains(&config_dir.display().to_string()),
            "{command}: the reason names the protected place: {r}"
        );
    }
    // The daemon's own files, from where the command runs (the root) and
    // after a `cd`.
    for (command, place) in [
        ("cat config.toml".to_owned(), "config file"),
        ("sqlite3 data/audit.db .dump".to_owned(), "data dir"),
        (
            format!("cd {} && cat config.toml", dir.display()),
            "config file",
        ),
        ("cd root/.. && cat data/engine.json".to_owned(), "data dir"),
        ("tail -f d?ta/*.log".to_owned(), "data dir"),
    ] {
        id += 1;
        let r = refused(&mut c, id, "shell_exec", json!({"command": command})).await;
        assert!(text(&r).contains(place), "{command}: {r}");
        assert!(text(&r).contains(&dir.display().to_string()), "{r}");
    }
    assert_nobody_asked(&d, &mut events);
    // Commands that mention toolgate harmlessly run.
    for command in [
        "echo toolgate",
        "ls ~ > /dev/null && echo listed",
        "toolgate --version || true",
        "cd root && pwd",
    ] {
        id += 1;
        let r = c.call(id, "shell_exec", json!({"command": command})).await;
        assert_eq!(kind(&r), "", "{command}: {r}");
        assert_eq!(r["result"]["isError"], false, "{command}: {r}");
    }
    d.stop().await;
}

/// An upstream MCP server (a real child process) whose tool says it runs
/// shell commands: its command line is read like `shell_exec`'s.
#[tokio::test]
async fn an_upstream_shell_tool_that_steers_toolgate_is_refused_without_asking() {
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/shell_server.py"
    );
    let toml = format!(
        "[[servers]]\nname = \"sh\"\ntransport = \"stdio\"\ncommand = {python:?}\nargs = [{server:?}]\n\n[tools.sh__execute_command]\npolicy = \"allow\"\n",
        python = crate::common::python::python_str()
    );
    let d = TestDaemon::start(&toml).await;
    crate::upstream_support::wait_for(Duration::from_secs(30), "sh__execute_command", || {
        d.engine
            .tools()
            .iter()
            .any(|t| t.name.as_str() == "sh__execute_command")
    })
    .await
    .unwrap();
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;
    for (i, command) in [
        "toolgate approve 1",
        "toolgate console --print",
        "cat ~/.config/toolgate/config.toml",
    ]
    .into_iter()
    .enumerate()
    {
        let r = refused(
            &mut c,
            i as u64 + 1,
            "sh__execute_command",
            json!({"command": command}),
        )
        .await;
        assert!(text(&r).starts_with("argument `command` refused:"), "{r}");
    }
    assert_nobody_asked(&d, &mut events);
    let r = c
        .call(9, "sh__execute_command", json!({"command": "echo hi"}))
        .await;
    assert!(text(&r).contains("would run: echo hi"), "{r}");
    d.stop().await;
}

#[tokio::test]
async fn governed_writes_to_toolgates_files_and_reads_of_its_tokens_are_refused() {
    let d = exposed_daemon().await;
    let dir = d.dir.path().to_owned();
    // A relative symlink inside the root that leads into the runtime dir.
    std::os::unix::fs::symlink("run", dir.join("rt")).unwrap();
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;

    let data = real(&dir.join("data"));
    let r = refused(
        &mut c,
        1,
        "fs_write",
        json!({"path": dir.join("data/evil.txt"), "content": "x"}),
    )
    .await;
    assert!(
        text(&r).contains(&format!("data dir `{}`", data.display())),
        "{r}"
    );
    assert!(!dir.join("data/evil.txt").exists(), "nothing was written");

    let config = real(&dir.join("config.toml"));
    let r = refused(
        &mut c,
        2,
        "fs_write",
        json!({"path": "config.toml", "content": "[policy]\npreset = \"autonomous\"\n"}),
    )
    .await;
    assert!(
        text(&r).contains(&format!("config file `{}`", config.display())),
        "{r}"
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "",
        "config untouched"
    );

    let token = real(&dir.join("run/agent.sock.http"));
    for (id, path) in [(3, "rt/agent.sock.http"), (4, "run/agent.sock.http")] {
        let r = refused(&mut c, id, "fs_read", json!({"path": path})).await;
        assert!(text(&r).contains("sockets and tokens"), "{r}");
        assert!(
            text(&r).contains(&token.display().to_string()),
            "the reason names the token file: {r}"
        );
        assert!(!text(&r).contains(&d.http.1), "the token never leaks: {r}");
    }

    let r = refused(
        &mut c,
        5,
        "shell_exec",
        json!({"command": "ls", "cwd": "data"}),
    )
    .await;
    assert!(text(&r).starts_with("argument `cwd` refused:"), "{r}");
    assert_nobody_asked(&d, &mut events);

    // Ordinary work in the root still works.
    let r = c
        .call(
            6,
            "fs_write",
            json!({"path": "root/ok.txt", "content": "fine"}),
        )
        .await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(
        std::fs::read_to_string(dir.join("root/ok.txt")).unwrap(),
        "fine"
    );
    d.stop().await;
}

/// The data dir is off limits for reading too: the audit log, the
/// discovery file and the engine's log (which holds the console's login
/// link) are toolgate's, like the config and the tokens.
#[tokio::test]
async fn governed_reads_of_toolgates_data_dir_are_refused() {
    let d = exposed_daemon().await;
    let dir = d.dir.path().to_owned();
    let data = real(&dir.join("data"));
    // What a spawned engine writes to its log (`mcp-bridge --spawn`).
    std::fs::write(
        data.join(toolgate::spawn::LOG_FILE),
        "console: http://127.0.0.1:1/login?t=secret-link\n",
    )
    .unwrap();
    assert!(data.join("audit.db").is_file() && data.join("engine.json").is_file());
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;
    for (id, (tool, path)) in [
        ("fs_read", "data/engine.log"),
        ("fs_read", "data/audit.db"),
        ("fs_read", "data/engine.json"),
        ("fs_list", "data"),
    ]
    .into_iter()
    .enumerate()
    {
        let r = refused(&mut c, id as u64 + 1, tool, json!({"path": path})).await;
        assert!(
            text(&r).contains(&format!("data dir `{}`", data.display())),
            "{path}: {r}"
        );
        assert!(!text(&r).contains("secret-link"), "{r}");
    }
    assert_nobody_asked(&d, &mut events);
    d.stop().await;
}

/// The number of calls in an audit database, and its integrity check.
fn audit_state(db: &Path) -> (i64, String) {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let rows = c
        .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
        .unwrap();
    let check = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    (rows, check)
}

#[tokio::test]
async fn a_write_through_a_hard_link_into_the_data_dir_is_refused() {
    let d = TestDaemon::start("").await;
    let dir = d.dir.path().to_owned();
    let mut c = d.raw().await;
    c.initialize().await;
    // A call the audit log records, so there is a row to lose.
    let r = c
        .call(1, "fs_write", json!({"path": "a.txt", "content": "a"}))
        .await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    let db = dir.join("data/audit.db");
    let before = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let state = audit_state(&db);
            if state.0 > 0 {
                return state;
            }
            d.engine.audit().unwrap().flush().await;
        }
    })
    .await
    .expect("the call is recorded");
    assert_eq!(before.1, "ok");
    let discovery = dir.join("data/engine.json");
    let discovered = std::fs::read(&discovery).unwrap();
    // Other names, inside the root, of the live audit log and of another
    // file of the data dir.
    std::fs::hard_link(&db, dir.join("root/notes.db")).unwrap();
    std::fs::hard_link(&discovery, dir.join("root/engine-copy.json")).unwrap();
    let mut events = d.engine.subscribe();
    for (id, (path, target)) in [("notes.db", &db), ("engine-copy.json", &discovery)]
        .into_iter()
        .enumerate()
    {
        let id = id as u64 * 2 + 2;
        let r = refused(&mut c, id, "fs_write", json!({"path": path, "content": ""})).await;
        assert!(
            text(&r).contains(&format!("is a hard link to `{}`", real(target).display())),
            "{r}"
        );
        let r = refused(&mut c, id + 1, "fs_read", json!({"path": path})).await;
        assert!(text(&r).contains("hard link"), "{r}");
    }
    assert_nobody_asked(&d, &mut events);
    let after = audit_state(&db);
    assert_eq!(after.1, "ok", "the audit log is intact");
    assert!(after.0 >= before.0, "no row was lost: {before:?} {after:?}");
    assert_eq!(std::fs::read(&discovery).unwrap(), discovered);
    d.stop().await;
}

/// The review's chain: under `autonomous`, an agent writes a command into
/// `.git/config` and then runs `git status`, which runs it. Both steps now
/// reach a person: the write plants code that runs later (critical), and
/// `git status` is not inert, so it keeps `shell_exec`'s critical risk.
/// Even a person who lets the write through is asked again for git;
/// denied, git never runs.
#[tokio::test]
async fn under_autonomous_the_git_config_write_and_git_status_are_both_asked() {
    let d = TestDaemon::start("[policy]\npreset = \"autonomous\"\n").await;
    let root = d.dir.path().join("root");
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(init.success());
    let marker = d.dir.path().join("fsmonitor-ran");
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch {}; false\"\n",
        marker.display()
    );
    c.send_json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "fs_write",
                                  "arguments": {"path": ".git/config", "content": config}}}))
        .await;
    let write = approval_id(&mut events).await;
    d.engine
        .approvals()
        .unwrap()
        .approve(write, None)
        .await
        .unwrap();
    let r = c.recv().await.expect("the approved write answers");
    assert_eq!(r["id"], 1, "{r}");
    assert_eq!(
        r["result"]["isError"], false,
        "the approved write runs: {r}"
    );
    c.send_json(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "shell_exec", "arguments": {"command": "git status"}}}))
        .await;
    let id = approval_id(&mut events).await;
    let pending = d.engine.approvals().unwrap().pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, id);
    d.engine.approvals().unwrap().deny(id, None).await.unwrap();
    let reply = loop {
        let v = c.recv().await.expect("the denied call answers");
        if v["id"] == 2 {
            break v;
        }
    };
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(!marker.exists(), "git never ran");
    d.stop().await;
}

#[tokio::test]
async fn control_methods_are_unknown_on_the_agent_socket() {
    let d = TestDaemon::start("").await;
    // A pending approval that an agent would like to approve.
    let mut events = d.engine.subscribe();
    let mut asker = d.raw().await;
    asker.initialize().await;
    asker
        .send_json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "shell_exec", "arguments": {"command": "echo hi"}}}))
        .await;
    let pending = approval_id(&mut events).await;

    let mut agent = d.raw().await;
    agent.initialize().await;
    for (i, method) in CONTROL_METHODS.iter().enumerate() {
        let r = agent
            .request(
                10 + i as u64,
                method,
                json!({"id": pending, "tool": "shell_exec", "name": "x"}),
            )
            .await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
        assert!(r.get("result").is_none(), "{method}: {r}");
    }
    let still = d.engine.approvals().unwrap().pending();
    assert_eq!(still.len(), 1, "nothing was decided");
    assert_eq!(still[0].id, pending);
    d.engine
        .approvals()
        .unwrap()
        .deny(pending, None)
        .await
        .unwrap();
    d.stop().await;
}

#[tokio::test]
async fn control_methods_are_unknown_over_http_with_the_agent_token() {
    let d = TestDaemon::start("").await;
    let (url, token) = d.http.clone();
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = c
        .post(&url)
        .bearer_auth(&token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    for (i, method) in CONTROL_METHODS.iter().enumerate() {
        let r = c
            .post(&url)
            .bearer_auth(&token)
            .header("mcp-session-id", &sid)
            .json(&json!({"jsonrpc": "2.0", "id": 10 + i, "method": method,
                          "params": {"id": 1, "tool": "fs_read", "name": "x"}}))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert!(
            status == 403 || body["error"]["code"] == -32601,
            "{method}: HTTP {status} {body}"
        );
        assert!(body.get("result").is_none(), "{method}: {body}");
    }
    d.stop().await;
}

async fn approval_id(events: &mut broadcast::Receiver<Event>) -> i64 {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(Event::ApprovalRequested { id, .. }) = events.recv().await {
                return id;
            }
        }
    })
    .await
    .expect("an approval request appears")
}

#[tokio::test]
async fn the_clis_decision_records_its_pid_and_executable() {
    let d = TestDaemon::start("").await;
    let mut events = d.engine.subscribe();
    let mut asker = d.raw().await;
    asker.initialize().await;
    asker
        .send_json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "shell_exec", "arguments": {"command": "echo decided"}}}))
        .await;
    let id = approval_id(&mut events).await;

    let exe = env!("CARGO_BIN_EXE_toolgate");
    let child = tokio::process::Command::new(exe)
        .args(["approve", &id.to_string(), "--json", "--socket"])
        .arg(&d.socket)
        .arg("--data-dir")
        .arg(d.dir.path().join("data"))
        .env_remove("TOOLGATE_SOCKET")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().expect("the CLI runs");
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the CLI finishes")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = format!("cli pid {pid} ({})", real(Path::new(exe)).display());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed["request"]["decided_by"],
        expected.as_str(),
        "{printed}"
    );
    let reply = loop {
        let v = asker.recv().await.expect("the approved call answers");
        if v["id"] == 1 {
            break v;
        }
    };
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let stored = d.engine.approvals().unwrap().recent(5).await.unwrap();
    let row = stored.iter().find(|r| r.id == id).expect("stored");
    assert_eq!(row.decided_by.as_deref(), Some(expected.as_str()));
    d.stop().await;
}
