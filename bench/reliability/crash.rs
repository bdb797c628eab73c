//! `kill -9` under load, then a restart on the same data dir: every call
//! an agent saw answered must be in the audit log, the database must pass
//! SQLite's integrity check, and approval requests that were waiting (their
//! agents gone with the daemon) must be closed as expired.

use std::collections::HashSet;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Console, HttpAgent, SocketAgent, error_kind};
use crate::daemon::Daemon;
use crate::memwatch::MemWatch;
use crate::report::{Section, clip, ms, thousands};
use crate::wait::until;
use crate::{CHILD, Ctx};

const CONFIG: &str = r#"allowed_tools = ["*"]
[policy]
approval_timeout_s = 600
"#;

/// Socket and HTTP agents calling during the kill.
const SOCKET_AGENTS: usize = 8;
const HTTP_AGENTS: usize = 2;

/// Runs the section.
pub async fn run(ctx: &Ctx) -> Section {
    let mut s = Section::new(
        "kill -9 under load",
        format!(
            "{SOCKET_AGENTS} socket and {HTTP_AGENTS} HTTP agents call fs_read without pause while {} agents (separate processes) \
             wait for a person to approve shell_exec; after {} acknowledged calls the daemon gets SIGKILL, the waiting agents \
             exit with it, and a new daemon starts on the same data dir.",
            ctx.sizes.askers, ctx.sizes.acked_before_kill
        ),
    );
    if let Err(e) = kill_and_restart(ctx, &mut s).await {
        s.check("the section ran to its end", false, format!("{e:#}"));
    }
    s
}

async fn kill_and_restart(ctx: &Ctx, s: &mut Section) -> anyhow::Result<()> {
    let mut d = Daemon::start(&ctx.bin, CONFIG, |dir| {
        let _ = crate::escapes::PathLayout::create(dir);
    })
    .await?;
    let console = Console::new(&d.at);
    let watch = MemWatch::start(&d).await?;

    // Agents that wait for a person, each its own process.
    let exe = std::env::current_exe()?;
    let mut askers = Vec::new();
    for i in 0..ctx.sizes.askers {
        askers.push(
            tokio::process::Command::new(&exe)
                .env(CHILD, format!("ask:{i}:{}", d.at.socket.display()))
                .stdout(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn()?,
        );
    }
    let pending = until(Duration::from_secs(30), || async {
        let snap = console.snapshot().await.ok()?;
        let ids: Vec<i64> = snap["pending"]
            .as_array()?
            .iter()
            .filter_map(|p| p["id"].as_i64())
            .collect();
        (ids.len() >= ctx.sizes.askers).then_some(ids)
    })
    .await
    .ok_or_else(|| anyhow::anyhow!("the approval requests never showed as pending"))?;

    // Load, recording every answered call's id.
    let acked: Arc<Mutex<Vec<i64>>> = Arc::default();
    let refused: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut load = Vec::new();
    for a in 0..SOCKET_AGENTS + HTTP_AGENTS {
        let (acked, refused, stop, at) =
            (acked.clone(), refused.clone(), stop.clone(), d.at.clone());
        load.push(tokio::spawn(async move {
            let mut sock = None;
            let mut http = None;
            if a < SOCKET_AGENTS {
                sock = SocketAgent::connect(&at.socket, &format!("load-{a}"))
                    .await
                    .ok();
            } else {
                http = HttpAgent::connect(&at, &format!("load-http-{a}"))
                    .await
                    .ok();
            }
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let args = json!({"path": "sub/file.txt", "max_bytes": 1000 + i});
                let r = match (&mut sock, &http) {
                    (Some(s), _) => s.call("fs_read", args).await,
                    (_, Some(h)) => h.call(i, "fs_read", args).await,
                    _ => return,
                };
                // An answer is an acknowledgement; the daemon's death ends
                // the agent.
                let Ok((r, _)) = r else { return };
                match r["result"]["_meta"]["toolgate/callId"].as_i64() {
                    Some(id) => acked
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(id),
                    None => refused
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(clip(&r.to_string(), 120)),
                }
                if let Some(kind) = error_kind(&r) {
                    refused
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(kind);
                }
            }
        }));
    }
    let load_started = Instant::now();
    let target = ctx.sizes.acked_before_kill;
    until(Duration::from_secs(120), || {
        let n = acked.lock().unwrap_or_else(PoisonError::into_inner).len();
        std::future::ready((n >= target).then_some(()))
    })
    .await
    .ok_or_else(|| anyhow::anyhow!("the load never reached {target} answered calls"))?;
    let old_pid = d.pid;
    d.kill9().await?;
    let load_time = load_started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for t in load {
        let _ = t.await;
    }
    let acked: Vec<i64> =
        std::mem::take(&mut *acked.lock().unwrap_or_else(PoisonError::into_inner));
    let refused = std::mem::take(&mut *refused.lock().unwrap_or_else(PoisonError::into_inner));
    let mut askers_exited = 0;
    for mut c in askers {
        if tokio::time::timeout(Duration::from_secs(10), c.wait())
            .await
            .is_ok()
        {
            askers_exited += 1;
        }
    }
    s.check(
        "every call during the load was answered, none refused",
        refused.is_empty(),
        if refused.is_empty() {
            format!("{} answered", thousands(acked.len() as u64))
        } else {
            format!("{} refused, e.g. {}", refused.len(), refused[0])
        },
    );

    // The restart.
    let t = Instant::now();
    d.restart().await?;
    let restart_time = t.elapsed();
    let console = Console::new(&d.at);
    let logged = audit_call_ids(&console).await?;
    let missing: Vec<i64> = acked
        .iter()
        .copied()
        .filter(|id| !logged.contains(id))
        .collect();
    s.check(
        "nothing acknowledged is missing from the audit log",
        missing.is_empty(),
        format!(
            "{} acknowledged, {} missing{}; {} rows in the log",
            thousands(acked.len() as u64),
            missing.len(),
            if missing.is_empty() {
                String::new()
            } else {
                format!(" (e.g. call {})", missing[0])
            },
            thousands(logged.len() as u64)
        ),
    );
    let integrity = integrity_check(&d.audit_db());
    s.check(
        "the audit database passes SQLite's integrity check after the restart",
        integrity.as_deref() == Ok("ok"),
        format!("{integrity:?}"),
    );
    let expired = until(Duration::from_secs(20), || async {
        let snap = console.snapshot().await.ok()?;
        let still: usize = snap["pending"].as_array()?.len();
        let closed: Vec<&Value> = snap["recent_approvals"]
            .as_array()?
            .iter()
            .filter(|r| pending.contains(&r["id"].as_i64().unwrap_or(-1)))
            .collect();
        let all_expired =
            closed.len() == pending.len() && closed.iter().all(|r| r["status"] == "expired");
        (still == 0 && all_expired).then_some(closed.len())
    })
    .await;
    s.check(
        "approval requests pending at the kill are closed as expired",
        expired.is_some(),
        match expired {
            Some(n) => format!(
                "{n} of {} expired, none pending; their agents exited: {askers_exited}",
                pending.len()
            ),
            None => format!("not all expired within 20 s; agents exited: {askers_exited}"),
        },
    );
    let mut a = SocketAgent::connect(&d.at.socket, "after-restart").await?;
    let (r, _) = a.call("fs_read", json!({"path": "sub/file.txt"})).await?;
    let answered = crate::client::reply_text(&r) == "inside";
    s.check(
        "the restarted daemon answers calls",
        answered,
        if answered {
            "fs_read returned its file".to_owned()
        } else {
            clip(&r.to_string(), 100)
        },
    );
    let stopped = d.stop().await;
    let after_stop = integrity_check(&d.audit_db());
    s.check(
        "a clean stop afterwards, and the database still passes",
        stopped.is_some_and(|st| st.success()) && after_stop.as_deref() == Ok("ok"),
        format!("exit {stopped:?}, integrity {after_stop:?}"),
    );
    s.count("calls acknowledged before the kill", acked.len() as u64);
    s.count(
        "approval requests waiting at the kill",
        pending.len() as u64,
    );
    s.figure(
        "load before the kill",
        format!(
            "{:.0} calls/s over {:.1} s",
            acked.len() as f64 / load_time.as_secs_f64(),
            load_time.as_secs_f64()
        ),
    );
    s.figure("restart to ready", ms(restart_time));
    s.figure("killed pid", old_pid.to_string());
    // Memory of the first daemon, up to the kill.
    let mut mem = Section::default();
    watch
        .finish(&mut mem, crate::memwatch::Bounds::default())
        .await;
    if let Some((_, v)) = mem.figures.iter().find(|(k, _)| k.starts_with("RSS idle")) {
        s.figure("RSS idle (before the load)", v.clone());
    }
    Ok(())
}

/// Every call id in the audit log, through the console's audit pages.
async fn audit_call_ids(console: &Console) -> anyhow::Result<HashSet<i64>> {
    let mut ids = HashSet::new();
    let mut before: Option<i64> = None;
    loop {
        let path = match before {
            Some(b) => format!("/api/audit?limit=500&before={b}"),
            None => "/api/audit?limit=500".to_owned(),
        };
        let page = console.get(&path).await?;
        for row in page["rows"].as_array().into_iter().flatten() {
            if let Some(id) = row["call_id"].as_i64() {
                ids.insert(id);
            }
        }
        match page["next_before"].as_i64() {
            Some(b) => before = Some(b),
            None => return Ok(ids),
        }
    }
}

/// `PRAGMA integrity_check` on a read-only connection.
fn integrity_check(db: &Path) -> Result<String, String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| e.to_string())?;
    conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .map_err(|e| e.to_string())
}

/// A child process of the harness: `ask:N:SOCKET` connects, asks for
/// `shell_exec` (which waits for a person) and reads until the daemon is
/// gone.
pub fn child_main(role: &str) -> ExitCode {
    let Some(("ask", rest)) = role.split_once(':') else {
        eprintln!("reliability child: unknown role {role}");
        return ExitCode::from(2);
    };
    let Some((n, socket)) = rest.split_once(':') else {
        return ExitCode::from(2);
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let Ok(mut a) = SocketAgent::connect(Path::new(socket), &format!("asker-{n}")).await else {
            return ExitCode::FAILURE;
        };
        let id = a.fresh_id();
        let req = crate::client::call_request(
            id,
            "shell_exec",
            json!({"command": format!("echo waiting {n}")}),
        );
        if a.send_line(req.to_string().as_bytes()).await.is_err() {
            return ExitCode::FAILURE;
        }
        // Until the daemon answers or goes away.
        loop {
            match a.next_message_unbounded().await {
                Ok(Some(m)) if m.get("id").is_some() => return ExitCode::SUCCESS,
                Ok(Some(_)) => {}
                _ => return ExitCode::SUCCESS,
            }
        }
    })
}
