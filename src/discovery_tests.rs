use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;

use super::*;

/// An engine description in `dir`, for `pid`, with sockets at
/// `dir/agent.sock` and `dir/agent.sock.ctl` (not bound).
fn info(dir: &Path, pid: u32) -> EngineInfo {
    EngineInfo {
        pid,
        exe: Some(PathBuf::from("/usr/bin/toolgate")),
        version: "0.1.0".into(),
        started_ms: 1_700_000_000_000,
        data_dir: dir.to_owned(),
        agent_socket: dir.join("agent.sock"),
        control_socket: dir.join("agent.sock.ctl"),
        http: Some(HttpInfo {
            url: "http://127.0.0.1:4000/mcp".into(),
            token_file: dir.join("agent.sock.http"),
        }),
        console: None,
    }
}

/// Binds both sockets of `info`; they accept connections (into the
/// backlog) while the listeners live.
fn listen(info: &EngineInfo) -> (UnixListener, UnixListener) {
    (
        UnixListener::bind(&info.agent_socket).unwrap(),
        UnixListener::bind(&info.control_socket).unwrap(),
    )
}

/// The pid of a process that has exited (and been reaped).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn the_file_round_trips_is_owner_only_and_holds_no_token() {
    let dir = tempfile::tempdir().unwrap();
    let written = info(dir.path(), 42);
    write(dir.path(), &written).unwrap();
    let path = file(dir.path());
    assert_eq!(read(dir.path()).unwrap(), Some(written));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"console\": null"), "reserved: {text}");
    assert!(!text.contains("token\":"), "a token file path only: {text}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, [FILE_NAME], "no temp file is left");
}

#[test]
fn no_file_reads_as_none_and_garbage_as_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(read(dir.path()).unwrap(), None);
    std::fs::write(file(dir.path()), "{\"pid\": ").unwrap();
    let e = read(dir.path()).unwrap_err();
    assert!(e.to_string().contains("engine.json"), "{e}");
}

#[tokio::test]
async fn a_live_engine_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let me = info(dir.path(), std::process::id());
    let _l = listen(&me);
    write(dir.path(), &me).unwrap();
    assert_eq!(find_live(dir.path()).await, Some(me));
}

#[tokio::test]
async fn a_file_left_by_a_dead_engine_is_ignored_and_may_be_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let dead = info(dir.path(), dead_pid());
    // Even with sockets answering (another process took the paths), a dead
    // pid makes the file stale.
    let _l = listen(&dead);
    write(dir.path(), &dead).unwrap();
    assert_eq!(find_live(dir.path()).await, None);
    assert_eq!(owner_pid(dir.path()), None);
    let me = info(dir.path(), std::process::id());
    write(dir.path(), &me).unwrap();
    assert_eq!(find_live(dir.path()).await, Some(me));
}

#[tokio::test]
async fn a_live_pid_whose_sockets_do_not_answer_is_not_an_engine() {
    let dir = tempfile::tempdir().unwrap();
    // Our pid is alive, but nothing listens: a reused pid, say.
    let me = info(dir.path(), std::process::id());
    write(dir.path(), &me).unwrap();
    assert_eq!(find_live(dir.path()).await, None);
    assert_eq!(owner_pid(dir.path()), Some(std::process::id()));
    // One socket is not enough either.
    let _agent = UnixListener::bind(&me.agent_socket).unwrap();
    assert_eq!(find_live(dir.path()).await, None);
}

#[tokio::test]
async fn an_unreadable_file_is_no_engine() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(file(dir.path()), "not json").unwrap();
    assert_eq!(find_live(dir.path()).await, None);
}

#[test]
fn a_published_file_is_removed_on_drop_only_while_it_is_ours() {
    let dir = tempfile::tempdir().unwrap();
    let me = info(dir.path(), std::process::id());
    let published = Published::new(&me).unwrap();
    assert!(published.path().exists());
    drop(published);
    assert!(!file(dir.path()).exists());

    let published = Published::new(&me).unwrap();
    // Another engine took over the data dir and wrote its own file.
    let other = info(dir.path(), std::process::id() + 1);
    write(dir.path(), &other).unwrap();
    drop(published);
    assert_eq!(read(dir.path()).unwrap(), Some(other));
}

#[tokio::test]
async fn locate_prefers_the_flag_then_a_live_engine_then_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("run/agent.sock");
    let flag = dir.path().join("flag.sock");

    // Nothing written: the default, with its control socket beside it.
    let found = locate(None, dir.path(), &default).await;
    assert_eq!(found.source, Source::Default);
    assert_eq!(found.agent, default);
    assert_eq!(found.control, dir.path().join("run/agent.sock.ctl"));

    // A stale file does not count.
    write(dir.path(), &info(dir.path(), dead_pid())).unwrap();
    assert_eq!(
        locate(None, dir.path(), &default).await.source,
        Source::Default
    );

    // A live engine's file wins over the default, sockets as it says.
    let mut me = info(dir.path(), std::process::id());
    me.control_socket = dir.path().join("elsewhere.ctl");
    let _l = listen(&me);
    write(dir.path(), &me).unwrap();
    let found = locate(None, dir.path(), &default).await;
    assert_eq!(found.agent, me.agent_socket);
    assert_eq!(found.control, me.control_socket);
    assert_eq!(found.source, Source::Discovery(Box::new(me)));

    // The flag wins over everything.
    let found = locate(Some(&flag), dir.path(), &default).await;
    assert_eq!(
        (found.agent, found.control, found.source),
        (flag.clone(), dir.path().join("flag.sock.ctl"), Source::Flag)
    );
}
