use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::policy::normalize;

fn who(client: &str) -> CallerInfo {
    CallerInfo {
        via: "socket".into(),
        pid: Some(42),
        uid: Some(1000),
        exe: Some("/usr/bin/node".into()),
        client_name: Some(client.into()),
        ..CallerInfo::default()
    }
}

fn hash_key() -> crate::call_key::CallKey {
    crate::call_key::CallKey::new([5; 32])
}

fn bind(scope: &str, tool: &str, args: &Value) -> Result<Scope, ScopeError> {
    ScopeSpec::parse(scope)?.bind(&hash_key(), tool, args, &who("claude"))
}

#[test]
fn the_documented_examples_parse_and_bind() {
    let args = json!({"path": "/home/u/proj/src/a.rs"});
    let s = bind("/path:path=/home/u/proj/**", "fs_read", &args).unwrap();
    assert_eq!(s.to_string(), "tool=fs_read,/path:path=/home/u/proj/**");
    let me = who("claude").key();
    assert!(s.matches("fs_read", &json!({"path": "/home/u/proj/x"}), &me));
    assert!(!s.matches("fs_write", &json!({"path": "/home/u/proj/x"}), &me));
    assert!(!s.matches("fs_read", &json!({"path": "/home/u/other"}), &me));

    let s = bind("tool=fs_*,caller", "fs_read", &args).unwrap();
    assert!(s.matches("fs_list", &json!({}), &me));
    assert!(!s.matches("fs_list", &json!({}), &who("cursor").key()));
    assert!(
        s.to_string()
            .contains("caller=[socket client claude exe /usr/bin/node uid 1000]")
    );

    let s = bind("args", "fs_read", &args).unwrap();
    assert!(s.matches("fs_read", &args, &me));
    assert!(!s.matches("fs_read", &json!({"path": "/home/u/proj/src/b.rs"}), &me));

    let s = bind(
        "/command=git status*, tool",
        "shell_exec",
        &json!({"command": "git status -s"}),
    )
    .unwrap();
    assert_eq!(s.def().tool, "shell_exec");
    let s = bind("/p:re=^a{1,2}$", "t", &json!({"p": "aa"})).unwrap();
    assert_eq!(s.def().args[0].pattern, "^a{1,2}$", "commas in braces stay");
}

#[test]
fn malformed_or_missing_scopes_are_refused_with_the_reason() {
    let args = json!({"path": "/etc/passwd"});
    assert_eq!(bind(" ", "fs_read", &args).unwrap_err(), ScopeError::Empty);
    assert!(matches!(
        bind("everything", "fs_read", &args),
        Err(ScopeError::BadClause(_))
    ));
    assert!(matches!(
        bind("tool,tool=x", "fs_read", &args),
        Err(ScopeError::Duplicate(_))
    ));
    let e = bind("/path:path=~/proj/**", "fs_read", &args).unwrap_err();
    assert!(
        matches!(&e, ScopeError::MissesRequest { why, .. } if why == "its argument `path` does not match `~/proj/**`"),
        "{e}"
    );
    assert!(matches!(
        bind("tool=fs_write", "fs_read", &args),
        Err(ScopeError::MissesRequest { .. })
    ));
    assert!(matches!(
        bind("/path:re=(", "fs_read", &args),
        Err(ScopeError::Pattern(_))
    ));
    let standalone = ScopeSpec::parse("caller").unwrap().standalone();
    assert_eq!(standalone.unwrap_err(), ScopeError::NeedsRequest("tool"));
    let def = ScopeSpec::parse("tool=fs_read,/path:path=/x/**")
        .unwrap()
        .standalone()
        .unwrap();
    assert_eq!(def.args.len(), 1);
}

#[test]
fn stored_scopes_round_trip_through_json() {
    let s = bind("tool=fs_*,caller,args", "fs_read", &json!({"path": "a"})).unwrap();
    let text = serde_json::to_string(s.def()).unwrap();
    let back = Scope::compile(serde_json::from_str(&text).unwrap(), &hash_key()).unwrap();
    assert_eq!(back.def(), s.def());
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just("proj".to_owned()),
        Just("proj2".to_owned()),
        "[a-c]{1,2}",
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z/]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop::collection::vec(("[a-c]", inner), 0..3)
            .prop_map(|kv| Value::Object(kv.into_iter().collect()))
    })
}

proptest! {
    /// A path scope never matches a path that, normalised, is outside it,
    /// and always matches one inside it.
    #[test]
    fn a_path_scope_never_matches_outside_its_directory(
        segs in prop::collection::vec(segment(), 0..6),
        absolute in any::<bool>(),
    ) {
        let root = "/home/u/proj";
        let s = bind("/path:path=/home/u/proj/**", "fs_read", &json!({"path": "/home/u/proj/a"}))
            .unwrap();
        let prefix = if absolute { root.to_owned() } else { String::new() };
        let p = format!("{prefix}/{}", segs.join("/"));
        let inside = {
            let n = normalize(Path::new(&p));
            n.starts_with(root) && n != Path::new(root)
        };
        let hit = s.matches("fs_read", &json!({"path": p}), &who("claude").key());
        prop_assert_eq!(hit, inside, "{}", p);
    }

    /// A decision bound to exact arguments covers those arguments and no
    /// others, whatever their shape.
    #[test]
    fn an_args_scope_never_covers_other_arguments(a in arb_json(), b in arb_json()) {
        let s = bind("args", "t", &a).unwrap();
        let me = who("claude").key();
        prop_assert!(s.matches("t", &a, &me));
        prop_assert_eq!(s.matches("t", &b, &me), a == b);
        prop_assert!(!s.matches("u", &a, &me));
    }

    /// Every clause narrows: if the full scope matches, each single clause
    /// of it matches too; a tool or caller scope never matches another one.
    #[test]
    fn clauses_only_narrow(
        tool in "[a-c]{1,3}",
        other_tool in "[a-c]{1,3}",
        client in "[xy]{1,2}",
        other_client in "[xy]{1,2}",
        cmd in "[a-c ]{0,6}",
        pat in "[a-c*]{1,4}",
    ) {
        let args = json!({"command": cmd});
        let full = format!("tool,caller,/command={pat}");
        let Ok(spec) = ScopeSpec::parse(&full) else { return Ok(()) };
        let Ok(scope) = spec.bind(&hash_key(), &tool, &args, &who(&client)) else { return Ok(()) };
        let probe = json!({"command": cmd.clone() + "a"});
        let key = who(&other_client).key();
        if scope.matches(&other_tool, &probe, &key) {
            prop_assert_eq!(&other_tool, &tool);
            prop_assert_eq!(&other_client, &client);
            let part = ScopeSpec::parse(&format!("/command={pat}")).unwrap()
                .bind(&hash_key(), &tool, &args, &who(&client)).unwrap();
            prop_assert!(part.matches(&tool, &probe, &key));
        }
    }
}

#[test]
fn a_caller_scope_is_tied_to_the_program_never_to_a_name_alone() {
    let args = json!({});
    // Another program claiming the same client name is not the caller.
    let s = bind("caller", "fs_read", &args).unwrap();
    let impostor = CallerInfo {
        exe: Some("/tmp/impostor".into()),
        ..who("claude")
    };
    assert!(!s.matches("fs_read", &args, &impostor.key()));
    assert!(s.matches("fs_read", &args, &who("claude").key()));
    // A caller whose program the kernel did not name cannot be remembered.
    let unknown = CallerInfo {
        exe: None,
        ..who("claude")
    };
    let e = ScopeSpec::parse("tool,caller")
        .unwrap()
        .bind(&hash_key(), "fs_read", &args, &unknown)
        .unwrap_err();
    assert_eq!(e, ScopeError::UnknownCaller);
    assert!(
        e.to_string().contains("use tool and argument clauses"),
        "{e}"
    );
    // Without `caller`, such a caller is fine.
    ScopeSpec::parse("tool")
        .unwrap()
        .bind(&hash_key(), "fs_read", &args, &unknown)
        .unwrap();
}

#[test]
fn a_stored_caller_reads_like_the_live_one() {
    let live = Caller {
        pid: Some(4242),
        uid: Some(1000),
        exe: Some("/usr/bin/node".into()),
        client_name: Some("cursor 1.0".into()),
        ..Caller::via("socket")
    };
    assert_eq!(CallerInfo::from(&live).short(), live.to_string());
    assert_eq!(live.to_string(), "cursor 1.0 (pid 4242)");
    let bare = Caller::via("cli");
    assert_eq!(CallerInfo::from(&bare).short(), bare.to_string());
    let bridged = Caller {
        bridge_pid: Some(4250),
        ..live
    };
    assert_eq!(
        bridged.to_string(),
        "cursor 1.0 (pid 4242 via bridge pid 4250)"
    );
    assert_eq!(CallerInfo::from(&bridged).short(), bridged.to_string());
}

#[test]
fn a_caller_on_the_wire_carries_the_engines_words() {
    let live = Caller {
        pid: Some(4242),
        client_name: Some("cursor 1.0".into()),
        ..Caller::via("socket")
    };
    let info = CallerInfo::from(&live);
    let json = serde_json::to_value(&info).unwrap();
    assert_eq!(json["text"], "cursor 1.0 (pid 4242)");
    assert_eq!(json["client_name"], "cursor 1.0");
    // What is stored reads back as the same caller (`text` is derived).
    let back: CallerInfo = serde_json::from_value(json).unwrap();
    assert_eq!(back, info);
}
