//! The reliability harness: real `toolgate serve` processes, driven by
//! real clients over the agent socket, the agent HTTP endpoint and the
//! console API, under hostile input, upstream faults, `kill -9` and load.
//!
//! Sections (each starts its own daemon in a temp dir, and reports what
//! it tried, how many, what held and its figures):
//!
//! - `fuzz`: seeded malformed frames on all three surfaces;
//! - `upstream`: an upstream server that crashes, hangs, is slow, floods,
//!   answers garbage and changes its tools;
//! - `kill`: `kill -9` under load, then a restart;
//! - `load`: many concurrent agents;
//! - `escapes`: the SSRF, path and trust-wrapper escape lists.
//!
//! Quick mode (the default under `cargo test`, which the README's test
//! command runs) uses small counts and fails when something does not
//! hold; memory figures fail it only with `--max-rss-mb` or
//! `--max-settled-ratio`. Full mode (`cargo bench --bench reliability`,
//! or `--full`) uses the full counts and writes `docs/RELIABILITY.md`.
//! `--seed N` repeats a run; `--only NAME` runs one section.

// A harness binary: printing is its output.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod client;
mod crash;
mod daemon;
#[path = "../../tests/common/escapes.rs"]
mod escapes;
mod escapes_section;
mod fuzz;
mod load;
mod memwatch;
mod procfs;
mod report;
#[path = "../serve_env.rs"]
mod serve_env;
mod upstream;
mod wait;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use clap::Parser;

use crate::memwatch::Bounds;
use crate::report::Section;

/// Set in the child processes the harness starts as agents of its own
/// (the approval askers of the `kill` section).
pub const CHILD: &str = "TOOLGATE_RELIABILITY_CHILD";

#[derive(Parser, Debug)]
#[command(about = "toolgate's reliability harness (see docs/architecture/reliability.md)")]
struct Args {
    /// Full counts (100,000 frames, 1,000 agents); writes docs/RELIABILITY.md.
    #[arg(long)]
    full: bool,
    /// Small counts, about two minutes (the default under `cargo test`).
    #[arg(long)]
    quick: bool,
    /// Seed of the fuzzer and every random choice (default: from the clock, printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Fail when a daemon's peak resident memory passes this many MB.
    #[arg(long)]
    max_rss_mb: Option<u64>,
    /// Fail when memory is not back to this multiple of idle 10 s after a load.
    #[arg(long)]
    max_settled_ratio: Option<f64>,
    /// Run only these sections (fuzz, upstream, kill, load, escapes).
    #[arg(long)]
    only: Vec<String>,
    /// Write the report here (full mode: docs/RELIABILITY.md).
    #[arg(long)]
    report: Option<PathBuf>,
    /// The toolgate binary to test (default: the one cargo built).
    #[arg(long, env = "TOOLGATE_BIN")]
    bin: Option<PathBuf>,
    /// Passed by `cargo bench`: full mode unless --quick.
    #[arg(long, hide = true)]
    bench: bool,
}

/// How much each section does.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Malformed frames over the three surfaces.
    pub fuzz_frames: usize,
    /// Socket connections they are spread over.
    pub fuzz_conns: usize,
    /// Largest string of the huge-strings category.
    pub max_huge: usize,
    /// Frames over the 16 MiB frame limit.
    pub oversized: usize,
    /// Concurrent agents.
    pub agents: usize,
    /// Calls each agent makes.
    pub calls_per_agent: usize,
    /// Acknowledged calls before the `kill -9`.
    pub acked_before_kill: usize,
    /// Approval requests pending at the `kill -9`.
    pub askers: usize,
    /// Upstream crashes in a row.
    pub crashes: usize,
    /// Notifications and stderr lines of the upstream flood.
    pub flood_lines: usize,
    /// Bytes of the flood's answer.
    pub flood_bytes: usize,
}

impl Sizes {
    fn quick() -> Self {
        Self {
            fuzz_frames: 3_000,
            fuzz_conns: 4,
            max_huge: 256 * 1024,
            oversized: 1,
            agents: 100,
            calls_per_agent: 5,
            acked_before_kill: 300,
            askers: 3,
            crashes: 3,
            flood_lines: 2_000,
            flood_bytes: 1 << 20,
        }
    }

    fn full() -> Self {
        Self {
            fuzz_frames: 100_000,
            fuzz_conns: 8,
            max_huge: 1 << 20,
            oversized: 8,
            agents: 1_000,
            calls_per_agent: 10,
            acked_before_kill: 5_000,
            askers: 10,
            crashes: 5,
            flood_lines: 20_000,
            flood_bytes: 8 << 20,
        }
    }
}

/// What every section gets.
pub struct Ctx {
    /// The `toolgate` binary under test.
    pub bin: PathBuf,
    /// The counts.
    pub sizes: Sizes,
    /// The run's seed.
    pub seed: u64,
    /// Memory bounds, if any.
    pub bounds: Bounds,
    /// Full mode.
    pub full: bool,
}

/// A TCP server on 127.0.0.1 that counts the connections it accepts and
/// answers none: where the SSRF lists point, so a URL that got through
/// shows up as a count.
pub struct CountingServer {
    /// Its port.
    pub port: u16,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl CountingServer {
    /// Listens on a free port.
    pub async fn start() -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let a = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((_conn, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::SeqCst);
            }
        });
        Ok(Self {
            port,
            accepted,
            task,
        })
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for CountingServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The sections, by name.
const SECTIONS: [&str; 5] = ["fuzz", "upstream", "kill", "load", "escapes"];

fn main() -> ExitCode {
    if let Ok(role) = std::env::var(CHILD) {
        return crash::child_main(&role);
    }
    let args = Args::parse();
    let full = args.full || (args.bench && !args.quick);
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let bin = args
        .bin
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_toolgate")));
    let ctx = Ctx {
        bin,
        sizes: if full { Sizes::full() } else { Sizes::quick() },
        seed,
        bounds: Bounds {
            max_rss_mb: args.max_rss_mb,
            max_settled_ratio: args.max_settled_ratio,
        },
        full,
    };
    for o in &args.only {
        if !SECTIONS.contains(&o.as_str()) {
            eprintln!("reliability: unknown section `{o}`; the sections are {SECTIONS:?}");
            return ExitCode::from(2);
        }
    }
    raise_fd_limit(ctx.sizes.agents);
    println!(
        "reliability harness, {} mode, seed {seed} (repeat with --seed {seed}), testing {}",
        if full { "full" } else { "quick" },
        ctx.bin.display()
    );
    // More workers than cores: the fuzzer's writers generate and judge
    // large frames, and its readers must keep reading meanwhile.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(4, |n| n.get().max(4)))
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let sections = rt.block_on(run_sections(&ctx, &args.only));
    let elapsed = started.elapsed();
    let held = sections.iter().all(Section::held);
    let failed: Vec<&str> = sections
        .iter()
        .filter(|s| !s.held())
        .map(|s| s.title.as_str())
        .collect();
    println!(
        "\nreliability: {} in {:.0} s (seed {seed}){}",
        if held {
            "everything held"
        } else {
            "SOMETHING DID NOT HOLD"
        },
        elapsed.as_secs_f64(),
        if failed.is_empty() {
            String::new()
        } else {
            format!("; failed: {}", failed.join(", "))
        }
    );
    let report = args.report.clone().or_else(|| {
        (full && args.only.is_empty())
            .then(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/RELIABILITY.md"))
    });
    if let Some(path) = report {
        let text = markdown(&ctx, &sections, elapsed);
        match std::fs::write(&path, text) {
            Ok(()) => println!("report written to {}", path.display()),
            Err(e) => {
                eprintln!("reliability: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    if held {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn run_sections(ctx: &Ctx, only: &[String]) -> Vec<Section> {
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let mut out = Vec::new();
    for name in SECTIONS {
        if !wanted(name) {
            continue;
        }
        let started = Instant::now();
        let mut s = match name {
            "fuzz" => fuzz::run(ctx).await,
            "upstream" => upstream::run(ctx).await,
            "kill" => crash::run(ctx).await,
            "load" => load::run(ctx).await,
            _ => escapes_section::run(ctx).await,
        };
        s.figure(
            "section time",
            format!("{:.1} s", started.elapsed().as_secs_f64()),
        );
        print!("{}", s.text());
        out.push(s);
    }
    out
}

/// The harness's own open-files limit, raised to its hard limit when the
/// agents need more: one socket per agent. The daemons it starts inherit
/// it, as a daemon inherits its service manager's; each section reports
/// the daemon's limit.
fn raise_fd_limit(agents: usize) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    let want = (agents as u64 + 256).max(lim.current.unwrap_or(0));
    if lim.current.is_some_and(|c| c < want) {
        let mut new = lim;
        new.current = Some(lim.maximum.map_or(want, |m| m.min(want.max(4096))));
        let _ = setrlimit(Resource::Nofile, new);
    }
}

/// The report: when, where, what, then every section.
fn markdown(ctx: &Ctx, sections: &[Section], elapsed: std::time::Duration) -> String {
    use std::fmt::Write as _;
    let (uname, cpus, mem_kb) = procfs::machine();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    let commit = git(&["rev-parse", "HEAD"]);
    let dirty = !git(&["status", "--porcelain", "--untracked-files=no"]).is_empty();
    let now = httpdate::fmt_http_date(std::time::SystemTime::now());
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Reliability\n\n\
         Generated by the reliability harness (`cargo bench --bench reliability`; see \
         [architecture/reliability.md](architecture/reliability.md)). Do not edit: run it again.\n\n\
         | | |\n| --- | --- |\n\
         | made | {now} |\n\
         | machine | `{uname}` |\n\
         | CPUs | {cpus} |\n\
         | memory | {:.1} GB |\n\
         | commit | `{commit}`{} |\n\
         | daemon binary | toolgate, {} build (the harness itself: {} build) |\n\
         | mode | {} |\n\
         | seed | {} (repeat with `--seed {}`) |\n\
         | run time | {:.0} s |\n\
         | verdict | {} |\n",
        mem_kb as f64 / 1024.0 / 1024.0,
        if dirty {
            " with uncommitted changes"
        } else {
            ""
        },
        if ctx.bin.components().any(|c| c.as_os_str() == "release") {
            "release"
        } else {
            "debug"
        },
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        if ctx.full { "full" } else { "quick" },
        ctx.seed,
        ctx.seed,
        elapsed.as_secs_f64(),
        if sections.iter().all(Section::held) {
            "everything held"
        } else {
            "**something did not hold** (see below)"
        }
    );
    let _ = writeln!(
        s,
        "Memory figures are the daemon's resident set (`VmRSS` in `/proc/PID/status`, sampled every 20 ms) \
         and `VmHWM`, its lifetime peak; \"idle\" is the daemon at rest after one request on each surface \
         (before any, most pages of its own program are not read in yet); \"after the load\" is where it \
         stood once back at 1.5× idle or 10 s after the load, whichever came first; \"anonymous\" \
         (`RssAnon`) leaves out the pages of the program and its libraries.\n"
    );
    for sec in sections {
        s.push_str(&sec.markdown());
    }
    s
}
