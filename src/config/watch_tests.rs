use std::time::Duration;

use tokio::time::timeout;

use super::*;

/// Generous: inotify plus the 200 ms debounce is well under a second, but
/// CI machines are shared. A hang fails the test instead of blocking it.
const WAIT: Duration = Duration::from_secs(20);

fn server(name: &str) -> String {
    format!("[[servers]]\nname = \"{name}\"\ntransport = \"stdio\"\ncommand = \"true\"\n")
}

/// Replaces the file the way editors and `toolgate import > …` do: write a
/// temporary file in the same directory, then rename it over the config.
fn atomic_write(path: &Path, text: &str) {
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn names(c: &Config) -> Vec<String> {
    c.servers.iter().map(|s| s.name.clone()).collect()
}

async fn next_status(rx: &mut watch::Receiver<ReloadStatus>) -> ReloadStatus {
    timeout(WAIT, rx.changed())
        .await
        .expect("no reload status within the timeout")
        .expect("watcher dropped");
    rx.borrow_and_update().clone()
}

async fn next_config(rx: &mut watch::Receiver<Arc<Config>>) -> Arc<Config> {
    timeout(WAIT, rx.changed())
        .await
        .expect("no new config within the timeout")
        .expect("watcher dropped");
    rx.borrow_and_update().clone()
}

fn start(path: &Path) -> ConfigWatcher {
    let initial = Config::load(Some(path)).unwrap();
    ConfigWatcher::start(path, initial, Box::new(|_| {})).unwrap()
}

#[tokio::test]
async fn write_replace_break_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, server("one")).unwrap();
    let w = start(&path);
    let (mut config, mut status) = (w.config(), w.status());
    assert_eq!(names(&config.borrow_and_update()), ["one"]);
    assert!(matches!(*status.borrow_and_update(), ReloadStatus::Initial));

    // 1. In-place write.
    std::fs::write(&path, server("two")).unwrap();
    assert_eq!(names(&*next_config(&mut config).await), ["two"]);
    assert!(matches!(
        next_status(&mut status).await,
        ReloadStatus::Applied { generation: 1 }
    ));

    // 2. Atomic rename replace (the watch on the directory survives it).
    atomic_write(&path, &format!("{}{}", server("two"), server("three")));
    assert_eq!(names(&*next_config(&mut config).await), ["two", "three"]);
    assert!(matches!(
        next_status(&mut status).await,
        ReloadStatus::Applied { generation: 2 }
    ));

    // 3. Invalid edit: the error is published, the old config stays.
    atomic_write(&path, &format!("{}{}", server("two"), server("two")));
    match next_status(&mut status).await {
        ReloadStatus::Rejected {
            kept_generation,
            error,
        } => {
            assert_eq!(kept_generation, 2);
            let msg = error.to_string();
            assert!(msg.contains("servers[1].name: `two` is already"), "{msg}");
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    assert!(
        !config.has_changed().unwrap(),
        "a bad file must not publish"
    );
    assert_eq!(names(&config.borrow()), ["two", "three"]);

    // 4. Fixed again.
    atomic_write(&path, &server("four"));
    assert_eq!(names(&*next_config(&mut config).await), ["four"]);
    assert!(matches!(
        next_status(&mut status).await,
        ReloadStatus::Applied { generation: 3 }
    ));
}

#[tokio::test]
async fn removed_file_keeps_config_and_same_text_only_clears_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, server("one")).unwrap();
    let w = start(&path);
    let (mut config, mut status) = (w.config(), w.status());
    config.borrow_and_update();

    std::fs::remove_file(&path).unwrap();
    match next_status(&mut status).await {
        ReloadStatus::Rejected { error, .. } => {
            assert!(matches!(*error, ConfigError::Read { .. }), "{error}");
        }
        other => panic!("expected Rejected, got {other:?}"),
    }

    // The same bytes come back: status clears, no new config is published
    // (nothing to restart).
    atomic_write(&path, &server("one"));
    assert!(matches!(
        next_status(&mut status).await,
        ReloadStatus::Applied { generation: 0 }
    ));
    assert!(!config.has_changed().unwrap());
}

#[tokio::test]
async fn other_files_in_the_directory_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, server("one")).unwrap();
    let w = start(&path);
    let (mut config, mut status) = (w.config(), w.status());
    config.borrow_and_update();
    status.borrow_and_update();

    // A broken neighbour must not be read as the config...
    std::fs::write(dir.path().join("other.toml"), "not [valid").unwrap();
    // ...and a later real change is the first thing reported.
    std::fs::write(&path, server("two")).unwrap();
    assert!(matches!(
        next_status(&mut status).await,
        ReloadStatus::Applied { generation: 1 }
    ));
    assert_eq!(names(&*next_config(&mut config).await), ["two"]);
}

#[tokio::test]
async fn overrides_apply_to_every_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "").unwrap();
    let initial = Config::load(Some(&path)).unwrap();
    let w =
        ConfigWatcher::start(&path, initial, Box::new(|c: &mut Config| c.strict = true)).unwrap();
    let mut config = w.config();
    std::fs::write(&path, server("x")).unwrap();
    let c = next_config(&mut config).await;
    assert!(c.strict, "the CLI's --strict survives a reload");
}

#[test]
fn start_creates_a_missing_directory_and_rejects_non_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/sub/config.toml");
    let w = ConfigWatcher::start(&path, Config::default(), Box::new(|_| {})).unwrap();
    assert!(path.parent().unwrap().is_dir());
    drop(w);
    assert!(matches!(
        ConfigWatcher::start(Path::new("/"), Config::default(), Box::new(|_| {})),
        Err(WatchError::NotAFile(_))
    ));
}

/// The console's policy editor writes through [`ConfigWriter`] and applies
/// the new config itself; the watcher must not publish it a second time
/// (that would bump the policy version again and stale the editor's own
/// next edit).
#[tokio::test]
async fn a_write_through_the_writer_is_looked_at_but_not_published() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, server("one")).unwrap();
    let w = start(&path);
    let (mut config, mut checks, status) = (w.config(), w.checks(), w.status());
    config.borrow_and_update();
    assert_eq!(*checks.borrow_and_update(), 0);

    let text = server("two");
    let parsed = Config::parse(&text, &path).unwrap();
    w.writer().write(&text, parsed).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    timeout(WAIT, checks.changed())
        .await
        .expect("the watcher looks at the write")
        .unwrap();
    assert!(!config.has_changed().unwrap(), "published a second time");
    assert_eq!(
        names(&config.borrow()),
        ["two"],
        "the writer's config is in force"
    );
    assert!(matches!(*status.borrow(), ReloadStatus::Initial));

    // An outside edit afterwards is reloaded as usual.
    atomic_write(&path, &server("three"));
    assert_eq!(names(&*next_config(&mut config).await), ["three"]);
}
