//! The barrier's own mechanics, with the real `toolgate` binary as the
//! warden: what a warden reports and enforces, how it ends what a program
//! left behind, what the control socket asks of its peers, and what a host
//! does when the barrier is off. The attacks an agent would try are in
//! `barrier_attacks`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;
use tokio::time::Instant;
use toolgate::barrier::{BarrierLevel, Probe, Shield, Stdin};
use toolgate::config::Config;
use toolgate::mcp::ServerOptions;

use crate::common::daemon::{Raw, TestDaemon};
use crate::common::python::python_str;
use crate::common::{all_gone, drain, types, warden};

const WAIT: Duration = Duration::from_secs(20);

/// A warden plan as the engine writes one.
fn plan(shield: Shield, stdin: Stdin) -> String {
    json!({
        "shield": shield,
        "unix_sockets": false,
        "require": true,
        "stdin": stdin,
        "grace_ms": 0,
    })
    .to_string()
}

/// `toolgate __toolgate-warden PLAN -- sh -c SCRIPT` in `dir`.
fn warden_sh(plan: &str, dir: &Path, script: &str) -> Command {
    let mut c = Command::new(warden());
    c.arg(toolgate::barrier::warden::ARG)
        .arg(plan)
        .args(["--", "sh", "-c", script])
        .current_dir(dir)
        .kill_on_drop(true);
    c
}

/// The pid a program wrote to `file`, once it has.
async fn pid_in(file: &Path) -> u32 {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            file.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_probe_reports_what_the_kernel_enforced_on_a_real_warden() {
    let dir = tempfile::tempdir().unwrap();
    let hidden = dir.path().join("hidden");
    std::fs::create_dir(&hidden).unwrap();
    std::fs::write(hidden.join("secret"), "s").unwrap();
    let out = Command::new(warden())
        .arg(toolgate::barrier::warden::ARG)
        .arg(plan(Shield::new().hiding([&hidden]), Stdin::Null))
        .arg(toolgate::barrier::warden::PROBE)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let probe: Probe = serde_json::from_slice(&out.stdout).unwrap();
    // The machines toolgate is built and tested on have Landlock and
    // seccomp: a barrier that does not hold here is a failure, not a skip.
    assert!(probe.landlock_abi.is_some_and(|abi| abi >= 3), "{probe:?}");
    assert_eq!(probe.seccomp, Some(true), "{probe:?}");
    assert!(probe.reachable.is_empty(), "{probe:?}");
}

#[tokio::test]
async fn a_confined_program_cannot_touch_a_hidden_place_and_keeps_everything_else() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (hidden, work) = (base.join("hidden"), base.join("work"));
    std::fs::create_dir_all(&hidden).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(hidden.join("secret"), "top secret").unwrap();
    let script = format!(
        "cat {h}/secret; echo x > {h}/new; rm -f {h}/secret; ln {h}/secret link; \
         echo ok > mine.txt && cat mine.txt; exit 3",
        h = hidden.display()
    );
    let out = warden_sh(
        &plan(Shield::new().hiding([&hidden]), Stdin::Null),
        &work,
        &script,
    )
    .output()
    .await
    .unwrap();
    // The program's own exit code comes back through the warden.
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.trim(), "ok", "{stderr}");
    assert!(!stdout.contains("top secret"));
    assert_eq!(stderr.matches("Permission denied").count(), 3, "{stderr}");
    assert!(stderr.contains("Invalid cross-device link"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(hidden.join("secret")).unwrap(),
        "top secret"
    );
    assert!(!hidden.join("new").exists() && !work.join("link").exists());
}

#[tokio::test]
async fn a_program_killed_by_a_signal_is_reported_as_killed_by_it() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let status = warden_sh(
        &plan(Shield::new(), Stdin::Null),
        dir.path(),
        "kill -TERM $$",
    )
    .status()
    .await
    .unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
}

#[tokio::test]
async fn a_daemon_that_left_the_programs_session_dies_when_the_program_exits() {
    let dir = tempfile::tempdir().unwrap();
    // A `setsid` daemon (its own session and process group, so no group
    // kill reaches it) started by a program that then exits at once.
    let script = "setsid sh -c 'echo $$ > daemon.pid; exec sleep 60' & \
                  while [ ! -s daemon.pid ]; do :; done";
    let status = warden_sh(&plan(Shield::new(), Stdin::Null), dir.path(), script)
        .status()
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    let pid = pid_in(&dir.path().join("daemon.pid")).await;
    assert!(
        all_gone(&[pid]).await,
        "the setsid daemon {pid} outlived its program"
    );
}

#[tokio::test]
async fn closing_the_lifeline_ends_the_program_and_everything_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let script = "echo $$ > sh.pid; setsid sh -c 'echo $$ > daemon.pid; exec sleep 60' & \
                  sleep 60 & echo $! > child.pid; wait";
    let mut child = warden_sh(&plan(Shield::new(), Stdin::Null), dir.path(), script)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pids = Vec::new();
    for f in ["sh.pid", "child.pid", "daemon.pid"] {
        pids.push(pid_in(&dir.path().join(f)).await);
    }
    // toolgate lets go of it, as when a call is cancelled or times out.
    drop(child.stdin.take());
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("the warden exits once its lifeline is closed")
        .unwrap();
    assert!(!status.success());
    assert!(all_gone(&pids).await, "still running: {pids:?}");
}

/// A daemon whose every control method is one a test can try.
async fn daemon(toml: &str) -> TestDaemon {
    TestDaemon::start_with(toml, ServerOptions::default()).await
}

#[tokio::test]
async fn the_control_socket_answers_nothing_before_the_credential_is_presented() {
    let d = daemon("").await;
    let mut c = Raw::connect(&d.control_socket()).await;
    for (i, method) in [
        "toolgate/approvals",
        "tools/call",
        "initialize",
        "toolgate/approve",
    ]
    .into_iter()
    .enumerate()
    {
        let r = c.request(i as u64 + 1, method, json!({"id": 1})).await;
        assert_eq!(r["error"]["code"], -32001, "{method}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("control.token"),
            "{r}"
        );
    }
    let wrong = c
        .request(9, "toolgate/auth", json!({"credential": "ab".repeat(32)}))
        .await;
    assert_eq!(wrong["error"]["code"], -32001, "{wrong}");
    let still = c.request(10, "toolgate/approvals", json!({})).await;
    assert_eq!(still["error"]["code"], -32001, "{still}");

    // The right one opens the socket for this connection only.
    let mut ok = d.control().await;
    let r = ok.request(11, "toolgate/approvals", json!({})).await;
    assert!(r["result"]["pending"].is_array(), "{r}");
    // The agent socket knows no such method: agents have no credential to
    // present there.
    let mut agent = d.raw().await;
    let r = agent
        .request(12, "toolgate/auth", json!({"credential": "x"}))
        .await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
}

/// The credential is a file in the data dir, private to its owner, and
/// gone when the engine stops.
#[tokio::test]
async fn the_control_credential_is_private_and_lives_as_long_as_the_engine() {
    use std::os::unix::fs::PermissionsExt;
    let d = daemon("").await;
    let file = d.dir.path().join("data/control.token");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir = d.stop().await;
    assert!(!dir.path().join("data/control.token").exists());
}

/// The third layer on its own: a governed process that *has* the
/// credential (this test hands it over, which the barrier would never do)
/// and may open Unix sockets (`unix_sockets = true`) is still refused,
/// because a warden is among its ancestors.
#[tokio::test]
async fn a_governed_process_is_refused_by_the_control_socket_even_with_the_credential() {
    let d =
        daemon("[barrier]\nunix_sockets = true\n[tools.shell_exec]\npolicy = \"allow\"\n").await;
    let credential = std::fs::read_to_string(d.dir.path().join("data/control.token")).unwrap();
    let script = d.root().join("steer.py");
    std::fs::write(
        &script,
        format!(
            r#"import json, socket
s = socket.socket(socket.AF_UNIX)
s.connect({socket:?})
f = s.makefile("rw")
try:
    f.write(json.dumps({{"jsonrpc": "2.0", "id": 1, "method": "toolgate/auth",
                        "params": {{"credential": {credential:?}}}}}) + "\n")
    f.flush()
    line = f.readline()
    print("answered" if line else "closed")
except OSError as e:
    print("closed", e)
"#,
            socket = d.control_socket().display().to_string(),
            credential = credential.trim(),
        ),
    )
    .unwrap();
    let mut agent = d.raw().await;
    agent.initialize().await;
    let r = agent
        .call(
            1,
            "shell_exec",
            json!({"command": format!("{} steer.py", python_str())}),
        )
        .await;
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("--- stdout ---\nclosed"), "{r}");
    assert!(!text.contains("answered"), "{r}");
}

#[tokio::test]
async fn with_the_barrier_off_shell_tools_are_refused_before_anyone_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::parse("", Path::new("t.toml")).unwrap();
    config.builtin.roots = vec![dir.path().to_owned()];
    // No warden: what a host that cannot confine looks like.
    let env = toolgate::setup::Env::default();
    let engine = toolgate::setup::engine_with(config, &env, |b| b).unwrap();
    assert_eq!(engine.barrier().status().level, BarrierLevel::Off);
    let mut events = engine.subscribe();
    let reply = engine
        .call(
            &crate::common::session("off"),
            "shell_exec",
            json!({"command": "echo hi"}),
        )
        .await;
    let e = reply.result.unwrap_err();
    assert_eq!(e.kind(), toolgate::ErrorKind::GuardDenied, "{e}");
    assert!(e.to_string().contains("when_unavailable"), "{e}");
    assert!(
        !types(&drain(&mut events))
            .iter()
            .any(|t| t == "approval_requested")
    );

    // The config may choose to run them unconfined; the status says so.
    let mut config = Config::parse(
        "[barrier]\nwhen_unavailable = \"run\"\n[tools.shell_exec]\npolicy = \"allow\"\n",
        Path::new("t.toml"),
    )
    .unwrap();
    config.builtin.roots = vec![dir.path().to_owned()];
    let engine = toolgate::setup::engine_with(config, &env, |b| b).unwrap();
    assert!(engine.barrier().status().summary.contains("unconfined"));
    let reply = engine
        .call(
            &crate::common::session("run"),
            "shell_exec",
            json!({"command": "echo hi"}),
        )
        .await;
    let text = reply.result.unwrap().joined_text();
    assert!(text.contains("hi"), "{text}");
}

#[tokio::test]
async fn doctor_says_what_holds_and_what_is_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[barrier]\nread_only = [\"~/.bashrc\"]\n").unwrap();
    let out = Command::new(warden())
        .args(["doctor", "--json", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--socket")
        .arg(dir.path().join("run/toolgate/agent.sock"))
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"]["level"], "full", "{v}");
    let places: Vec<(PathBuf, String)> = v["places"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                PathBuf::from(p["path"].as_str().unwrap()),
                p["reach"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    for hidden in [
        real.join("data"),
        real.join("run/toolgate"),
        real.join("config.toml"),
    ] {
        assert!(
            places.contains(&(hidden.clone(), "hidden".into())),
            "{hidden:?} in {places:?}"
        );
    }
    assert!(
        places
            .iter()
            .any(|(p, r)| p.ends_with(".bashrc") && r == "read_only"),
        "{places:?}"
    );
}
