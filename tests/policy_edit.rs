//! Policy edits on a running daemon: the allow/deny lists and rules apply
//! without a restart, agents are told their tool list changed, the file
//! keeps its comments, and a bad or stale edit changes nothing.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate::policy::editor::EditError;

use crate::common::daemon::{Raw, TestDaemon};

const CONFIG: &str = r#"# my toolgate config
[policy]
# be careful
preset = "default"
"#;

const WAIT: Duration = Duration::from_secs(20);

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("a tools/list result")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The next `list_changed` notification (replies to nothing in between).
async fn list_changed(agent: &mut Raw) {
    let note = agent.recv().await.expect("a notification");
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
}

async fn agent(d: &TestDaemon) -> Raw {
    let mut a = d.raw().await;
    a.initialize().await;
    a
}

#[tokio::test]
async fn an_allowlist_edit_hides_a_tool_from_a_connected_agent_without_a_restart() {
    let d = TestDaemon::start_watched(CONFIG).await;
    let mut checks = d.checks.clone().expect("watched");
    checks.borrow_and_update();
    let mut a = agent(&d).await;
    assert!(names(&a.request(1, "tools/list", json!({})).await).contains(&"fs_write".to_owned()));

    let view = d.editor.read().unwrap();
    let mut doc = view.doc.clone();
    doc.denied_tools.push("fs_write".into());
    let applied = d.editor.apply(&doc, view.doc.version).await.unwrap();
    assert_eq!(applied.version, view.doc.version + 1);
    assert!(
        applied.diff.contains("+denied_tools = [\"fs_write\"]"),
        "{}",
        applied.diff
    );

    // The connected agent is told, and its next list and call see it.
    list_changed(&mut a).await;
    let after = names(&a.request(2, "tools/list", json!({})).await);
    assert!(!after.contains(&"fs_write".to_owned()), "{after:?}");
    assert!(after.contains(&"fs_read".to_owned()), "{after:?}");
    let call = a
        .call(3, "fs_write", json!({"path": "x.txt", "content": "x"}))
        .await;
    let text = call["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("deny pattern `fs_write`"), "{call}");
    assert!(!d.root().join("x.txt").exists());
    assert!(
        !d.engine
            .tools()
            .iter()
            .any(|t| t.name.as_str() == "fs_write")
    );

    // Saved, comments kept.
    let file = std::fs::read_to_string(d.config_path()).unwrap();
    assert!(file.contains("# my toolgate config"), "{file}");
    assert!(file.contains("# be careful"), "{file}");
    assert!(file.contains("denied_tools = [\"fs_write\"]"), "{file}");

    // The watcher looks at the write and applies nothing a second time.
    tokio::time::timeout(WAIT, checks.changed())
        .await
        .expect("the watcher sees the write")
        .unwrap();
    assert_eq!(d.engine.policy().version(), applied.version);

    // The next edit, based on the answer's version, is not stale.
    doc.denied_tools.clear();
    let again = d.editor.apply(&doc, applied.version).await.unwrap();
    assert_eq!(again.version, applied.version + 1);
    list_changed(&mut a).await;
    assert!(names(&a.request(4, "tools/list", json!({})).await).contains(&"fs_write".to_owned()));
    d.stop().await;
}

#[tokio::test]
async fn an_invalid_or_stale_edit_changes_neither_the_file_nor_the_running_policy() {
    let d = TestDaemon::start_watched(CONFIG).await;
    let view = d.editor.read().unwrap();
    let version = view.doc.version;

    let mut bad = view.doc.clone();
    bad.allowed_tools = Some(vec!["fs_[".into()]);
    bad.denied_tools = vec!["shell_exec".into()];
    match d.editor.apply(&bad, version).await {
        Err(EditError::Invalid(errors)) => {
            assert_eq!(
                errors[0].field.as_deref(),
                Some("allowed_tools[0]"),
                "{errors:?}"
            );
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    let mut stale = view.doc.clone();
    stale.denied_tools = vec!["shell_exec".into()];
    let e = d.editor.apply(&stale, version - 1).await.unwrap_err();
    assert!(matches!(e, EditError::Conflict { .. }), "{e:?}");
    assert_eq!(e.code(), "conflict");

    assert_eq!(std::fs::read_to_string(d.config_path()).unwrap(), CONFIG);
    assert_eq!(d.engine.policy().version(), version);
    assert!(
        d.engine
            .tools()
            .iter()
            .any(|t| t.name.as_str() == "shell_exec")
    );
    let v = d.editor.validate(&bad).unwrap();
    assert!(!v.ok);
    assert_eq!(std::fs::read_to_string(d.config_path()).unwrap(), CONFIG);
    d.stop().await;
}

/// An outside edit of the allow/deny lists applies on reload, not only the
/// policy (the lists once applied from the next start).
#[tokio::test]
async fn an_outside_edit_of_the_lists_is_applied_on_reload() {
    let d = TestDaemon::start_watched(CONFIG).await;
    let mut a = agent(&d).await;
    let path = d.config_path();
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, format!("allowed_tools = [\"fs_*\"]\n{CONFIG}")).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    list_changed(&mut a).await;
    let after = names(&a.request(1, "tools/list", json!({})).await);
    assert!(after.iter().all(|n| n.starts_with("fs_")), "{after:?}");
    assert!(!after.is_empty());
    d.stop().await;
}
