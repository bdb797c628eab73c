//! `toolgate tools` and `toolgate call`: through the running daemon when
//! there is one (so the call is governed, audited and visible like any
//! agent's), otherwise in this process.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};
use toolgate::client::ControlClient;
use toolgate::context::{Caller, Session};
use toolgate::mcp::convert;

use crate::{Cli, config, control_client, fail};

/// The daemon's control connection, unless `--local` or none runs.
async fn daemon(cli: &Cli) -> Option<ControlClient> {
    if cli.local {
        return None;
    }
    control_client(cli).await.ok()
}

/// What `toolgate tools` was asked.
pub(crate) struct ToolsAsk<'a> {
    /// Rank the tools matching these words.
    pub search: Option<&'a str>,
    /// Show what this client is listed.
    pub as_client: Option<&'a str>,
    /// How many search results.
    pub limit: usize,
}

pub(crate) async fn tools(cli: &Cli, ask: ToolsAsk<'_>, json: bool) -> anyhow::Result<ExitCode> {
    let answer = match daemon(cli).await {
        Some(mut c) => {
            let params = json!({"search": ask.search, "as": ask.as_client, "limit": ask.limit});
            let params = Value::Object(
                params
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            );
            c.request("toolgate/tools", params).await?
        }
        None => local_tools(cli, &ask)?,
    };
    let mut out = std::io::stdout().lock();
    if json {
        // The list alone, as before `--as` existed; with `--as`, the
        // client's plan beside it.
        let shown = if answer.get("client").is_some() {
            &answer
        } else {
            &answer["tools"]
        };
        serde_json::to_writer_pretty(&mut out, shown)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(client) = answer.get("client") {
        writeln!(out, "{}", client["words"].as_str().unwrap_or_default())?;
        writeln!(
            out,
            "Listed: {} tools, about {} tokens.",
            answer["tools"].as_array().map_or(0, Vec::len),
            client["listed_tokens"]
        )?;
        writeln!(out)?;
    }
    let list = answer["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if list.is_empty() && ask.search.is_some() {
        writeln!(out, "No tool matches.")?;
    }
    let s = |t: &Value, k: &str| t[k].as_str().unwrap_or_default().to_owned();
    let width = list.iter().map(|t| s(t, "name").len()).max().unwrap_or(4);
    for t in list {
        let desc = s(t, "description");
        let summary = desc.lines().next().unwrap_or("");
        writeln!(
            out,
            "{:width$}  {:10}  {:8}  {summary}",
            s(t, "name"),
            s(t, "source"),
            s(t, "risk")
        )?;
    }
    if let Some(deferred) = answer["client"]["deferred"]
        .as_array()
        .filter(|d| !d.is_empty())
    {
        let names: Vec<&str> = deferred.iter().filter_map(Value::as_str).collect();
        writeln!(out)?;
        writeln!(
            out,
            "Through tool_search ({}, about {} tokens): {}",
            names.len(),
            answer["client"]["deferred_tokens"],
            names.join(", ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolgate tools --pin-core NAME` / `--unpin-core NAME`: through the
/// running engine only, which keeps the pin and tells its agents.
pub(crate) async fn pin_core(
    cli: &Cli,
    name: &str,
    pinned: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut c = control_client(cli).await?;
    let r = c
        .request(
            "toolgate/tools/core",
            json!({"name": name, "pinned": pinned}),
        )
        .await?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &r)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let state = match (pinned, r["changed"].as_bool().unwrap_or(false)) {
        (true, true) => "is pinned as core now",
        (true, false) => "was pinned as core already",
        (false, true) => "is no longer pinned as core",
        (false, false) => "was not pinned as core",
    };
    writeln!(out, "{name} {state}.")?;
    let registered = !r["summary"].is_null();
    match r["summary"]["core"]["words"].as_str() {
        Some(words) => writeln!(out, "{}", words.replace('`', ""))?,
        None if !registered && pinned => writeln!(
            out,
            "No tool of that name is registered now; the pin holds for when one is."
        )?,
        None if registered => writeln!(
            out,
            "It may be deferred again: an agent whose tools are behind tool_search finds it there."
        )?,
        None => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolgate tools` without a daemon: the same answers from an engine in
/// this process.
fn local_tools(cli: &Cli, ask: &ToolsAsk<'_>) -> anyhow::Result<Value> {
    let engine = toolgate::setup::engine(config(cli)?)?;
    Ok(match (ask.search, ask.as_client) {
        (Some(q), _) => {
            let found: Vec<_> = engine
                .search_tools(q, ask.limit)
                .into_iter()
                .map(|h| h.tool.def.clone())
                .collect();
            json!({"tools": found})
        }
        (None, Some(client)) => json!({
            "tools": engine.plan(Some(client)).listed(),
            "client": engine.client_view(client, false),
        }),
        (None, None) => json!({"tools": engine.tools()}),
    })
}

pub(crate) async fn call(
    cli: &Cli,
    tool: &str,
    args: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let args: Value = serde_json::from_str(args).context("--args is not valid JSON")?;
    anyhow::ensure!(
        args.is_object(),
        "--args must be a JSON object, got {}",
        kind_of(&args)
    );
    let result = match daemon(cli).await {
        Some(mut c) => {
            c.request("tools/call", json!({"name": tool, "arguments": args}))
                .await?
        }
        None => {
            let engine = toolgate::setup::engine(config(cli)?)?;
            let caller = Caller {
                pid: i32::try_from(std::process::id()).ok(),
                ..Caller::via("cli")
            };
            let session = Session::new(format!("cli-{}", std::process::id()), caller);
            let reply = engine.call(&session, tool, args).await;
            convert::call_result(reply.call_id, &reply.result)
        }
    };
    print_result(&result, json)
}

/// Prints an MCP `CallToolResult` (the same shape from either path).
fn print_result(r: &Value, json: bool) -> anyhow::Result<ExitCode> {
    let failed = r["isError"].as_bool().unwrap_or(true);
    let error = &r["_meta"]["toolgate/error"];
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, r)?;
        writeln!(out)?;
    } else if error.is_object() {
        drop(out);
        let (msg, kind) = (
            error["message"].as_str().unwrap_or(""),
            error["kind"].as_str().unwrap_or(""),
        );
        return Ok(fail(1, &format!("{msg} ({kind})")));
    } else {
        let parts = r["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for p in parts {
            match p["text"].as_str() {
                Some(t) => writeln!(out, "{}", t.trim_end_matches('\n'))?,
                None => writeln!(out, "[{} content]", p["type"].as_str().unwrap_or("other"))?,
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
