//! Tool search side by side with PraisonAI's searcher, in one run: the
//! relevance of both on the fixture's two query sets, and the speed of
//! both on a 10,000-tool catalog (index build, adding one 100-tool
//! server, query p50 and p99).
//!
//! Run: `cargo bench --bench search -- --praisonai PYTHON`, where PYTHON
//! is the interpreter of the venv bench/search/README.md sets up (with
//! `praisonaiagents` installed). Without `--praisonai` only toolgate's side
//! is measured. Under `cargo test` (no `--bench`) it is a smoke run of the
//! relevance figures, to keep the bench building and working.
//! `--dump-docs PATH` also writes the stems the index holds for the
//! 10,000-tool catalog and the queries, to measure another scorer on the
//! same text (docs/architecture/decisions.md, "Tool search ranks with
//! bm25's weights and its own postings").

#[path = "../tests/common/catalog.rs"]
#[allow(dead_code)]
mod catalog;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate::registry::Registry;
use toolgate::search::ToolIndex;
use toolgate::tool::ToolDef;

use catalog::{Catalog, Server};

/// The scaled catalog's size (bench/search/README.md has the rule).
const SCALED: usize = 10_000;
/// The added server's size.
const ADDED: usize = 100;
/// Passes over the queries for the latency figures.
const PASSES: usize = 20;
/// Builds timed.
const BUILDS: usize = 3;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let args: Vec<String> = std::env::args().collect();
    let python = args
        .iter()
        .position(|a| a == "--praisonai")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let fixture = catalog::load(&catalog::fixture("catalog.json"));
    println!("## Relevance (660 tools, 39 servers)\n");
    println!("| query set | searcher | top-1 | top-3 |");
    println!("| --- | --- | ---: | ---: |");
    let index = index_of(&catalog::registry(catalog::defs(&fixture)));
    for set in ["queries.json", "queries_heldout.json"] {
        let (n, top1, top3, _) = catalog::rank(&index, set);
        println!(
            "| {set} | toolgate | {} | {} |",
            rate(top1, n),
            rate(top3, n)
        );
        if let Some(py) = &python {
            let theirs = praisonai(py, &["--queries", &fixture_path(set), "relevance"]);
            let (t1, t3, tn) = (
                int(&theirs["top1"]),
                int(&theirs["top3"]),
                int(&theirs["queries"]),
            );
            println!(
                "| {set} | {} | {} | {} |",
                str_of(&theirs["searcher"]),
                rate(t1, tn),
                rate(t3, tn)
            );
        }
    }
    if let Some(path) = args
        .iter()
        .position(|a| a == "--dump-docs")
        .and_then(|i| args.get(i + 1))
    {
        dump_docs(&fixture, Path::new(path));
    }
    if !full {
        return;
    }
    speed(&fixture, python.as_deref());
}

fn speed(fixture: &Catalog, python: Option<&str>) {
    let scaled = scaled(&fixture.servers);
    let added = added(&fixture.servers);
    let defs = catalog::defs(&Catalog { servers: scaled });
    let added = catalog::defs(&Catalog {
        servers: vec![added],
    });
    assert_eq!(defs.len(), SCALED);
    let registry = catalog::registry(defs.clone());
    let builds: Vec<Duration> = (0..BUILDS)
        .map(|_| {
            let index = ToolIndex::new();
            time(|| index.sync(&registry))
        })
        .collect();
    let adds: Vec<Duration> = (0..BUILDS).map(|_| add_server(&defs, &added)).collect();
    let index = index_of(&registry);
    let queries = catalog::queries("queries.json");
    let mut latencies: Vec<Duration> = Vec::with_capacity(queries.len() * PASSES);
    for _ in 0..PASSES {
        for q in &queries {
            latencies.push(time(|| {
                std::hint::black_box(index.search(&q.query, 5, |_| true));
            }));
        }
    }
    let ours = [
        ("index build", p(&builds, 50)),
        ("add one 100-tool server", p(&adds, 50)),
        ("query p50", p(&latencies, 50)),
        ("query p99", p(&latencies, 99)),
    ];
    println!(
        "\n## Speed (10,000 tools; {} queries × {PASSES})\n",
        queries.len()
    );
    let Some(py) = python else {
        println!("| | toolgate |\n| --- | ---: |");
        for (what, d) in ours {
            println!("| {what} | {} |", us(d));
        }
        return;
    };
    let theirs = praisonai(py, &["speed"]);
    let their =
        |k: &str, q: &str| Duration::from_secs_f64(theirs[k][q].as_f64().unwrap_or(f64::NAN) / 1e6);
    let rows = [
        ("index build", their("index_build", "p50_us")),
        (
            "add one 100-tool server (PraisonAI rebuilds)",
            their("add_100_tool_server_by_rebuild", "p50_us"),
        ),
        (
            "query p50 (PraisonAI: on a built index)",
            their("query_on_built_index", "p50_us"),
        ),
        (
            "query p99 (PraisonAI: on a built index)",
            their("query_on_built_index", "p99_us"),
        ),
    ];
    println!("| | toolgate | {} | ratio |", str_of(&theirs["searcher"]));
    println!("| --- | ---: | ---: | ---: |");
    for ((_, mine), (what, other)) in ours.iter().zip(rows) {
        println!(
            "| {what} | {} | {} | {} |",
            us(*mine),
            us(other),
            ratio(other, *mine)
        );
    }
    let per_call = their("query_search_catalog_per_call", "p50_us");
    println!(
        "| query p50, PraisonAI's per-call path (search_catalog rebuilds) | {} | {} | {} |",
        us(ours[2].1),
        us(per_call),
        ratio(per_call, ours[2].1)
    );
}

/// Writes what the index holds for the 10,000-tool catalog, the added
/// server and both query sets, as stems, so another scorer can be
/// measured on exactly the same text: `{"docs": [[name, stems]…],
/// "added": […], "queries": {"queries.json": [[stems, expected]…], …}}`.
fn dump_docs(fixture: &Catalog, path: &Path) {
    let scaled = catalog::defs(&Catalog {
        servers: scaled(&fixture.servers),
    });
    let added = catalog::defs(&Catalog {
        servers: vec![added(&fixture.servers)],
    });
    let all: Vec<ToolDef> = scaled.iter().chain(&added).cloned().collect();
    let index = index_of(&catalog::registry(all));
    let docs = |defs: &[ToolDef]| -> Vec<(String, String)> {
        defs.iter()
            .map(|d| {
                (
                    d.name.to_string(),
                    index.document_text(d.name.as_str()).unwrap_or_default(),
                )
            })
            .collect()
    };
    let queries: serde_json::Map<String, Value> = ["queries.json", "queries_heldout.json"]
        .into_iter()
        .map(|set| {
            let qs: Vec<(String, String)> = catalog::queries(set)
                .into_iter()
                .map(|q| (index.query_text(&q.query), q.expected))
                .collect();
            (set.to_owned(), serde_json::json!(qs))
        })
        .collect();
    let out = serde_json::json!({"docs": docs(&scaled), "added": docs(&added), "queries": queries});
    std::fs::write(path, out.to_string()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    println!("\nwrote {}", path.display());
}

/// Adds the 100-tool server to a registry of `defs` with its index made,
/// and times the index following it.
fn add_server(defs: &[ToolDef], added: &[ToolDef]) -> Duration {
    let registry = catalog::registry(defs.to_vec());
    let index = index_of(&registry);
    for d in added {
        registry.register(d.clone(), catalog::idle()).unwrap();
    }
    time(|| index.sync(&registry))
}

fn index_of(registry: &Registry) -> ToolIndex {
    let index = ToolIndex::new();
    index.sync(registry);
    index
}

/// The fixture's servers, then renamed copies `<name>_<round>`, until
/// exactly 10,000 tools (the last copy cut short).
fn scaled(servers: &[Server]) -> Vec<Server> {
    let mut out: Vec<Server> = servers.iter().map(clone_as(None)).collect();
    let mut total: usize = out.iter().map(|s| s.tools.len()).sum();
    let mut round = 1;
    while total < SCALED {
        for s in servers {
            if total == SCALED {
                break;
            }
            let mut copy = clone_as(Some(round))(s);
            copy.tools.truncate(SCALED - total);
            total += copy.tools.len();
            out.push(copy);
        }
        round += 1;
    }
    out
}

fn clone_as(round: Option<usize>) -> impl Fn(&Server) -> Server {
    move |s| Server {
        name: round.map_or_else(|| s.name.clone(), |r| format!("{}_{r}", s.name)),
        tools: s.tools.iter().map(catalog::CatalogTool::clone).collect(),
    }
}

/// `added`: the fixture's first 100 tools, renamed `<server>_<tool>`.
fn added(servers: &[Server]) -> Server {
    let tools = servers
        .iter()
        .flat_map(|s| {
            s.tools.iter().map(move |t| catalog::CatalogTool {
                name: format!("{}_{}", s.name, t.name),
                ..t.clone()
            })
        })
        .take(ADDED)
        .collect();
    Server {
        name: "added".into(),
        tools,
    }
}

fn praisonai(python: &str, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/search/praisonai_side.py");
    let out = Command::new(python)
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("praisonai_side.py prints JSON")
}

fn fixture_path(set: &str) -> String {
    catalog::fixture(set).display().to_string()
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// Nearest-rank percentile.
fn p(samples: &[Duration], pct: usize) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    let rank = (pct * s.len()).div_ceil(100).max(1);
    s[rank - 1]
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// How many times faster toolgate is (below 1: slower).
fn ratio(theirs: Duration, ours: Duration) -> String {
    let r = theirs.as_secs_f64() / ours.as_secs_f64();
    if r < 10.0 {
        format!("{r:.2}×")
    } else {
        format!("{r:.0}×")
    }
}

fn rate(part: usize, whole: usize) -> String {
    format!(
        "{part}/{whole} ({:.1} %)",
        part as f64 * 100.0 / whole as f64
    )
}

fn int(v: &Value) -> usize {
    v.as_u64()
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("?")
}
