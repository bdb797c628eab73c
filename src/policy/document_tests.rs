use std::os::unix::fs::PermissionsExt;

use super::*;

/// A config as a person writes one: comments everywhere, servers and
/// caller profiles the policy editor must leave alone.
const COMMENTED: &str = r#"# toolgate config — edited by hand
strict_schemas = false   # keep schemas open

# Only these are visible.
allowed_tools = ["fs_*", "shell_exec"] # the allowlist
denied_tools = ["fs_delete"]

[pipeline]
timeout_ms = 5000 # per attempt

[policy]
# How careful to be.
preset = "default"  # trailing note
approval_timeout_s = 60

# Builds are routine.
[[policy.rules]]
tool = "shell_exec"
arg = "command"
regex = '^make( [a-z-]+)*$'
risk = "medium"
reason = "builds are routine"

# Never push.
[[policy.rules]]
tool = "shell_exec"
arg = "command"
glob = "git push*"
verdict = "deny"

[[policy.callers]]
exe = "/opt/ci/*"
client = "ci-*"
preset = "autonomous"

[[servers]]
name = "echo"   # the test server
transport = "stdio"
command = "true"
"#;

fn path() -> &'static Path {
    Path::new("config.toml")
}

fn no_overrides(_: &mut Config) {}

fn cx<'a>(tools: &'a [&'a str]) -> Context<'a> {
    Context {
        path: path(),
        env_allowed_tools: None,
        overrides: &no_overrides,
        tool_names: tools,
    }
}

const TOOLS: [&str; 4] = ["fs_read", "fs_write", "fs_delete", "shell_exec"];

fn fields(errors: &[FieldError]) -> Vec<&str> {
    errors.iter().filter_map(|e| e.field.as_deref()).collect()
}

#[test]
fn reading_a_commented_file_gives_its_policy() {
    let doc = read(COMMENTED, path()).unwrap();
    assert_eq!(
        doc.allowed_tools,
        Some(vec!["fs_*".to_owned(), "shell_exec".to_owned()])
    );
    assert_eq!(doc.denied_tools, ["fs_delete"]);
    assert_eq!(doc.preset, Preset::Default);
    assert_eq!(doc.approval_timeout_s, Some(60));
    assert_eq!(doc.rules.len(), 2);
    assert_eq!(doc.rules[0].arg.as_deref(), Some("command"));
    assert_eq!(doc.rules[0].regex.as_deref(), Some("^make( [a-z-]+)*$"));
    assert_eq!(doc.rules[0].risk, Some(Risk::Medium));
    assert_eq!(doc.rules[1].verdict, Some(Verdict::Deny));
}

#[test]
fn an_unchanged_doc_renders_the_same_bytes() {
    let doc = read(COMMENTED, path()).unwrap();
    assert_eq!(render(COMMENTED, &doc).unwrap(), COMMENTED);
    assert_eq!(diff(COMMENTED, COMMENTED), "");
    // Also for an empty file and the default doc: nothing is added.
    assert_eq!(render("", &PolicyDoc::default()).unwrap(), "");
}

#[test]
fn an_edit_keeps_comments_and_unrelated_keys() {
    let mut doc = read(COMMENTED, path()).unwrap();
    doc.allowed_tools = Some(vec!["fs_read".into()]);
    doc.preset = Preset::Strict;
    doc.rules[1].verdict = Some(Verdict::Ask);
    doc.rules.push(RuleDoc {
        tool: "http_fetch".into(),
        arg: Some("url".into()),
        glob: Some("https://intranet/*".into()),
        negate: true,
        risk: Some(Risk::High),
        timeout_s: Some(30),
        ..RuleDoc::default()
    });
    let text = render(COMMENTED, &doc).unwrap();
    for kept in [
        "# toolgate config — edited by hand",
        "strict_schemas = false   # keep schemas open",
        "# Only these are visible.",
        "# the allowlist",
        "timeout_ms = 5000 # per attempt",
        "# How careful to be.",
        "# trailing note",
        "# Builds are routine.",
        "# Never push.",
        "client = \"ci-*\"",
        "name = \"echo\"   # the test server",
    ] {
        assert!(text.contains(kept), "lost {kept:?} in:\n{text}");
    }
    assert!(
        text.contains(r#"preset = "strict"  # trailing note"#),
        "{text}"
    );
    assert!(text.contains(r#"verdict = "ask""#), "{text}");
    // What was written reads back as the doc, and loads as a config.
    assert_eq!(read(&text, path()).unwrap(), doc);
    let config = Config::parse(&text, path()).unwrap();
    assert_eq!(config.allowed_tools, Some(vec!["fs_read".to_owned()]));
    assert_eq!(config.servers.len(), 1);
    assert_eq!(config.policy.callers.len(), 1);

    let d = diff(COMMENTED, &text);
    assert!(d.contains("-preset = \"default\"  # trailing note"), "{d}");
    assert!(d.contains("+preset = \"strict\"  # trailing note"), "{d}");
    assert!(
        !d.contains("servers"),
        "unrelated lines are not in the diff:\n{d}"
    );
}

#[test]
fn removing_rules_and_lists_removes_their_keys() {
    let mut doc = read(COMMENTED, path()).unwrap();
    doc.rules.truncate(1);
    doc.allowed_tools = None;
    doc.denied_tools.clear();
    doc.approval_timeout_s = None;
    let text = render(COMMENTED, &doc).unwrap();
    assert!(!text.contains("allowed_tools"), "{text}");
    assert!(!text.contains("denied_tools"), "{text}");
    assert!(!text.contains("git push"), "{text}");
    assert_eq!(read(&text, path()).unwrap(), doc);
}

#[test]
fn a_new_top_level_key_goes_below_the_files_header_comment() {
    let text = "# my config\n[policy]\npreset = \"strict\"\n";
    let mut doc = read(text, path()).unwrap();
    doc.denied_tools = vec!["shell_exec".into()];
    let new = render(text, &doc).unwrap();
    assert_eq!(
        new,
        "# my config\ndenied_tools = [\"shell_exec\"]\n\n[policy]\npreset = \"strict\"\n"
    );
    assert_eq!(read(&new, path()).unwrap(), doc);
}

#[test]
fn keys_written_under_an_implicit_policy_table_get_its_header() {
    let text = "[[policy.rules]]\ntool = \"x\"\nverdict = \"deny\"\n";
    let mut doc = read(text, path()).unwrap();
    doc.preset = Preset::ReadOnly;
    doc.ask_at = Some(Risk::Medium);
    let new = render(text, &doc).unwrap();
    assert_eq!(read(&new, path()).unwrap(), doc, "{new}");
    // And into an empty file.
    let new = render("", &doc).unwrap();
    assert_eq!(read(&new, path()).unwrap(), doc, "{new}");
}

#[test]
fn a_valid_edit_validates_with_its_filter_and_config() {
    let mut doc = read(COMMENTED, path()).unwrap();
    doc.denied_tools = vec!["shell_*".into()];
    let v = validate(COMMENTED, &doc, &cx(&TOOLS)).unwrap();
    assert!(v.filter.permits("fs_delete").is_ok());
    assert!(v.filter.permits("shell_exec").is_err());
    assert_eq!(v.config.policy.rules.len(), 2);
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
}

#[test]
fn invalid_edits_are_refused_with_their_field() {
    let base = read(COMMENTED, path()).unwrap();
    let check = |edit: &dyn Fn(&mut PolicyDoc)| {
        let mut doc = base.clone();
        edit(&mut doc);
        validate(COMMENTED, &doc, &cx(&TOOLS)).unwrap_err()
    };

    let e = check(&|d| d.allowed_tools = Some(vec!["fs_*".into(), "fs_[a".into()]));
    assert_eq!(fields(&e), ["allowed_tools[1]"], "{e:?}");
    assert!(e[0].message.contains("`fs_[a`"), "{e:?}");

    let e = check(&|d| d.denied_tools = vec!["{a".into()]);
    assert_eq!(fields(&e), ["denied_tools[0]"], "{e:?}");

    let e = check(&|d| d.allowed_tools = Some(vec![]));
    assert_eq!(fields(&e), ["allowed_tools"], "{e:?}");
    assert!(e[0].message.contains("\"*\""), "{e:?}");

    let e = check(&|d| d.allowed_tools = Some(vec!["nothing_*".into()]));
    assert_eq!(fields(&e), ["allowed_tools"], "{e:?}");
    assert!(e[0].message.contains("hide every one of the 4"), "{e:?}");

    let e = check(&|d| d.denied_tools = vec!["*".into()]);
    assert_eq!(fields(&e), ["denied_tools"], "{e:?}");

    let e = check(&|d| {
        d.rules[1].glob = None;
        d.rules[1].regex = Some("(".into());
    });
    assert_eq!(fields(&e), ["rules[1].regex"], "{e:?}");
    assert!(e[0].message.contains("bad re pattern `(`"), "{e:?}");

    let e = check(&|d| d.rules[0].tool = "shell_[".into());
    assert_eq!(fields(&e), ["rules[0].tool"], "{e:?}");

    let e = check(&|d| d.rules[0].verdict = Some(Verdict::Deny));
    assert_eq!(fields(&e), ["rules[0]"], "{e:?}");
    assert!(
        e[0].message.contains("exactly one of `risk` or `verdict`"),
        "{e:?}"
    );

    let e = check(&|d| d.rules[0].glob = Some("make*".into()));
    assert_eq!(fields(&e), ["rules[0]"], "{e:?}");

    let e = check(&|d| d.approval_timeout_s = Some(0));
    assert_eq!(fields(&e), ["approval_timeout_s"], "{e:?}");

    let e = check(&|d| d.rules[0].timeout_s = Some(0));
    assert_eq!(fields(&e), ["rules[0].timeout_s"], "{e:?}");
}

#[test]
fn an_unknown_preset_is_refused_naming_the_field() {
    let json = serde_json::json!({"preset": "yolo"});
    let e = serde_path_to_error::deserialize::<_, PolicyDoc>(json).unwrap_err();
    assert_eq!(e.path().to_string(), "preset");
    assert!(e.inner().to_string().contains("read_only"), "{e}");
}

#[test]
fn strict_mode_refuses_patterns_that_match_nothing() {
    let text = "strict = true\nallowed_tools = [\"fs_*\"]\n";
    let mut doc = read(text, path()).unwrap();
    doc.allowed_tools = Some(vec!["fs_*".into(), "gti_*".into()]);
    let e = validate(text, &doc, &cx(&TOOLS)).unwrap_err();
    assert!(e[0].message.contains("gti_*"), "{e:?}");
    let v = validate("", &doc, &cx(&TOOLS)).unwrap();
    assert_eq!(v.warnings, ["gti_*"]);
}

#[test]
fn a_broken_file_is_reported_as_the_files_problem() {
    let e = validate("allowed_tools = [", &PolicyDoc::default(), &cx(&TOOLS)).unwrap_err();
    assert_eq!(e[0].field, None);
    assert!(e[0].message.contains("fix it first"), "{e:?}");
}

#[test]
fn save_replaces_atomically_keeping_mode_and_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.toml");
    std::fs::write(&real, "old").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("config.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&real);

    save(&link, "new").unwrap();
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    // Replaced by rename (a new inode), not rewritten in place.
    assert_ne!(inode(&real), before);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A new file is owner-only.
    let fresh = dir.path().join("fresh.toml");
    save(&fresh, "x").unwrap();
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // A failed write leaves the old file alone.
    let missing_dir = dir.path().join("no/such/dir/config.toml");
    assert!(save(&missing_dir, "x").is_err());
}
