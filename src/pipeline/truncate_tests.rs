use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::error::CallError;
use crate::pipeline::testing::{Script, call_with, def, fail, run_stage};
use crate::settings::{ToolSettings, TruncateConfig};

/// The text stream the budget applies to.
fn stream(r: &ToolResult) -> String {
    r.content.iter().filter_map(text_of).collect()
}

fn limited(max_bytes: usize) -> crate::pipeline::Call {
    let settings = ToolSettings {
        truncate: TruncateConfig { max_bytes },
        ..ToolSettings::default()
    };
    call_with(
        def("t", json!({"type": "object"})),
        json!({}),
        settings,
        "s1",
    )
}

fn numbered(n: usize) -> String {
    (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect()
}

fn image() -> Content {
    Content::Image {
        data: "A".repeat(10_000),
        mime_type: "image/png".into(),
    }
}

#[test]
fn thousands_separators() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(1_234_567), "1,234,567");
}

#[tokio::test]
async fn small_output_passes_untouched() {
    let script = Script::new(vec![Ok(ToolResult::text("short"))]);
    let mut call = limited(5);
    let out = run_stage(&Truncate::new(), &mut call, &script)
        .await
        .unwrap();
    assert_eq!(out, ToolResult::text("short"));
    assert!(call.notes().is_empty());
}

#[tokio::test]
async fn keeps_head_and_tail_and_says_how_much_was_cut() {
    let text = numbered(50_000);
    let script = Script::new(vec![Ok(ToolResult::text(text.clone()))]);
    let mut call = limited(900);
    let out = run_stage(&Truncate::new(), &mut call, &script)
        .await
        .unwrap();
    let expected = format!(
        "{}\n[… toolgate truncated 49,100 of 50,000 bytes …]\n{}",
        &text[..600],
        &text[50_000 - 300..]
    );
    assert_eq!(out.content, vec![Content::text(expected)]);
    assert_eq!(
        out.meta["truncated"],
        json!({"cut_bytes": 49_100, "total_bytes": 50_000})
    );
    assert_eq!(
        call.notes(),
        [(StageName::Truncate, "cut 49,100 of 50,000 bytes".to_owned())]
    );
}

#[test]
fn cuts_land_on_char_boundaries() {
    let mut r = ToolResult::text("é".repeat(1000)); // 2000 bytes
    let cut = truncate(&mut r, 100).unwrap();
    let out = stream(&r);
    // Head budget 67 rounds down to 66, tail budget 33 rounds up to 32.
    assert_eq!(
        cut,
        Cut {
            cut: 1902,
            total: 2000
        }
    );
    assert!(out.starts_with(&"é".repeat(33)));
    assert!(out.ends_with(&format!("…]\n{}", "é".repeat(16))));
}

#[test]
fn images_stay_and_inner_parts_are_dropped() {
    let mut r = ToolResult {
        content: vec![
            Content::text("a".repeat(100)),
            image(),
            Content::Json {
                value: json!({"k": "b".repeat(92)}),
            },
            Content::text("c".repeat(100)),
        ],
        ..ToolResult::default()
    };
    let cut = truncate(&mut r, 60).unwrap();
    assert_eq!(
        cut,
        Cut {
            cut: 240,
            total: 300
        }
    );
    assert_eq!(
        r.content,
        vec![
            Content::text(format!("{}{}", "a".repeat(40), notice(cut))),
            image(),
            Content::text("c".repeat(20)),
        ]
    );
}

#[test]
fn a_cut_json_part_becomes_text_and_a_whole_one_stays_json() {
    let big = json!({"k": "x".repeat(200)});
    let rendered = big.to_string(); // 208 bytes
    let small = json!({"n": 1}); // 7 bytes, inside the kept tail
    let mut r = ToolResult {
        content: vec![
            Content::Json { value: big },
            Content::Json {
                value: small.clone(),
            },
        ],
        ..ToolResult::default()
    };
    // Budget 30: head 20, tail 10, so the cut ends at byte 205 of `big`.
    let cut = truncate(&mut r, 30).unwrap();
    assert_eq!(
        cut,
        Cut {
            cut: 185,
            total: 215
        }
    );
    let expected = format!("{}{}{}", &rendered[..20], notice(cut), &rendered[205..]);
    assert_eq!(
        r.content,
        vec![Content::text(expected), Content::Json { value: small }]
    );
}

/// A call of a tool that declares an output schema, trusted so the schema
/// is listed.
fn promising(max_bytes: usize, trust: crate::tool::Trust) -> crate::pipeline::Call {
    let mut d = def("t", json!({"type": "object"})).with_trust(trust);
    d.output_schema = json!({"type": "object"})
        .as_object()
        .cloned()
        .map(std::sync::Arc::new);
    let settings = ToolSettings {
        truncate: TruncateConfig { max_bytes },
        ..ToolSettings::default()
    };
    call_with(d, json!({}), settings, "s1")
}

/// A result as servers send it: the structured value, and its JSON as text.
fn structured(value: Value) -> ToolResult {
    ToolResult {
        content: vec![Content::text(value.to_string())],
        structured_content: value.as_object().cloned(),
        ..ToolResult::default()
    }
}

#[tokio::test]
async fn structured_content_repeated_as_text_counts_once_and_stays() {
    let value = json!({"lines": ["x".repeat(300)]});
    let len = value.to_string().len();
    let script = Script::new(vec![Ok(structured(value.clone()))]);
    // The text and the value are each `len` bytes: together they would not
    // fit, but the value repeats the text.
    let mut call = promising(len, crate::tool::Trust::Trusted);
    let out = run_stage(&Truncate::new(), &mut call, &script)
        .await
        .unwrap();
    assert_eq!(out, structured(value));
    assert!(call.notes().is_empty() && call.notices().is_empty());
}

#[tokio::test]
async fn cut_text_leaves_structured_content_out_and_breaks_no_promise() {
    let value = json!({"lines": ["x".repeat(2_000)]});
    let script = Script::new(vec![Ok(structured(value.clone()))]);
    let mut call = promising(512, crate::tool::Trust::Trusted);
    let out = run_stage(&Truncate::new(), &mut call, &script)
        .await
        .unwrap();
    assert_eq!(out.structured_content, None);
    assert!(
        out.is_error,
        "a listed output schema promised structured content"
    );
    assert_eq!(
        out.meta["structured_dropped"],
        json!({"bytes": value.to_string().len()})
    );
    assert!(out.meta.contains_key("truncated"));
    let [notice] = call.notices() else {
        panic!("one notice: {:?}", call.notices())
    };
    assert!(
        notice.contains("structured result (2,014 bytes) was left out")
            && notice.contains("512-byte output limit")
            && notice.ends_with("cut to fit."),
        "{notice}"
    );
}

#[tokio::test]
async fn structured_content_cannot_smuggle_past_a_short_text() {
    let mut r = ToolResult::text("ok");
    r.structured_content = json!({"blob": "y".repeat(10_000)}).as_object().cloned();
    let script = Script::new(vec![Ok(r)]);
    let mut call = promising(1_024, crate::tool::Trust::Trusted);
    let out = run_stage(&Truncate::new(), &mut call, &script)
        .await
        .unwrap();
    assert_eq!(out.structured_content, None);
    assert_eq!(
        out.content,
        vec![Content::text("ok")],
        "the text was not cut"
    );
    assert!(out.is_error);
    assert!(
        call.notices()[0].ends_with("the text above is its whole output."),
        "{:?}",
        call.notices()
    );
}

#[tokio::test]
async fn without_a_listed_schema_structured_content_is_left_out_quietly() {
    // Builtin JSON (no schema) and an upstream tool whose output is wrapped
    // (its schema is not listed) promise nothing.
    for mut call in [limited(512), promising(512, crate::tool::Trust::External)] {
        let script = Script::new(vec![Ok(ToolResult::json(json!({"k": "z".repeat(2_000)})))]);
        let out = run_stage(&Truncate::new(), &mut call, &script)
            .await
            .unwrap();
        assert_eq!(out.structured_content, None);
        assert!(!out.is_error);
        assert!(call.notices().is_empty());
        assert_eq!(call.notes().len(), 2, "{:?}", call.notes());
    }
}

#[tokio::test]
async fn errors_pass_through() {
    let script = Script::new(vec![fail(CallError::tool_failed("x".repeat(100)))]);
    let mut call = limited(10);
    let err = run_stage(&Truncate::new(), &mut call, &script)
        .await
        .unwrap_err();
    assert_eq!(err.to_string().len(), 100);
    assert!(call.notes().is_empty());
}

fn arb_part() -> impl Strategy<Value = Content> {
    prop_oneof![
        4 => "\\PC{0,300}".prop_map(Content::text),
        1 => "\\PC{0,50}".prop_map(|s| Content::Json { value: Value::String(s) }),
        1 => Just(image()),
        1 => prop::option::of("\\PC{0,100}").prop_map(|text| Content::Resource {
            uri: "file:///x".into(),
            mime_type: None,
            text,
        }),
    ]
}

proptest! {
    #[test]
    fn truncation_keeps_exact_prefix_and_suffix_within_budget(
        parts in prop::collection::vec(arb_part(), 0..6),
        max in 0usize..600,
    ) {
        let original = ToolResult { content: parts, ..ToolResult::default() };
        let before = stream(&original);
        let images = |r: &ToolResult| r.content.iter().filter(|p| matches!(p, Content::Image { .. })).count();
        let mut r = original.clone();
        let Some(cut) = truncate(&mut r, max) else {
            prop_assert!(before.len() <= max);
            prop_assert_eq!(r, original);
            return Ok(());
        };
        let after = stream(&r);
        let mark = notice(cut);
        let kept = before.len() - cut.cut;
        prop_assert_eq!(cut.total, before.len());
        prop_assert!(kept <= max);
        prop_assert_eq!(after.len(), kept + mark.len());
        prop_assert_eq!(images(&r), images(&original));
        // The head is the budget's ⅔ less at most 3 bytes of a split char.
        let head = max - max / 3;
        let split = (head.saturating_sub(3)..=head.min(kept)).find(|&p| {
            match (before.get(..p), before.get(before.len() - (kept - p)..)) {
                (Some(head), Some(tail)) => after == format!("{head}{mark}{tail}"),
                _ => false,
            }
        });
        prop_assert!(split.is_some(), "no head/notice/tail split: {:?}", after);
        prop_assert!(kept - split.unwrap_or(0) + 3 >= max / 3);
    }
}
