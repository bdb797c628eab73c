use std::path::Path;

use super::*;

const GOOD: &str = r#"
manifest_version = 1
description = "notes"

[[tools]]
name = "notes_add"
description = "Add a note"
command = ["./add.py"]
risk = "low"
input_schema = { type = "object", properties = { text = { type = "string" } } }

[[hooks]]
name = "no-secrets"
when = "before"
command = ["./check.py"]
tools = ["notes_*"]
"#;

#[test]
fn a_good_manifest_parses() {
    let m = Manifest::parse(GOOD, Path::new("p/plugin.toml")).unwrap();
    assert_eq!(m.tools[0].name, "notes_add");
    assert_eq!(m.tools[0].risk, Some(Risk::Low));
    assert_eq!(m.hooks[0].when, HookWhen::Before);
}

#[test]
fn an_unknown_key_is_named_with_its_line_and_file() {
    let text = GOOD.replace("risk = \"low\"", "risky = \"low\"");
    let e = Manifest::parse(&text, Path::new("p/plugin.toml")).unwrap_err();
    assert_eq!(e.line, Some(9), "{e}");
    assert!(e.reason.contains("unknown field `risky`"), "{e}");
    assert!(e.to_string().starts_with("p/plugin.toml:9:"), "{e}");
}

#[test]
fn bad_toml_has_a_line_and_column() {
    let e = Manifest::parse("manifest_version = 1\n[[tools]\n", Path::new("x.toml")).unwrap_err();
    assert_eq!(e.line, Some(2), "{e}");
    assert!(e.column.is_some());
}

#[test]
fn another_version_is_refused_with_the_version_read() {
    let e = Manifest::parse("manifest_version = 2\n", Path::new("x.toml")).unwrap_err();
    assert!(e.reason.contains("manifest_version 2"), "{e}");
    assert_eq!(e.line, Some(1));
}

#[test]
fn an_empty_command_and_a_bad_glob_are_refused() {
    let text = GOOD.replace("[\"./add.py\"]", "[]");
    let e = Manifest::parse(&text, Path::new("x.toml")).unwrap_err();
    assert!(e.reason.contains("command is empty"), "{e}");
    let text = GOOD.replace("\"notes_*\"", "\"notes_[\"");
    let e = Manifest::parse(&text, Path::new("x.toml")).unwrap_err();
    assert!(e.reason.contains("tool glob"), "{e}");
}

#[test]
fn servers_take_the_configs_options_and_its_checks() {
    let ok = "manifest_version = 1\n[[servers]]\nname = \"web\"\ntransport = \"stdio\"\ncommand = \"web-server\"\ntimeout_ms = 500\n";
    let m = Manifest::parse(ok, Path::new("x.toml")).unwrap();
    let specs = m.server_specs(ok, Path::new("x.toml")).unwrap();
    assert_eq!(specs[0].name, "web");
    assert_eq!(
        specs[0].timeout,
        Some(std::time::Duration::from_millis(500))
    );
    let unknown = ok.replace("timeout_ms", "colour");
    let e = Manifest::parse(&unknown, Path::new("x.toml")).unwrap_err();
    assert!(e.reason.contains("colour"), "{e}");
    let bad_name = ok.replace("\"web\"", "\"a b\"");
    let m = Manifest::parse(&bad_name, Path::new("x.toml")).unwrap();
    let e = m.server_specs(&bad_name, Path::new("x.toml")).unwrap_err();
    assert!(e.reason.starts_with("servers[0].name"), "{e}");
    assert_eq!(e.line, Some(2));
}
