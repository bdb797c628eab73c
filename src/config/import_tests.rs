use std::path::Path;

use super::*;
use crate::config::Config;
use crate::config::servers::{TransportSpec, check_server_name};

const CLAUDE: &str = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_SUPERSECRET123", "LOG": "debug" }
    },
    "legacy": { "url": "http://localhost:3001/sse" },
    "remote api": {
      "url": "https://mcp.example.com/mcp",
      "headers": { "Authorization": "Bearer sk-HEADERSECRET", "X-Team": "blue" }
    },
    "sock": { "url": "wss://mcp.example.com/ws" },
    "cursor-typed": { "type": "http", "url": "https://mcp.example.com/sse" }
  }
}"#;

fn imported() -> Imported {
    import_json(CLAUDE).unwrap()
}

#[test]
fn generated_toml_parses_and_validates() {
    let out = imported();
    let c = Config::parse(&out.toml, Path::new("imported.toml"))
        .unwrap_or_else(|e| panic!("{e}\n---\n{}", out.toml));
    let kinds: Vec<(&str, &str)> = c
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.transport.kind()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("cursor-typed", "streamable_http"),
            ("filesystem", "stdio"),
            ("github", "stdio"),
            ("legacy", "sse"),
            ("remote_api", "streamable_http"),
            ("sock", "websocket"),
        ]
    );
    let TransportSpec::Stdio { env, args, .. } = &c.servers[2].transport else {
        panic!()
    };
    assert_eq!(
        env["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "keyring:github_GITHUB_PERSONAL_ACCESS_TOKEN"
    );
    assert_eq!(env["LOG"], "debug", "non-secret values are kept");
    assert_eq!(args[3], "ghcr.io/github/github-mcp-server");
}

#[test]
fn output_snapshot() {
    insta::assert_snapshot!("import_claude_desktop", imported().toml);
}

#[test]
fn secrets_never_appear_in_the_output() {
    let out = imported();
    for leaked in ["ghp_SUPERSECRET123", "sk-HEADERSECRET"] {
        assert!(!out.toml.contains(leaked), "{leaked} in\n{}", out.toml);
        assert!(!format!("{out:?}").contains(leaked), "{leaked} in Debug");
    }
    assert!(
        out.toml
            .contains("toolgate secret set github_GITHUB_PERSONAL_ACCESS_TOKEN")
    );
    let names: Vec<&str> = out.secrets.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "github_GITHUB_PERSONAL_ACCESS_TOKEN",
            "remote_api_Authorization"
        ]
    );
    assert_eq!(out.secrets[0].1.expose(), "ghp_SUPERSECRET123");
}

#[test]
fn renames_and_ignored_fields_are_noted() {
    let out =
        import_json(r#"{"mcpServers": {"my.server": {"command": "x", "autoApprove": ["a"]}}}"#)
            .unwrap();
    assert_eq!(
        out.notes,
        [
            "server `my.server` renamed to `my_server`",
            "server `my.server`: field `autoApprove` ignored",
        ]
    );
}

#[test]
fn sanitize_always_gives_a_valid_name() {
    for raw in [
        "ok",
        "a.b.c",
        "__x__",
        "a  b",
        "a__b",
        "",
        "ÜÖÄ",
        "a-very-long-server-name-that-goes-on-and-on",
        "twentyfour_chars_exactl_",
        "cursor",
        "claude-code",
    ] {
        let n = sanitize_name(raw);
        assert!(check_server_name(&n).is_ok(), "{raw:?} -> {n:?}");
    }
    assert_eq!(sanitize_name("a.b"), "a_b");
    assert_eq!(sanitize_name("ÜÖÄ"), "server");
    assert_eq!(sanitize_name("gemini-cli"), "gemini-cli-mcp");
}

/// A hook agent's id names its own tools (`cursor__Shell`), so no server
/// may take it: the prefix would mix a server's tools with the agent's in
/// rules, limits and breakers.
#[test]
fn a_hook_agents_id_is_no_server_name() {
    let e = check_server_name("claude-code").unwrap_err();
    assert!(e.contains("reserved") && e.contains("Claude Code"), "{e}");
    assert!(check_server_name("claude-code-mcp").is_ok());
}

#[test]
fn colliding_names_get_suffixes() {
    let out = import_json(r#"{"mcpServers": {"a.b": {"command": "x"}, "a_b": {"command": "y"}}}"#)
        .unwrap();
    let c = Config::parse(&out.toml, Path::new("t.toml")).unwrap();
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a_b", "a_b-2"]);
}

#[test]
fn disabled_entry_imports_disabled() {
    let out = import_json(r#"{"mcpServers": {"x": {"command": "c", "disabled": true}}}"#).unwrap();
    let c = Config::parse(&out.toml, Path::new("t.toml")).unwrap();
    assert!(!c.servers[0].enabled);
}

#[test]
fn awkward_strings_are_escaped() {
    let out = import_json(
        r#"{"mcpServers": {"x": {"command": "c \"q\"\n", "args": ["a\\b", "\u0001"], "env": {"weird name": "v"}}}}"#,
    )
    .unwrap();
    let c = Config::parse(&out.toml, Path::new("t.toml"))
        .unwrap_or_else(|e| panic!("{e}\n{}", out.toml));
    let TransportSpec::Stdio {
        command, args, env, ..
    } = &c.servers[0].transport
    else {
        panic!()
    };
    assert_eq!(command, "c \"q\"\n");
    assert_eq!(args, &["a\\b", "\u{1}"]);
    assert_eq!(env["weird name"], "v");
}

#[test]
fn entry_without_command_or_url_is_an_error() {
    let e = import_json(r#"{"mcpServers": {"x": {"args": []}}}"#).unwrap_err();
    assert!(
        e.to_string()
            .contains("server `x`: has neither `command` nor `url`"),
        "{e}"
    );
}

#[test]
fn url_of_unknown_scheme_is_an_error() {
    let e = import_json(r#"{"mcpServers": {"x": {"url": "ftp://h"}}}"#).unwrap_err();
    assert!(e.to_string().contains("is not http(s) or ws(s)"), "{e}");
}

#[test]
fn not_an_mcp_servers_file_is_an_error() {
    assert!(matches!(
        import_json(r#"{"servers": {}}"#),
        Err(ImportError::Json(_))
    ));
    assert!(matches!(import_json("nope"), Err(ImportError::Json(_))));
}

#[test]
fn import_file_reads_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("claude_desktop_config.json");
    std::fs::write(&p, CLAUDE).unwrap();
    assert_eq!(import_file(&p).unwrap(), imported());
    assert!(matches!(
        import_file(&dir.path().join("missing.json")),
        Err(ImportError::Read { .. })
    ));
}

#[test]
fn default_paths_point_at_the_apps_files() {
    let claude = claude_desktop_default_path().unwrap();
    assert!(
        claude.ends_with("Claude/claude_desktop_config.json"),
        "{claude:?}"
    );
    assert!(cursor_default_path().unwrap().ends_with(".cursor/mcp.json"));
}
