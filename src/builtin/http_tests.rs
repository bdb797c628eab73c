use std::sync::atomic::{AtomicUsize, Ordering};

use reqwest::header::HeaderMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

fn headers(retry: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(RETRY_AFTER, HeaderValue::from_str(retry).unwrap());
    h
}

/// 1994-11-06T08:49:37Z, the RFC's example date.
const EXAMPLE: u64 = 784_111_777;

#[test]
fn retry_after_accepts_seconds_and_all_three_date_formats() {
    let now = UNIX_EPOCH + Duration::from_secs(EXAMPLE - 90);
    assert_eq!(
        retry_after(&headers("2"), now),
        Some(Duration::from_secs(2))
    );
    assert_eq!(
        retry_after(&headers(" 120 "), now),
        Some(Duration::from_secs(120))
    );
    for date in [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ] {
        assert_eq!(
            retry_after(&headers(date), now),
            Some(Duration::from_secs(90)),
            "{date}"
        );
    }
    let later = UNIX_EPOCH + Duration::from_secs(EXAMPLE + 5);
    assert_eq!(
        retry_after(&headers("Sun, 06 Nov 1994 08:49:37 GMT"), later),
        Some(Duration::ZERO)
    );
    for junk in ["soon", "-1", "Sun, 06 Foo 1994 08:49:37 GMT", "1.5"] {
        assert_eq!(retry_after(&headers(junk), now), None, "{junk}");
    }
    assert_eq!(retry_after(&HeaderMap::new(), now), None);
}

#[test]
fn http_dates_match_the_unix_clock() {
    assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(
        parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT"),
        Some(951_825_600)
    );
    assert_eq!(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"), None);
}

#[test]
fn truncated_text_drops_a_split_character() {
    let bytes = "héllo".as_bytes();
    // Cut inside the two-byte "é".
    assert_eq!(body_text(&bytes[..2], true), "h");
    assert_eq!(body_text(bytes, false), "héllo");
    // Untruncated invalid bytes are replaced, not dropped.
    assert_eq!(body_text(&[b'a', 0xff], false), "a\u{fffd}");
}

#[test]
fn binary_is_judged_by_type_then_bytes() {
    assert!(!looks_binary(b"plain", None));
    assert!(looks_binary(b"\x89PNG\r\n\x1a\n\0\0", Some("image/png")));
    assert!(looks_binary(&[0xff, 0xfe, 0x41], None));
    assert!(!looks_binary(
        &[0xff, 0x41],
        Some("text/plain; charset=latin1")
    ));
    assert!(!looks_binary(b"{}", Some("application/problem+json")));
    // A UTF-8 character cut at the end is not binary.
    assert!(!looks_binary(&"é".as_bytes()[..1], None));
}

#[test]
fn max_bytes_is_bounded() {
    assert_eq!(clamp_max_bytes(None), DEFAULT_MAX_BYTES);
    assert_eq!(clamp_max_bytes(Some(0)), 1);
    assert_eq!(clamp_max_bytes(Some(u64::MAX)), MAX_MAX_BYTES);
    assert_eq!(clamp_max_bytes(Some(10)), 10);
}

#[test]
fn connection_steering_and_malformed_headers_are_refused() {
    let raw: BTreeMap<String, String> = [
        ("Host", "internal"),
        ("Accept", "text/html"),
        ("bad name", "x"),
        ("X-Ok", "line\nbreak"),
        ("Transfer-Encoding", "chunked"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let Err(CallError::InvalidArgs { problems, .. }) = build_headers(raw) else {
        panic!("expected InvalidArgs");
    };
    let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "/headers/Host",
            "/headers/Transfer-Encoding",
            "/headers/X-Ok",
            "/headers/bad name"
        ]
    );
    let ok = build_headers([("Accept".to_owned(), "a/b".to_owned())].into()).unwrap();
    assert_eq!(ok["accept"], "a/b");
}

#[test]
fn definition_declares_trust_risk_guard_and_bounds() {
    let (def, _) = tool(SsrfConfig::default()).unwrap();
    assert_eq!(def.name.as_str(), "http_fetch");
    assert_eq!(def.trust, Trust::External);
    assert_eq!(def.risk, Risk::Medium);
    assert_eq!(def.annotations.open_world_hint, Some(true));
    assert_eq!(def.guards.len(), 1);
    assert_eq!(def.guards[0].arg, "url");
    assert_eq!(def.guards[0].kind, GuardKind::Url);
    let props = &def.input_schema["properties"];
    assert_eq!(props["max_bytes"]["maximum"], 1_000_000);
    assert_eq!(props["method"]["enum"], json!(["GET", "HEAD", null]));
    assert_eq!(def.input_schema["required"], json!(["url"]));
    assert!(def.description.starts_with("Fetches one web page"));
}

#[test]
fn bad_configuration_is_refused_at_build_time() {
    let cfg = SsrfConfig {
        allowed_hosts: vec!["http://x/".into()],
        ..SsrfConfig::default()
    };
    assert!(matches!(tool(cfg), Err(HttpFetchError::Config(_))));
    assert!(matches!(
        HttpFetch::new(SsrfConfig::default(), Duration::ZERO),
        Err(HttpFetchError::ZeroTimeout)
    ));
}

/// Proves the client really goes through the guarded resolver: a request
/// that skips `check_url` (as a bug elsewhere might) is still refused at
/// resolution, before any connection, and classified by type.
#[tokio::test]
async fn the_client_resolves_through_the_guard() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    let server = tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi")
                .await;
        }
    });
    let fetch = HttpFetch::new(SsrfConfig::default(), Duration::from_secs(5)).unwrap();
    let err = fetch
        .client
        .get(format!("http://localhost:{port}/"))
        .send()
        .await
        .unwrap_err();
    match fetch.classify(&err) {
        CallError::GuardDenied { arg, reason } => {
            assert_eq!(arg, "url");
            assert!(reason.contains("resolves to"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
    server.abort();
}
