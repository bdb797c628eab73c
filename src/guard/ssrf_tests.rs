use std::str::FromStr;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn blocked_reason_covers_every_special_range() {
    let cases = [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.0.0.1", "private"),
        ("10.255.255.255", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link-local"),
        ("100.64.0.1", "carrier-grade"),
        ("100.127.255.255", "carrier-grade"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("255.255.255.255", "broadcast"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("198.18.0.1", "benchmarking"),
        ("198.19.255.255", "benchmarking"),
        ("192.0.0.8", "protocol-assignment"),
        ("192.0.2.1", "documentation"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("fe80::1", "link-local"),
        ("febf::1", "link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("100::1", "discard-only"),
        ("64:ff9b:1::1", "NAT64"),
        ("4000::1", "reserved"),
        // IPv4 embedded in IPv6 is judged by the IPv4 address.
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.1.2.3", "private"),
        ("::ffff:169.254.169.254", "metadata"),
        ("::ffff:0:127.0.0.1", "loopback"),
        ("::127.0.0.1", "loopback"),
        ("::192.168.0.1", "private"),
        ("64:ff9b::127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("2002:7f00:1::", "loopback"),
        ("2002:c0a8:0101::1", "private"),
    ];
    for (addr, want) in cases {
        let got = blocked_reason(ip(addr));
        assert!(
            got.is_some_and(|r| r.contains(want)),
            "{addr}: expected a reason mentioning {want:?}, got {got:?}"
        );
    }
}

#[test]
fn public_addresses_pass() {
    let public = [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.216.34",
        "172.15.255.255",
        "172.32.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "169.253.255.255",
        "192.167.255.255",
        "198.17.255.255",
        "198.20.0.0",
        "223.255.255.255",
        "2606:4700:4700::1111",
        "2a00:1450:4001::200e",
        "::ffff:8.8.8.8",
        "64:ff9b::8.8.8.8",
        "2002:0808:0808::1",
    ];
    for addr in public {
        assert_eq!(blocked_reason(ip(addr)), None, "{addr}");
    }
}

fn deny() -> SsrfConfig {
    SsrfConfig::default()
}

fn refused(url: &str, cfg: &SsrfConfig) -> SsrfError {
    match check_url(url, cfg) {
        Err(e) => e,
        Ok(u) => panic!("{url} was allowed as {u}"),
    }
}

/// Every spelling of a blocked address the WHATWG parser accepts must be
/// normalised to that address and then refused.
#[test]
fn encoded_ipv4_forms_are_normalised_and_refused() {
    let cases = [
        ("http://127.0.0.1/", "127.0.0.1"),
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://0x7f.0.0.1/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://017700000001/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://127.0.1/", "127.0.0.1"),
        ("http://127.0.0.1./", "127.0.0.1"),
        ("http://%31%32%37.0.0.1/", "127.0.0.1"),
        ("http://\u{ff11}\u{ff12}\u{ff17}.0.0.1/", "127.0.0.1"),
        ("http://0/", "0.0.0.0"),
        ("http://0.0.0.0:8080/", "0.0.0.0"),
        ("http://167772161/", "10.0.0.1"),
        ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
        ("http://2852039166/", "169.254.169.254"),
        ("HTTP://0XC0.0250.1/", "192.168.0.1"),
    ];
    for (url, want) in cases {
        let e = refused(url, &deny());
        match &e {
            SsrfError::BlockedAddress { host, .. } => assert_eq!(host, want, "{url}"),
            other => panic!("{url}: {other:?}"),
        }
    }
}

#[test]
fn ipv6_literals_and_embedded_forms_are_refused() {
    let cases = [
        ("http://[::1]/", None),
        ("http://[0:0:0:0:0:0:0:1]/", None),
        ("http://[::]/", None),
        ("http://[::ffff:127.0.0.1]/", Some("127.0.0.1")),
        ("http://[::ffff:7f00:1]/", Some("127.0.0.1")),
        ("http://[::127.0.0.1]/", Some("127.0.0.1")),
        ("http://[64:ff9b::127.0.0.1]/", Some("127.0.0.1")),
        ("http://[2002:a9fe:a9fe::]/", Some("169.254.169.254")),
        ("http://[fd00::1]/", None),
        ("http://[fe80::1]/", None),
        ("http://[ff02::1]/", None),
    ];
    for (url, want) in cases {
        match refused(url, &deny()) {
            SsrfError::BlockedAddress { embedded, .. } => {
                assert_eq!(embedded, want.map(|w| w.parse().unwrap()), "{url}");
            }
            other => panic!("{url}: {other:?}"),
        }
    }
}

#[test]
fn local_names_are_refused() {
    for url in [
        "http://localhost/",
        "http://LOCALHOST:8080/",
        "http://localhost./",
        "http://api.localhost/",
        "http://a.b.localhost./x",
        "http://localhost.localdomain/",
        "http://ip6-localhost/",
    ] {
        assert!(
            matches!(refused(url, &deny()), SsrfError::LocalName { .. }),
            "{url}"
        );
    }
    // Not a local name, just similar.
    assert!(check_url("http://localhost.example.com/", &deny()).is_ok());
    assert!(check_url("http://mylocalhost/", &deny()).is_ok());
}

#[test]
fn only_http_and_https_without_credentials() {
    for url in [
        "file:///etc/passwd",
        "ftp://example.com/",
        "gopher://example.com/",
        "ws://example.com/",
        "javascript:alert(1)",
        "data:text/plain,hi",
    ] {
        assert!(
            matches!(refused(url, &deny()), SsrfError::Scheme { .. }),
            "{url}"
        );
    }
    assert_eq!(
        refused("http://user:pw@example.com/", &deny()),
        SsrfError::Credentials
    );
    assert_eq!(
        refused("http://example.com@127.0.0.1/", &deny()),
        SsrfError::Credentials
    );
    assert!(matches!(
        refused("not a url", &deny()),
        SsrfError::Unparseable { .. }
    ));
    assert!(matches!(
        refused("http://1.2.3.4.5/", &deny()),
        SsrfError::Unparseable { .. }
    ));
    let ok = check_url("https://example.com:8443/a?b#c", &deny()).unwrap();
    assert_eq!(ok.host_str(), Some("example.com"));
}

#[test]
fn allow_local_permits_loopback_and_private_only() {
    let cfg = SsrfConfig {
        allow_local: true,
        ..SsrfConfig::default()
    };
    for url in [
        "http://127.0.0.1:8080/",
        "http://2130706433/",
        "http://localhost/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[fd00::1]/",
    ] {
        assert!(check_url(url, &cfg).is_ok(), "{url}");
    }
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://0.0.0.0/",
        "http://100.100.100.200/",
        "http://224.0.0.1/",
        "http://[fe80::1]/",
        "file:///etc/passwd",
    ] {
        assert!(check_url(url, &cfg).is_err(), "{url}");
    }
}

#[test]
fn allowed_hosts_are_exact_host_and_port() {
    let cfg = SsrfConfig {
        allow_local: false,
        allowed_hosts: vec![
            "127.0.0.1:8080".into(),
            "[::1]:3000".into(),
            "169.254.169.254".into(),
            "Wiki.Internal:80".into(),
        ],
    };
    assert!(cfg.validate().is_ok());
    for url in [
        "http://127.0.0.1:8080/x",
        "http://2130706433:8080/",
        "http://[::1]:3000/",
        "http://169.254.169.254/latest",
        "http://169.254.169.254:1234/",
        "http://wiki.internal/",
        "http://WIKI.internal:80/",
    ] {
        assert!(check_url(url, &cfg).is_ok(), "{url}");
    }
    for url in [
        "http://127.0.0.1:8081/",
        "http://127.0.0.1/",
        "http://[::1]/",
    ] {
        assert!(
            matches!(refused(url, &cfg), SsrfError::BlockedAddress { .. }),
            "{url}"
        );
    }
    assert_eq!(
        refused("https://wiki.internal/", &cfg),
        SsrfError::PortNotAllowed {
            host: "wiki.internal".into(),
            port: 443,
            allowed: "80".into()
        }
    );
}

#[test]
fn invalid_allowed_hosts_are_reported() {
    for bad in ["", "http://x", "a/b", "u@h", "h:99999", "[::1"] {
        let cfg = SsrfConfig {
            allowed_hosts: vec![bad.into()],
            ..SsrfConfig::default()
        };
        assert!(
            matches!(cfg.validate(), Err(SsrfError::InvalidAllowedHost { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn messages_name_the_host_and_the_remedy() {
    assert_eq!(
        refused("http://127.0.0.1/", &deny()).to_string(),
        "URL host 127.0.0.1 is a loopback address; set allow_local to permit it"
    );
    assert_eq!(
        refused("http://[::ffff:127.0.0.1]/", &deny()).to_string(),
        "URL host [::ffff:7f00:1] (embeds IPv4 127.0.0.1) is a loopback address; \
         set allow_local to permit it"
    );
    let metadata = refused("http://169.254.169.254/", &deny()).to_string();
    assert!(metadata.contains("cloud metadata"), "{metadata}");
    assert!(metadata.contains("allowed_hosts"), "{metadata}");
}

fn sa(s: &str) -> SocketAddr {
    SocketAddr::new(ip(s), 0)
}

#[test]
fn resolver_drops_blocked_addresses_and_keeps_public_ones() {
    let r = GuardedResolver::new(&deny());
    let kept = r
        .filter(
            "mixed.test",
            [sa("10.0.0.1"), sa("93.184.216.34"), sa("::1")],
        )
        .unwrap();
    assert_eq!(kept, vec![sa("93.184.216.34")]);
}

#[test]
fn resolver_errors_when_nothing_permitted_remains() {
    let r = GuardedResolver::new(&deny());
    let e = r
        .filter("rebind.test", [sa("127.0.0.1"), sa("169.254.169.254")])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "URL host rebind.test resolves to 127.0.0.1, a loopback address; \
         set allow_local to permit it"
    );
    assert_eq!(r.filter("empty.test", []), Err(SsrfError::NoHost));
}

#[test]
fn resolver_honours_allow_local_and_exempt_names() {
    let local = GuardedResolver::new(&SsrfConfig {
        allow_local: true,
        ..SsrfConfig::default()
    });
    let kept = local
        .filter("dev.test", [sa("127.0.0.1"), sa("169.254.169.254")])
        .unwrap();
    assert_eq!(kept, vec![sa("127.0.0.1")]);

    let exempt = GuardedResolver::new(&SsrfConfig {
        allowed_hosts: vec!["Intranet.Test:8080".into()],
        ..SsrfConfig::default()
    });
    let all = [sa("10.0.0.1"), sa("169.254.169.254")];
    assert_eq!(exempt.filter("intranet.test", all).unwrap(), all.to_vec());
    assert!(exempt.filter("other.test", all).is_err());
}

/// Goes through reqwest's `Resolve` entry point with a real lookup of
/// `localhost` (answered from the hosts file, no network needed).
#[tokio::test]
async fn resolver_refuses_localhost_through_the_reqwest_trait() {
    let name = Name::from_str("localhost").unwrap();
    let err = match GuardedResolver::new(&deny()).resolve(name).await {
        Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
        Err(e) => e,
    };
    let ssrf = err.downcast_ref::<SsrfError>().expect("an SsrfError");
    assert!(
        matches!(ssrf, SsrfError::ResolvesToBlocked { local: true, .. }),
        "{ssrf:?}"
    );

    let allow = GuardedResolver::new(&SsrfConfig {
        allow_local: true,
        ..SsrfConfig::default()
    });
    let name = Name::from_str("localhost").unwrap();
    let addrs: Vec<SocketAddr> = allow.resolve(name).await.unwrap().collect();
    assert!(!addrs.is_empty());
    assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
}
