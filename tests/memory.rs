//! Memory is bounded by design: a real `toolgate serve`, hostile frames on
//! its agent socket, and its resident memory read from `/proc`. Each test
//! compares the daemon with itself before the load, so the figures hold
//! for debug and release builds alike (docs/architecture/decisions.md,
//! "Memory under hostile input is bounded by design").

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::process::Child;

use crate::common::daemon::Raw;
use crate::common::serve::{ready, serve_command};
const MIB: u64 = 1024 * 1024;

/// A `toolgate serve` in a temp dir.
struct Serve {
    dir: tempfile::TempDir,
    child: Child,
}

impl Serve {
    async fn start() -> Self {
        Self::logging("warn", Stdio::null()).await
    }

    /// Started with its log at `level`, written to `stderr`.
    async fn logging(level: &str, stderr: Stdio) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut child = serve_command(dir.path(), "")
            .arg("--no-http")
            .env("TOOLGATE_LOG", level)
            .stderr(stderr)
            .spawn()
            .unwrap();
        ready(&mut child, Duration::from_secs(20)).await;
        Self { dir, child }
    }

    async fn agent(&self) -> Raw {
        let mut c = Raw::connect(&self.dir.path().join("agent.sock")).await;
        c.initialize().await;
        c
    }

    /// (VmRSS, VmHWM) in bytes.
    fn memory(&self) -> (u64, u64) {
        let pid = self.child.id().expect("running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .map(|kb| kb * 1024)
                .unwrap_or_else(|| panic!("{name} in {status}"))
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

/// Sends `frame` (and its newline) and returns the first reply, writing
/// and reading at once: the daemon may answer before the frame is all
/// sent, and may stop reading while its budget is full.
async fn exchange(mut c: Raw, frame: Vec<u8>) -> (Raw, Value) {
    let Raw { mut rd, mut wr } = c;
    let write = async move {
        wr.write_all(&frame).await.unwrap();
        wr.write_all(b"\n").await.unwrap();
        wr
    };
    let read = async {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(60), rd.read_line(&mut line))
            .await
            .expect("a reply within 60 s")
            .unwrap();
        serde_json::from_str::<Value>(&line).expect("a JSON reply")
    };
    let (wr, reply) = tokio::join!(write, read);
    c = Raw { rd, wr };
    (c, reply)
}

/// Runs `exchange` for every frame at once, one connection each, and
/// returns the connections (still open) and the replies.
async fn all_at_once(d: &Serve, frames: Vec<Vec<u8>>) -> (Vec<Raw>, Vec<Value>) {
    let mut agents = Vec::new();
    for _ in &frames {
        agents.push(d.agent().await);
    }
    let tasks: Vec<_> = agents
        .into_iter()
        .zip(frames)
        .map(|(c, f)| tokio::spawn(exchange(c, f)))
        .collect();
    let mut conns = Vec::new();
    let mut replies = Vec::new();
    for t in tasks {
        let (c, r) = t.await.unwrap();
        conns.push(c);
        replies.push(r);
    }
    (conns, replies)
}

/// Has `n` connections ping at once, so the threads and buffers any load
/// needs exist before the daemon's memory is measured against itself.
async fn warm_up(d: &Serve, n: usize) {
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
    let (_, replies) = all_at_once(d, vec![ping; n]).await;
    assert!(
        replies.iter().all(|r| r["result"] == json!({})),
        "{replies:?}"
    );
}

fn error_message(r: &Value) -> &str {
    r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
}

// Before: each connection kept its 16 MiB read buffer after an oversized
// line, so six of them held ~100 MiB for as long as they stayed open.
#[tokio::test]
async fn oversized_frames_leave_resident_memory_within_the_bound() {
    let d = Serve::start().await;
    warm_up(&d, 6).await;
    let (idle, _) = d.memory();
    let frames = vec![vec![b'x'; 20 * MIB as usize]; 6];
    let (conns, replies) = all_at_once(&d, frames).await;
    let (rss, _) = d.memory();
    eprintln!(
        "oversized: idle {} MiB, after {} MiB",
        idle / MIB,
        rss / MIB
    );
    assert!(
        rss <= idle + 48 * MIB,
        "resident {} MiB after six refused 20 MiB frames, idle {} MiB",
        rss / MIB,
        idle / MIB
    );
    for r in &replies {
        assert_eq!(r["error"]["code"], -32600, "{r}");
        assert!(
            error_message(r).contains("exceeds the 16777216 byte limit "),
            "{r}"
        );
    }
    // The connections still work: the stream resynchronised at the newline.
    let (_, pong) = exchange(
        conns.into_iter().next().unwrap(),
        br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#.to_vec(),
    )
    .await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

// Before: ten 8 MiB requests sent together were all buffered and parsed at
// once, ~16 MiB each. Now the frame budget (64 MiB) lets in what fits and
// holds the rest back in the clients' sockets; every request is answered.
#[tokio::test]
async fn the_bytes_of_concurrent_large_frames_are_capped() {
    let d = Serve::start().await;
    warm_up(&d, 10).await;
    let (_, before) = d.memory();
    let pad = "p".repeat(8 * MIB as usize);
    let frames = (0..10)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": i, "method": "ping", "params": {"pad": pad}})
                .to_string()
                .into_bytes()
        })
        .collect();
    let (_, replies) = all_at_once(&d, frames).await;
    for r in &replies {
        assert_eq!(r["result"], json!({}), "{r}");
    }
    let (_, peak) = d.memory();
    eprintln!(
        "large frames: peak {} MiB before, {} MiB after",
        before / MIB,
        peak / MIB
    );
    assert!(
        peak <= before + 112 * MIB,
        "peak grew by {} MiB for ten 8 MiB frames",
        (peak - before) / MIB
    );
}

// Before: a nesting bomb was buffered whole (up to 16 MiB) and parsed until
// serde_json's recursion limit, and a flat array of zeros became 32 bytes
// per two bytes of text. Now both are refused at the byte that goes past
// the limit, and the peak does not move.
#[tokio::test]
async fn deep_nesting_and_huge_json_are_refused_without_growth() {
    let d = Serve::start().await;
    warm_up(&d, 3).await;
    let (_, before) = d.memory();
    let nested = |n: usize| {
        let mut f = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs_list","arguments":{"a":"#.to_vec();
        f.extend(std::iter::repeat_n(b'[', n));
        f
    };
    let mut zeros = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs_list","arguments":{"a":[0"#.to_vec();
    zeros.extend(",0".repeat(2 * MIB as usize).bytes());
    zeros.extend_from_slice(b"]}}}");
    let frames = vec![nested(8 * MIB as usize), nested(8 * MIB as usize), zeros];
    let (_, replies) = all_at_once(&d, frames).await;
    let (_, peak) = d.memory();
    eprintln!(
        "refused JSON: peak {} MiB before, {} MiB after",
        before / MIB,
        peak / MIB
    );
    assert!(
        peak <= before + 24 * MIB,
        "peak grew by {} MiB for frames refused unread",
        (peak - before) / MIB
    );
    for r in &replies[..2] {
        assert!(
            error_message(r).contains("JSON nested deeper than 64 levels"),
            "{r}"
        );
    }
    assert!(
        error_message(&replies[2]).contains("more than 262144 values"),
        "{}",
        replies[2]
    );
}

// Before: a path guard walked an 8 MiB path a step per component (24
// bytes for every 3-byte `../`) and each refusal and audit row copied the
// whole path again, outside the frame budget. Now a path longer than any
// the system opens is refused before it is walked, and refusals quote a
// few KiB of it: ten such calls cost what ten frames that do nothing cost
// (the test above).
#[tokio::test]
async fn calls_with_huge_paths_are_refused_within_the_frame_bound() {
    let d = Serve::start().await;
    warm_up(&d, 10).await;
    let (_, before) = d.memory();
    let frames = (0..10)
        .map(|i| {
            // Half climb, half are characters JSON escapes six bytes long.
            let path = if i % 2 == 0 {
                "../".repeat(8 * MIB as usize / 3)
            } else {
                "\u{1f}\"\0\\".repeat(MIB as usize / 2)
            };
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                   "params": {"name": "fs_read", "arguments": {"path": path}}})
            .to_string()
            .into_bytes()
        })
        .collect();
    let (_, replies) = all_at_once(&d, frames).await;
    let (_, peak) = d.memory();
    eprintln!(
        "huge paths: peak {} MiB before, {} MiB after",
        before / MIB,
        peak / MIB
    );
    for r in &replies {
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(r["result"]["isError"], true, "{:.300}", r.to_string());
        assert!(
            text.contains("a path can have at most") || text.contains("contains a NUL byte"),
            "{text:.300}"
        );
        assert!(text.len() <= 16 * 1024, "{} bytes", text.len());
    }
    assert!(
        peak <= before + 112 * MIB,
        "peak grew by {} MiB for ten calls with 8 MiB paths",
        (peak - before) / MIB
    );
}

// A full disk under the daemon's stderr (its log file on a full disk, or
// `/dev/full`) once made the log writer report its own failure with
// `eprintln!`, which panics when stderr cannot be written: calls ended in
// "task panicked". Logging that cannot be written is dropped instead.
#[tokio::test]
async fn a_stderr_that_cannot_be_written_never_fails_a_call() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let d = Serve::logging("trace", Stdio::from(full)).await;
    let mut c = d.agent().await;
    for id in 1..=20 {
        std::fs::write(d.dir.path().join(format!("root/{id}.txt")), "still here").unwrap();
        let r = c
            .call(id, "fs_read", json!({"path": format!("{id}.txt")}))
            .await;
        assert!(r["error"].is_null(), "{r}");
        assert!(r.to_string().contains("still here"), "{r}");
    }
}
