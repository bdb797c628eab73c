//! Many agents at once: every agent connects to the socket, completes the
//! handshake and lists the tools; once all are connected, each makes its
//! calls. Every call must succeed; the section reports latency
//! percentiles, throughput and the daemon's memory and descriptors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::Barrier;

use crate::Ctx;
use crate::client::{SocketAgent, error_kind, reply_text};
use crate::daemon::Daemon;
use crate::memwatch::MemWatch;
use crate::procfs::{fd_count, fd_limit};
use crate::report::{Section, clip, ms, percentile, thousands};

/// Runs the section.
pub async fn run(ctx: &Ctx) -> Section {
    let (agents, calls) = (ctx.sizes.agents, ctx.sizes.calls_per_agent);
    let mut s = Section::new(
        "Concurrent agents",
        format!(
            "{agents} agents, each on its own socket connection: handshake and tools/list, then, once all \
             {agents} are connected, {calls} fs_read calls each (arguments differ per call, as in real use)."
        ),
    );
    if let Err(e) = load(ctx, &mut s).await {
        s.check("the section ran to its end", false, format!("{e:#}"));
    }
    s
}

async fn load(ctx: &Ctx, s: &mut Section) -> anyhow::Result<()> {
    let (agents, calls) = (ctx.sizes.agents, ctx.sizes.calls_per_agent);
    let mut d = Daemon::start(&ctx.bin, "allowed_tools = [\"*\"]\n", |dir| {
        let _ = crate::escapes::PathLayout::create(dir);
    })
    .await?;
    let fds_idle = fd_count(d.pid);
    let watch = MemWatch::start(&d).await?;
    let connected = Arc::new(Barrier::new(agents + 1));
    let go = Arc::new(Barrier::new(agents + 1));
    let mut tasks = Vec::new();
    for a in 0..agents {
        let (socket, connected, go) = (d.at.socket.clone(), connected.clone(), go.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(calls);
            let mut errors = Vec::new();
            let t = Instant::now();
            let agent = match SocketAgent::connect(&socket, &format!("agent-{a}")).await {
                Ok(mut agent) => {
                    let id = agent.fresh_id();
                    match agent
                        .request(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
                        .await
                    {
                        Ok(r) if r["result"]["tools"].is_array() => Some(agent),
                        Ok(r) => {
                            errors.push(format!("tools/list: {}", clip(&r.to_string(), 100)));
                            None
                        }
                        Err(e) => {
                            errors.push(format!("tools/list: {e:#}"));
                            None
                        }
                    }
                }
                Err(e) => {
                    errors.push(format!("connect: {e:#}"));
                    None
                }
            };
            let setup = t.elapsed();
            connected.wait().await;
            go.wait().await;
            if let Some(mut agent) = agent {
                for i in 0..calls {
                    let args = json!({"path": "sub/file.txt", "max_bytes": 1000 + a * calls + i});
                    match agent.call("fs_read", args).await {
                        Ok((r, took)) if error_kind(&r).is_none() && reply_text(&r) == "inside" => {
                            times.push(took)
                        }
                        Ok((r, _)) => errors.push(clip(&r.to_string(), 120)),
                        Err(e) => errors.push(format!("{e:#}")),
                    }
                }
            }
            (times, errors, setup)
        }));
    }
    connected.wait().await;
    let fds_connected = fd_count(d.pid);
    let start = Instant::now();
    go.wait().await;
    let mut times: Vec<Duration> = Vec::with_capacity(agents * calls);
    let mut errors = Vec::new();
    let mut setups = Vec::new();
    for t in tasks {
        let (ti, e, setup) = t.await?;
        times.extend(ti);
        errors.extend(e);
        setups.push(setup);
    }
    let elapsed = start.elapsed();
    times.sort_unstable();
    setups.sort_unstable();
    let total = (agents * calls) as u64;
    s.check(
        format!("{agents} agents connected at once, 0 errors"),
        errors.is_empty() && times.len() as u64 == total,
        if errors.is_empty() {
            format!(
                "{} of {} calls succeeded",
                thousands(times.len() as u64),
                thousands(total)
            )
        } else {
            format!("{} errors, e.g. {}", errors.len(), errors[0])
        },
    );
    s.count("agents", agents as u64);
    s.count("calls", total);
    s.figure(
        "call latency p50 / p90 / p99 / max",
        format!(
            "{} / {} / {} / {}",
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.9)),
            ms(percentile(&times, 0.99)),
            ms(times.last().copied().unwrap_or_default())
        ),
    );
    s.figure(
        "connect + handshake + tools/list p50 / p99",
        format!(
            "{} / {}",
            ms(percentile(&setups, 0.5)),
            ms(percentile(&setups, 0.99))
        ),
    );
    s.figure(
        "throughput",
        format!(
            "{:.0} calls/s ({:.2} s for all)",
            total as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64()
        ),
    );
    s.figure(
        "daemon's open fds idle / all connected",
        format!(
            "{fds_idle} / {fds_connected} (its limit: {})",
            fd_limit(d.pid).map_or_else(|| "?".to_owned(), |l| l.to_string())
        ),
    );
    watch.finish(s, ctx.bounds).await;
    let fds_after = crate::daemon::fds_settle(d.pid, fds_idle + 4).await;
    s.check(
        "every connection's descriptor is closed after the agents leave",
        fds_after <= fds_idle + 4,
        format!("{fds_idle} idle, {fds_after} after"),
    );
    let _ = d.stop().await;
    Ok(())
}
