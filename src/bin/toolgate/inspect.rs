//! `toolgate breakers` (from the running daemon) and `toolgate audit`
//! (straight from the SQLite file, which WAL lets us read while the daemon
//! writes).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use toolgate::audit::{AuditLog, CallRow};

use crate::{Cli, config, control_client, data_dir, serve_options};

/// One control call, printed: the `key` list as a table of its fields (or
/// JSON), or the whole reply as JSON.
/// `toolgate console`: a fresh one-time login URL from the daemon, opened
/// in the default browser (or only printed).
pub(crate) async fn console(cli: &Cli, print: bool) -> anyhow::Result<ExitCode> {
    let mut c = control_client(cli).await?;
    let r = c
        .request("toolgate/console/login", serde_json::json!({}))
        .await?;
    let url = r["url"]
        .as_str()
        .context("the daemon answered no console URL")?;
    let mut out = std::io::stdout().lock();
    if print {
        writeln!(out, "{url}")?;
        return Ok(ExitCode::SUCCESS);
    }
    match opener::open_browser(url) {
        Ok(()) => writeln!(
            out,
            "opened the console in your browser (the link works once)"
        )?,
        Err(e) => {
            // No browser (a server, SSH): the link is still usable.
            writeln!(
                out,
                "could not open a browser ({e}); open this link once:\n{url}"
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn control(
    cli: &Cli,
    method: &str,
    params: Value,
    key: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut c = control_client(cli).await?;
    let r = c.request(method, params).await?;
    let shown = if key.is_empty() { &r } else { &r[key] };
    let mut out = std::io::stdout().lock();
    if json || !shown.is_array() {
        serde_json::to_writer_pretty(&mut out, shown)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows = shown.as_array().map(Vec::as_slice).unwrap_or_default();
    if rows.is_empty() {
        writeln!(out, "(none)")?;
    }
    for row in rows {
        let fields: Vec<String> = row
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| !v.is_null() && !v.is_object() && !v.is_array())
                    .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
                    .collect()
            })
            .unwrap_or_default();
        writeln!(out, "{}", fields.join("  "))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolgate approvals`: the waiting requests, each with what sets it
/// apart from its neighbours (the arguments' one-line preview) and who
/// asks; `--json` prints them whole.
pub(crate) async fn approvals(cli: &Cli, json: bool) -> anyhow::Result<ExitCode> {
    let mut c = control_client(cli).await?;
    let r = c.request("toolgate/approvals", json!({})).await?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &r["pending"])?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let pending = r["pending"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if pending.is_empty() {
        writeln!(out, "no calls are waiting for a decision")?;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    for p in pending {
        let left_s = (p["expires_ms"].as_i64().unwrap_or(now) - now).max(0) / 1000;
        writeln!(
            out,
            "#{}  {}  {}  {}",
            p["id"],
            p["risk"].as_str().unwrap_or("?"),
            p["tool"].as_str().unwrap_or("?"),
            p["preview"].as_str().unwrap_or(""),
        )?;
        writeln!(
            out,
            "    from {} · denied automatically in {left_s} s",
            p["caller"]["text"].as_str().unwrap_or("an unknown caller"),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn breakers(
    cli: &Cli,
    reset: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut c = control_client(cli).await?;
    if let Some(tool) = reset {
        let r = c
            .request("toolgate/breakers/reset", json!({"tool": tool}))
            .await?;
        anyhow::ensure!(
            r["reset"] == true,
            "no breaker for `{tool}` (it has not been called)"
        );
        println!("breaker of {tool} closed");
        return Ok(ExitCode::SUCCESS);
    }
    let r = c.request("toolgate/breakers", json!({})).await?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &r["breakers"])?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let list = r["breakers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if list.is_empty() {
        writeln!(out, "no breakers yet (no tool has been called)")?;
    }
    for b in list {
        let retry = b["retry_in_ms"]
            .as_u64()
            .map(|ms| format!("  retry in {:.1}s", ms as f64 / 1000.0))
            .unwrap_or_default();
        writeln!(
            out,
            "{:30}  {:9}  {} failures{retry}",
            b["tool"].as_str().unwrap_or(""),
            b["state"].as_str().unwrap_or(""),
            b["failures"]
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn audit(
    cli: &Cli,
    tail: bool,
    limit: i64,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let db = data_dir(cli, Some(&config(cli)?)).join("audit.db");
    anyhow::ensure!(
        db.exists(),
        "no audit log at {} yet (it is created by `toolgate serve`)",
        db.display()
    );
    // A reader only: it must not keep an engine from taking the log.
    let log = AuditLog::open_reader(&db).await?;
    let rows = log.recent_calls(limit).await?;
    let mut last = rows.last().map_or(0, |r| r.id);
    print_rows(&rows, json)?;
    if !tail {
        return Ok(ExitCode::SUCCESS);
    }
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let rows = log.calls_after(last, 500).await?;
        if let Some(r) = rows.last() {
            last = r.id;
        }
        print_rows(&rows, json)?;
    }
}

fn print_rows(rows: &[CallRow], json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for r in rows {
        if json {
            serde_json::to_writer(&mut out, r)?;
            writeln!(out)?;
            continue;
        }
        let when = r.ts_ms / 1000;
        let caller: Value = serde_json::from_str(&r.caller).unwrap_or_default();
        let who = caller["client_name"]
            .as_str()
            .or(caller["via"].as_str())
            .unwrap_or("?");
        let what = match (&r.error_kind, r.outcome.as_str()) {
            (Some(k), _) => format!("{k}: {}", r.error_message.as_deref().unwrap_or("")),
            (None, o) => format!("{o}, {} bytes", r.output_size),
        };
        writeln!(
            out,
            "#{:<6} t={when} {:<20} {:<8} {:>7}µs  [{who}] {what}",
            r.id, r.tool, r.decision, r.elapsed_us
        )?;
    }
    out.flush()?;
    Ok(())
}

/// `toolgate doctor`: what the barrier holds for an engine of this config
/// and data dir, found by starting a warden as the engine would.
pub(crate) fn doctor(cli: &Cli, json: bool) -> anyhow::Result<ExitCode> {
    let config = config(cli)?;
    let opts = serve_options(cli, &config);
    let barrier = toolgate::setup::barrier(&config, &opts.env(&config));
    let status = barrier.status();
    let mut out = std::io::stdout().lock();
    if json {
        let places: Vec<Value> = barrier
            .shield()
            .places()
            .map(|(p, reach)| json!({"path": p, "reach": reach}))
            .collect();
        let v = json!({"status": status, "places": places});
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", status.summary)?;
        for gap in &status.gaps {
            writeln!(out, "  missing: {gap}")?;
        }
        for (path, reach) in barrier.shield().places() {
            let word = match reach {
                toolgate::barrier::Reach::Hidden => "hidden",
                toolgate::barrier::Reach::ReadOnly => "read-only",
            };
            writeln!(out, "  {word:9} {}", path.display())?;
        }
    }
    Ok(if status.confines() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
