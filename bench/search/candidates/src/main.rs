//! Compare three BM25 search candidates on toolgate's bench text.
//! Run: cargo run --release -- /path/search-docs.json (see README.md)
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use bm25::{Embedder, EmbedderBuilder, Scorer};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING,
};
use tantivy::tokenizer::{TextAnalyzer, WhitespaceTokenizer};
use tantivy::{doc, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

type Docs = Vec<(String, String)>; // (name, stems)

// Live-heap counter, switched on only in the `--rss-only` child so the timed run is unaffected.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
static COUNT: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);
fn bump(d: i64) { let now = LIVE.fetch_add(d, Relaxed) + d; PEAK.fetch_max(now, Relaxed); }
struct Counting;
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNT.load(Relaxed) { bump(l.size() as i64); }
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if COUNT.load(Relaxed) { bump(-(l.size() as i64)); }
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNT.load(Relaxed) { bump(n as i64 - l.size() as i64); }
        System.realloc(p, l, n)
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------- shared helpers ----------
fn status_field(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
fn rss_kb() -> u64 { status_field("VmRSS:") }
fn threads() -> u64 { status_field("Threads:") }
fn thread_names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/task").unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|s| s.trim().to_string()).collect();
    v.sort();
    v
}
fn tokens(s: &str) -> impl Iterator<Item = &str> { s.split(' ').filter(|t| !t.is_empty()) }
fn avgdl(docs: &Docs) -> f32 {
    let total: usize = docs.iter().map(|(_, s)| tokens(s).count()).sum();
    total as f32 / docs.len() as f32
}
/// Top k of (score, name), descending score, ties by name ascending.
fn top_k<'a>(mut hits: Vec<(f32, &'a str)>, k: usize) -> Vec<String> {
    let cmp = |a: &(f32, &str), b: &(f32, &str)| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1));
    if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, cmp);
        hits.truncate(k);
    }
    hits.sort_by(cmp);
    hits.into_iter().map(|(_, n)| n.to_string()).collect()
}

#[derive(Default, Clone)]
struct SpaceTokenizer;
impl bm25::Tokenizer for SpaceTokenizer {
    fn tokenize(&self, input: &str) -> Vec<String> { tokens(input).map(String::from).collect() }
}

trait Candidate: Sized {
    const NAME: &'static str;
    fn build(docs: &Docs) -> Self;
    fn add(&mut self, docs: &Docs);
    fn query(&self, q: &str, k: usize) -> Vec<String>;
    /// The library's own order for equal scores (only overridden for tantivy: index order).
    fn query_native(&self, q: &str, k: usize) -> Option<Vec<String>> { let _ = (q, k); None }
}

// ---------- 1. bm25 crate Scorer ----------
struct Bm25Scorer { emb: Embedder<u32, SpaceTokenizer>, scorer: Scorer<String, u32> }
impl Candidate for Bm25Scorer {
    const NAME: &'static str = "bm25 Scorer";
    fn build(docs: &Docs) -> Self {
        let emb = EmbedderBuilder::<u32, SpaceTokenizer>::with_avgdl(avgdl(docs)).build();
        let mut s = Bm25Scorer { emb, scorer: Scorer::new() };
        s.add(docs);
        s
    }
    fn add(&mut self, docs: &Docs) {
        for (n, t) in docs { self.scorer.upsert(n, self.emb.embed(t)); }
    }
    fn query(&self, q: &str, k: usize) -> Vec<String> {
        let m = self.scorer.matches(&self.emb.embed(q));
        // matches() is sorted by score; re-rank only the tie group at the cut for name order
        let cut = m.len().min(k);
        if cut == 0 { return vec![]; }
        let edge = m[cut - 1].score;
        let hits = m.iter().take_while(|d| d.score >= edge).map(|d| (d.score, d.id.as_str())).collect();
        top_k(hits, k)
    }
}

// ---------- 2. bm25 Embedder + postings (what toolgate ships) ----------
struct Postings { emb: Embedder<u32, SpaceTokenizer>, names: Vec<String>, post: HashMap<u32, Vec<(u32, f32)>> }
impl Candidate for Postings {
    const NAME: &'static str = "bm25 Embedder + postings";
    fn build(docs: &Docs) -> Self {
        let emb = EmbedderBuilder::<u32, SpaceTokenizer>::with_avgdl(avgdl(docs)).build();
        let mut s = Postings { emb, names: Vec::new(), post: HashMap::new() };
        s.add(docs);
        s
    }
    fn add(&mut self, docs: &Docs) {
        let mut seen = HashSet::new();
        for (n, t) in docs {
            let slot = self.names.len() as u32;
            self.names.push(n.clone());
            seen.clear();
            for te in self.emb.embed(t).0 {
                if seen.insert(te.index) { self.post.entry(te.index).or_default().push((slot, te.value)); }
            }
        }
    }
    fn query(&self, q: &str, k: usize) -> Vec<String> {
        let n = self.names.len() as f32;
        let mut scores = vec![0f32; self.names.len()];
        let mut touched = Vec::new();
        for idx in self.emb.embed(q).indices() {
            let Some(p) = self.post.get(idx) else { continue };
            let df = p.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(slot, w) in p {
                if scores[slot as usize] == 0.0 { touched.push(slot); }
                scores[slot as usize] += idf * w;
            }
        }
        touched.sort_unstable();
        touched.dedup();
        top_k(touched.iter().map(|&s| (scores[s as usize], self.names[s as usize].as_str())).collect(), k)
    }
}

// ---------- 3. tantivy ----------
struct Tantivy { _index: Index, writer: IndexWriter, reader: IndexReader, body: Field, name: Field }
impl Candidate for Tantivy {
    const NAME: &'static str = "tantivy 0.27";
    fn build(docs: &Docs) -> Self {
        let mut sb = Schema::builder();
        let idx = TextFieldIndexing::default().set_tokenizer("ws").set_index_option(IndexRecordOption::WithFreqs);
        let body = sb.add_text_field("body", TextOptions::default().set_indexing_options(idx));
        let name = sb.add_text_field("name", STRING | STORED);
        let index = Index::create_in_ram(sb.build());
        index.tokenizers().register("ws", TextAnalyzer::from(WhitespaceTokenizer::default()));
        let writer: IndexWriter = index
            .writer_with_num_threads(1, 15_000_000 /* tantivy's MEMORY_BUDGET_NUM_BYTES_MIN (not exported) */)
            .unwrap();
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().unwrap();
        let mut s = Tantivy { _index: index, writer, reader, body, name };
        s.add(docs);
        s
    }
    fn add(&mut self, docs: &Docs) {
        for (n, t) in docs {
            self.writer.add_document(doc!(self.name => n.as_str(), self.body => t.as_str())).unwrap();
        }
        self.writer.commit().unwrap();
        self.reader.reload().unwrap();
    }
    fn query_native(&self, q: &str, k: usize) -> Option<Vec<String>> {
        Some(self.search(q, k).into_iter().map(|(_, n)| n).collect())
    }
    fn query(&self, q: &str, k: usize) -> Vec<String> {
        let named = self.search(q, k);
        top_k(named.iter().map(|(s, n)| (*s, n.as_str())).collect(), k)
    }
}
impl Tantivy {
    fn search(&self, q: &str, k: usize) -> Vec<(f32, String)> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = tokens(q)
            .map(|t| {
                let tq = TermQuery::new(Term::from_field_text(self.body, t), IndexRecordOption::WithFreqs);
                (Occur::Should, Box::new(tq) as Box<dyn Query>)
            })
            .collect();
        let searcher = self.reader.searcher();
        let top = searcher.search(&BooleanQuery::new(clauses), &TopDocs::with_limit(k).order_by_score()).unwrap();
        let named: Vec<(f32, String)> = top.into_iter().map(|(sc, addr)| {
            let d: TantivyDocument = searcher.doc(addr).unwrap();
            (sc, d.get_first(self.name).and_then(|v| v.as_str()).unwrap_or("").to_string())
        }).collect();
        named
    }
}

// ---------- harness ----------
struct Report {
    name: &'static str, build_ms: f64, add_ms: f64, p50_us: f64, p99_us: f64,
    rel: Vec<(String, usize, usize, usize)>, rss_grow_kb: i64, rss_after_drop_kb: i64,
    threads_alive: i64, threads_after_drop: i64, thread_names: Vec<String>,
}
fn median(mut v: Vec<Duration>) -> f64 { v.sort(); v[v.len() / 2].as_secs_f64() * 1e3 }

fn run<C: Candidate>(docs: &Docs, added: &Docs, qsets: &[(String, Vec<(String, String)>)]) -> Report {
    let (rss0, thr0) = (rss_kb() as i64, threads() as i64);
    let names0 = thread_names();
    let (mut builds, mut adds) = (vec![], vec![]);
    let t = Instant::now();
    let mut c = C::build(docs);
    builds.push(t.elapsed());
    // relevance on the 10,000-doc index
    let mut rel = vec![];
    for (set, qs) in qsets {
        if c.query_native("", 1).is_some() {
            let (mut h1, mut h3) = (0, 0);
            for (q, want) in qs {
                let top = c.query_native(q, 5).unwrap();
                if top.first() == Some(want) { h1 += 1; }
                if top.iter().take(3).any(|n| n == want) { h3 += 1; }
            }
            println!("{} {set}: ties in the library's own (index) order: top-1 {h1}/{n}, top-3 {h3}/{n}", C::NAME, n = qs.len());
        }
        let (mut h1, mut h3) = (0, 0);
        for (q, want) in qs {
            let top = c.query(q, 5);
            if top.first() == Some(want) { h1 += 1; }
            if top.iter().take(3).any(|n| n == want) { h3 += 1; }
        }
        rel.push((set.clone(), qs.len(), h1, h3));
    }
    // latency: queries.json, 1 warm-up + 20 passes
    let main_q = &qsets.iter().find(|(s, _)| s == "queries.json").unwrap().1;
    for (q, _) in main_q { std::hint::black_box(c.query(q, 5)); }
    let mut lat = Vec::with_capacity(main_q.len() * 20);
    for _ in 0..20 {
        for (q, _) in main_q {
            let t = Instant::now();
            std::hint::black_box(c.query(std::hint::black_box(q), 5));
            lat.push(t.elapsed());
        }
    }
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p).ceil() as usize - 1).min(lat.len() - 1)].as_secs_f64() * 1e6;
    let (p50, p99) = (pct(0.50), pct(0.99));
    let (rss1, thr1) = (rss_kb() as i64, threads() as i64);
    let mut tn: Vec<String> = thread_names();
    for n in &names0 { if let Some(i) = tn.iter().position(|x| x == n) { tn.remove(i); } }
    let t = Instant::now();
    c.add(added);
    adds.push(t.elapsed());
    drop(c);
    for _ in 0..2 {
        let t = Instant::now();
        let mut c = C::build(docs);
        builds.push(t.elapsed());
        let t = Instant::now();
        c.add(added);
        adds.push(t.elapsed());
        drop(c);
    }
    std::thread::sleep(Duration::from_millis(200));
    let r = Report {
        name: C::NAME, build_ms: median(builds.clone()), add_ms: median(adds.clone()), p50_us: p50, p99_us: p99, rel,
        rss_grow_kb: rss1 - rss0, rss_after_drop_kb: rss_kb() as i64 - rss0,
        threads_alive: thr1 - thr0, threads_after_drop: threads() as i64 - thr0, thread_names: tn,
    };
    eprintln!("{}: builds {:?} adds {:?}", C::NAME, builds, adds);
    r
}

fn parse_pairs(v: &serde_json::Value) -> Vec<(String, String)> {
    v.as_array().unwrap().iter()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_str().unwrap().to_string()))
        .collect()
}

fn main() {
    let path = std::env::args().nth(1).filter(|a| !a.starts_with("--")).unwrap_or_else(|| "/tmp/search-docs.json".into());
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let docs = parse_pairs(&v["docs"]);
    let added = parse_pairs(&v["added"]);
    let mut qsets: Vec<(String, Vec<(String, String)>)> = v["queries"].as_object().unwrap().iter()
        .map(|(k, q)| (k.clone(), parse_pairs(q))).collect(); // (query_stems, expected)
    qsets.sort_by(|a, b| a.0.cmp(&b.0));
    drop(v);
    println!("docs={} added={} avgdl={:.2} queries: {}", docs.len(), added.len(), avgdl(&docs),
        qsets.iter().map(|(k, q)| format!("{k}={}", q.len())).collect::<Vec<_>>().join(" "));

    if let Some(n) = std::env::args().skip_while(|a| a != "--rss-only").nth(1) {
        let main_q = &qsets.iter().find(|(s, _)| s == "queries.json").unwrap().1;
        let rss0 = rss_kb();
        COUNT.store(true, Relaxed);
        fn go<C: Candidate>(docs: &Docs, qs: &[(String, String)]) {
            let c = C::build(docs);
            for _ in 0..21 { for (q, _) in qs { std::hint::black_box(c.query(q, 5)); } }
            println!("rss_after_kb {}", rss_kb());
            println!("heap_live_bytes {}", LIVE.load(Relaxed));
            println!("heap_peak_bytes {}", PEAK.load(Relaxed));
        }
        match n.as_str() { "1" => go::<Bm25Scorer>(&docs, main_q), "2" => go::<Postings>(&docs, main_q), _ => go::<Tantivy>(&docs, main_q) }
        println!("rss_before_kb {rss0}");
        return;
    }
    if std::env::var("COMPARE_DEBUG").is_ok() { debug(&docs, &qsets[0].1); return; }
    let reports = vec![
        run::<Bm25Scorer>(&docs, &added, &qsets),
        run::<Postings>(&docs, &added, &qsets),
        run::<Tantivy>(&docs, &added, &qsets),
    ];
    println!("\n| candidate | build 10k (median of 3) | add 100 (median of 3) | query p50 | query p99 | {} | RSS growth (built+queried) | RSS vs start after drop | threads while alive | threads after drop |",
        qsets.iter().map(|(k, _)| format!("{k} top-1 / top-3")).collect::<Vec<_>>().join(" | "));
    println!("|---|---|---|---|---|{}---|---|---|---|", "---|".repeat(qsets.len()));
    for r in &reports {
        println!("| {} | {:.1} ms | {:.2} ms | {:.1} µs | {:.1} µs | {} | {:.1} MiB | {:.1} MiB | {} | {} |",
            r.name, r.build_ms, r.add_ms, r.p50_us, r.p99_us,
            r.rel.iter().map(|(_, n, h1, h3)| format!("{h1}/{n} ({:.1}%) / {h3}/{n} ({:.1}%)",
                100.0 * *h1 as f64 / *n as f64, 100.0 * *h3 as f64 / *n as f64)).collect::<Vec<_>>().join(" | "),
            r.rss_grow_kb as f64 / 1024.0, r.rss_after_drop_kb as f64 / 1024.0, r.threads_alive, r.threads_after_drop);
    }
    println!("\nMemory, each candidate alone in a fresh child process (same binary, `--rss-only N`; after loading the JSON, build 10k + 21 query passes; the RSS delta is understated where freed JSON memory gets reused):");
    for (i, r) in reports.iter().enumerate() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([path.as_str(), "--rss-only", &(i + 1).to_string()]).output().unwrap();
        let o = String::from_utf8_lossy(&out.stdout);
        let get = |k: &str| o.lines().find_map(|l| l.strip_prefix(k)).and_then(|v| v.trim().parse::<i64>().ok()).unwrap_or(0);
        println!("- {}: RSS +{:.1} MiB; live heap held by the built index {:.1} MiB (peak during build+query {:.1} MiB)", r.name,
            (get("rss_after_kb") - get("rss_before_kb")) as f64 / 1024.0, get("heap_live_bytes") as f64 / 1048576.0, get("heap_peak_bytes") as f64 / 1048576.0);
    }
    for r in &reports { if !r.thread_names.is_empty() { println!("\n{} threads started: {:?}", r.name, r.thread_names); } }
}

/// Debug: COMPARE_DEBUG=1 prints the top 5 of postings vs tantivy for the first few disagreeing queries.
#[allow(dead_code)]
pub fn debug(docs: &Docs, qs: &[(String, String)]) {
    let p = Postings::build(docs);
    let t = Tantivy::build(docs);
    let mut shown = 0;
    for (q, want) in qs {
        let a = p.query(q, 5);
        let b = t.query(q, 5);
        if a.first() != b.first() && shown < 3 {
            shown += 1;
            println!("Q {q:?} want {want}\n  postings {a:?}\n  tantivy  {b:?}");
            let searcher = t.reader.searcher();
            for tok in tokens(q).collect::<HashSet<_>>() {
                let term = Term::from_field_text(t.body, tok);
                println!("   df {tok}: tantivy {}  postings {}", searcher.doc_freq(&term).unwrap(),
                    p.post.get(&<u32 as bm25::TokenEmbedder>::embed(tok)).map_or(0, |v| v.len()));
            }
        }
    }
}
