//! Coding agents' own tools, gated through their hooks: the documented
//! payloads of Claude Code, Cursor and Gemini CLI (`tests/fixtures/hooks/`)
//! fed to the real `toolgate hook run <agent>`, the way the agent runs it
//! (the payload on stdin, a stripped environment with HOME and PATH, the
//! project as working directory), against a real `toolgate serve` whose
//! data dir and config are at their default places under that HOME.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

use crate::common::serve::{TOOLGATE, ready};

/// A temp HOME with toolgate's config and data dir where it looks for
/// them, a project dir, and (once started) `toolgate serve` on it.
pub(crate) struct Home {
    pub(crate) dir: tempfile::TempDir,
    serve: Option<Child>,
}

impl Home {
    /// A HOME whose config is `config` (the project dir is the file root).
    pub(crate) fn new(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = Self { dir, serve: None };
        std::fs::create_dir_all(home.project()).unwrap();
        std::fs::create_dir_all(home.config().parent().unwrap()).unwrap();
        std::fs::write(home.config(), config).unwrap();
        home
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub(crate) fn project(&self) -> PathBuf {
        self.home().join("proj")
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.home().join(".config/toolgate/config.toml")
    }

    /// A command with the environment an agent gives its hooks, stripped
    /// down to HOME and PATH.
    fn command(&self) -> Command {
        let mut cmd = Command::new(TOOLGATE);
        cmd.env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(self.project())
            .kill_on_drop(true);
        cmd
    }

    /// Starts `toolgate serve` (its socket in the temp dir, everything
    /// else at the defaults under HOME) and waits until it serves.
    pub(crate) async fn serve(&mut self, extra: &[&str]) {
        let mut cmd = self.command();
        cmd.arg("serve")
            .arg("--socket")
            .arg(self.dir.path().join("agent.sock"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        ready(&mut child, Duration::from_secs(20)).await;
        self.serve = Some(child);
    }

    /// Starts `toolgate hook run <agent>` with `payload` on stdin.
    pub(crate) async fn start_hook(&self, agent: &str, payload: &Value) -> Child {
        let mut child = self
            .command()
            .args(["hook", "run", agent])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(payload.to_string().as_bytes())
            .await
            .unwrap();
        drop(stdin);
        child
    }

    /// Runs the hook to the end.
    pub(crate) async fn hook(&self, agent: &str, payload: &Value) -> HookOut {
        let started = Instant::now();
        let child = self.start_hook(agent, payload).await;
        HookOut::of(child, started).await
    }

    /// Runs a CLI command against the engine (found from HOME).
    pub(crate) async fn cli(&self, args: &[&str]) -> String {
        let out = self.command().args(args).output().await.unwrap();
        assert!(
            out.status.success(),
            "toolgate {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The audit rows, oldest first.
    pub(crate) async fn audit(&self) -> Vec<Value> {
        self.cli(&["audit", "--json", "--limit", "50"])
            .await
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The pending approval requests.
    pub(crate) async fn pending(&self) -> Vec<Value> {
        serde_json::from_str::<Value>(&self.cli(&["approvals", "--json"]).await)
            .unwrap()
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// What a hook printed, how it exited, and how long it took.
#[derive(Debug)]
pub(crate) struct HookOut {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) exit: i32,
    pub(crate) took: Duration,
}

impl HookOut {
    pub(crate) async fn of(child: Child, started: Instant) -> Self {
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("the hook answers")
            .unwrap();
        Self {
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
            exit: out.status.code().unwrap_or(-1),
            took: started.elapsed(),
        }
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    /// Claude Code's decision and reason.
    pub(crate) fn claude(&self) -> (String, String) {
        let v = self.json();
        let out = &v["hookSpecificOutput"];
        assert_eq!(out["hookEventName"], "PreToolUse", "{v}");
        (
            out["permissionDecision"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            out["permissionDecisionReason"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    }
}

/// A documented payload from `tests/fixtures/hooks/`.
pub(crate) fn fixture(agent: &str, name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/hooks/{agent}/{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// Claude Code's Bash payload (before or after) for `command`, in `home`'s project.
pub(crate) fn claude_bash(home: &Home, name: &str, command: &str, id: &str) -> Value {
    let mut v = fixture("claude-code", name);
    v["cwd"] = json!(home.project());
    v["tool_input"]["command"] = json!(command);
    v["tool_use_id"] = json!(id);
    v
}

/// Polls `check` every 50 ms until it gives a value, for at most `within`.
pub(crate) async fn until<T, F, Fut>(within: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(v) = check().await {
            return Some(v);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

const DENY_CURL: &str = r#"
[[policy.rules]]
tool = "shell_exec"
arg = "command"
regex = '^curl '
verdict = "deny"
reason = "agents fetch through http_fetch, not curl"

[[policy.rules]]
tool = "shell_exec"
arg = "command"
regex = '^ls -la$'
verdict = "allow"
reason = "listing is routine"
"#;

fn roots(home: &Home, rules: &str) -> String {
    format!(
        "[builtin]\nroots = [{:?}]\n{rules}",
        home.project().display().to_string()
    )
}

#[tokio::test]
async fn a_denials_reason_reaches_each_agents_hook_output() {
    let mut home = Home::new("");
    std::fs::write(home.config(), roots(&home, DENY_CURL)).unwrap();
    home.serve(&[]).await;
    let curl = "curl https://example.com/install.sh";

    let claude = home
        .hook(
            "claude-code",
            &claude_bash(&home, "pre_tool_use_bash", curl, "toolu_deny"),
        )
        .await;
    assert_eq!(claude.exit, 0, "{claude:?}");
    let (decision, reason) = claude.claude();
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("agents fetch through http_fetch, not curl"),
        "{reason}"
    );

    let mut gemini = fixture("gemini-cli", "before_tool_shell");
    gemini["tool_input"]["command"] = json!(curl);
    let gemini = home.hook("gemini-cli", &gemini).await;
    assert_eq!(gemini.json()["decision"], "deny", "{gemini:?}");
    assert!(
        gemini.json()["reason"]
            .as_str()
            .unwrap()
            .contains("not curl"),
        "{gemini:?}"
    );

    let mut cursor = fixture("cursor", "before_shell_execution");
    cursor["command"] = json!(curl);
    let cursor = home.hook("cursor", &cursor).await;
    assert_eq!(cursor.json()["permission"], "deny", "{cursor:?}");
    assert!(
        cursor.json()["agent_message"]
            .as_str()
            .unwrap()
            .contains("not curl"),
        "{cursor:?}"
    );

    // Each is one audit row under the agent's name for its tool.
    let rows = home.audit().await;
    let tools: Vec<&str> = rows.iter().filter_map(|r| r["tool"].as_str()).collect();
    for shown in [
        "Claude Code · Bash",
        "Gemini CLI · run_shell_command",
        "Cursor · Shell",
    ] {
        assert!(tools.contains(&shown), "{shown} in {tools:?}");
    }
    assert!(
        rows.iter()
            .all(|r| r["decision"] == "denied" || r["outcome"] != "ok"),
        "{rows:?}"
    );
}

#[tokio::test]
async fn an_edit_of_toolgates_config_is_refused_without_asking() {
    let mut home = Home::new("");
    // The whole HOME is a file root, so only self-protection stands
    // between the agent and toolgate's config.
    let config = format!(
        "[builtin]\nroots = [{:?}]\n",
        home.home().display().to_string()
    );
    std::fs::write(home.config(), config).unwrap();
    home.serve(&[]).await;

    let mut edit = fixture("claude-code", "pre_tool_use_edit");
    edit["tool_input"]["file_path"] = json!(home.config());
    edit["tool_input"]["old_string"] = json!("[builtin]");
    edit["tool_input"]["new_string"] = json!("[policy]\npreset = \"autonomous\"\n[builtin]");
    let out = home.hook("claude-code", &edit).await;
    let (decision, reason) = out.claude();
    assert_eq!(decision, "deny", "{out:?}");
    assert!(reason.contains("toolgate"), "{reason}");
    assert!(
        out.took < Duration::from_secs(10),
        "refused at once, not asked: {out:?}"
    );

    let cat = format!("cat {}", home.config().display());
    let out = home
        .hook(
            "claude-code",
            &claude_bash(&home, "pre_tool_use_bash", &cat, "toolu_cat"),
        )
        .await;
    assert_eq!(out.claude().0, "deny", "{out:?}");
    let approve = home
        .hook(
            "claude-code",
            &claude_bash(&home, "pre_tool_use_bash", "toolgate approve 1", "toolu_ap"),
        )
        .await;
    assert_eq!(approve.claude().0, "deny", "{approve:?}");
    assert!(home.pending().await.is_empty(), "nobody was asked");
    let rows = home.audit().await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(
        rows.iter().all(|r| r["error_kind"] == "guard_denied"),
        "{rows:?}"
    );
}

#[tokio::test]
async fn post_tool_use_completes_the_audit_row() {
    let mut home = Home::new("");
    std::fs::write(home.config(), roots(&home, DENY_CURL)).unwrap();
    home.serve(&[]).await;

    let pre = home
        .hook(
            "claude-code",
            &claude_bash(&home, "pre_tool_use_bash", "ls -la", "toolu_ok"),
        )
        .await;
    assert_eq!(pre.claude().0, "allow", "{pre:?}");
    let mut post = claude_bash(&home, "post_tool_use_bash", "ls -la", "toolu_ok");
    post["tool_response"]["stdout"] = json!("total 0\ndrwxr-xr-x 2 user user 40 .");
    let post = home.hook("claude-code", &post).await;
    assert_eq!((post.exit, post.stdout.as_str()), (0, ""), "{post:?}");

    let rows = home.audit().await;
    let row = rows
        .iter()
        .find(|r| r["tool"] == "Claude Code · Bash")
        .expect("the call's row");
    assert_eq!(row["decision"], "allowed", "{row}");
    assert_eq!(row["outcome"], "ok", "{row}");
    assert!(row["output_size"].as_u64().unwrap() > 0, "{row}");
    assert!(
        row["caller"].as_str().unwrap().contains("Claude Code"),
        "{row}"
    );
    assert_eq!(row["session"], "claude-code:abc123");

    // A failed run is the agent tool's failure, recorded on its row.
    let pre = home
        .hook(
            "claude-code",
            &claude_bash(&home, "pre_tool_use_bash", "ls -la", "toolu_fail"),
        )
        .await;
    assert_eq!(pre.claude().0, "allow");
    let failed = claude_bash(&home, "post_tool_use_failure_bash", "ls -la", "toolu_fail");
    assert_eq!(home.hook("claude-code", &failed).await.exit, 0);
    let rows = home.audit().await;
    assert_eq!(
        rows.len(),
        2,
        "one row per call, gate and report together: {rows:?}"
    );
    let last = rows.last().unwrap();
    assert_eq!(last["error_kind"], "tool_failed", "{last}");
    assert!(
        last["error_message"]
            .as_str()
            .unwrap()
            .contains("non-zero status code 1"),
        "{last}"
    );
}

#[tokio::test]
async fn gemini_and_cursor_after_hooks_find_their_call_without_an_id() {
    let mut home = Home::new("");
    std::fs::write(home.config(), roots(&home, DENY_CURL)).unwrap();
    home.serve(&[]).await;
    let mut before = fixture("gemini-cli", "before_tool_shell");
    before["tool_input"]["command"] = json!("ls -la");
    assert_eq!(
        home.hook("gemini-cli", &before).await.json()["decision"],
        "allow"
    );
    let mut after = fixture("gemini-cli", "after_tool_shell");
    after["tool_input"]["command"] = json!("ls -la");
    assert_eq!(home.hook("gemini-cli", &after).await.json(), json!({}));

    let mut before = fixture("cursor", "before_shell_execution");
    before["command"] = json!("ls -la");
    assert_eq!(
        home.hook("cursor", &before).await.json()["permission"],
        "allow"
    );
    let mut after = fixture("cursor", "after_shell_execution");
    after["command"] = json!("ls -la");
    assert_eq!(home.hook("cursor", &after).await.exit, 0);

    let rows = home.audit().await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter().all(|r| r["outcome"] == "ok"),
        "both rows complete: {rows:?}"
    );
}

#[tokio::test]
async fn a_risky_bash_call_waits_for_a_person_who_approves_it() {
    let mut home = Home::new("");
    std::fs::write(home.config(), roots(&home, "")).unwrap();
    home.serve(&[]).await;
    let started = Instant::now();
    let mut hook = home
        .start_hook(
            "claude-code",
            &claude_bash(&home, "pre_tool_use_bash", "rm -rf build", "toolu_rm"),
        )
        .await;
    let request = until(Duration::from_secs(20), || async {
        home.pending().await.into_iter().next()
    })
    .await
    .expect("the call waits for a person");
    assert_eq!(request["tool"], "Claude Code · Bash", "{request}");
    assert!(
        hook.try_wait().unwrap().is_none(),
        "the hook waits while the person decides"
    );
    let id = request["id"].to_string();
    home.cli(&["approve", &id]).await;
    let out = HookOut::of(hook, started).await;
    assert_eq!(out.claude().0, "allow", "{out:?}");
}

#[tokio::test]
async fn with_no_engine_the_fallback_comes_within_a_second_and_never_allows() {
    let home = Home::new("");
    for (agent, payload) in [
        ("claude-code", fixture("claude-code", "pre_tool_use_bash")),
        ("cursor", fixture("cursor", "before_shell_execution")),
        ("gemini-cli", fixture("gemini-cli", "before_tool_shell")),
    ] {
        let out = home.hook(agent, &payload).await;
        assert!(out.took < Duration::from_secs(1), "{agent}: {out:?}");
        assert_eq!(out.exit, 0, "{out:?}");
        assert!(!out.stdout.contains("allow"), "{agent}: {out:?}");
        assert!(
            out.stdout.contains("\"ask\""),
            "{agent}: the agent asks its user: {out:?}"
        );
        assert_eq!(out.stderr.trim().lines().count(), 1, "one line: {out:?}");
        assert!(out.stderr.contains("toolgate is not running"), "{out:?}");
    }
    std::fs::write(home.config(), "[hooks]\nwhen_engine_down = \"deny\"\n").unwrap();
    let out = home
        .hook("claude-code", &fixture("claude-code", "pre_tool_use_bash"))
        .await;
    assert!(out.took < Duration::from_secs(1), "{out:?}");
    assert_eq!(out.claude().0, "deny", "{out:?}");
}

#[tokio::test]
async fn toolgates_own_mcp_tools_are_not_gated_twice_and_bad_payloads_never_allow() {
    let mut home = Home::new("");
    std::fs::write(home.config(), roots(&home, "")).unwrap();
    home.serve(&[]).await;
    let own = home
        .hook(
            "claude-code",
            &fixture("claude-code", "pre_tool_use_mcp_toolgate"),
        )
        .await;
    assert_eq!((own.exit, own.stdout.as_str()), (0, ""), "{own:?}");
    let bad = home.hook("claude-code", &json!("not an object")).await;
    assert_eq!(bad.exit, 2, "{bad:?}");
    assert!(bad.stderr.contains("is not a JSON object"), "{bad:?}");
    assert!(home.audit().await.is_empty());
}

#[tokio::test]
async fn web_fetch_meets_the_ssrf_guard_and_gemini_writes_meet_the_roots() {
    let mut home = Home::new("");
    std::fs::write(home.config(), roots(&home, "")).unwrap();
    home.serve(&[]).await;
    let mut fetch = fixture("claude-code", "pre_tool_use_webfetch");
    fetch["tool_input"]["url"] = json!("http://169.254.169.254/latest/meta-data/");
    let out = home.hook("claude-code", &fetch).await;
    let (decision, reason) = out.claude();
    assert_eq!(decision, "deny", "{out:?}");
    assert!(reason.contains("169.254.169.254"), "{reason}");

    let mut write = fixture("gemini-cli", "before_tool_write_file");
    write["tool_input"]["file_path"] = json!("/etc/cron.d/agent");
    let out = home.hook("gemini-cli", &write).await;
    assert_eq!(
        out.json()["decision"],
        "deny",
        "outside every root: {out:?}"
    );
    let mut inside = fixture("gemini-cli", "before_tool_write_file");
    inside["tool_input"]["file_path"] = json!(home.project().join("notes.md"));
    let out = home.hook("gemini-cli", &inside).await;
    assert_eq!(
        out.json()["decision"],
        "allow",
        "a write inside the project is medium risk: {out:?}"
    );
    assert!(home.pending().await.is_empty(), "nobody was asked");
    let kinds: Vec<Value> = home
        .audit()
        .await
        .iter()
        .map(|r| r["error_kind"].clone())
        .collect();
    assert_eq!(
        kinds[..2],
        [json!("guard_denied"), json!("guard_denied")],
        "{kinds:?}"
    );
}
