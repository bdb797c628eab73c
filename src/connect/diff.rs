//! The unified diff a person reads before anything is written.
//!
//! `similar` (already in the tree for the policy editor's diff) rather
//! than `diffy`: the same output format, one dependency fewer, and its
//! Myers implementation with a deadline keeps a pathological file from
//! stalling a plan.

/// A unified diff of `path`, `before` → `after`, with three lines of
/// context; empty when equal. A missing file diffs from `/dev/null`.
pub fn unified(path: &str, before: Option<&str>, after: &str) -> String {
    let old = before.unwrap_or("");
    if before.is_some() && old == after {
        return String::new();
    }
    let from = if before.is_some() {
        format!("a{path}")
    } else {
        "/dev/null".to_owned()
    };
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(old, after)
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b{path}"))
        .to_string()
}

/// `diff` with every secret value replaced by `<secret>`, so a plan shown
/// in the console or a terminal never prints a token the person is
/// moving into the keychain.
pub fn redact(diff: &str, secrets: &[&str]) -> String {
    let mut out = diff.to_owned();
    let mut values: Vec<&str> = secrets.iter().copied().filter(|s| s.len() >= 4).collect();
    // Longest first, so a secret containing another is replaced whole.
    values.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for v in values {
        out = out.replace(v, "<secret>");
        let escaped = serde_json::to_string(v).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        if escaped != v {
            out = out.replace(escaped, "<secret>");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_name_the_file_and_hide_secrets() {
        let d = unified("/h/.cursor/mcp.json", Some("a\nTOKEN=abcd1234\n"), "a\nb\n");
        assert!(
            d.starts_with("--- a/h/.cursor/mcp.json\n+++ b/h/.cursor/mcp.json\n"),
            "{d}"
        );
        let r = redact(&d, &["abcd1234"]);
        assert!(
            r.contains("-TOKEN=<secret>") && !r.contains("abcd1234"),
            "{r}"
        );
        assert_eq!(unified("/x", Some("same"), "same"), "");
        assert!(unified("/x", None, "new\n").starts_with("--- /dev/null\n"));
    }
}
