use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

/// Every file under `dir`, by path relative to it.
fn files(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if let (Ok(rel), Ok(text)) =
                (path.strip_prefix(root), std::fs::read_to_string(&path))
            {
                out.insert(rel.to_owned(), text);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The drift check CI runs: the committed TypeScript in `ui/src/bindings/`
/// is exactly what the Rust types generate. `UPDATE_BINDINGS=1` rewrites
/// the committed copy instead of failing.
#[test]
fn bindings_in_the_ui_match_the_rust_types() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/src/bindings");
    let fresh = tempfile::tempdir().expect("temp dir");
    export_bindings(fresh.path()).expect("generate bindings");
    let generated = files(fresh.path());
    assert!(
        generated.contains_key(Path::new("Snapshot.ts")),
        "{:?}",
        generated.keys()
    );
    if std::env::var("UPDATE_BINDINGS").as_deref() == Ok("1") {
        let _ = std::fs::remove_dir_all(&committed);
        for (rel, text) in &generated {
            let path = committed.join(rel);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).expect("create bindings dir");
            }
            std::fs::write(&path, text).expect("write binding");
        }
        return;
    }
    let on_disk = files(&committed);
    let stale: Vec<String> = generated
        .iter()
        .filter(|(rel, text)| on_disk.get(*rel) != Some(*text))
        .map(|(rel, _)| rel.display().to_string())
        .chain(
            on_disk
                .keys()
                .filter(|rel| !generated.contains_key(*rel))
                .map(|rel| format!("{} (no longer generated)", rel.display())),
        )
        .collect();
    assert!(
        stale.is_empty(),
        "ui/src/bindings is out of date with the Rust types: {}; \
         run `UPDATE_BINDINGS=1 cargo test --lib bindings` and commit the result",
        stale.join(", ")
    );
}

#[test]
fn large_integers_are_numbers_not_bigints() {
    let ts = Envelope::export_to_string(&ts_config()).expect("envelope");
    assert!(ts.contains("seq: number"), "{ts}");
    assert!(!ts.contains("bigint"), "{ts}");
}

/// `ErrorKind::ALL` and `ApprovalStatus::ALL` feed `words.ts`; a variant
/// missing from them would leave the console without its words.
#[test]
fn the_word_tables_list_every_variant() {
    let cfg = ts_config();
    let union = |ts: String| -> Vec<String> {
        ts.split('|')
            .map(|v| v.trim().trim_matches('"').to_owned())
            .collect()
    };
    let kinds = union(crate::ErrorKind::inline(&cfg));
    let listed: Vec<String> = crate::ErrorKind::ALL
        .iter()
        .map(|k| k.as_str().to_owned())
        .collect();
    assert_eq!(kinds, listed);
    let states = union(crate::approval::ApprovalStatus::inline(&cfg));
    let listed: Vec<String> = crate::approval::ApprovalStatus::ALL
        .iter()
        .map(|k| k.as_str().to_owned())
        .collect();
    assert_eq!(states, listed);
    let words = words_ts();
    assert!(
        words.contains("  approval_timed_out: \"No decision in time\",\n"),
        "{words}"
    );
    assert!(
        words.contains("  timeout: \"Tool timed out\",\n"),
        "{words}"
    );
}
