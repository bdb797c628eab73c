use std::fs;

use serde_json::{Value, json};

use super::*;
use crate::context::{Caller, SessionId, SessionState};
use crate::error::ErrorKind;
use crate::tool::Content;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    tools: Vec<(ToolDef, Arc<dyn Tool>)>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let roots = Arc::new(PathRoots::new(std::slice::from_ref(&root)).unwrap());
    Fixture {
        _tmp: tmp,
        root,
        tools: tools(roots).unwrap(),
    }
}

fn ctx() -> CallContext {
    CallContext {
        call_id: 1,
        caller: Arc::new(Caller::via("test")),
        session: SessionId::new("s"),
        state: SessionState::default(),
    }
}

impl Fixture {
    async fn call(&self, name: &str, args: Value) -> Result<ToolResult, CallError> {
        let (_, tool) = self
            .tools
            .iter()
            .find(|(d, _)| d.name.as_str() == name)
            .unwrap();
        tool.call(args, &ctx()).await
    }
}

#[test]
fn definitions_carry_risk_guards_and_docs() {
    let f = fixture();
    let names: Vec<_> = f.tools.iter().map(|(d, _)| d.name.as_str()).collect();
    assert_eq!(names, ["fs_read", "fs_write", "fs_list"]);
    for (def, _) in &f.tools {
        assert_eq!(def.guards.len(), 1, "{}", def.name);
        assert_eq!(def.guards[0].arg, "path");
        assert_eq!(def.guards[0].kind, GuardKind::Path);
        assert!(!def.description.is_empty());
    }
    assert_eq!(f.tools[0].0.risk, Risk::Low);
    assert_eq!(f.tools[1].0.risk, Risk::Medium);
    assert_eq!(f.tools[2].0.risk, Risk::Low);
    let schema = &f.tools[1].0.input_schema;
    assert_eq!(
        schema["properties"]["mode"]["enum"],
        json!(["overwrite", "append", "create_new"])
    );
    assert_eq!(schema["properties"]["mode"]["default"], "overwrite");
    assert!(
        schema["properties"]["content"]["description"]
            .as_str()
            .unwrap()
            .contains("text to write")
    );
}

#[tokio::test]
async fn read_returns_text_and_pages_large_files() {
    let f = fixture();
    fs::write(f.root.join("a.txt"), "hello world").unwrap();
    let r = f.call("fs_read", json!({"path": "a.txt"})).await.unwrap();
    assert_eq!(r.joined_text(), "hello world");
    assert!(!r.is_error);

    let r = f
        .call("fs_read", json!({"path": "a.txt", "max_bytes": 5}))
        .await
        .unwrap();
    let text = r.joined_text();
    assert!(
        text.starts_with("hello\n[fs_read: bytes 0..5 of 11"),
        "{text}"
    );
    assert!(text.contains("offset=5"), "{text}");

    let r = f
        .call("fs_read", json!({"path": "a.txt", "offset": 6}))
        .await
        .unwrap();
    assert!(
        r.joined_text()
            .starts_with("world\n[fs_read: bytes 6..11 of 11")
    );
}

#[tokio::test]
async fn pages_never_split_a_character() {
    let f = fixture();
    fs::write(f.root.join("u.txt"), "aé€b").unwrap(); // 1 + 2 + 3 + 1 bytes
    let r = f
        .call("fs_read", json!({"path": "u.txt", "max_bytes": 4}))
        .await
        .unwrap();
    assert!(r.joined_text().starts_with("aé\n"), "{}", r.joined_text());
    assert_eq!(r.meta["end"], 3);
    // Starting inside `€` skips its continuation bytes.
    let r = f
        .call("fs_read", json!({"path": "u.txt", "offset": 4}))
        .await
        .unwrap();
    assert!(r.joined_text().starts_with("b\n"), "{}", r.joined_text());
}

#[tokio::test]
async fn binary_files_are_described_not_returned() {
    let f = fixture();
    fs::write(f.root.join("b.bin"), [0x89, b'P', 0, 1, 2, 0xff]).unwrap();
    let r = f.call("fs_read", json!({"path": "b.bin"})).await.unwrap();
    assert_eq!(
        r.joined_text(),
        "`b.bin` is a binary file (6 bytes); fs_read returns UTF-8 text only"
    );
    assert_eq!(r.meta["binary"], true);
}

/// Each failure names the problem and is the caller's, so the breaker does
/// not count a read of a missing file.
#[tokio::test]
async fn read_failures_say_what_is_wrong() {
    let f = fixture();
    fs::create_dir(f.root.join("d")).unwrap();
    let e = f
        .call("fs_read", json!({"path": "nope.txt"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ToolFailed);
    assert_eq!(e.to_string(), "`nope.txt` does not exist");
    assert_eq!(e.fault(), Some(Fault::Caller));
    let e = f.call("fs_read", json!({"path": "d"})).await.unwrap_err();
    assert!(e.to_string().contains("use fs_list"), "{e}");
    assert_eq!(e.fault(), Some(Fault::Caller));
    fs::write(f.root.join("a.txt"), "x").unwrap();
    let e = f
        .call("fs_read", json!({"path": "a.txt", "offset": 9}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
    assert_eq!(e.fault(), Some(Fault::Caller));
    let e = f
        .call("fs_read", json!({"path": "a.txt/x"}))
        .await
        .unwrap_err();
    assert_eq!(e.fault(), Some(Fault::Caller), "{e}");
    assert!(!e.counts_as_failure(), "{e}");
}

/// Reads above [`INLINE_READ_BYTES`] go to the blocking pool and read
/// from the same opened file; the result is the same either way.
#[tokio::test]
async fn reads_above_the_inline_limit_page_the_same() {
    let f = fixture();
    let big = INLINE_READ_BYTES as usize + 10;
    fs::write(f.root.join("big.txt"), "a".repeat(big)).unwrap();
    let max = MAX_READ_BYTES;
    let r = f
        .call("fs_read", json!({"path": "big.txt", "max_bytes": max}))
        .await
        .unwrap();
    assert_eq!(r.meta["size"], json!(big));
    assert_eq!(r.meta["end"], json!(big));
    let r = f
        .call(
            "fs_read",
            json!({"path": "big.txt", "offset": 10, "max_bytes": max}),
        )
        .await
        .unwrap();
    assert_eq!(r.meta["start"], json!(10));
    assert_eq!(r.meta["end"], json!(big));
    // The default page is inline and says where to go on.
    let r = f.call("fs_read", json!({"path": "big.txt"})).await.unwrap();
    assert_eq!(r.meta["end"], json!(DEFAULT_READ_BYTES));
}

/// A FIFO is refused before it is opened (opening one would block the
/// worker until a writer came).
#[tokio::test]
async fn a_fifo_is_refused_without_opening_it() {
    let f = fixture();
    let fifo = f.root.join("p");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let e = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        f.call("fs_read", json!({"path": "p"})),
    )
    .await
    .expect("fs_read of a FIFO must not block")
    .unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert_eq!(e.fault(), Some(Fault::Caller));
}

#[tokio::test]
async fn write_modes() {
    let f = fixture();
    let w = |args: Value| f.call("fs_write", args);
    let r = w(json!({"path": "n.txt", "content": "one"})).await.unwrap();
    assert_eq!(
        r.joined_text(),
        "wrote 3 bytes to `n.txt` (created the file)"
    );
    w(json!({"path": "n.txt", "content": "+two", "mode": "append"}))
        .await
        .unwrap();
    assert_eq!(fs::read_to_string(f.root.join("n.txt")).unwrap(), "one+two");
    let e = w(json!({"path": "n.txt", "content": "x", "mode": "create_new"}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    let r = w(json!({"path": "n.txt", "content": "new"})).await.unwrap();
    assert!(r.joined_text().contains("replaced"));
    assert_eq!(fs::read_to_string(f.root.join("n.txt")).unwrap(), "new");
}

#[tokio::test]
async fn write_creates_directories_only_when_asked() {
    let f = fixture();
    let e = f
        .call("fs_write", json!({"path": "x/y/z.txt", "content": "c"}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("create_dirs"), "{e}");
    assert!(!f.root.join("x").exists());
    f.call(
        "fs_write",
        json!({"path": "x/y/z.txt", "content": "c", "create_dirs": true}),
    )
    .await
    .unwrap();
    assert_eq!(fs::read_to_string(f.root.join("x/y/z.txt")).unwrap(), "c");
}

#[tokio::test]
async fn list_is_sorted_bounded_by_depth_and_does_not_follow_symlinks() {
    let f = fixture();
    fs::create_dir_all(f.root.join("b/inner/deeper")).unwrap();
    fs::write(f.root.join("a.txt"), "12345").unwrap();
    fs::write(f.root.join("b/inner/c.txt"), "1").unwrap();
    std::os::unix::fs::symlink("b", f.root.join("link")).unwrap();

    let r = f.call("fs_list", json!({})).await.unwrap();
    let Content::Json { value } = &r.content[0] else {
        panic!("{r:?}")
    };
    assert_eq!(value["path"], ".");
    assert_eq!(
        value["entries"],
        json!([
            {"path": "a.txt", "kind": "file", "size": 5},
            {"path": "b", "kind": "dir"},
            {"path": "link", "kind": "symlink"},
        ])
    );
    assert_eq!(value["truncated"], false);

    let r = f
        .call("fs_list", json!({"path": "b", "depth": 2}))
        .await
        .unwrap();
    let Content::Json { value } = &r.content[0] else {
        panic!("{r:?}")
    };
    let paths: Vec<_> = value["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["inner", "inner/c.txt", "inner/deeper"]);
}

#[tokio::test]
async fn list_of_a_file_fails_clearly() {
    let f = fixture();
    fs::write(f.root.join("a.txt"), "x").unwrap();
    let e = f
        .call("fs_list", json!({"path": "a.txt"}))
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "`a.txt` is not a directory");
}

#[test]
fn decode_tells_text_from_binary() {
    assert_eq!(decode(b"abc", false, false), Some((0, "abc")));
    assert_eq!(decode(b"a\0c", false, false), None);
    assert_eq!(decode(&[b'a', 0xff, b'c'], false, false), None);
    // A truncated trailing character is fine only if the file goes on.
    assert_eq!(decode(&[b'a', 0xe2, 0x82], false, true), Some((0, "a")));
    assert_eq!(decode(&[b'a', 0xe2, 0x82], false, false), None);
    assert_eq!(decode(&[0x82, 0xac, b'b'], true, false), Some((2, "b")));
}
