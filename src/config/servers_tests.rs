use std::path::Path;

use super::*;
use crate::config::{Config, ConfigError};

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("t.toml"))
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(c) => panic!("expected an error, got {:?}", c.servers),
        Err(e) => e.to_string(),
    }
}

fn assert_err(text: &str, needles: &[&str]) {
    let e = err(text);
    for n in needles {
        assert!(e.contains(n), "missing {n:?} in:\n{e}");
    }
}

const STDIO: &str = r#"
[[servers]]
name = "fs"
transport = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
env = { GITHUB_TOKEN = "keyring:gh_token", MODE = "ro" }
"#;

#[test]
fn stdio_server_gets_defaults() {
    let c = parse(STDIO).unwrap();
    let s = &c.servers[0];
    assert_eq!(s.name, "fs");
    assert!(s.enabled);
    assert_eq!(s.trust, Trust::External, "default trust is external");
    assert_eq!(s.timeout, None);
    let TransportSpec::Stdio {
        command,
        args,
        env,
        cwd,
    } = &s.transport
    else {
        panic!("{:?}", s.transport)
    };
    assert_eq!(command, "npx");
    assert_eq!(args.len(), 3);
    assert_eq!(env["GITHUB_TOKEN"], "keyring:gh_token");
    assert_eq!(cwd, &None);
}

#[test]
fn every_transport_and_override_parses() {
    let c = parse(
        r#"
        [[servers]]
        name = "a"
        transport = "sse"
        url = "http://127.0.0.1:3001/sse"
        enabled = false
        trust = "untrusted"
        timeout_ms = 5000
        max_retries = 0
        breaker_failure_threshold = 3
        breaker_cooldown_s = 10
        breaker_counts_is_error = true
        auth = { type = "bearer", token = "keyring:a_tok" }

        [[servers]]
        name = "b-2"
        transport = "streamable_http"
        url = "https://example.com/mcp"
        headers = { X-Api-Key = "keyring:b_key" }
        auth = { type = "basic", username = "me", password = "keyring:b_pw" }

        [[servers]]
        name = "c_3"
        transport = "websocket"
        url = "wss://example.com/ws"
        "#,
    )
    .unwrap();
    let [a, b, ws] = &c.servers[..] else {
        panic!("{:?}", c.servers)
    };
    assert!(!a.enabled);
    assert_eq!(a.trust, Trust::Untrusted);
    assert_eq!(a.timeout, Some(Duration::from_millis(5000)));
    assert_eq!(a.max_retries, Some(0));
    assert_eq!(a.breaker_failure_threshold, Some(3));
    assert_eq!(a.breaker_cooldown, Some(Duration::from_secs(10)));
    assert!(a.breaker_counts_is_error);
    assert!(
        !b.breaker_counts_is_error,
        "isError results do not count by default"
    );
    assert_eq!(a.transport.kind(), "sse");
    assert!(matches!(b.auth, Some(AuthSpec::Basic { .. })));
    assert_eq!(b.transport.kind(), "streamable_http");
    assert_eq!(ws.transport.kind(), "websocket");
}

#[test]
fn no_servers_is_an_empty_list() {
    assert!(parse("").unwrap().servers.is_empty());
}

// ---- rejection rules, one test each ---------------------------------------

#[test]
fn unknown_common_key_is_rejected_with_path_and_line() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = \"x\"\ntimeout = 5\n",
        &[
            "servers[0].timeout: unknown key for transport `stdio`",
            "(line 5)",
        ],
    );
}

#[test]
fn key_of_another_transport_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\nurl = \"http://h/sse\"\ncommand = \"x\"\n",
        &[
            "servers[0].command: unknown key for transport `sse`",
            "(line 5)",
        ],
    );
}

#[test]
fn unknown_key_in_second_server_names_its_index() {
    let text = format!(
        "{STDIO}\n[[servers]]\nname = \"b\"\ntransport = \"sse\"\nurll = \"x\"\nurl = \"http://h\"\n"
    );
    assert_err(&text, &["servers[1].urll: unknown key", "(line 12)"]);
}

#[test]
fn unknown_key_in_auth_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\nurl = \"http://h/sse\"\nauth = { type = \"bearer\", token = \"t\", tokn = \"u\" }\n",
        &["servers[0]", "unknown field `tokn`"],
    );
}

#[test]
fn missing_transport_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ncommand = \"x\"\n",
        &[
            "servers[0]",
            "transport: missing; one of stdio, sse, streamable_http, websocket",
            "(line 1)",
        ],
    );
}

#[test]
fn unknown_transport_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"grpc\"\n",
        &["servers[0].transport: unknown transport `grpc`", "(line 3)"],
    );
}

#[test]
fn wrong_type_names_the_key_and_line() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = 5\n",
        &[
            "servers[0].command: expected a string, got integer `5`",
            "(line 4)",
        ],
    );
}

#[test]
fn wrong_type_inside_env_is_rejected() {
    let text = STDIO.replace("MODE = \"ro\"", "MODE = 1");
    assert_err(
        &text,
        &["servers[0].env: expected a table of strings, got table"],
    );
}

#[test]
fn wrong_type_of_common_key_names_it() {
    let text = STDIO.replace("command =", "timeout_ms = \"5s\"\ncommand =");
    assert_err(
        &text,
        &[
            "servers[0].timeout_ms: invalid type: string \"5s\"",
            "(line 5)",
        ],
    );
}

#[test]
fn missing_required_field_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\n",
        &["servers[0]", "missing field `url`"],
    );
}

#[test]
fn duplicate_names_are_rejected_naming_both() {
    let text = format!("{STDIO}{STDIO}");
    assert_err(
        &text,
        &["servers[1].name: `fs` is already the name of servers[0]"],
    );
}

#[test]
fn name_with_bad_character_is_rejected() {
    let text = STDIO.replace("name = \"fs\"", "name = \"my.server\"");
    assert_err(
        &text,
        &["servers[0].name: `my.server` contains '.'", "(line 3)"],
    );
}

#[test]
fn name_too_long_for_a_prefix_is_rejected() {
    let long = "a".repeat(limits::MAX_NAME_LEN + 1);
    let text = STDIO.replace("name = \"fs\"", &format!("name = \"{long}\""));
    assert_err(&text, &["servers[0].name:", "at most 24"]);
    let ok = STDIO.replace("name = \"fs\"", &format!("name = \"{}\"", &long[1..]));
    assert!(
        parse(&ok).is_ok(),
        "exactly {} is fine",
        limits::MAX_NAME_LEN
    );
}

#[test]
fn name_with_double_underscore_is_rejected() {
    for bad in ["a__b", "a_"] {
        let text = STDIO.replace("name = \"fs\"", &format!("name = \"{bad}\""));
        assert_err(
            &text,
            &["servers[0].name:", "`__` separates server and tool names"],
        );
    }
}

#[test]
fn empty_name_is_rejected() {
    let text = STDIO.replace("name = \"fs\"", "name = \"\"");
    assert_err(&text, &["servers[0].name: must not be empty"]);
}

#[test]
fn http_transport_needs_http_url() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"streamable_http\"\nurl = \"ws://h/mcp\"\n",
        &[
            "servers[0].url: scheme `ws` not allowed here; use http or https",
            "(line 4)",
        ],
    );
}

#[test]
fn sse_transport_needs_http_url() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\nurl = \"file:///sse\"\n",
        &["servers[0].url: scheme `file` not allowed here; use http or https"],
    );
}

#[test]
fn websocket_transport_needs_ws_url() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"websocket\"\nurl = \"https://h/ws\"\n",
        &["servers[0].url: scheme `https` not allowed here; use ws or wss"],
    );
}

#[test]
fn unparsable_url_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\nurl = \"localhost:3001\"\n",
        &["servers[0].url:"],
    );
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\nurl = \"not a url\"\n",
        &["servers[0].url: `not a url` is not a URL"],
    );
}

#[test]
fn empty_command_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"stdio\"\ncommand = \"  \"\n",
        &["servers[0].command: must not be empty"],
    );
}

#[test]
fn timeout_out_of_range_is_rejected() {
    for v in ["0", "3600001"] {
        let text = STDIO.replace("command =", &format!("timeout_ms = {v}\ncommand ="));
        assert_err(
            &text,
            &["servers[0].timeout_ms: must be between 1 and 3600000"],
        );
    }
}

#[test]
fn retries_out_of_range_are_rejected() {
    let text = STDIO.replace("command =", "max_retries = 11\ncommand =");
    assert_err(
        &text,
        &["servers[0].max_retries: must be between 0 and 10, got 11"],
    );
}

#[test]
fn breaker_overrides_out_of_range_are_rejected() {
    let text = STDIO.replace(
        "command =",
        "breaker_failure_threshold = 0\nbreaker_cooldown_s = 100000\ncommand =",
    );
    assert_err(
        &text,
        &[
            "servers[0].breaker_failure_threshold: must be between 1 and 1000, got 0",
            "servers[0].breaker_cooldown_s: must be between 0 and 86400, got 100000",
        ],
    );
}

#[test]
fn negative_number_is_a_type_error() {
    let text = STDIO.replace("command =", "max_retries = -1\ncommand =");
    assert_err(&text, &["servers[0]", "max_retries"]);
}

#[test]
fn unknown_trust_is_rejected() {
    let text = STDIO.replace("command =", "trust = \"builtin-ish\"\ncommand =");
    assert_err(&text, &["servers[0]", "unknown variant `builtin-ish`"]);
}

#[test]
fn auth_on_stdio_is_rejected() {
    let text = STDIO.replace(
        "command =",
        "auth = { type = \"bearer\", token = \"keyring:t\" }\ncommand =",
    );
    assert_err(&text, &["servers[0].auth: only for network transports"]);
}

#[test]
fn empty_bearer_token_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\nurl = \"http://h/sse\"\nauth = { type = \"bearer\", token = \"\" }\n",
        &["servers[0].auth.token: must not be empty"],
    );
}

#[test]
fn basic_username_with_colon_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\nurl = \"http://h/sse\"\nauth = { type = \"basic\", username = \"a:b\", password = \"keyring:p\" }\n",
        &["servers[0].auth.username: must be non-empty and without `:`"],
    );
}

#[test]
fn malformed_keyring_reference_is_rejected() {
    let text = STDIO.replace("keyring:gh_token", "keyring:");
    assert_err(
        &text,
        &["servers[0].env.GITHUB_TOKEN: `keyring:`: secret names are"],
    );
    let text = STDIO.replace("keyring:gh_token", "keyring:has space");
    assert_err(&text, &["servers[0].env.GITHUB_TOKEN: `keyring:has space`"]);
}

#[test]
fn bad_header_name_is_rejected() {
    assert_err(
        "[[servers]]\nname = \"a\"\ntransport = \"sse\"\nurl = \"http://h/sse\"\nheaders = { \"X Bad\" = \"v\" }\n",
        &["servers[0].headers.X Bad: not a valid header name"],
    );
}

#[test]
fn bad_env_name_is_rejected() {
    let text = STDIO.replace("MODE = ", "\"A=B\" = ");
    assert_err(&text, &["servers[0].env.A=B: not a valid variable name"]);
}

#[test]
fn every_problem_is_listed_at_once() {
    let text = format!(
        "{STDIO}\n[[servers]]\nname = \"fs\"\ntransport = \"websocket\"\nurl = \"http://h\"\nmax_retries = 99\n"
    );
    assert_err(
        &text,
        &[
            "servers[1].name: `fs` is already",
            "servers[1].url: scheme `http`",
            "servers[1].max_retries:",
        ],
    );
}

// ---- redaction --------------------------------------------------------------

#[test]
fn debug_redacts_literal_values_but_shows_references() {
    let mut spec = ServerSpec::new(
        "s",
        TransportSpec::Sse {
            url: "http://h/sse".into(),
            headers: [
                ("X-Token".to_owned(), "s3cr3t".to_owned()),
                ("X-Ref".to_owned(), "keyring:ref".to_owned()),
            ]
            .into(),
        },
    );
    spec.auth = Some(AuthSpec::Basic {
        username: "me".into(),
        password: "hunter2".into(),
    });
    let dbg = format!("{spec:?}");
    assert!(!dbg.contains("hunter2") && !dbg.contains("s3cr3t"), "{dbg}");
    assert!(
        dbg.contains("X-Token") && dbg.contains("<redacted>"),
        "{dbg}"
    );
    assert!(dbg.contains("keyring:ref") && dbg.contains("me"), "{dbg}");
    let stdio = TransportSpec::Stdio {
        command: "c".into(),
        args: vec![],
        env: [("K".to_owned(), "v4lue".to_owned())].into(),
        cwd: None,
    };
    assert!(!format!("{stdio:?}").contains("v4lue"));
}

// ---- raw round trip ---------------------------------------------------------

#[test]
fn raw_server_serializes_back_to_the_same_table() {
    let raw: RawServer = toml::from_str(
        "name = \"a\"\ntransport = \"sse\"\nurl = \"http://h/sse\"\ntimeout_ms = 5\n",
    )
    .unwrap();
    let text = toml::to_string(&raw).unwrap();
    let again: RawServer = toml::from_str(&text).unwrap();
    assert_eq!(raw, again);
    assert!(text.contains("transport = \"sse\""), "{text}");
}

#[test]
fn raw_server_is_strict_from_any_format() {
    // The check lives in `Deserialize`, not in the TOML front end, so a
    // server given as JSON (e.g. by the UI) is held to the same rule.
    let e = serde_json::from_str::<RawServer>(
        r#"{"name":"a","transport":"stdio","command":"x","colour":"red"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("colour: unknown key for transport `stdio`"),
        "{e}"
    );
}

// ---- fixtures (tests/config/*.toml), snapshotted ---------------------------

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/config")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn fixture_servers_all_transports() {
    let c = Config::parse(&fixture("servers_ok.toml"), Path::new("servers_ok.toml")).unwrap();
    insta::assert_debug_snapshot!("servers_ok", c.servers);
}

#[test]
fn fixture_servers_invalid_lists_every_problem() {
    let e = Config::parse(
        &fixture("servers_invalid.toml"),
        Path::new("servers_invalid.toml"),
    )
    .unwrap_err();
    let ConfigError::Invalid { problems, .. } = e else {
        panic!("{e}")
    };
    insta::assert_snapshot!("servers_invalid", problems.join("\n"));
}

#[test]
fn fixture_servers_unknown_key() {
    let e = Config::parse(
        &fixture("servers_unknown_key.toml"),
        Path::new("servers_unknown_key.toml"),
    )
    .unwrap_err();
    insta::assert_snapshot!("servers_unknown_key", e.to_string());
}
