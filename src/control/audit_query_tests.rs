use futures::StreamExt;

use super::*;
use crate::audit::{AuditLog, CallRecord};
use crate::config::Config;
use crate::control::{Control, EngineInfo, EngineMode};

/// A control service over an audit log holding `n` calls: tools
/// `fs_read`/`fs_write`/`shell`, callers `alpha`/`Beta`, every 7th an
/// error (`denied`), every 11th a tool error; ts_ms = 1000 * i.
async fn control_with(n: i64) -> (tempfile::TempDir, Control) {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = AuditLog::open(&dir.path().join("audit.db"))
        .await
        .expect("audit");
    for i in 1..=n {
        let tool = ["fs_read", "fs_write", "shell"][usize::try_from(i % 3).unwrap_or(0)];
        let caller = if i % 2 == 0 { "alpha" } else { "Beta" };
        let (outcome, kind) = if i % 7 == 0 {
            ("error", Some("denied".to_owned()))
        } else if i % 11 == 0 {
            ("tool_error", None)
        } else {
            ("ok", None)
        };
        audit
            .record_call(CallRecord {
                ts_ms: 1000 * i,
                call_id: i,
                session: "s".into(),
                caller: format!(r#"{{"via":"socket","client_name":"{caller}"}}"#),
                tool: tool.into(),
                args: format!(r#"{{"i":{i},"note":"=cmd"}}"#),
                args_hash: "h".into(),
                decision: "allowed".into(),
                outcome: outcome.into(),
                error_kind: kind,
                error_message: None,
                stages: "[[\"execute\",3]]".into(),
                notes: "[]".into(),
                output_size: 2,
                output_digest: None,
                elapsed_us: 5,
            })
            .await
            .expect("record");
    }
    let engine = crate::Engine::builder(Config::default())
        .audit(audit)
        .build();
    let info = EngineInfo::now(EngineMode::Serve, dir.path(), dir.path().join("s"), None);
    let control = Control::builder(engine, info)
        .start()
        .await
        .expect("control");
    (dir, control)
}

async fn ids(c: &Control, q: AuditQuery) -> Vec<i64> {
    let mut out = Vec::new();
    let mut q = AuditQuery {
        limit: Some(500),
        ..q
    };
    loop {
        let page = c.audit_page(&q).await.expect("page");
        out.extend(page.rows.iter().map(|r| r.call_id));
        match page.next_before {
            Some(b) => q.before = Some(b),
            None => return out,
        }
    }
}

fn expect(n: i64, keep: impl Fn(i64) -> bool) -> Vec<i64> {
    (1..=n).rev().filter(|i| keep(*i)).collect()
}

#[tokio::test]
async fn each_filter_selects_exactly_its_rows_newest_first() {
    let (_d, c) = control_with(300).await;
    let q = |f: fn(&mut AuditQuery)| {
        let mut q = AuditQuery::default();
        f(&mut q);
        q
    };
    assert_eq!(
        ids(&c, q(|q| q.tool = Some("shell".into()))).await,
        expect(300, |i| i % 3 == 2)
    );
    assert_eq!(
        ids(&c, q(|q| q.tool = Some("fs_*".into()))).await,
        expect(300, |i| i % 3 != 2)
    );
    assert_eq!(
        ids(&c, q(|q| q.caller = Some("BETA".into()))).await,
        expect(300, |i| i % 2 == 1)
    );
    assert_eq!(
        ids(&c, q(|q| q.outcome = Some("denied".into()))).await,
        expect(300, |i| i % 7 == 0)
    );
    assert_eq!(
        ids(&c, q(|q| q.outcome = Some("tool_error".into()))).await,
        expect(300, |i| i % 7 != 0 && i % 11 == 0)
    );
    assert_eq!(
        ids(&c, q(|q| q.outcome = Some("ok".into()))).await,
        expect(300, |i| i % 7 != 0 && i % 11 != 0)
    );
    assert_eq!(
        ids(
            &c,
            q(|q| {
                q.since_ms = Some(10_000);
                q.until_ms = Some(20_000);
            })
        )
        .await,
        expect(300, |i| (10..20).contains(&i))
    );
    // Together: AND.
    assert_eq!(
        ids(
            &c,
            q(|q| {
                q.tool = Some("fs_read".into());
                q.caller = Some("alpha".into());
            })
        )
        .await,
        expect(300, |i| i % 3 == 0 && i % 2 == 0)
    );
    // Values are bound, never spliced into SQL.
    assert!(
        ids(&c, q(|q| q.tool = Some("x' OR 1=1 --".into())))
            .await
            .is_empty()
    );
    assert!(
        ids(&c, q(|q| q.caller = Some("') OR 1=1 --".into())))
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn paging_by_row_id_visits_every_row_once() {
    let (_d, c) = control_with(1_000).await;
    let mut seen = Vec::new();
    let mut q = AuditQuery {
        limit: Some(137),
        ..AuditQuery::default()
    };
    let mut pages = 0;
    loop {
        let page = c.audit_page(&q).await.expect("page");
        assert!(page.rows.len() <= 137);
        seen.extend(page.rows.iter().map(|r| r.id));
        pages += 1;
        match page.next_before {
            Some(b) => q.before = Some(b),
            None => break,
        }
    }
    assert_eq!(pages, 8);
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 1_000, "every row exactly once");
    assert!(seen.windows(2).all(|w| w[0] > w[1]), "newest first");
}

#[tokio::test]
async fn bad_filters_are_refused_with_the_field() {
    let (_d, c) = control_with(3).await;
    let cases = [
        (
            AuditQuery {
                limit: Some(501),
                ..AuditQuery::default()
            },
            "limit",
        ),
        (
            AuditQuery {
                limit: Some(0),
                ..AuditQuery::default()
            },
            "limit",
        ),
        (
            AuditQuery {
                outcome: Some("fine".into()),
                ..AuditQuery::default()
            },
            "outcome",
        ),
        (
            AuditQuery {
                since_ms: Some(5),
                until_ms: Some(5),
                ..AuditQuery::default()
            },
            "until_ms",
        ),
        (
            AuditQuery {
                before: Some(0),
                ..AuditQuery::default()
            },
            "before",
        ),
    ];
    for (q, field) in cases {
        let e = c.audit_page(&q).await.expect_err("refused");
        assert_eq!((e.code(), e.field()), ("invalid", Some(field)), "{e}");
    }
    let e = c
        .audit_page(&AuditQuery {
            limit: Some(501),
            ..AuditQuery::default()
        })
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("1 to 500"), "{e}");
}

/// Collects an export, checking each chunk ends at the first row that
/// takes it past [`EXPORT_CHUNK`] bytes (`longest_row` bounds a row).
async fn export_bounded(c: &Control, format: ExportFormat, longest_row: usize) -> (Vec<u8>, usize) {
    let stream = c
        .audit_export(&AuditQuery::default(), format)
        .await
        .expect("export");
    let mut stream = std::pin::pin!(stream);
    let (mut all, mut chunks) = (Vec::new(), 0);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("chunk");
        assert!(
            chunk.len() < EXPORT_CHUNK + longest_row,
            "a chunk of {} bytes",
            chunk.len()
        );
        all.extend(chunk);
        chunks += 1;
    }
    (all, chunks)
}

async fn export(c: &Control, format: ExportFormat) -> (Vec<u8>, usize) {
    export_bounded(c, format, 1024).await
}

#[tokio::test]
async fn ten_thousand_rows_export_as_json_lines_and_csv_page_by_page() {
    let (_d, c) = control_with(10_000).await;
    let (jsonl, chunks) = export(&c, ExportFormat::Jsonl).await;
    assert!(chunks > 1, "streamed in chunks, not whole");
    let text = String::from_utf8(jsonl).expect("utf-8");
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    assert_eq!(rows.len(), 10_000);
    assert_eq!(rows[0]["call_id"], 10_000);
    assert_eq!(rows[0]["args"]["i"], 10_000, "JSON columns stay JSON");
    assert_eq!(rows[9_999]["caller"]["client_name"], "Beta");

    let (csv_bytes, chunks) = export(&c, ExportFormat::Csv).await;
    assert!(chunks > 1);
    let mut reader = csv::Reader::from_reader(&csv_bytes[..]);
    let header = reader.headers().expect("header").clone();
    assert_eq!(header.iter().collect::<Vec<_>>(), CSV_HEADER);
    let records: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("record")).collect();
    assert_eq!(records.len(), 10_000);
    assert_eq!(&records[0][2], "10000");
    assert!(
        records[0][6].starts_with("{\"i\":10000"),
        "{}",
        &records[0][6]
    );

    // Filters apply to exports too, and are checked before streaming.
    let bad = AuditQuery {
        outcome: Some("nope".into()),
        ..AuditQuery::default()
    };
    assert!(c.audit_export(&bad, ExportFormat::Csv).await.is_err());
}

/// Rows whose arguments are `bytes` long: `{"path":"big/<i>.txt","data":[0,0,…]}`
/// (the shape that costs most when parsed: one value per two bytes).
async fn control_with_large_args(rows: i64, bytes: usize) -> (tempfile::TempDir, Control) {
    let (dir, c) = control_with(0).await;
    let audit = c.audit().expect("audit").clone();
    for i in 1..=rows {
        let zeros = "0,".repeat(bytes / 2);
        audit
            .record_call(CallRecord {
                ts_ms: 1000 * i,
                tool: "fs_write".into(),
                args: format!(r#"{{"data":[{zeros}0],"path":"big/{i}.txt"}}"#),
                ..CallRecord::sample(i)
            })
            .await
            .expect("record");
    }
    (dir, c)
}

#[tokio::test]
async fn a_page_loads_long_arguments_one_row_at_a_time_and_still_previews_them() {
    let (_d, c) = control_with_large_args(30, 200_000).await;
    let audit = c.audit().expect("audit");
    audit.flush().await;
    let filter = Filter::parse(&AuditQuery::default()).expect("filter");
    let (rows, _) = fetch(audit.pool(), &filter, None, 30).await.expect("rows");
    assert!(
        rows.iter()
            .all(|r| r.args.is_empty() && r.args_left_out.is_some_and(|n| n > 200_000)),
        "a list read leaves long arguments out"
    );
    let page = c.audit_page(&AuditQuery::default()).await.expect("page");
    assert_eq!(page.rows.len(), 30);
    assert!(
        page.rows[0].preview.contains("big/30.txt"),
        "{}",
        page.rows[0].preview
    );
}

#[tokio::test]
async fn an_export_writes_long_arguments_whole_in_bounded_chunks() {
    let (_d, c) = control_with_large_args(12, 600_000).await;
    let (jsonl, chunks) = export_bounded(&c, ExportFormat::Jsonl, 700_000).await;
    assert!(chunks >= 6, "about two rows a chunk, not {chunks} chunks");
    let text = String::from_utf8(jsonl).expect("utf-8");
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    assert_eq!(rows.len(), 12);
    assert_eq!(rows[0]["args"]["path"], "big/12.txt");
    assert_eq!(
        rows[0]["args"]["data"].as_array().map(Vec::len),
        Some(300_001),
        "whole"
    );
    let (csv_bytes, _) = export_bounded(&c, ExportFormat::Csv, 700_000).await;
    let mut reader = csv::Reader::from_reader(&csv_bytes[..]);
    let first = reader.records().next().expect("a row").expect("record");
    assert!(first[6].ends_with(r#"0],"path":"big/12.txt"}"#));
}

#[tokio::test]
async fn a_call_detail_shows_a_bounded_part_of_huge_arguments_and_says_so() {
    let (_d, c) = control_with_large_args(1, 100_000).await;
    let d = c.call_row(1).await.expect("detail");
    let shown = d.args["data"].as_array().map_or(0, Vec::len);
    assert!(
        shown <= crate::control::calls::DETAIL_VALUES,
        "{shown} values"
    );
    let why = d.args_shortened.expect("says it is shortened");
    assert!(why.contains("export has them whole"), "{why}");

    let (_d, c) = control_with_large_args(1, 2_000).await;
    let d = c.call_row(1).await.expect("detail");
    assert_eq!(d.args["data"].as_array().map(Vec::len), Some(1_001));
    assert_eq!(d.args["path"], "big/1.txt");
    assert_eq!(d.args_shortened, None);
}

#[test]
fn spreadsheet_formulas_in_csv_cells_are_defused() {
    assert_eq!(cell("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
    assert_eq!(cell("-2+3"), "'-2+3");
    assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
    assert_eq!(cell("{\"a\":1}"), "{\"a\":1}");
}
