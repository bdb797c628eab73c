//! The malformed-frame fuzzer: seeded hostile frames against the agent
//! socket, the agent HTTP endpoint and the console API of one daemon.
//! Every frame's due answer comes from the JSON-RPC rules ([`oracle`]);
//! afterwards the daemon must still answer a normal call on each surface,
//! nothing may have escaped its root, and its stderr must hold no panic.

pub mod frames;
pub mod oracle;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use self::frames::{Category, FieldPath, Gen, Hostile};
use self::oracle::Expect;
use crate::client::{Console, HttpAgent, SocketAgent, reply_text};
use crate::daemon::Daemon;
use crate::escapes::{PathLayout, blocked_urls};
use crate::memwatch::MemWatch;
use crate::report::{Section, clip, thousands};
use crate::{CountingServer, Ctx};

/// The fuzz daemon's config: every tool listed, and the tools that change
/// things or reach out refused by policy, so no frame waits for a person
/// and none writes, runs or fetches (the guards still judge every
/// argument first: they run before the policy).
const CONFIG: &str = r#"allowed_tools = ["*"]
[tools.fs_write]
policy = "deny"
[tools.http_fetch]
policy = "deny"
[tools.shell_exec]
policy = "deny"
"#;

/// A cap on the failing cases a section quotes.
const QUOTE: usize = 5;

/// What went wrong on one surface, counted and quoted.
#[derive(Default)]
struct Tally {
    sent: BTreeMap<Category, u64>,
    /// Frames that were due an answer with their id, and got one.
    answered: u64,
    due: u64,
    /// Frames due a null-id error, and the null-id errors that came.
    null_due: u64,
    null_seen: u64,
    /// Cases that did not get what they were due.
    bad: Vec<String>,
    bad_count: u64,
    bytes: u64,
}

impl Tally {
    fn fail(&mut self, what: String) {
        self.bad_count += 1;
        if self.bad.len() < QUOTE {
            self.bad.push(what);
        }
    }

    fn merge(&mut self, o: Tally) {
        for (k, v) in o.sent {
            *self.sent.entry(k).or_default() += v;
        }
        self.answered += o.answered;
        self.due += o.due;
        self.null_due += o.null_due;
        self.null_seen += o.null_seen;
        self.bytes += o.bytes;
        self.bad_count += o.bad_count;
        for b in o.bad {
            if self.bad.len() < QUOTE {
                self.bad.push(b);
            }
        }
    }

    fn frames(&self) -> u64 {
        self.sent.values().sum()
    }
}

/// Shell commands with metacharacters; each would create `canary`.
fn hostile_commands(canary: &Path) -> Vec<String> {
    let c = canary.display();
    vec![
        format!("ls; touch {c}"),
        format!("$(touch {c})"),
        format!("`touch {c}`"),
        format!("ls && touch {c}"),
        format!("ls || touch {c}"),
        format!("echo x | sh -c 'touch {c}'"),
        format!("ls\ntouch {c}"),
        format!("ls > {c}"),
        format!("touch {c} &"),
        format!("eval 'touch {c}'"),
        "rm -rf / --no-preserve-root".to_owned(),
        ":(){ :|:& };:".to_owned(),
        "cat /etc/shadow".to_owned(),
    ]
}

/// Path escapes beyond the shared list: encodings and spellings that
/// must not reach outside either.
fn more_paths(layout: &PathLayout) -> Vec<String> {
    let mut p = layout.every_escape();
    p.extend(
        [
            "%2e%2e/%2e%2e/etc/passwd",
            "....//....//etc/passwd",
            "..\\..\\outside\\secret.txt",
            "sub/file.txt/../../../outside/secret.txt",
            "/proc/self/environ",
            "out/secret.txt",
            "\u{2025}/outside/secret.txt",
        ]
        .map(str::to_owned),
    );
    p.push("../".repeat(1000) + "etc/passwd");
    p
}

/// Runs the section.
pub async fn run(ctx: &Ctx) -> Section {
    let total = ctx.sizes.fuzz_frames;
    let mut s = Section::new(
        "Malformed frames",
        format!(
            "Seeded hostile frames (seed {}) against one daemon's agent socket, agent HTTP endpoint and console API: \
             random bytes, truncated JSON, nesting up to 20,000 deep, strings up to {} KiB (and {} frames over the 16 MiB limit), \
             every field of initialize, tools/list, tools/call (each built-in tool) and gate mode set to a value of every other JSON type, \
             and calls whose arguments are path escapes, SSRF URLs and shell metacharacters.",
            ctx.seed,
            ctx.sizes.max_huge / 1024,
            ctx.sizes.oversized
        ),
    );
    if let Err(e) = oracle::self_check() {
        s.check("the oracle agrees with the JSON-RPC rules", false, e);
        return s;
    }
    match fuzz(ctx, total, &mut s).await {
        Ok(()) => {}
        Err(e) => s.check("the section ran to its end", false, format!("{e:#}")),
    }
    s
}

async fn fuzz(ctx: &Ctx, total: usize, s: &mut Section) -> anyhow::Result<()> {
    let counting = CountingServer::start().await?;
    let (mut d, layout) = Daemon::with_escape_layout(&ctx.bin, CONFIG).await?;
    let canary = d.dir().join("canary");
    let hostile = Hostile {
        paths: more_paths(&layout),
        urls: blocked_urls(counting.port),
        commands: hostile_commands(&canary),
    };
    let fds_before = crate::procfs::fd_count(d.pid);
    let watch = MemWatch::start(&d).await?;
    let started = Instant::now();

    let http_share = total / 10;
    let console_share = total / 20;
    let socket_share = total - http_share - console_share;
    let systematic = frames::every_wrong_type(&frames::templates());
    let sizes = &ctx.sizes;
    let conns = sizes.fuzz_conns;
    let mut socket = Tally::default();
    let mut tasks = Vec::new();
    for c in 0..conns {
        let mine: Vec<(FieldPath, Value)> =
            systematic.iter().skip(c).step_by(conns).cloned().collect();
        let n = socket_share / conns;
        let g = Gen::new(
            ctx.seed.wrapping_add(c as u64),
            hostile.clone(),
            sizes.max_huge,
            0,
        );
        let mut g = g;
        // The oversized frames go to the first connection: each costs its
        // reader a 17 MiB skip.
        if c == 0 {
            g.oversized_left = sizes.oversized;
        }
        let at = d.at.socket.clone();
        tasks.push(tokio::spawn(async move {
            socket_conn(&at, g, n, mine, c != 1).await
        }));
    }
    let mut http = Tally::default();
    let mut http_tasks = Vec::new();
    for c in 0..4u64 {
        let agent = HttpAgent::connect(&d.at, &format!("fuzz-http-{c}")).await?;
        let g = Gen::new(
            ctx.seed ^ (0x4854_5450 + c),
            hostile.clone(),
            sizes.max_huge.min(4 << 20),
            0,
        );
        let n = http_share / 4;
        http_tasks.push(tokio::spawn(async move { http_frames(agent, g, n).await }));
    }
    let console = Console::new(&d.at);
    let mut con = Tally::default();
    let mut con_tasks = Vec::new();
    let policy = console.get("/api/policy").await?;
    for c in 0..4u64 {
        let rng = StdRng::seed_from_u64(ctx.seed ^ (0xC0_5013 + c));
        let g = Gen::new(ctx.seed ^ (0xC0 + c), hostile.clone(), 1 << 20, 0);
        let (console, policy) = (console.clone(), policy.clone());
        let n = console_share / 4;
        con_tasks.push(tokio::spawn(async move {
            console_requests(console, policy, rng, g, n).await
        }));
    }
    for t in tasks {
        socket.merge(t.await?);
    }
    for t in http_tasks {
        http.merge(t.await?);
    }
    for t in con_tasks {
        con.merge(t.await?);
    }
    let hangups = hang_up_mid_frame(&d.at.socket, 20).await;
    let elapsed = started.elapsed();

    // The daemon afterwards.
    let alive = d.running();
    s.check("the daemon kept running", alive, format!("pid {}", d.pid));
    let normal = normal_calls(&d).await;
    s.check(
        "a normal call still works on every surface afterwards",
        normal.is_ok(),
        normal.err().map_or_else(
            || "socket fs_read, HTTP fs_read and console snapshot all answered".to_owned(),
            |e| format!("{e:#}"),
        ),
    );

    for (name, t) in [("socket", &socket), ("HTTP", &http)] {
        s.check(
            format!("{name}: every well-framed request got a JSON-RPC answer with its id"),
            t.answered == t.due && t.bad.is_empty(),
            if t.bad.is_empty() {
                format!("{} of {}", thousands(t.answered), thousands(t.due))
            } else {
                format!(
                    "{} of {}; {} wrong, e.g. {}",
                    thousands(t.answered),
                    thousands(t.due),
                    thousands(t.bad_count),
                    t.bad.join(" / ")
                )
            },
        );
        s.check(
            format!("{name}: every frame that is not a request got one JSON-RPC error"),
            t.null_seen == t.null_due,
            format!(
                "{} null-id errors for {} such frames",
                thousands(t.null_seen),
                thousands(t.null_due)
            ),
        );
    }
    s.check(
        "console: every request answered, no 5xx but 503, every /api refusal a JSON error",
        con.bad.is_empty(),
        if con.bad.is_empty() {
            format!("{} requests", thousands(con.frames()))
        } else {
            format!("{} wrong, e.g. {}", con.bad_count, con.bad.join(" / "))
        },
    );
    let stderr = d.stderr();
    let panics: Vec<&str> = stderr.lines().filter(|l| l.contains("panicked")).collect();
    s.check(
        "no panic in the daemon's stderr",
        panics.is_empty(),
        panics.first().map_or_else(
            || format!("{} stderr lines, none a panic", stderr.lines().count()),
            |l| clip(l, 200),
        ),
    );
    let outside = layout.outside_changes();
    s.check(
        "nothing outside the root was read into a reply or changed",
        outside.is_none(),
        outside.unwrap_or_else(|| "outside/ as created".to_owned()),
    );
    s.check(
        "no shell metacharacter ran a command",
        !canary.exists(),
        format!(
            "canary {} absent",
            if canary.exists() { "PRESENT" } else { "file" }
        ),
    );
    s.check(
        "no SSRF URL opened a connection",
        counting.accepted() == 0,
        format!("{} connections to the counting server", counting.accepted()),
    );

    let mut by_cat: BTreeMap<Category, u64> = BTreeMap::new();
    for t in [&socket, &http] {
        for (k, v) in &t.sent {
            *by_cat.entry(*k).or_default() += v;
        }
    }
    let frames = socket.frames() + http.frames() + con.frames();
    s.count("frames in all", frames);
    for c in Category::ALL {
        s.count(
            &format!("{} (socket and HTTP)", c.name()),
            by_cat.get(&c).copied().unwrap_or(0),
        );
    }
    s.count(
        "of the wrong types, every field × every other type in turn",
        systematic.len() as u64,
    );
    s.count("to the agent socket", socket.frames());
    s.count("to the agent HTTP endpoint", http.frames());
    s.count("to the console API", con.frames());
    s.count("connections hung up mid-frame", hangups);
    s.figure(
        "bytes sent",
        format!(
            "{:.1} MB",
            (socket.bytes + http.bytes + con.bytes) as f64 / 1e6
        ),
    );
    s.figure(
        "time",
        format!(
            "{:.1} s ({:.0} frames/s)",
            elapsed.as_secs_f64(),
            frames as f64 / elapsed.as_secs_f64()
        ),
    );
    watch.finish(s, ctx.bounds).await;
    let fds_after = crate::daemon::fds_settle(d.pid, fds_before + 4).await;
    s.figure(
        "open fds before / after",
        format!("{fds_before} / {fds_after}"),
    );
    let _ = d.stop().await;
    Ok(())
}

/// Expectations of one socket connection, shared by its writer and reader.
#[derive(Default)]
struct Due {
    /// Ids still due an answer: how many, and the first one's category
    /// and start (quoted when it never comes).
    ids: HashMap<String, (u32, Category, String)>,
    /// Requests due an answer with their id, in all.
    id_frames: u64,
    /// Frames due a null-id error.
    nulls: u64,
}

/// The agent socket's frame limit (`toolgate::mcp::frame::MAX_FRAME`).
const MAX_FRAME: usize = 16 * 1024 * 1024;

/// The id of the ping each connection ends with.
const END: &str = "\"fz-end\"";

async fn socket_conn(
    socket: &Path,
    mut g: Gen,
    n: usize,
    systematic: Vec<(FieldPath, Value)>,
    handshake: bool,
) -> Tally {
    let mut t = Tally::default();
    let connected = if handshake {
        SocketAgent::connect(socket, "fuzz").await
    } else {
        SocketAgent::raw(socket).await
    };
    let agent = match connected {
        Ok(a) => a,
        Err(e) => {
            t.fail(format!("connect: {e:#}"));
            return t;
        }
    };
    let (mut rd, mut wr) = agent.into_halves();
    let due = Arc::new(Mutex::new(Due::default()));
    let d2 = due.clone();
    let writer = tokio::spawn(async move {
        let mut sent: BTreeMap<Category, u64> = BTreeMap::new();
        let mut bytes = 0u64;
        let frames = systematic
            .into_iter()
            .map(Some)
            .chain(std::iter::repeat_with(|| None).take(n));
        let mut err = None;
        for sys in frames {
            let f = match sys {
                Some((field, value)) => g.systematic(&field, value),
                None => g.next(),
            };
            record(&d2, &f.bytes, f.category);
            *sent.entry(f.category).or_default() += 1;
            bytes += f.bytes.len() as u64 + 1;
            let w = async {
                wr.write_all(&f.bytes).await?;
                wr.write_all(b"\n").await
            };
            if let Err(e) = w.await {
                err = Some(format!("write: {e}"));
                break;
            }
        }
        let end = format!(r#"{{"jsonrpc":"2.0","id":{END},"method":"ping"}}"#);
        let _ = wr.write_all(end.as_bytes()).await;
        let _ = wr.write_all(b"\n").await;
        (sent, bytes, err, wr)
    });
    let mut line = String::new();
    let mut seen_end = false;
    loop {
        {
            let d = due.lock().unwrap_or_else(PoisonError::into_inner);
            if seen_end && d.ids.is_empty() && t.null_seen >= d.nulls {
                break;
            }
        }
        line.clear();
        // Silence this long after the last frame means the rest is lost.
        let read = tokio::time::timeout(Duration::from_secs(30), rd.read_line(&mut line)).await;
        match read {
            Ok(Ok(0)) => {
                t.fail("the daemon closed the connection".to_owned());
                break;
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                t.fail(format!("read: {e}"));
                break;
            }
            Err(_) => break,
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            t.fail(format!("a line that is not JSON: {}", clip(&line, 120)));
            continue;
        };
        match msg.get("id") {
            None if msg.get("method").is_some() => {}
            None | Some(Value::Null) => t.null_seen += 1,
            Some(id) => {
                let key = id.to_string();
                if key == END {
                    seen_end = true;
                    continue;
                }
                let mut d = due.lock().unwrap_or_else(PoisonError::into_inner);
                match d.ids.get_mut(&key) {
                    Some((n, _, _)) => {
                        *n -= 1;
                        if *n == 0 {
                            d.ids.remove(&key);
                        }
                        t.answered += 1;
                    }
                    None => t.fail(format!("an answer nobody asked for: id {}", clip(&key, 60))),
                }
            }
        }
    }
    match writer.await {
        Ok((sent, bytes, err, _wr)) => {
            t.sent = sent;
            t.bytes = bytes;
            if let Some(e) = err {
                t.fail(e);
            }
        }
        Err(e) => t.fail(format!("writer: {e}")),
    }
    let d = due.lock().unwrap_or_else(PoisonError::into_inner);
    t.null_due = d.nulls;
    t.due = d.id_frames;
    for (id, (n, cat, start)) in d.ids.iter().take(QUOTE) {
        t.fail(format!(
            "no answer to id {} ({}, {n}×; the frame began {start})",
            clip(id, 30),
            cat.name(),
        ));
    }
    t.bad_count += d.ids.len().saturating_sub(QUOTE) as u64;
    t
}

/// Records what `frame` is due. The oracle runs before the lock is
/// taken: parsing a large frame takes a while, and the reader must not
/// wait for it (the daemon drops a client that stops reading).
fn record(due: &Arc<Mutex<Due>>, frame: &[u8], category: Category) {
    // Past a limit: refused unparsed, with the id its first bytes show.
    let expect = oracle::expect_limited(frame, frame.len() > MAX_FRAME, true);
    let start = clip(&String::from_utf8_lossy(&frame[..frame.len().min(400)]), 80);
    let mut d = due.lock().unwrap_or_else(PoisonError::into_inner);
    match expect {
        Expect::Id(id) => {
            d.id_frames += 1;
            d.ids.entry(id).or_insert((0, category, start)).0 += 1;
        }
        Expect::NullError => d.nulls += 1,
        Expect::Nothing => {}
    }
}

/// HTTP frames: the status and body each is due.
async fn http_frames(agent: HttpAgent, mut g: Gen, n: usize) -> Tally {
    let mut t = Tally::default();
    for _ in 0..n {
        let f = g.next();
        *t.sent.entry(f.category).or_default() += 1;
        t.bytes += f.bytes.len() as u64;
        let big = f.bytes.len() > toolgate::mcp::http::MAX_BODY;
        let want = oracle::expect_limited(&f.bytes, false, false);
        match &want {
            Expect::Id(_) => t.due += 1,
            Expect::NullError => t.null_due += 1,
            Expect::Nothing => {}
        }
        let (status, body) = match agent.post(f.bytes).await {
            Ok(r) => r,
            // Over the body limit the server may answer 413 and close
            // before the client has written the whole body: the client
            // then sees its write fail. Refused either way.
            Err(e) if big && is_cut_short(&e) => (413, Vec::new()),
            Err(e) => {
                t.fail(format!("{}: no HTTP answer: {e:#}", f.category.name()));
                continue;
            }
        };
        let json: Option<Value> = serde_json::from_slice(&body).ok();
        let held = match (&want, status) {
            (_, 500..) => false,
            (_, 413) if big => {
                match want {
                    Expect::Id(_) => t.answered += 1,
                    Expect::NullError => t.null_seen += 1,
                    Expect::Nothing => {}
                }
                true
            }
            // An answer with the id: a result, or a refusal as 400.
            (Expect::Id(id), 200 | 400) => {
                let ok = json.as_ref().is_some_and(|j| {
                    serde_json::from_str::<Value>(id).is_ok_and(|want| j["id"] == want)
                });
                t.answered += u64::from(ok);
                ok
            }
            (Expect::NullError, 400) => {
                let ok = json.as_ref().is_some_and(|j| j["error"]["code"].is_i64());
                t.null_seen += u64::from(ok);
                ok
            }
            (Expect::Nothing, 202) => true,
            _ => false,
        };
        if !held {
            t.fail(format!(
                "{}: due {want:?}, got HTTP {status} {}",
                f.category.name(),
                clip(&String::from_utf8_lossy(&body), 100)
            ));
        }
    }
    t
}

/// Whether a request failed because the server closed the connection
/// while its body was still being written.
fn is_cut_short(e: &anyhow::Error) -> bool {
    let text = format!("{e:#}");
    text.contains("Broken pipe") || text.contains("Connection reset")
}

/// A path segment, percent-encoded.
fn seg(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Console requests: fuzzed bodies, ids, names and query strings on every
/// route; nothing here may change the engine's state (decisions go to ids
/// that do not exist, policy edits carry a stale version).
async fn console_requests(
    console: Console,
    policy: Value,
    mut rng: StdRng,
    mut g: Gen,
    n: usize,
) -> Tally {
    use reqwest::Method;
    let mut t = Tally::default();
    let version = policy["version"].as_u64().unwrap_or(0);
    let doc = policy["doc"].clone();
    let doc_fields = frames::fields(std::slice::from_ref(&doc));
    let test_input = json!({"tool": "fs_read", "args": {"path": "sub/file.txt"}, "caller": "x"});
    let test_fields = frames::fields(std::slice::from_ref(&test_input));
    for _ in 0..n {
        let word = {
            let f = g.next();
            String::from_utf8_lossy(&f.bytes)
                .chars()
                .take(200)
                .collect::<String>()
        };
        let noise: Vec<u8> = g.next().bytes;
        let wrong = frames::wrong_values()
            .choose(&mut rng)
            .cloned()
            .unwrap_or_default();
        let mutated =
            |rng: &mut StdRng, base: &Value, fields: &[FieldPath]| match fields.choose(rng) {
                Some(f) => frames::mutate(
                    std::slice::from_ref(base),
                    &(0, f.1.clone()),
                    wrong.clone(),
                    0,
                ),
                None => base.clone(),
            };
        let (method, path, body): (Method, String, Option<Vec<u8>>) = match rng.random_range(0..12) {
            0 => (Method::POST, "/api/policy/validate".into(), Some(mutated(&mut rng, &doc, &doc_fields).to_string().into_bytes())),
            1 => (Method::POST, "/api/policy/validate".into(), Some(noise)),
            2 => (
                Method::PUT,
                "/api/policy".into(),
                Some(json!({"doc": mutated(&mut rng, &doc, &doc_fields), "base_version": version + 1000}).to_string().into_bytes()),
            ),
            3 => (Method::PUT, "/api/policy".into(), Some(noise)),
            4 => (Method::POST, "/api/policy/test".into(), Some(mutated(&mut rng, &test_input, &test_fields).to_string().into_bytes())),
            5 => {
                let action = ["approve", "deny", "scope"].choose(&mut rng).copied().unwrap_or("deny");
                let id = if rng.random_bool(0.5) { format!("{}", rng.random_range(100_000..u64::MAX)) } else { seg(&word) };
                let body = if rng.random_bool(0.5) { noise } else { json!({"reason": wrong, "always": wrong, "scope": wrong}).to_string().into_bytes() };
                (Method::POST, format!("/api/approvals/{id}/{action}"), Some(body))
            }
            6 => (Method::GET, format!("/api/calls/{}", seg(&word)), None),
            7 => (Method::GET, format!("/api/tools/{}", seg(&word)), None),
            8 => (Method::GET, format!("/api/audit?limit={}&tool={}&since_ms={}", seg(&word), seg(&word), seg(&wrong.to_string())), None),
            // Never a number: a valid position would open the live stream.
            9 => (Method::GET, format!("/api/events?after=x{}", seg(&word)), None),
            10 => (Method::POST, format!("/api/breakers/{}/reset", seg(&word)), None),
            _ => (Method::DELETE, format!("/api/rules/{}", seg(&word)), None),
        };
        let label = format!("{method} {}", clip(&path, 60));
        t.bytes += body.as_ref().map_or(0, |b| b.len() as u64);
        *t.sent.entry(Category::WrongTypes).or_default() += 1;
        let big = body
            .as_ref()
            .is_some_and(|b| b.len() > toolgate::console::error::MAX_BODY);
        match console.send(method, &path, body).await {
            // As on the HTTP endpoint: over the limit, the server may
            // answer 413 and close before the whole body is written.
            Err(e) if big && is_cut_short(&e) => {}
            Err(e) => t.fail(format!("{label}: no answer: {e:#}")),
            Ok((status, body)) => {
                let json: Option<Value> = serde_json::from_slice(&body).ok();
                let error_body = json
                    .as_ref()
                    .is_some_and(|j| j["error"]["code"].is_string());
                let held = match status {
                    503 => error_body,
                    500.. => false,
                    405 => true,
                    400..=499 => error_body,
                    _ => json.is_some(),
                };
                if !held {
                    t.fail(format!(
                        "{label}: HTTP {status} {}",
                        clip(&String::from_utf8_lossy(&body), 100)
                    ));
                }
            }
        }
    }
    t
}

/// Connections that send half a frame and hang up.
async fn hang_up_mid_frame(socket: &Path, n: u64) -> u64 {
    let mut done = 0;
    for i in 0..n {
        if let Ok(mut a) = SocketAgent::raw(socket).await {
            let frame = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"fs_re"#
            );
            let (_, mut wr) = {
                let _ = a.fresh_id();
                a.into_halves()
            };
            if wr.write_all(frame.as_bytes()).await.is_ok() {
                done += 1;
            }
        }
    }
    done
}

/// A normal call on each surface: socket, HTTP, console.
async fn normal_calls(d: &Daemon) -> anyhow::Result<()> {
    let replies = d
        .each_surface("after-fuzz", "fs_read", json!({"path": "sub/file.txt"}))
        .await?;
    for (surface, r) in ["socket", "HTTP"].iter().zip(&replies) {
        anyhow::ensure!(reply_text(r) == "inside", "{surface} fs_read answered {r}");
    }
    Ok(())
}
