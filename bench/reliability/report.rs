//! What a section reports: what it tried, how many, what held (each check
//! passed or failed, with the failing detail), and its figures. Printed as
//! it goes; the full mode also writes them to `docs/RELIABILITY.md`.

use std::fmt::Write as _;

/// One thing that must hold.
#[derive(Debug, Clone)]
pub struct Check {
    /// What must hold, as a sentence.
    pub what: String,
    /// Whether it held.
    pub held: bool,
    /// The evidence: counts when it held, the failing case when not.
    pub detail: String,
}

/// One section's results.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Its title.
    pub title: String,
    /// What it tried, in a sentence or two.
    pub tried: String,
    /// How many cases, by kind.
    pub counts: Vec<(String, u64)>,
    /// What must hold.
    pub checks: Vec<Check>,
    /// Memory, latency and other measurements.
    pub figures: Vec<(String, String)>,
    /// Figures that are checked only when a bound is given (memory).
    pub bounded: Vec<Check>,
}

impl Section {
    /// A section about to run.
    pub fn new(title: &str, tried: impl Into<String>) -> Self {
        Self {
            title: title.to_owned(),
            tried: tried.into(),
            ..Self::default()
        }
    }

    /// Records a count.
    pub fn count(&mut self, what: &str, n: u64) {
        self.counts.push((what.to_owned(), n));
    }

    /// Records a check.
    pub fn check(&mut self, what: impl Into<String>, held: bool, detail: impl Into<String>) {
        self.checks.push(Check {
            what: what.into(),
            held,
            detail: detail.into(),
        });
    }

    /// Records a figure.
    pub fn figure(&mut self, what: &str, value: impl Into<String>) {
        self.figures.push((what.to_owned(), value.into()));
    }

    /// Whether every check held.
    pub fn held(&self) -> bool {
        self.checks.iter().chain(&self.bounded).all(|c| c.held)
    }

    /// The section as the terminal shows it.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\n== {} [{}]",
            self.title,
            if self.held() { "held" } else { "FAILED" }
        );
        let _ = writeln!(s, "   tried: {}", self.tried);
        for (what, n) in &self.counts {
            let _ = writeln!(s, "   {what}: {n}");
        }
        for c in self.checks.iter().chain(&self.bounded) {
            let mark = if c.held { "ok  " } else { "FAIL" };
            let _ = writeln!(s, "   {mark} {} ({})", c.what, c.detail);
        }
        for (what, v) in &self.figures {
            let _ = writeln!(s, "   {what}: {v}");
        }
        s
    }

    /// The section as Markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let verdict = if self.held() {
            "everything held"
        } else {
            "**something did not hold**"
        };
        let _ = writeln!(s, "## {}\n\n{verdict}\n", self.title);
        let _ = writeln!(s, "**Tried:** {}\n", self.tried);
        if !self.counts.is_empty() {
            let _ = writeln!(s, "| what | how many |\n| --- | ---: |");
            for (what, n) in &self.counts {
                let _ = writeln!(s, "| {what} | {} |", thousands(*n));
            }
            s.push('\n');
        }
        let _ = writeln!(s, "| must hold | held | evidence |\n| --- | --- | --- |");
        for c in self.checks.iter().chain(&self.bounded) {
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                cell(&c.what),
                if c.held { "yes" } else { "**no**" },
                cell(&c.detail)
            );
        }
        if !self.figures.is_empty() {
            let _ = writeln!(s, "\n| figure | value |\n| --- | --- |");
            for (what, v) in &self.figures {
                let _ = writeln!(s, "| {} | {} |", cell(what), cell(v));
            }
        }
        s.push('\n');
        s
    }
}

/// Text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `12345` as `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// KiB as MB with one decimal.
pub fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// The `p`-th percentile (0..=1) of sorted values.
pub fn percentile(sorted: &[std::time::Duration], p: f64) -> std::time::Duration {
    if sorted.is_empty() {
        return std::time::Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// A duration in ms with two decimals.
pub fn ms(d: std::time::Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Shortens `s` to about `n` characters for a report line.
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let head: String = s.chars().take(n).collect();
    format!("{head}…")
}
