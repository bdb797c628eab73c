use std::collections::BTreeMap;

use super::*;

fn name(n: &str) -> SecretName {
    SecretName::new(n).unwrap()
}

fn store_with(pairs: &[(&str, &str)]) -> MemoryStore {
    let s = MemoryStore::new();
    for (k, v) in pairs {
        s.set(&name(k), &Secret::new(*v)).unwrap();
    }
    s
}

fn spec(transport: TransportSpec, auth: Option<AuthSpec>) -> ServerSpec {
    ServerSpec {
        auth,
        ..ServerSpec::new("s", transport)
    }
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn secret_redacts_in_debug_and_display() {
    let s = Secret::new("hunter2");
    assert_eq!(format!("{s}"), "<redacted>");
    assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
    assert_eq!(format!("{:?}", Some(&s)), "Some(Secret(<redacted>))");
    assert_eq!(s.expose(), "hunter2");
}

#[test]
fn secret_names_follow_the_rule() {
    for ok in ["a", "gh_TOKEN", "x.y-z", &"n".repeat(128)] {
        assert!(SecretName::new(ok).is_ok(), "{ok}");
    }
    for bad in ["", "has space", "a/b", "ä", &"n".repeat(129)] {
        assert!(
            matches!(SecretName::new(bad), Err(SecretError::InvalidName { .. })),
            "{bad}"
        );
    }
}

#[test]
fn resolve_stdio_env_replaces_only_references() {
    let store = store_with(&[("gh", "ghp_real")]);
    let s = spec(
        TransportSpec::Stdio {
            command: "c".into(),
            args: vec!["keyring:gh".into()],
            env: map(&[("GITHUB_TOKEN", "keyring:gh"), ("MODE", "ro")]),
            cwd: None,
        },
        None,
    );
    let r = resolve_spec(&s, &store).unwrap();
    let TransportSpec::Stdio { env, args, .. } = &r.transport else {
        panic!()
    };
    assert_eq!(env["GITHUB_TOKEN"], "ghp_real");
    assert_eq!(env["MODE"], "ro");
    assert_eq!(args[0], "keyring:gh", "args are not secret slots");
    // The configured spec is untouched.
    let TransportSpec::Stdio { env, .. } = &s.transport else {
        panic!()
    };
    assert_eq!(env["GITHUB_TOKEN"], "keyring:gh");
}

#[test]
fn resolve_headers_and_auth() {
    let store = store_with(&[("h", "hv"), ("tok", "tv"), ("pw", "pv")]);
    for t in [
        TransportSpec::Sse {
            url: "http://h/sse".into(),
            headers: map(&[("X-K", "keyring:h")]),
        },
        TransportSpec::StreamableHttp {
            url: "http://h/mcp".into(),
            headers: map(&[("X-K", "keyring:h")]),
        },
        TransportSpec::Websocket {
            url: "ws://h".into(),
            headers: map(&[("X-K", "keyring:h")]),
        },
    ] {
        let r = resolve_spec(
            &spec(
                t,
                Some(AuthSpec::Bearer {
                    token: "keyring:tok".into(),
                }),
            ),
            &store,
        )
        .unwrap();
        let (TransportSpec::Sse { headers, .. }
        | TransportSpec::StreamableHttp { headers, .. }
        | TransportSpec::Websocket { headers, .. }) = &r.transport
        else {
            panic!()
        };
        assert_eq!(headers["X-K"], "hv");
        assert_eq!(r.auth, Some(AuthSpec::Bearer { token: "tv".into() }));
    }
    let basic = spec(
        TransportSpec::Sse {
            url: "http://h/sse".into(),
            headers: BTreeMap::new(),
        },
        Some(AuthSpec::Basic {
            username: "u".into(),
            password: "keyring:pw".into(),
        }),
    );
    assert_eq!(
        resolve_spec(&basic, &store).unwrap().auth,
        Some(AuthSpec::Basic {
            username: "u".into(),
            password: "pv".into()
        })
    );
}

#[test]
fn missing_secret_error_names_it_and_no_value() {
    let store = store_with(&[("other", "zzz-secret-zzz")]);
    let s = spec(
        TransportSpec::Stdio {
            command: "c".into(),
            args: vec![],
            env: map(&[("A", "keyring:other"), ("B", "keyring:absent")]),
            cwd: None,
        },
        None,
    );
    let e = resolve_spec(&s, &store).unwrap_err();
    let msg = format!("{e} {e:?}");
    assert!(
        matches!(&e, SecretError::NotFound { name } if name == "absent"),
        "{msg}"
    );
    assert!(msg.contains("toolgate secret set absent"), "{msg}");
    assert!(!msg.contains("zzz-secret-zzz"), "{msg}");
}

#[test]
fn resolved_spec_debug_does_not_leak() {
    let store = store_with(&[("tok", "zzz-secret-zzz")]);
    let s = spec(
        TransportSpec::StreamableHttp {
            url: "http://h/mcp".into(),
            headers: map(&[("Authorization", "keyring:tok")]),
        },
        Some(AuthSpec::Bearer {
            token: "keyring:tok".into(),
        }),
    );
    let r = resolve_spec(&s, &store).unwrap();
    let dbg = format!("{r:?}");
    assert!(!dbg.contains("zzz-secret-zzz"), "{dbg}");
    assert!(dbg.contains("Authorization"), "{dbg}");
}

#[test]
fn referenced_names_lists_each_once() {
    let s = spec(
        TransportSpec::Sse {
            url: "http://h/sse".into(),
            headers: map(&[("A", "keyring:x"), ("B", "keyring:x"), ("C", "plain")]),
        },
        Some(AuthSpec::Bearer {
            token: "keyring:t".into(),
        }),
    );
    assert_eq!(referenced_names(&s), vec!["t".to_owned(), "x".to_owned()]);
}

#[test]
fn cli_set_reads_stdin_and_drops_one_newline() {
    let store = MemoryStore::new();
    cli_set(&store, "n", "line one\r\n".as_bytes()).unwrap();
    assert_eq!(cli_get(&store, "n").unwrap().expose(), "line one");
    cli_set(&store, "n", "a\n\n".as_bytes()).unwrap();
    assert_eq!(
        cli_get(&store, "n").unwrap().expose(),
        "a\n",
        "only one newline dropped"
    );
    cli_set(&store, "n", "no newline".as_bytes()).unwrap();
    assert_eq!(cli_get(&store, "n").unwrap().expose(), "no newline");
}

#[test]
fn cli_set_rejects_empty_value_and_bad_name() {
    let store = MemoryStore::new();
    assert!(matches!(
        cli_set(&store, "n", "\n".as_bytes()),
        Err(SecretError::Empty { .. })
    ));
    assert!(matches!(
        cli_set(&store, "bad name", "v".as_bytes()),
        Err(SecretError::InvalidName { .. })
    ));
    assert!(matches!(
        cli_get(&store, "n"),
        Err(SecretError::NotFound { .. })
    ));
}

#[test]
fn cli_rm_removes_and_reports_missing() {
    let store = store_with(&[("n", "v")]);
    cli_rm(&store, "n").unwrap();
    assert!(matches!(
        cli_get(&store, "n"),
        Err(SecretError::NotFound { .. })
    ));
    assert!(matches!(
        cli_rm(&store, "n"),
        Err(SecretError::NotFound { .. })
    ));
}

/// The production store against a real Secret Service. Needs a D-Bus
/// session with an unlocked keyring, so it is `#[ignore]`d here and run by
/// `scripts/keyring-test` (see the module docs for why not a mock store).
#[test]
#[ignore = "needs a Secret Service; run scripts/keyring-test"]
fn keyring_round_trip() {
    let store = KeyringStore::new().expect("a Secret Service (run scripts/keyring-test)");
    let n = name(&format!("toolgate-test-{}", std::process::id()));
    assert!(matches!(store.get(&n), Err(SecretError::NotFound { .. })));
    store.set(&n, &Secret::new("v1 ünïcode")).unwrap();
    assert_eq!(store.get(&n).unwrap().expose(), "v1 ünïcode");
    store.set(&n, &Secret::new("v2")).unwrap();
    assert_eq!(store.get(&n).unwrap().expose(), "v2", "set replaces");
    let s = spec(
        TransportSpec::Stdio {
            command: "c".into(),
            args: vec![],
            env: map(&[("T", &format!("keyring:{}", n.as_str()))]),
            cwd: None,
        },
        None,
    );
    let r = resolve_spec(&s, &store).unwrap();
    let TransportSpec::Stdio { env, .. } = &r.transport else {
        panic!()
    };
    assert_eq!(env["T"], "v2");
    store.delete(&n).unwrap();
    assert!(matches!(store.get(&n), Err(SecretError::NotFound { .. })));
    assert!(matches!(
        store.delete(&n),
        Err(SecretError::NotFound { .. })
    ));
}

/// A stdio server named `name` whose env refers to `keyring:<secret>`.
fn server(name: &str, secret: &str) -> ServerSpec {
    ServerSpec::new(
        name,
        TransportSpec::Stdio {
            command: "c".into(),
            args: vec![],
            env: map(&[("TOKEN", &format!("keyring:{secret}"))]),
            cwd: None,
        },
    )
}

fn token_of(s: &ServerSpec) -> &str {
    let TransportSpec::Stdio { env, .. } = &s.transport else {
        panic!("stdio")
    };
    &env["TOKEN"]
}

/// A reload whose secret cannot be read keeps a running
/// server on the spec it runs with; a new server is left out; both are
/// reported by name, never by value.
#[test]
fn a_failed_secret_keeps_a_running_server_on_its_last_good_spec() {
    let store = store_with(&[("good", "g-value")]);
    let running_spec = resolve_spec(&server("old", "good"), &store).unwrap();
    let running: HashMap<String, ServerSpec> = [("old".to_owned(), running_spec.clone())].into();
    let configured = vec![
        server("old", "gone"),  // running; its secret was renamed in the file
        server("new", "gone"),  // not running yet
        server("fine", "good"), // resolves
        ServerSpec::new(
            "plain",
            TransportSpec::Stdio {
                command: "c".into(),
                args: vec![],
                env: BTreeMap::new(),
                cwd: None,
            },
        ),
    ];
    let r = resolve_servers(configured, &store, &running);
    let names: Vec<&str> = r.specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["old", "fine", "plain"]);
    assert_eq!(r.specs[0], running_spec, "the last good spec, unchanged");
    assert_eq!(token_of(&r.specs[1]), "g-value");
    let lines: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "server `old` keeps running on its last good config: secret `gone` is not in the keychain; set it with `toolgate secret set gone`",
            "server `new` not started: secret `gone` is not in the keychain; set it with `toolgate secret set gone`",
        ]
    );
    assert!(!lines.iter().any(|l| l.contains("g-value")));
}

#[test]
fn an_unreachable_keychain_keeps_running_servers_and_names_each_secret() {
    let down = UnavailableStore::new(&SecretError::Store {
        name: "*".into(),
        message: "no Secret Service".into(),
    });
    let running: HashMap<String, ServerSpec> = [("a".to_owned(), server("a", "x"))].into();
    let mut disabled = server("off", "y");
    disabled.enabled = false;
    let r = resolve_servers(vec![server("a", "x"), disabled], &down, &running);
    assert_eq!(
        r.specs.len(),
        2,
        "the running one kept, the disabled one passed on"
    );
    assert_eq!(
        r.problems[0].to_string(),
        "server `a` keeps running on its last good config: keychain error for secret `x`: no Secret Service"
    );
    assert_eq!(r.problems.len(), 1);
}

#[test]
fn resolved_values_are_listed_and_scrubbed_with_credential_like_literals() {
    let s = store_with(&[("gh", "ghp_resolved123")]);
    let configured = spec(
        TransportSpec::Stdio {
            command: "c".into(),
            args: vec![],
            env: map(&[
                ("GITHUB_TOKEN", "keyring:gh"),
                ("DB_PASSWORD", "literal-pw-99"),
                ("LOG_LEVEL", "debug-verbose"),
            ]),
            cwd: None,
        },
        None,
    );
    assert!(configured.resolved_secrets.is_empty());
    let resolved = resolve_spec(&configured, &s).unwrap();
    assert_eq!(resolved.resolved_secrets, [Secret::new("ghp_resolved123")]);
    let scrub = scrubber_for(&resolved);
    assert_eq!(
        scrub.scrub("ghp_resolved123 literal-pw-99 debug-verbose"),
        "[redacted] [redacted] debug-verbose"
    );
    // Literal auth values, and Basic's base64 form, are credentials too.
    let basic = spec(
        TransportSpec::Sse {
            url: "http://h/sse".into(),
            headers: map(&[("X-Api-Key", "hdr-key-1234"), ("Accept", "text/plain")]),
        },
        Some(AuthSpec::Basic {
            username: "u".into(),
            password: "pw-literal".into(),
        }),
    );
    let scrub = scrubber_for(&basic);
    assert_eq!(
        scrub.scrub("hdr-key-1234 pw-literal dTpwdy1saXRlcmFs text/plain"),
        "[redacted] [redacted] [redacted] text/plain"
    );
    for name in [
        "GITHUB_TOKEN",
        "x-api-key",
        "Authorization",
        "Cookie",
        "AWS_SECRET_ACCESS_KEY",
    ] {
        assert!(credential_name(name), "{name}");
    }
    for name in ["PATH", "LOG_LEVEL", "Accept", "HOME"] {
        assert!(!credential_name(name), "{name}");
    }
}
