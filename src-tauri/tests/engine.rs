//! The process model with real engines (desktop-design.md, "One client,
//! two modes"): no live engine → the `toolgate serve` daemon starts in this
//! process; a live one (in this process or a `toolgate serve` child) → the
//! app attaches; stopping an in-app engine leaves no socket or discovery
//! file, stopping an attached one leaves it running.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use toolgate_desktop::engine::{Engine, LinkError, Mode, Place};

struct Dirs {
    _tmp: tempfile::TempDir,
    place: Place,
}

/// A private config (empty), data dir and socket, so nothing of the
/// person's own engine is touched.
fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let place = Place {
        config: Some(config),
        data_dir: Some(tmp.path().join("data")),
        socket: Some(tmp.path().join("agent.sock")),
    };
    Dirs { _tmp: tmp, place }
}

fn data_dir(p: &Place) -> &Path {
    p.data_dir.as_deref().unwrap()
}

async fn answers(socket: &Path) -> bool {
    tokio::net::UnixStream::connect(socket).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_engine_one_starts_here_and_a_second_look_attaches_to_it() {
    let d = dirs();
    let socket = d.place.socket.clone().unwrap();
    let here = Engine::start_or_attach(&d.place).await.unwrap();
    assert_eq!(here.mode(), &Mode::InApp);
    assert_eq!(here.agent_socket(), socket);
    assert!(answers(&socket).await, "the agent socket listens");
    let discovery = toolgate::discovery::file(data_dir(&d.place));
    assert!(discovery.exists(), "the discovery file is published");

    let attached = Engine::start_or_attach(&d.place).await.unwrap();
    assert_eq!(
        attached.mode(),
        &Mode::Attached {
            pid: std::process::id()
        }
    );
    assert_eq!(
        attached.mode().title(),
        format!("toolgate — attached to pid {}", std::process::id())
    );
    attached.stop().await;
    assert!(
        answers(&socket).await,
        "stopping an attached app leaves the engine"
    );

    let started = Instant::now();
    here.stop().await;
    // The lifecycle bound (≤ 5 s) as a deadline, not a speed claim.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        started.elapsed()
    );
    assert!(!socket.exists(), "the agent socket is removed");
    assert!(
        !toolgate::paths::control_socket_for(&socket).exists(),
        "the control socket is removed"
    );
    assert!(!discovery.exists(), "the discovery file is removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_link_is_a_fresh_login_url_and_the_token_the_discovery_file_names() {
    let d = dirs();
    let engine = Engine::start_or_attach(&d.place).await.unwrap();
    let link = engine.console_link().await.unwrap();
    assert_eq!(link.login.host_str(), Some("127.0.0.1"));
    assert_eq!(link.login.path(), "/login");
    assert!(
        link.login.query().is_some_and(|q| q.starts_with("t=")),
        "{}",
        link.login
    );
    assert_eq!(link.base.path(), "/");
    assert_eq!(link.base.origin(), link.login.origin());
    let info = toolgate::discovery::read(data_dir(&d.place))
        .unwrap()
        .unwrap();
    let console = info.console.expect("the discovery file names the console");
    assert_eq!(link.base.as_str().trim_end_matches('/'), console.url);
    let token = std::fs::read_to_string(&console.token_file).unwrap();
    assert_eq!(link.bearer, token.trim());
    // Each link is single use: the next one is another.
    let again = engine.console_link().await.unwrap();
    assert_ne!(again.login, link.login);
    engine.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_that_does_not_load_is_an_error_naming_the_file_and_starts_nothing() {
    let d = dirs();
    let config = d.place.config.clone().unwrap();
    std::fs::write(&config, "[pipeline\n").unwrap();
    let e = Engine::start_or_attach(&d.place)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("config.toml"), "{e}");
    assert!(!d.place.socket.as_ref().unwrap().exists());
}

/// The `toolgate` binary next to this test's, built by `cargo build -p
/// toolgate` (this package cannot name another package's binary).
fn toolgate_bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("toolgate");
    bin.exists().then_some(bin)
}

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `toolgate serve` on the private dirs, once it said it is ready; `None`
/// (after saying so) without the binary.
async fn serve(d: &Dirs, extra: &[&str]) -> Option<Serve> {
    let Some(bin) = toolgate_bin() else {
        let msg = "needs the toolgate binary: cargo build -p toolgate";
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{msg}");
        eprintln!("skipped: {msg}");
        return None;
    };
    let mut child = Command::new(bin)
        .arg("--config")
        .arg(d.place.config.as_ref().unwrap())
        .arg("--data-dir")
        .arg(data_dir(&d.place))
        .arg("--socket")
        .arg(d.place.socket.as_ref().unwrap())
        .arg("serve")
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its ready line says it listens and has published its file.
    let out = child.stdout.take().unwrap();
    let serve = Serve(child);
    let ready = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        std::io::BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.starts_with("discovery file:"))
    });
    let ready = tokio::time::timeout(Duration::from_secs(30), ready).await;
    assert!(
        matches!(ready, Ok(Ok(true))),
        "toolgate serve never got ready"
    );
    Some(serve)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_toolgate_serve_is_attached_to_and_left_running() {
    let d = dirs();
    let Some(serve) = serve(&d, &[]).await else {
        return;
    };
    let engine = Engine::start_or_attach(&d.place).await.unwrap();
    assert_eq!(engine.mode(), &Mode::Attached { pid: serve.0.id() });
    let link = engine.console_link().await.unwrap();
    assert_eq!(link.login.path(), "/login");
    engine.stop().await;
    assert!(
        answers(d.place.socket.as_ref().unwrap()).await,
        "toolgate serve still serves"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_without_http_has_no_console_and_the_shell_says_so() {
    let d = dirs();
    let Some(_serve) = serve(&d, &["--no-http"]).await else {
        return;
    };
    let engine = Engine::start_or_attach(&d.place).await.unwrap();
    match engine.console_link().await {
        Err(LinkError::NoConsole(message)) => assert!(message.contains("no console"), "{message}"),
        other => panic!("expected no console, got {other:?}"),
    }
}

/// The shell's own decision path against the real console: an agent's
/// risky call waits, the tray's Approve goes through `HttpConsole` with the
/// console bearer token, and the agent gets the tool's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tray_approval_through_the_console_answers_the_waiting_agent() {
    use toolgate::wire::Via;
    use toolgate_desktop::client::{ConsoleSource, HttpConsole};
    use toolgate_desktop::wire::Verdict;

    let d = dirs();
    let root = d
        .place
        .config
        .as_ref()
        .unwrap()
        .parent()
        .unwrap()
        .to_owned();
    std::fs::write(
        d.place.config.as_ref().unwrap(),
        // This test binary cannot be a warden (the app's binary is one), and
        // the subject here is the tray's decision: the shell runs
        // unconfined, as the config may choose.
        format!(
            "[builtin]\nroots = [{:?}]\n[barrier]\nwhen_unavailable = \"run\"\n",
            root.display().to_string()
        ),
    )
    .unwrap();
    let engine = Engine::start_or_attach(&d.place).await.unwrap();
    // The agent: a raw MCP call of a critical tool, which asks a person.
    let agent = tokio::net::UnixStream::connect(engine.agent_socket())
        .await
        .unwrap();
    let (rd, mut wr) = agent.into_split();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "shell_exec", "arguments": {"command": "echo approved-from-the-tray"}}});
    tokio::io::AsyncWriteExt::write_all(&mut wr, format!("{call}\n").as_bytes())
        .await
        .unwrap();
    let reply = tokio::spawn(async move {
        let mut line = String::new();
        let mut rd = tokio::io::BufReader::new(rd);
        tokio::io::AsyncBufReadExt::read_line(&mut rd, &mut line)
            .await
            .unwrap();
        line
    });

    // Its request, from the control socket (the console's snapshot comes
    // with the control service).
    let control = toolgate::paths::control_socket_for(engine.agent_socket());
    let credential = toolgate::barrier::credential::Credential::read(data_dir(&d.place)).unwrap();
    let mut ctl = toolgate::client::ControlClient::connect(&control, &credential)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let id = loop {
        let r = ctl
            .request("toolgate/approvals", serde_json::json!({}))
            .await
            .unwrap();
        if let Some(id) = r["pending"][0]["id"].as_i64() {
            break id;
        }
        assert!(Instant::now() < deadline, "no approval request appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    let link = engine.console_link().await.unwrap();
    let console = HttpConsole::new(link.base, &link.bearer).unwrap();
    console
        .decide(id, Verdict::Approve, Via::Tray)
        .await
        .unwrap();
    let line = tokio::time::timeout(Duration::from_secs(10), reply)
        .await
        .expect("the agent is answered")
        .unwrap();
    assert!(line.contains("approved-from-the-tray"), "{line}");
    assert!(!line.contains("\"isError\":true"), "{line}");
    engine.stop().await;
}
