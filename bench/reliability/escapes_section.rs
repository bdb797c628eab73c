//! The escape lists (`tests/common/escapes.rs`, shared with the
//! integration tests) sent to a running daemon over its socket: every SSRF
//! URL refused before a connection, every path escape refused by every
//! file tool with nothing outside the root touched, every `shell_exec`
//! working directory outside refused, and every output that tries to close
//! the trust wrapper kept inside it.

use std::path::Path;

use serde_json::json;

use crate::client::{SocketAgent, error_kind, reply_text};
use crate::daemon::Daemon;
use crate::escapes::{CWD_ESCAPES, WRAPPER_ESCAPES, blocked_urls};
use crate::report::{Section, clip};
use crate::wait::Deadline;
use crate::{CountingServer, Ctx};

fn config() -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/e2e/fixtures/upstream.mjs");
    format!(
        r#"allowed_tools = ["*"]
[tools.web__echo]
policy = "allow"
[[servers]]
name = "web"
transport = "stdio"
command = "node"
args = [{:?}]
"#,
        fixture.display().to_string()
    )
}

/// Runs the section.
pub async fn run(ctx: &Ctx) -> Section {
    let mut s = Section::new(
        "Escape lists",
        "The shared escape lists, sent to a running daemon over its socket: SSRF URLs to http_fetch (pointed at a \
         counting server on 127.0.0.1), path escapes to fs_read, fs_list and fs_write (overwrite, and append with \
         create_dirs), shell_exec working directories outside the root, and upstream output that tries to close \
         or reopen the trust wrapper.",
    );
    if let Err(e) = escapes(ctx, &mut s).await {
        s.check("the section ran to its end", false, format!("{e:#}"));
    }
    s
}

async fn escapes(ctx: &Ctx, s: &mut Section) -> anyhow::Result<()> {
    let counting = CountingServer::start().await?;
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok();
    let config = if node {
        config()
    } else {
        "allowed_tools = [\"*\"]\n".to_owned()
    };
    let (mut d, layout) = Daemon::with_escape_layout(&ctx.bin, &config).await?;
    let mut agent = SocketAgent::connect(&d.at.socket, "escapes").await?;

    // SSRF.
    let urls = blocked_urls(counting.port);
    let mut through = Vec::new();
    for url in &urls {
        let (r, _) = agent.call("http_fetch", json!({"url": url})).await?;
        if error_kind(&r).as_deref() != Some("guard_denied") {
            through.push(format!("{url} → {}", clip(&r.to_string(), 80)));
        }
    }
    s.check(
        format!(
            "SSRF: {} of {} URLs refused by the guard, no connection made",
            urls.len() - through.len(),
            urls.len()
        ),
        through.is_empty() && counting.accepted() == 0,
        if through.is_empty() {
            format!("{} connections to the counting server", counting.accepted())
        } else {
            format!("not refused: {}", through.join("; "))
        },
    );

    // Paths, through every file tool.
    let paths = layout.every_escape();
    let mut through = Vec::new();
    let mut tried = 0;
    for p in &paths {
        let calls = [
            ("fs_read", json!({"path": p})),
            ("fs_list", json!({"path": p})),
            ("fs_write", json!({"path": p, "content": "pwned"})),
            (
                "fs_write",
                json!({"path": p, "content": "pwned", "mode": "append", "create_dirs": true}),
            ),
        ];
        for (tool, args) in calls {
            tried += 1;
            let (r, _) = agent.call(tool, args).await?;
            if error_kind(&r).as_deref() != Some("guard_denied") {
                through.push(format!("{tool} {p:?} → {}", clip(&r.to_string(), 80)));
            }
        }
    }
    let outside = layout.outside_changes();
    s.check(
        format!(
            "paths: {} of {} escapes refused by every file tool ({tried} calls)",
            paths.len() - through.len().min(paths.len()),
            paths.len()
        ),
        through.is_empty() && outside.is_none(),
        if through.is_empty() {
            outside.unwrap_or_else(|| "nothing outside the root read or changed".to_owned())
        } else {
            format!("not refused: {}", through.join("; "))
        },
    );

    // shell_exec working directories.
    let mut through = Vec::new();
    for cwd in CWD_ESCAPES {
        let (r, _) = agent
            .call("shell_exec", json!({"command": "touch pwned", "cwd": cwd}))
            .await?;
        if error_kind(&r).as_deref() != Some("guard_denied") {
            through.push(format!("{cwd} → {}", clip(&r.to_string(), 80)));
        }
    }
    s.check(
        format!(
            "shell_exec: {} of {} working directories outside the root refused",
            CWD_ESCAPES.len() - through.len(),
            CWD_ESCAPES.len()
        ),
        through.is_empty(),
        if through.is_empty() {
            "all refused as guard_denied".to_owned()
        } else {
            through.join("; ")
        },
    );

    // The trust wrapper.
    if !node {
        s.check(
            "trust wrapper: node is installed (the upstream fixture runs on it)",
            false,
            "no `node` on PATH",
        );
    } else {
        // The server's tools are listed once it has started.
        let deadline = Deadline::after(std::time::Duration::from_secs(30));
        let listed = loop {
            let (r, _) = agent.call("web__echo", json!({"text": "ready?"})).await?;
            if error_kind(&r).is_none() {
                break true;
            }
            if !deadline.tick().await {
                break false;
            }
        };
        let mut broken = Vec::new();
        for hostile in WRAPPER_ESCAPES {
            let (r, _) = agent.call("web__echo", json!({"text": hostile})).await?;
            if let Err(why) = sealed(&reply_text(&r), hostile) {
                broken.push(format!("{:?}: {why}", clip(hostile, 40)));
            }
        }
        s.check(
            format!(
                "trust wrapper: {} of {} hostile outputs stay inside their wrapper",
                WRAPPER_ESCAPES.len() - broken.len(),
                WRAPPER_ESCAPES.len()
            ),
            listed && broken.is_empty(),
            if broken.is_empty() {
                "each wrapped once, its id absent from the content, the real closing tag last"
                    .to_owned()
            } else {
                broken.join("; ")
            },
        );
    }
    s.count("SSRF URLs", urls.len() as u64);
    s.count("path escapes", paths.len() as u64);
    s.count("file tool calls with them", tried);
    s.count("shell_exec working directories", CWD_ESCAPES.len() as u64);
    s.count("trust-wrapper escapes", WRAPPER_ESCAPES.len() as u64);
    let _ = d.stop().await;
    Ok(())
}

/// Whether `wrapped` is `hostile` inside exactly one wrapper whose id
/// occurs nowhere else and whose real closing tag ends it.
fn sealed(wrapped: &str, hostile: &str) -> Result<(), String> {
    let open = "<untrusted-output id=\"";
    let rest = wrapped.strip_prefix(open).ok_or("no opening tag first")?;
    let id: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    if id.len() != 32 {
        return Err(format!("boundary {id:?} is not 128 bits"));
    }
    let close = format!("</untrusted-output id=\"{id}\">");
    if !wrapped.ends_with(&close) {
        return Err("the real closing tag is not last".to_owned());
    }
    if wrapped.matches(&id).count() != 2 {
        return Err("the boundary occurs inside the content".to_owned());
    }
    if !wrapped.contains(hostile) {
        return Err("the content was not kept verbatim".to_owned());
    }
    Ok(())
}
