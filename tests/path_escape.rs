//! Escape attempts against the path guard, the file tools and `shell_exec`,
//! through the public API only.
//!
//! Layout of every fixture (all under one temp dir):
//! `root/` (the only allowed root) with `sub/file.txt`, and beside it
//! `outside/` with `secret.txt` and `dir/`, which no call may read or touch.

use std::fs;
use std::future::Future;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use toolgate::builtin::fs::tools;
use toolgate::builtin::shell;
use toolgate::context::{CallContext, Caller, SessionId, SessionState};
use toolgate::guard::path::{PathError, PathRoots};
use toolgate::tool::{Content, Tool, ToolResult};
use toolgate::{CallError, ErrorKind};

use crate::common::escapes::{
    CWD_ESCAPES, DIR_LINK_ESCAPES, DOT_DOT_ESCAPES, FILE_LINK_ESCAPES, NUL_BYTE_ESCAPES,
    PathLayout, SECRET,
};
use crate::common::{all_gone, running};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    roots: Arc<PathRoots>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let PathLayout { root, outside } = PathLayout::create(tmp.path());
    let roots = Arc::new(PathRoots::new(std::slice::from_ref(&root)).unwrap());
    Fixture {
        _tmp: tmp,
        root,
        outside,
        roots,
    }
}

impl Fixture {
    /// The shared layout's view of this fixture (its links and lists).
    fn layout(&self) -> PathLayout {
        PathLayout {
            root: self.root.clone(),
            outside: self.outside.clone(),
        }
    }
}

fn ctx() -> CallContext {
    CallContext {
        call_id: 1,
        caller: Arc::new(Caller::via("test")),
        session: SessionId::new("path-escape"),
        state: SessionState::default(),
    }
}

impl Fixture {
    async fn call(&self, name: &str, args: Value) -> Result<ToolResult, CallError> {
        let (_, tool) = tools(Arc::clone(&self.roots))
            .unwrap()
            .into_iter()
            .find(|(d, _)| d.name.as_str() == name)
            .unwrap();
        tool.call(args, &ctx()).await
    }

    /// Asserts every file tool refuses `path` as a guard denial on `path`.
    async fn all_tools_refuse(&self, path: &str) {
        let calls = [
            ("fs_read", json!({"path": path})),
            ("fs_list", json!({"path": path})),
            ("fs_write", json!({"path": path, "content": "pwned"})),
            (
                "fs_write",
                json!({"path": path, "content": "pwned", "mode": "append", "create_dirs": true}),
            ),
        ];
        for (tool, args) in calls {
            let e = self.call(tool, args.clone()).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::GuardDenied, "{tool} {args}: {e}");
            assert!(
                matches!(&e, CallError::GuardDenied { arg, .. } if arg == "path"),
                "{e:?}"
            );
        }
        self.assert_outside_untouched();
    }

    fn assert_outside_untouched(&self) {
        assert_eq!(self.layout().outside_changes(), None);
    }
}

// --- the path guard and the file tools --------------------------------------

#[tokio::test]
async fn dot_dot_escapes_are_refused() {
    let f = fixture();
    for p in DOT_DOT_ESCAPES {
        let e = f.roots.check(p).unwrap_err();
        assert!(matches!(e, PathError::Escapes { .. }), "{p}: {e:?}");
        f.all_tools_refuse(p).await;
    }
    let e = f
        .call("fs_read", json!({"path": "../outside/secret.txt"}))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "argument `path` refused: path `../outside/secret.txt` escapes the allowed roots ({})",
            f.root.display()
        )
    );
}

#[tokio::test]
async fn absolute_paths_outside_are_refused() {
    let f = fixture();
    for p in f.layout().absolute_outside() {
        let p = p.as_str();
        let e = f.roots.check(p).unwrap_err();
        assert!(matches!(e, PathError::Outside { .. }), "{p}: {e:?}");
        f.all_tools_refuse(p).await;
    }
    let e = f
        .call("fs_read", json!({"path": "/etc/passwd"}))
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("`/etc/passwd` is outside the allowed roots"),
        "{e}"
    );
}

#[tokio::test]
async fn absolute_paths_inside_are_allowed() {
    let f = fixture();
    let p = f.root.join("sub/file.txt").display().to_string();
    let r = f.call("fs_read", json!({"path": p})).await.unwrap();
    assert_eq!(r.joined_text(), "inside");
}

#[tokio::test]
async fn symlink_to_etc_passwd_is_refused() {
    let f = fixture();
    f.layout().link_files();
    for p in FILE_LINK_ESCAPES {
        let e = f.roots.check(p).unwrap_err();
        assert!(matches!(e, PathError::SymlinkEscape { .. }), "{p}: {e:?}");
        f.all_tools_refuse(p).await;
    }
    // The enforcement refuses on its own, without the check.
    let root = f.roots.check(".").unwrap();
    assert!(f.roots.dir(&root).open("pw").is_err());
    assert!(f.roots.dir(&root).open("sub/pw_rel").is_err());
}

#[tokio::test]
async fn symlink_to_a_dir_outside_is_refused_on_every_component() {
    let f = fixture();
    f.layout().link_dirs();
    for p in DIR_LINK_ESCAPES {
        let e = f.roots.check(p).unwrap_err();
        assert!(matches!(e, PathError::SymlinkEscape { .. }), "{p}: {e:?}");
        f.all_tools_refuse(p).await;
    }
    let e = f.roots.check("rel_out/secret.txt").unwrap_err().to_string();
    assert!(
        e.contains("through symlink `rel_out` -> `../outside`"),
        "{e}"
    );
}

#[tokio::test]
async fn symlinks_that_stay_inside_are_allowed() {
    let f = fixture();
    symlink("sub", f.root.join("alias")).unwrap();
    symlink("../sub/file.txt", f.root.join("sub/again")).unwrap();
    let r = f
        .call("fs_read", json!({"path": "alias/file.txt"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "inside");
    let r = f
        .call("fs_read", json!({"path": "sub/again"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "inside");
    f.call(
        "fs_write",
        json!({"path": "alias/new.txt", "content": "via link"}),
    )
    .await
    .unwrap();
    assert_eq!(
        fs::read_to_string(f.root.join("sub/new.txt")).unwrap(),
        "via link"
    );
}

#[tokio::test]
async fn nul_bytes_are_refused() {
    let f = fixture();
    for p in NUL_BYTE_ESCAPES {
        assert!(matches!(f.roots.check(p), Err(PathError::NulByte { .. })));
        f.all_tools_refuse(p).await;
    }
}

#[tokio::test]
async fn dot_dot_that_stays_inside_is_allowed() {
    let f = fixture();
    let r = f
        .call("fs_read", json!({"path": "sub/../sub/./file.txt"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "inside");
    let r = f.call("fs_list", json!({"path": "sub/.."})).await.unwrap();
    let Content::Json { value } = &r.content[0] else {
        panic!("{r:?}")
    };
    assert_eq!(value["entries"], json!([{"path": "sub", "kind": "dir"}]));
}

#[tokio::test]
async fn writing_through_an_escaping_symlink_changes_nothing_outside() {
    let f = fixture();
    symlink(f.outside.join("secret.txt"), f.root.join("evil")).unwrap();
    symlink("../outside/secret.txt", f.root.join("evil_rel")).unwrap();
    // Dangling: the target does not exist yet, a create would make it.
    symlink("../outside/dir/created.txt", f.root.join("dangling")).unwrap();
    symlink("../outside/dir", f.root.join("evil_dir")).unwrap();
    for p in ["evil", "evil_rel", "dangling", "evil_dir/new.txt"] {
        for mode in ["overwrite", "append", "create_new"] {
            let e = f
                .call(
                    "fs_write",
                    json!({"path": p, "content": "pwned", "mode": mode, "create_dirs": true}),
                )
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::GuardDenied, "{p} {mode}: {e}");
        }
    }
    f.assert_outside_untouched();
}

/// The check passes on a real directory; the directory is then replaced by
/// a symlink to the outside before the open. The capability handle must
/// refuse the open, read or write.
#[tokio::test]
async fn toctou_swap_after_the_check_is_still_refused() {
    for target in ["../outside", "ABSOLUTE"] {
        let f = fixture();
        fs::create_dir(f.root.join("a")).unwrap();
        fs::write(f.root.join("a/secret.txt"), "decoy").unwrap();
        let read = f.roots.check("a/secret.txt").unwrap();
        // A file to be created: it passes the check, then must not be
        // created outside.
        let create = f.roots.check("a/dir/created.txt").unwrap();
        assert_eq!(read.relative(), Path::new("a/secret.txt"));

        // The swap.
        fs::rename(f.root.join("a"), f.root.join("a_old")).unwrap();
        if target == "ABSOLUTE" {
            symlink(&f.outside, f.root.join("a")).unwrap();
        } else {
            symlink(target, f.root.join("a")).unwrap();
        }
        // Sanity: the ambient path now reaches the secret.
        assert_eq!(fs::read_to_string(read.absolute()).unwrap(), SECRET);

        let dir = f.roots.dir(&read);
        let e = dir.open(read.relative()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
        let mut opts = cap_std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        assert!(dir.open_with(read.relative(), &opts).is_err());
        assert!(dir.open_with(create.relative(), &opts).is_err());
        f.assert_outside_untouched();
    }
}

// --- shell_exec ----------------------------------------------------------------

fn shell_tool(f: &Fixture) -> Arc<dyn Tool> {
    shell::tool(
        Arc::clone(&f.roots),
        Duration::from_secs(60),
        crate::common::barrier(),
    )
    .unwrap()
    .1
}

fn read_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Drives `call` until the pid files exist and name running processes,
/// failing if the call ends first or the deadline passes.
async fn started<F>(call: std::pin::Pin<&mut F>, files: &[PathBuf]) -> Vec<u32>
where
    F: Future<Output = Result<ToolResult, CallError>>,
{
    let mut call = call;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids: Vec<u32> = files.iter().filter_map(|p| read_pid(p)).collect();
        if pids.len() == files.len() && pids.iter().all(|p| running(*p)) {
            return pids;
        }
        assert!(Instant::now() < deadline, "processes did not start");
        tokio::select! {
            r = &mut call => panic!("call ended before its processes started: {r:?}"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

/// `sh` (the child), a background `sleep` (a grandchild) and a nested shell
/// with its own background `sleep` (a great-grandchild), each writing its
/// pid to a file in the root.
const TREE: &str = "echo $$ > sh.pid; sleep 30 & echo $! > g1.pid; \
                    sh -c 'sleep 30 & echo $! > g2.pid; wait' & wait";

fn pid_files(f: &Fixture) -> Vec<PathBuf> {
    ["sh.pid", "g1.pid", "g2.pid"]
        .iter()
        .map(|n| f.root.join(n))
        .collect()
}

#[tokio::test]
async fn shell_captures_output_and_exit_code() {
    let f = fixture();
    let r = shell_tool(&f)
        .call(
            json!({"command": "cat sub/file.txt; echo oops >&2; exit 7"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(r.is_error);
    assert_eq!(
        r.joined_text(),
        "exit code: 7\n--- stdout ---\ninside\n--- stderr ---\noops\n"
    );
}

#[tokio::test]
async fn shell_cwd_cannot_escape() {
    let f = fixture();
    symlink(&f.outside, f.root.join("out")).unwrap();
    for cwd in CWD_ESCAPES {
        let e = shell_tool(&f)
            .call(json!({"command": "touch pwned", "cwd": cwd}), &ctx())
            .await
            .unwrap_err();
        assert!(
            matches!(&e, CallError::GuardDenied { arg, .. } if arg == "cwd"),
            "{cwd}: {e:?}"
        );
    }
    f.assert_outside_untouched();
}

#[tokio::test]
async fn shell_timeout_kills_the_whole_process_tree() {
    let f = fixture();
    let tool = shell_tool(&f);
    let args = json!({"command": TREE, "timeout_ms": 3000});
    let ctx = ctx();
    let mut call = pin!(tool.call(args, &ctx));
    let pids = started(call.as_mut(), &pid_files(&f)).await;
    let e = call.await.unwrap_err();
    assert!(
        matches!(e, CallError::Timeout { after } if after == Duration::from_secs(3)),
        "{e:?}"
    );
    assert!(all_gone(&pids).await, "still running: {pids:?}");
}

#[tokio::test]
async fn shell_dropped_call_kills_the_whole_process_tree() {
    let f = fixture();
    let tool = shell_tool(&f);
    let args = json!({"command": TREE, "timeout_ms": 30_000});
    let ctx = ctx();
    let mut call = Box::pin(tool.call(args, &ctx));
    let pids = started(call.as_mut(), &pid_files(&f)).await;
    drop(call);
    assert!(all_gone(&pids).await, "still running: {pids:?}");
}
