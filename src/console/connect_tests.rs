use std::path::{Path, PathBuf};

use super::*;
use crate::secrets::{MemoryStore, Secret, SecretError, SecretName};

/// A keychain the test can look into after the desk used it.
struct Shared(Arc<MemoryStore>);

impl SecretStore for Shared {
    fn get(&self, name: &SecretName) -> Result<Secret, SecretError> {
        self.0.get(name)
    }
    fn set(&self, name: &SecretName, value: &Secret) -> Result<(), SecretError> {
        self.0.set(name, value)
    }
    fn delete(&self, name: &SecretName) -> Result<(), SecretError> {
        self.0.delete(name)
    }
}

const CURSOR: &str = r#"{
  // Cursor's global servers
  "mcpServers": {
    "notes": { "command": "notes-server", "args": ["--dir", "/srv/notes"], "env": { "API_KEY": "k-123456" } }
  }
}
"#;

fn desk(home: &Path, store: Arc<MemoryStore>) -> ConnectDesk {
    let home: PathBuf = home.to_owned();
    ConnectDesk::new(
        move || ConnectEnv::in_home(&home),
        move || Box::new(Shared(store.clone())),
    )
}

fn cursor_file(home: &Path) -> PathBuf {
    let f = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(&f, CURSOR).unwrap();
    f
}

fn plan_body(client: ClientId, action: Action) -> PlanBody {
    PlanBody { client, action }
}

#[tokio::test]
async fn the_desk_lists_plans_applies_and_undoes_on_blocking_threads() {
    let home = tempfile::tempdir().unwrap();
    let file = cursor_file(home.path());
    let store = Arc::new(MemoryStore::new());
    let desk = desk(home.path(), store.clone());

    let all = desk.status().await.unwrap();
    assert_eq!(all.home, home.path().to_string_lossy());
    let cursor = all
        .clients
        .iter()
        .find(|c| c.id == ClientId::Cursor)
        .unwrap();
    assert!(cursor.detected && !cursor.connected);
    let names: Vec<&str> = cursor
        .files
        .iter()
        .flat_map(|f| f.servers.iter().map(|s| s.name.as_str()))
        .collect();
    assert_eq!(names, ["notes"]);

    let plan = desk
        .plan(plan_body(ClientId::Cursor, Action::Connect))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        CURSOR,
        "a plan writes nothing"
    );
    assert!(
        plan.files
            .iter()
            .any(|f| f.diff.contains("+") && f.path == file.to_string_lossy())
    );
    assert!(
        plan.files.iter().all(|f| !f.diff.contains("k-123456")),
        "the secret never shows in a diff"
    );

    let applied = desk.apply(ApplyBody { plan }).await.unwrap();
    assert!(!applied.backups.is_empty());
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("mcp-bridge")
    );
    assert!(
        !std::fs::read_to_string(home.path().join(".config/toolgate/config.toml"))
            .unwrap()
            .contains("k-123456"),
        "the secret went to the keychain, not toolgate's file"
    );
    let cursor = desk.status().await.unwrap().clients;
    assert!(
        cursor
            .iter()
            .any(|c| c.id == ClientId::Cursor && c.connected)
    );

    let undo = desk
        .plan(plan_body(ClientId::Cursor, Action::Disconnect))
        .await
        .unwrap();
    desk.apply(ApplyBody { plan: undo }).await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), CURSOR);
}

#[tokio::test]
async fn a_plan_overtaken_by_an_edit_is_a_conflict_and_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let file = cursor_file(home.path());
    let desk = desk(home.path(), Arc::new(MemoryStore::new()));
    let plan = desk
        .plan(plan_body(ClientId::Cursor, Action::Connect))
        .await
        .unwrap();
    let edited = CURSOR.replace("/srv/notes", "/srv/other");
    std::fs::write(&file, &edited).unwrap();

    let e = desk.apply(ApplyBody { plan }).await.unwrap_err();
    assert_eq!(e.code, Code::Conflict);
    assert_eq!(e.code.status(), axum::http::StatusCode::CONFLICT);
    assert!(
        e.message.contains(&*file.to_string_lossy()),
        "{}",
        e.message
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
}

#[tokio::test]
async fn engine_refusals_keep_their_line_and_get_a_code_a_client_can_act_on() {
    let home = tempfile::tempdir().unwrap();
    let desk = desk(home.path(), Arc::new(MemoryStore::new()));
    // Nothing connected yet: undoing is behind the times, not a failure.
    let e = desk
        .plan(plan_body(ClientId::Zed, Action::Disconnect))
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::Stale);
    assert!(
        e.message.starts_with("Zed was not connected by toolgate"),
        "{}",
        e.message
    );
    // Hooks for a client without a hook system: a request that makes no sense.
    let e = desk
        .plan(plan_body(ClientId::Zed, Action::InstallHooks))
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::Invalid);

    let bad = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
    std::fs::write(&bad, "{ \"mcpServers\": { ").unwrap();
    let e = desk
        .plan(plan_body(ClientId::Cursor, Action::Connect))
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::Invalid);
    assert!(e.message.contains("mcp.json:"), "{}", e.message);
}

#[test]
fn a_plan_body_names_its_client_and_action_and_nothing_else() {
    let ok: PlanBody = serde_json::from_str(r#"{"client":"cursor","action":"connect"}"#).unwrap();
    assert_eq!((ok.client, ok.action), (ClientId::Cursor, Action::Connect));
    assert!(
        serde_json::from_str::<PlanBody>(r#"{"client":"cursor","action":"connect","x":1}"#)
            .is_err()
    );
    assert!(serde_json::from_str::<PlanBody>(r#"{"client":"emacs","action":"connect"}"#).is_err());
}
