//! The modes of what a real daemon leaves on disk: a private data dir and
//! private files, also when an older install left them wider, and no link
//! followed where a token is written.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;
use toolgate::mcp::ServerOptions;

use crate::common::daemon::TestDaemon;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn a_wide_data_dir_and_a_stale_database_are_made_private_and_a_planted_link_is_not_followed()
{
    let d = TestDaemon::start_adjusted("", ServerOptions::default(), |_, dir| {
        // An older install: data dir 0755 with a world-readable database.
        let data = dir.join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        let db = data.join("audit.db");
        std::fs::write(&db, "").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        // Someone planted a link where the HTTP token file will be written.
        let run = dir.join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(dir.join("victim"), "untouched").unwrap();
        std::os::unix::fs::symlink(dir.join("victim"), run.join("agent.sock.http")).unwrap();
    })
    .await;
    // A call, so the WAL and its shared-memory file exist.
    let mut agent = d.raw().await;
    agent.initialize().await;
    let r = agent.call(1, "fs_list", json!({"path": "."})).await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    d.engine.audit().expect("audit").flush().await;

    let data = d.data_dir();
    assert_eq!(mode(&data), 0o700, "the data dir was narrowed");
    for name in [
        "audit.db",
        "audit.db-wal",
        "audit.db-shm",
        "audit.db-calls.jsonl",
        "audit.db-migrate.lock",
        "engine.json",
        "console.token",
        "args-hash.key",
    ] {
        assert_eq!(mode(&data.join(name)), 0o600, "{name}");
    }
    let http = d.dir.path().join("run/agent.sock.http");
    assert!(!std::fs::symlink_metadata(&http).unwrap().is_symlink());
    assert_eq!(mode(&http), 0o600);
    let token: serde_json::Value = serde_json::from_slice(&std::fs::read(&http).unwrap()).unwrap();
    assert_eq!(token["token"], d.http.1.as_str());
    assert_eq!(
        std::fs::read_to_string(d.dir.path().join("victim")).unwrap(),
        "untouched",
        "the link's target was not written"
    );
    d.stop().await;
}

#[tokio::test]
async fn a_link_in_place_of_the_database_stops_the_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(dir.path().join("elsewhere.db"), "").unwrap();
    std::os::unix::fs::symlink(dir.path().join("elsewhere.db"), data.join("audit.db")).unwrap();
    let config = toolgate::config::Config::parse("", Path::new("t.toml")).unwrap();
    let opts = toolgate::daemon::ServeOptions {
        socket: dir.path().join("run/agent.sock"),
        data_dir: data.clone(),
        http_port: None,
        ..toolgate::daemon::ServeOptions::defaults()
    };
    let e = toolgate::daemon::Daemon::start(config, &opts)
        .await
        .expect_err("a linked database is refused")
        .to_string();
    assert!(e.contains("audit.db") && e.contains("symbolic link"), "{e}");
}
