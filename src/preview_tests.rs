use serde_json::json;

use super::*;
use crate::tool::ToolName;

fn def(name: &str, schema: serde_json::Value) -> ToolDef {
    let serde_json::Value::Object(schema) = schema else {
        panic!("object schema")
    };
    ToolDef::new(ToolName::new(name).unwrap(), "", schema)
}

fn shell() -> ToolDef {
    def("shell_exec", json!({"type": "object"}))
        .with_guard_default("cwd", GuardKind::Path, "")
        .with_guard("command", GuardKind::Command)
}

#[test]
fn a_shell_call_shows_its_command_not_its_directory() {
    let args = json!({"command": "ls -la", "cwd": "/home/u/proj", "timeout_ms": 5000});
    assert_eq!(preview(Some(&shell()), &args), "ls -la");
    let lead = lead(Some(&shell()), &args).unwrap();
    assert_eq!(
        (lead.arg.as_str(), lead.kind),
        ("command", GuardKind::Command)
    );
}

#[test]
fn the_guard_decides_the_lead_before_the_names() {
    // A tool whose guarded URL is called `target`: the guard, not the name.
    let d = def("fetcher", json!({"type": "object"})).with_guard("target", GuardKind::Url);
    let args = json!({"path": "/etc/hosts", "target": "https://example.com/a"});
    assert_eq!(preview(Some(&d), &args), "https://example.com/a");
    // Without the definition, the names decide.
    assert_eq!(preview(None, &args), "/etc/hosts");
}

#[test]
fn an_upstream_tool_with_a_command_parameter_leads_with_it() {
    let d = def(
        "srv__run",
        json!({"type": "object", "properties": {"cmd": {"type": "string"}, "path": {"type": "string"}}}),
    );
    let args = json!({"path": "/tmp", "cmd": "make test"});
    assert_eq!(preview(Some(&d), &args), "make test");
}

#[test]
fn a_write_shows_its_path_and_size_a_read_only_its_path() {
    let args = json!({"path": "~/proj/notes.md", "content": "x".repeat(1_500), "mode": "append"});
    assert_eq!(preview(None, &args), "~/proj/notes.md (1.5 KB)");
    assert_eq!(
        preview(None, &json!({"path": "a", "content": "hi"})),
        "a (2 bytes)"
    );
    assert_eq!(
        preview(None, &json!({"path": "a", "content": "h"})),
        "a (1 byte)"
    );
    assert_eq!(
        preview(None, &json!({"path": "~/proj/notes.md"})),
        "~/proj/notes.md"
    );
    // A redacted content has no size to tell.
    assert_eq!(
        preview(None, &json!({"path": "a", "content": REDACTED})),
        "a"
    );
}

#[test]
fn a_fetch_shows_its_url_and_a_method_other_than_get() {
    let get = json!({"url": "https://api.github.com/repos/x/y", "method": "GET"});
    assert_eq!(preview(None, &get), "https://api.github.com/repos/x/y");
    let post = json!({"url": "https://api.github.com/repos/x/y", "method": "POST"});
    assert_eq!(
        preview(None, &post),
        "POST https://api.github.com/repos/x/y"
    );
}

#[test]
fn other_tools_show_their_first_pairs_in_key_order() {
    let args =
        json!({"zeta": 1, "alpha": "one two", "beta": [1, 2], "gamma": {"a": true}, "delta": null});
    assert_eq!(
        preview(None, &args),
        r#"alpha=one two beta=[1,2] delta=null gamma={"a":true} +1 more"#
    );
    assert_eq!(preview(None, &json!({})), "no arguments");
}

#[test]
fn arguments_that_are_not_an_object_are_shown_as_json() {
    assert_eq!(preview(None, &json!(null)), "");
    assert_eq!(preview(None, &json!([1, "a"])), r#"[1,"a"]"#);
    assert_eq!(preview(None, &json!("plain")), r#""plain""#);
    assert_eq!(preview(None, &json!(42)), "42");
}

#[test]
fn credentials_in_a_command_never_show() {
    let cases = [
        (
            "curl -H 'Authorization: Bearer sk-live-abcdef0123456789' https://api.x.com",
            "curl -H 'Authorization: [redacted]' https://api.x.com",
        ),
        (
            "curl -H \"X-Api-Key: abc123456\" https://x",
            "curl -H \"X-Api-Key: [redacted]\" https://x",
        ),
        (
            "GITHUB_TOKEN=ghp_aaaaaaaaaaaaaaaaaaaaaaaa gh pr list",
            "GITHUB_TOKEN=[redacted] gh pr list",
        ),
        (
            "mysql --password hunter22 db",
            "mysql --password [redacted] db",
        ),
        (
            "mysql --password=hunter22 db",
            "mysql --password=[redacted] db",
        ),
        (
            "curl -u alice:s3cr3tpw https://x",
            "curl -u alice:[redacted] https://x",
        ),
        (
            "git clone https://bob:pa55word@git.example.com/r.git",
            "git clone https://bob:[redacted]@git.example.com/r.git",
        ),
        ("echo sk-proj-0123456789abcdef", "echo [redacted]"),
        ("aws s3 ls # AKIAABCDEFGHIJKLMNOP", "aws s3 ls # [redacted]"),
        (
            "wget 'https://x/y?api_key=abc&page=2'",
            "wget 'https://x/y?api_key=[redacted]&page=2'",
        ),
    ];
    for (command, shown) in cases {
        assert_eq!(
            preview(Some(&shell()), &json!({"command": command})),
            shown,
            "{command}"
        );
    }
}

#[test]
fn text_without_credentials_is_left_alone() {
    for text in [
        "ls -la",
        "cargo test --lib tokens_are_counted",
        "grep -r password_hint docs/",
        "echo 'a basic idea'",
        "the token count is low",
        "a basic example of bearer tokens",
        "git commit -m 'refresh tokens before expiry'",
    ] {
        assert_eq!(redact_text(text), text);
    }
}

#[test]
fn values_under_secret_names_are_hidden_whole() {
    let args = json!({"api_key": "abc", "user": "bob", "Password": 1234, "session_id": "x"});
    let shown = preview(None, &args);
    assert_eq!(
        shown,
        "Password=[redacted] api_key=[redacted] session_id=[redacted] user=bob"
    );
    // Nested objects: their JSON still hides a secret's value.
    let shown = preview(None, &json!({"opts": {"token": "t0p-s3cret-value"}}));
    assert!(!shown.contains("t0p-s3cret"), "{shown}");
}

#[test]
fn what_the_schema_already_redacted_stays_redacted() {
    let schema =
        json!({"type": "object", "properties": {"key": {"type": "string", "writeOnly": true}}});
    let serde_json::Value::Object(schema) = schema else {
        unreachable!()
    };
    let shown_args =
        crate::schema::redact_secrets(&schema, &json!({"key": "hunter2", "n": 1})).into_owned();
    let shown = preview(None, &shown_args);
    assert_eq!(shown, "key=[redacted] n=1");
}

#[test]
fn a_long_command_is_cut_at_the_end_and_a_long_path_in_the_middle() {
    let long = format!("python3 -c 'print({})'", "1+".repeat(200));
    let shown = preview(Some(&shell()), &json!({"command": long}));
    assert_eq!(shown.chars().count(), MAX_CHARS);
    assert!(shown.starts_with("python3 -c 'print(1+1+"));
    assert!(shown.ends_with('…'));

    let path = format!("/home/u/{}/report-final.pdf", "deep/".repeat(40));
    let shown = preview(None, &json!({"path": path}));
    assert_eq!(shown.chars().count(), MAX_CHARS);
    assert!(shown.starts_with("/home/u/deep"), "{shown}");
    assert!(shown.ends_with("/report-final.pdf"), "{shown}");
    assert_eq!(shown.matches('…').count(), 1);

    let written = preview(None, &json!({"path": path, "content": "abc"}));
    assert_eq!(written.chars().count(), MAX_CHARS);
    assert!(written.ends_with("report-final.pdf (3 bytes)"), "{written}");
}

#[test]
fn a_multi_line_command_stays_on_one_line() {
    let shown = preview(
        Some(&shell()),
        &json!({"command": "set -e\r\ncd /tmp\n\tmake\u{1b}[31m"}),
    );
    assert_eq!(shown, "set -e⏎cd /tmp⏎⇥make\\u{1b}[31m");
    assert!(!shown.contains(['\n', '\r', '\t']));
}

#[test]
fn direction_overrides_cannot_make_a_command_read_backwards() {
    let shown = preview(Some(&shell()), &json!({"command": "echo \u{202e}fdp.exe"}));
    assert_eq!(shown, "echo \\u{202e}fdp.exe");
}

#[test]
fn cuts_fall_between_characters_never_inside_one() {
    let wide = "日本語のテキスト🙂".repeat(20);
    let shown = preview(Some(&shell()), &json!({"command": wide}));
    assert_eq!(shown.chars().count(), MAX_CHARS);
    let shown = preview(None, &json!({"path": format!("/{wide}/ü.txt")}));
    assert_eq!(shown.chars().count(), MAX_CHARS);
    assert!(shown.ends_with("/ü.txt"));
    assert_eq!(elide_middle("äöü", 2), "…ü");
    assert_eq!(elide_end("äöü", 2), "ä…");
    assert_eq!(elide_end("äöü", 3), "äöü");
}

#[test]
fn a_preview_is_never_longer_than_the_limit() {
    let many: serde_json::Map<String, serde_json::Value> = (0..30)
        .map(|i| {
            (
                format!("key_{i:02}_{}", "x".repeat(30)),
                json!("v".repeat(100)),
            )
        })
        .collect();
    let shown = preview(None, &serde_json::Value::Object(many));
    assert!(shown.chars().count() <= MAX_CHARS, "{shown}");
    let method =
        json!({"url": format!("https://x/{}", "a".repeat(300)), "method": "PROPFIND-LONG-NAME"});
    assert!(preview(None, &method).chars().count() <= MAX_CHARS);
}
