//! `toolgate approve`, `deny` and `rules`: a person's decisions from the
//! terminal. Each prints a sentence or a short table by default and the
//! control service's JSON with `--json`: someone who typed `approve 12`
//! wants to read what happened, not a request record.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{Value, json};
use toolgate::control::calls::date_of_ms;

use crate::{Cli, control_client};

/// `toolgate approve ID [--always SCOPE]`.
pub(crate) async fn approve(
    cli: &Cli,
    id: i64,
    always: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let params = json!({"id": id, "always": always});
    answer(
        cli,
        "toolgate/approve",
        params,
        json.then_some(""),
        |out, r| {
            writeln!(out, "Approved request #{id} ({}).", request_subject(r))?;
            if let Some(rule) = r.get("rule").filter(|v| v.is_object()) {
                writeln!(out, "Remembered as {}.", rule_line(rule))?;
                writeln!(
                    out,
                    "Revoke it with `toolgate rules --rm {}`.",
                    rule["id"].as_i64().unwrap_or_default()
                )?;
            }
            Ok(())
        },
    )
    .await
}

/// `toolgate deny ID [--reason TEXT]`.
pub(crate) async fn deny(
    cli: &Cli,
    id: i64,
    reason: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let params = json!({"id": id, "reason": reason});
    answer(
        cli,
        "toolgate/deny",
        params,
        json.then_some(""),
        |out, r| {
            writeln!(out, "Denied request #{id} ({}).", request_subject(r))?;
            match reason {
                Some(why) => writeln!(out, "The agent is told: {why}"),
                None => writeln!(out, "The agent is told that a person denied the call."),
            }
        },
    )
    .await
}

/// `toolgate rules`: every remembered rule with the id `--rm` takes.
pub(crate) async fn rules(cli: &Cli, json: bool) -> anyhow::Result<ExitCode> {
    answer(cli, "toolgate/rules", json!({}), json.then_some("rules"), |out, r| {
        let rules = r["rules"].as_array().map(Vec::as_slice).unwrap_or_default();
        if rules.is_empty() {
            return writeln!(
                out,
                "No remembered rules. \"Approve & always…\" in the console or `toolgate approve ID --always SCOPE` makes one."
            );
        }
        for view in rules {
            write_rule_view(out, view)?;
        }
        writeln!(out, "Revoke one with `toolgate rules --rm ID`.")
    })
    .await
}

/// `toolgate rules --rm ID`.
pub(crate) async fn revoke(cli: &Cli, id: i64, json: bool) -> anyhow::Result<ExitCode> {
    answer(
        cli,
        "toolgate/rules/rm",
        json!({"id": id}),
        json.then_some(""),
        |out, r| writeln!(out, "Revoked {}.", rule_line(r)),
    )
    .await
}

/// Sends one control request and prints its answer: with `--json` the
/// answer's field `json_key` (`""`: all of it), else the words `say` writes.
async fn answer(
    cli: &Cli,
    method: &str,
    params: Value,
    json_key: Option<&str>,
    say: impl FnOnce(&mut std::io::StdoutLock<'static>, &Value) -> std::io::Result<()>,
) -> anyhow::Result<ExitCode> {
    let mut c = control_client(cli).await?;
    let r = c.request(method, params).await?;
    let mut out = std::io::stdout().lock();
    match json_key {
        Some("") => return print_json(&mut out, &r),
        Some(key) => return print_json(&mut out, &r[key]),
        None => say(&mut out, &r)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn print_json(out: &mut impl Write, v: &Value) -> anyhow::Result<ExitCode> {
    serde_json::to_writer_pretty(&mut *out, v)?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}

/// `shell_exec, asked by claude-code (pid 4242)` from a decided request.
fn request_subject(decided: &Value) -> String {
    let req = &decided["request"];
    let tool = req["tool"].as_str().unwrap_or("?");
    let caller = &req["caller"];
    let who = caller["agent_id"]
        .as_str()
        .or(caller["client_name"].as_str())
        .or(caller["exe"].as_str())
        .unwrap_or("an unnamed caller");
    match caller["pid"].as_i64() {
        Some(pid) => format!("{tool}, asked by {who} (pid {pid})"),
        None => format!("{tool}, asked by {who}"),
    }
}

/// `rule #3: allow tool=shell_exec,/command=ls *, until Fri, 11 Dec 2026 …`
fn rule_line(rule: &Value) -> String {
    format!(
        "rule #{}: {} {}, {}",
        rule["id"].as_i64().unwrap_or_default(),
        rule["effect"].as_str().unwrap_or("?"),
        rule["scope_text"].as_str().unwrap_or("?"),
        until(rule)
    )
}

fn until(rule: &Value) -> String {
    match rule["expires_ms"].as_i64() {
        Some(ms) => format!("until {}", date_of_ms(ms)),
        None => "until revoked".to_owned(),
    }
}

/// One rule as three lines: id, effect, state and use; its scope in
/// words; the scope as typed and where the rule came from.
fn write_rule_view(out: &mut impl Write, view: &Value) -> std::io::Result<()> {
    let rule = &view["rule"];
    let state = if view["active"] == true {
        "in force"
    } else {
        "expired"
    };
    let hits = view["hits"].as_u64().unwrap_or_default();
    let used = match (hits, view["last_used_ms"].as_i64()) {
        (0, _) | (_, None) => "never matched a call".to_owned(),
        (1, Some(ms)) => format!("matched 1 call, on {}", date_of_ms(ms)),
        (n, Some(ms)) => format!("matched {n} calls, last on {}", date_of_ms(ms)),
    };
    writeln!(
        out,
        "#{}  {}  {state}  {used}",
        rule["id"].as_i64().unwrap_or_default(),
        rule["effect"].as_str().unwrap_or("?"),
    )?;
    writeln!(out, "    {}", view["words"].as_str().unwrap_or_default())?;
    let by = rule["created_by"].as_str().unwrap_or("someone");
    let made = match rule["from_request"].as_i64() {
        Some(req) => format!("made by {by} when deciding request #{req}"),
        None => format!("made by {by}"),
    };
    writeln!(
        out,
        "    scope {}  ({made}, {})",
        rule["scope_text"].as_str().unwrap_or("?"),
        date_of_ms(rule["created_ms"].as_i64().unwrap_or_default())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(hits: u64, last: Option<i64>) -> Value {
        json!({
            "rule": {"id": 7, "effect": "allow", "scope_text": "tool=fs_list",
                     "created_by": "ui", "from_request": 12, "created_ms": 0,
                     "expires_ms": null},
            "active": true, "hits": hits, "last_used_ms": last,
            "words": "Allow every call of `fs_list`, until revoked."
        })
    }

    fn shown(v: &Value) -> String {
        let mut out = Vec::new();
        write_rule_view(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_rule_shows_the_id_rm_takes_its_use_and_its_origin() {
        let s = shown(&view(3, Some(1_000)));
        assert!(
            s.starts_with(
                "#7  allow  in force  matched 3 calls, last on Thu, 01 Jan 1970 00:00:01 GMT\n"
            ),
            "{s}"
        );
        assert!(s.contains("Allow every call of `fs_list`"), "{s}");
        assert!(
            s.contains("scope tool=fs_list  (made by ui when deciding request #12"),
            "{s}"
        );
        assert!(shown(&view(0, None)).contains("never matched a call"));
    }

    #[test]
    fn a_decision_names_the_tool_and_who_asked() {
        let d = json!({"request": {"tool": "shell_exec",
                                   "caller": {"via": "socket", "client_name": "claude-code", "pid": 42}}});
        assert_eq!(
            request_subject(&d),
            "shell_exec, asked by claude-code (pid 42)"
        );
        let rule = json!({"id": 3, "effect": "allow", "scope_text": "tool=shell_exec", "expires_ms": null});
        assert_eq!(
            rule_line(&rule),
            "rule #3: allow tool=shell_exec, until revoked"
        );
    }
}
