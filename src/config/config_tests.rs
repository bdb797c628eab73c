use super::*;
use crate::policy::Verdict;
use crate::tool::Risk;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("t.toml"))
}

#[test]
fn empty_file_gives_documented_defaults() {
    let c = parse("").unwrap();
    let d = c.settings.defaults();
    assert_eq!(d.timeout, Duration::from_secs(30));
    assert_eq!(d.breaker.failure_threshold, 5);
    assert_eq!(c.policy.effective_ask_at(), Risk::High);
    assert!(c.allowed_tools.is_none());
    assert!(c.builtin.roots.is_empty());
    assert!(!c.builtin.allow_local);
}

#[test]
fn per_tool_overrides_merge_over_global_limits() {
    let c = parse(
        r#"
        [pipeline]
        timeout_ms = 5000
        [pipeline.breaker]
        failure_threshold = 3
        [tools.shell_exec]
        timeout_ms = 1000
        policy = "deny"
        risk = "critical"
        [tools.shell_exec.retry]
        max_retries = 0
        [tools.shell_exec.breaker]
        count_is_error = true
        "#,
    )
    .unwrap();
    let sh = c.settings.resolve("shell_exec");
    assert_eq!(sh.timeout, Duration::from_millis(1000));
    assert_eq!(sh.retry.max_retries, 0);
    assert_eq!(
        sh.breaker.failure_threshold, 3,
        "inherits the global override"
    );
    assert!(sh.breaker.count_is_error);
    let other = c.settings.resolve("fs_read");
    assert!(
        !other.breaker.count_is_error,
        "isError results do not count by default"
    );
    assert_eq!(other.timeout, Duration::from_millis(5000));
    assert_eq!(other.retry.max_retries, 2);
    let rule = c
        .policy
        .rules
        .iter()
        .find(|r| r.id == "tools.shell_exec.policy")
        .unwrap();
    assert_eq!(rule.effect, crate::policy::Effect::Verdict(Verdict::Deny));
    assert_eq!(c.policy.risk["shell_exec"], Risk::Critical);
}

#[test]
fn unknown_key_is_reported_with_its_line() {
    let e = parse("strict = true\n[pipeline]\ntimeout = 5\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 3"), "{e}");
    assert!(e.contains("unknown field `timeout`"), "{e}");
}

#[test]
fn wrong_type_is_reported_with_its_key() {
    let e = parse("[pipeline.breaker]\nfailure_threshold = \"five\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2") && e.contains("failure_threshold"),
        "{e}"
    );
}

#[test]
fn every_range_problem_is_listed_with_its_path() {
    let e = parse(
        r#"
        [pipeline]
        timeout_ms = 0
        max_output_bytes = 10
        [pipeline.breaker]
        failure_threshold = 0
        [pipeline.retry]
        multiplier = 0.5
        [tools."bad.name"]
        timeout_ms = 1
        [tools.t.loop_guard]
        warn_at = 9
        "#,
    )
    .unwrap_err()
    .to_string();
    for needle in [
        "pipeline.timeout_ms: must be at least 1",
        "pipeline.max_output_bytes: must be at least 256",
        "pipeline.breaker.failure_threshold: must be at least 1",
        "pipeline.retry.multiplier: must be a number ≥ 1.0, got 0.5",
        "tools.bad.name: tool name `bad.name` contains '.'",
        "tools.t.loop_guard: need 2 ≤ warn_at ≤ block_at ≤ halt_at (0 turns a level off), got 9 / 5 / 8",
    ] {
        assert!(e.contains(needle), "missing {needle:?} in {e}");
    }
}

#[test]
fn deadline_shorter_than_timeout_is_rejected() {
    let e = parse("[tools.x]\ntimeout_ms = 5000\ndeadline_ms = 1000\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tools.x.deadline_ms: 1000 is shorter than timeout_ms 5000"),
        "{e}"
    );
}

#[test]
fn missing_explicit_file_is_an_error_but_missing_default_is_not() {
    let e = Config::load(Some(Path::new("/nonexistent/toolgate.toml"))).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }), "{e}");
}

#[test]
fn builtin_roots_expand_home() {
    let c = parse("[builtin]\nroots = [\"~/proj\", \"/srv\"]\nallow_local = true\n").unwrap();
    assert!(c.builtin.roots[0].is_absolute() && c.builtin.roots[0].ends_with("proj"));
    assert_eq!(c.builtin.roots[1], PathBuf::from("/srv"));
    assert!(c.builtin.allow_local);
}

#[test]
fn policy_risk_and_shell_are_per_tool_only() {
    let e = parse("[pipeline]\npolicy = \"allow\"\nrisk = \"low\"\nshell = true\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("pipeline.policy: only per tool"), "{e}");
    assert!(e.contains("pipeline.risk: only per tool"), "{e}");
    assert!(e.contains("pipeline.shell: only per tool"), "{e}");
}

#[test]
fn a_tool_is_said_to_be_shell_like_or_not_per_tool() {
    let c = Config::parse(
        "[tools.srv__run]\nshell = false\n\n[tools.srv__go]\nshell = true\n\n[tools.other]\ntimeout_ms = 5\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    let mut got: Vec<_> = c.shell_overrides.into_iter().collect();
    got.sort();
    assert_eq!(
        got,
        [("srv__go".to_owned(), true), ("srv__run".to_owned(), false)]
    );
}

#[test]
fn a_loop_guard_level_of_zero_is_off_not_an_error() {
    let c = Config::parse(
        "[pipeline.loop_guard]\nwarn_at = 0\nblock_at = 0\nhalt_at = 50\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    let g = c.settings.resolve("any").loop_guard.clone();
    assert_eq!((g.warn_at, g.block_at, g.halt_at), (0, 0, 50));
    let e = Config::parse(
        "[pipeline.loop_guard]\nwarn_at = 1\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("0 turns a level off"), "{e}");
}

#[test]
fn a_team_database_is_checked_where_it_is_configured() {
    let ok = parse(
        "[storage]\nurl = \"postgres://toolgate@db/team?sslmode=verify-full\"\n\
         password = \"keyring:team-db\"\n[team]\ndeciders = [\"alice\"]\nrules = \"team\"\n",
    )
    .unwrap();
    assert_eq!(
        ok.storage.as_ref().map(crate::team::StorageSettings::url),
        Some("postgres://toolgate@db/team?sslmode=verify-full")
    );
    assert_eq!(ok.team_deciders, Some(vec!["alice".to_owned()]));
    assert_eq!(ok.team_rules, crate::team::Sharing::Team);
    assert_eq!(ok.team_pins, crate::team::Sharing::Engine);
    for (text, says) in [
        (
            "[storage]\nurl = \"postgres://t:hunter2@db/team\"\n",
            "storage.url: the URL carries a password",
        ),
        (
            "[storage]\npassword = \"keyring:x\"\n",
            "storage.password: set only with storage.url",
        ),
        (
            "[storage]\nurl = \"postgres://t@db/team\"\n[team]\ndeciders = []\n",
            "team.deciders: an empty list",
        ),
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }
    let e = parse("[team]\nrules = \"everyone\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("rules") && e.contains("line"), "{e}");
}
