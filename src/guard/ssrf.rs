//! SSRF guard: decides whether a URL, and every address it resolves to, may
//! be fetched on the agent's behalf.
//!
//! The contract (pipeline stage 7; PraisonAI's `is_safe_http_url` with
//! its `ALLOW_LOCAL_CRAWL` switch):
//!
//! * Only `http` and `https` URLs, without `user:pass@` credentials.
//! * A URL is parsed once with the WHATWG rules of the `url` crate, so the
//!   host we judge is the host the client connects to. Those rules already
//!   turn `2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`, `%31%32%37.0.0.1` and
//!   full-width digits into `127.0.0.1`; [`check_url`] judges the result.
//! * Literal IPs are judged by [`blocked_reason`]: loopback, private,
//!   link-local (with the cloud metadata address), CGNAT, multicast,
//!   reserved and other special-purpose ranges are refused. IPv6 forms that
//!   embed an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by
//!   the embedded address, so `[::ffff:127.0.0.1]` is loopback.
//! * Host names are judged twice: `localhost`-style names statically, every
//!   other name by [`GuardedResolver`] at connection time. The resolver
//!   drops blocked addresses and hands the client only the checked ones, so
//!   the address that was checked is the address that is connected to: no
//!   second lookup, no DNS-rebinding window.
//! * [`SsrfConfig::allow_local`] permits loopback and private addresses
//!   (never link-local/metadata, multicast or reserved ones);
//!   [`SsrfConfig::allowed_hosts`] exempts exact `host` or `host:port`
//!   entries from every address check.
//!
//! Messages are written for a model: they name the host, say what kind of
//! address it is and what setting would permit it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Which destinations the guard lets through besides the public internet.
/// The default refuses every local and special-purpose address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SsrfConfig {
    /// Permit loopback, private (RFC 1918), unique-local and site-local
    /// addresses and `localhost` names: PraisonAI's `ALLOW_LOCAL_CRAWL`, for
    /// people who point agents at their own dev servers. Link-local (cloud
    /// metadata), multicast and reserved ranges stay blocked.
    pub allow_local: bool,
    /// Exact exceptions, `host` (any port) or `host:port`, e.g.
    /// `"127.0.0.1:8080"`, `"wiki.internal"`, `"[::1]:3000"`. Entries are
    /// normalised like URL hosts, so `"LOCALHOST"` and `"127.1"` match
    /// `localhost` and `127.0.0.1`. A name listed only with ports is refused
    /// on every other port, because the resolver sees names, not ports.
    pub allowed_hosts: Vec<String>,
}

impl SsrfConfig {
    /// Checks every `allowed_hosts` entry, so a typo is reported when the
    /// configuration is loaded instead of silently never matching.
    ///
    /// # Errors
    /// [`SsrfError::InvalidAllowedHost`] for the first entry that is not a
    /// bare `host` or `host:port`.
    pub fn validate(&self) -> Result<(), SsrfError> {
        self.allowed_hosts
            .iter()
            .try_for_each(|e| parse_entry(e).map(drop))
    }
}

/// Why a URL or address was refused. The `Display` text is what the model
/// reads, so it names the host and the setting that would permit it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SsrfError {
    /// Not a URL at all.
    #[error("`{url}` is not a valid URL: {reason}")]
    Unparseable {
        /// The text given.
        url: String,
        /// The parser's complaint.
        reason: String,
    },
    /// Scheme other than http/https (`file:`, `gopher:`, `ftp:` ...).
    #[error("URL scheme `{scheme}` is not allowed; use http or https")]
    Scheme {
        /// The refused scheme.
        scheme: String,
    },
    /// `user:pass@host`: credentials in URLs leak into logs and have been
    /// used to disguise the real host (`http://trusted.com@evil.com`).
    #[error("URL contains credentials (`user@` or `user:pass@`); send them in a header instead")]
    Credentials,
    /// An http(s) URL without a host.
    #[error("URL has no host")]
    NoHost,
    /// The host is, or embeds, a blocked IP address.
    #[error(
        "URL host {host}{} is {reason}; {}",
        embedded.map(|v4| format!(" (embeds IPv4 {v4})")).unwrap_or_default(),
        remedy(*.local)
    )]
    BlockedAddress {
        /// The host as written in the normalised URL.
        host: String,
        /// The IPv4 address an IPv6 host embeds, if that is what was judged.
        embedded: Option<Ipv4Addr>,
        /// What kind of address it is, e.g. "a loopback address".
        reason: &'static str,
        /// Whether `allow_local` would permit it.
        local: bool,
    },
    /// A name that always means this machine (`localhost`, `*.localhost`).
    #[error("URL host {host} is a local name; set allow_local to permit it")]
    LocalName {
        /// The name.
        host: String,
    },
    /// Every address a name resolved to is blocked.
    #[error("URL host {host} resolves to {ip}, {reason}; {}", remedy(*.local))]
    ResolvesToBlocked {
        /// The name.
        host: String,
        /// The first blocked address.
        ip: IpAddr,
        /// What kind of address it is.
        reason: &'static str,
        /// Whether `allow_local` would permit it.
        local: bool,
    },
    /// The name is in `allowed_hosts`, but only with other ports.
    #[error("URL host {host} is allowed only on port(s) {allowed}, not {port}")]
    PortNotAllowed {
        /// The name.
        host: String,
        /// The port asked for.
        port: u16,
        /// The ports listed for it, comma-separated.
        allowed: String,
    },
    /// A configured `allowed_hosts` entry is not `host` or `host:port`.
    #[error("allowed_hosts entry `{entry}` is not a host or host:port")]
    InvalidAllowedHost {
        /// The entry.
        entry: String,
    },
}

fn remedy(local: bool) -> &'static str {
    if local {
        "set allow_local to permit it"
    } else {
        "only an exact allowed_hosts entry permits it"
    }
}

/// Parses and checks a URL before any connection is made, and returns the
/// parsed form so the caller fetches exactly what was checked.
///
/// Host names other than `localhost`-style ones pass here; their addresses
/// are judged by [`GuardedResolver`] when the client connects.
///
/// # Errors
/// Any [`SsrfError`] except `ResolvesToBlocked` and `InvalidAllowedHost`.
pub fn check_url(url: &str, cfg: &SsrfConfig) -> Result<Url, SsrfError> {
    let parsed = Url::parse(url.trim()).map_err(|e| SsrfError::Unparseable {
        // Cut like a path: a refusal holds no copy of a huge argument.
        url: crate::events::cut_text(url, super::path::MAX_PATH).into_owned(),
        reason: e.to_string(),
    })?;
    check_parsed(&parsed, cfg)?;
    Ok(parsed)
}

/// [`check_url`] for an already parsed URL (redirect targets arrive parsed).
///
/// # Errors
/// As [`check_url`].
pub fn check_parsed(url: &Url, cfg: &SsrfConfig) -> Result<(), SsrfError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(SsrfError::Scheme {
            scheme: url.scheme().to_owned(),
        });
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(SsrfError::Credentials);
    }
    let host = url.host().ok_or(SsrfError::NoHost)?;
    let port = url.port_or_known_default().unwrap_or(0);
    match exemption(&host, port, cfg) {
        Exemption::Exempt => return Ok(()),
        Exemption::WrongPort(allowed) => {
            return Err(SsrfError::PortNotAllowed {
                host: host.to_string(),
                port,
                allowed,
            });
        }
        Exemption::None => {}
    }
    match host {
        Host::Domain(name) if is_local_name(name) && !cfg.allow_local => {
            Err(SsrfError::LocalName {
                host: name.to_owned(),
            })
        }
        Host::Domain(_) => Ok(()),
        Host::Ipv4(v4) => judge_literal(&host, IpAddr::V4(v4), None, cfg),
        Host::Ipv6(v6) => judge_literal(&host, IpAddr::V6(v6), embedded_v4(v6), cfg),
    }
}

fn judge_literal(
    host: &Host<&str>,
    ip: IpAddr,
    embedded: Option<Ipv4Addr>,
    cfg: &SsrfConfig,
) -> Result<(), SsrfError> {
    match classify(ip) {
        Some(v) if !(v.local && cfg.allow_local) => Err(SsrfError::BlockedAddress {
            host: host.to_string(),
            embedded,
            reason: v.reason,
            local: v.local,
        }),
        _ => Ok(()),
    }
}

/// Names that mean "this machine" without asking DNS (RFC 6761 reserves
/// `localhost` and everything under it). The trailing dot of a fully
/// qualified name is ignored, so `localhost.` counts too.
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    matches!(
        name.as_str(),
        "localhost" | "localhost.localdomain" | "ip6-localhost" | "ip6-loopback"
    ) || name.ends_with(".localhost")
}

/// Why `ip` must not be fetched, or `None` if it is a public address.
/// IPv6 forms that embed an IPv4 address are judged by that address.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    classify(ip).map(|v| v.reason)
}

/// A blocked address: what it is, and whether `allow_local` lifts the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verdict {
    reason: &'static str,
    local: bool,
}

const fn blocked(reason: &'static str) -> Option<Verdict> {
    Some(Verdict {
        reason,
        local: false,
    })
}

const fn local(reason: &'static str) -> Option<Verdict> {
    Some(Verdict {
        reason,
        local: true,
    })
}

fn classify(ip: IpAddr) -> Option<Verdict> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Verdict> {
    let [a, b, c, _] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        return blocked("a link-local address (the cloud metadata endpoint)");
    }
    if ip.is_broadcast() {
        return blocked("the broadcast address");
    }
    match (a, b, c) {
        (0, ..) => blocked("an unspecified (this-network) address"),
        (127, ..) => local("a loopback address"),
        (10, ..) | (192, 168, _) => local("a private address"),
        (172, 16..=31, _) => local("a private address"),
        (100, 64..=127, _) => blocked("a shared (carrier-grade NAT) address"),
        (169, 254, _) => blocked("a link-local address"),
        (192, 0, 0) => blocked("an IETF protocol-assignment address"),
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => blocked("a documentation address"),
        (198, 18..=19, _) => blocked("a benchmarking address"),
        (224..=239, ..) => blocked("a multicast address"),
        (240..=255, ..) => blocked("a reserved address"),
        _ => None,
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Verdict> {
    if ip.is_unspecified() {
        return blocked("an unspecified address");
    }
    if ip.is_loopback() {
        return local("a loopback address");
    }
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let s = ip.segments();
    match s[0] {
        0x0064 if s[1] == 0xff9b && s[2] == 0x0001 => blocked("a local-use NAT64 address"),
        0x0100 if s[1..4] == [0, 0, 0] => blocked("a discard-only address"),
        0x2001 if s[1] == 0x0db8 => blocked("a documentation address"),
        0xfc00..=0xfdff => local("a unique-local (private) address"),
        0xfe80..=0xfebf => blocked("a link-local address"),
        0xfec0..=0xfeff => local("a site-local (private) address"),
        0xff00..=0xffff => blocked("a multicast address"),
        // Everything outside global unicast 2000::/3 is special-purpose.
        x if !(0x2000..=0x3fff).contains(&x) => blocked("a reserved address"),
        _ => None,
    }
}

/// The IPv4 address inside an IPv6 address that carries one: IPv4-mapped
/// `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, IPv4-compatible
/// `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` and 6to4 `2002:aabb:ccdd::`.
/// Packets to these reach the IPv4 address, so that is what is judged.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let low = || v4(s[6], s[7]);
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] | [0, 0, 0, 0, 0xffff, 0, ..] => Some(low()),
        // `::` and `::1` are IPv6's own; callers test them first.
        [0, 0, 0, 0, 0, 0, ..] if !(ip.is_unspecified() || ip.is_loopback()) => Some(low()),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(low()),
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        _ => None,
    }
}

/// One parsed `allowed_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    host: Host<String>,
    port: Option<u16>,
}

fn parse_entry(entry: &str) -> Result<Entry, SsrfError> {
    let bad = || SsrfError::InvalidAllowedHost {
        entry: entry.to_owned(),
    };
    let e = entry.trim();
    if e.is_empty() || e.contains(['/', '@', '?', '#']) {
        return Err(bad());
    }
    // The url crate drops a scheme's default port (`:80` under http), so
    // parse under both schemes: whichever keeps the port saw it written.
    let http = Url::parse(&format!("http://{e}/")).map_err(|_| bad())?;
    let https = Url::parse(&format!("https://{e}/")).map_err(|_| bad())?;
    let host = http.host().ok_or_else(bad)?.to_owned();
    Ok(Entry {
        host,
        port: http.port().or(https.port()),
    })
}

enum Exemption {
    Exempt,
    /// Listed, but only with these other ports.
    WrongPort(String),
    None,
}

fn exemption(host: &Host<&str>, port: u16, cfg: &SsrfConfig) -> Exemption {
    let host = host.to_owned();
    let same_host: Vec<Entry> = cfg
        .allowed_hosts
        .iter()
        .filter_map(|e| parse_entry(e).ok())
        .filter(|e| e.host == host)
        .collect();
    if same_host.iter().any(|e| e.port.is_none_or(|p| p == port)) {
        return Exemption::Exempt;
    }
    // Only names need the port rule: the resolver will exempt the name on
    // every port, so other ports must be stopped here.
    match host {
        Host::Domain(_) if !same_host.is_empty() => Exemption::WrongPort(
            same_host
                .iter()
                .filter_map(|e| e.port.map(|p| p.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        _ => Exemption::None,
    }
}

/// A DNS resolver for reqwest that only ever returns permitted addresses.
///
/// The client connects to whatever the resolver returns, so filtering here
/// pins each connection to addresses that were checked in the same lookup:
/// a name cannot pass a first lookup and then rebind to `127.0.0.1`. Names
/// listed in `allowed_hosts` are returned unfiltered. IP-literal URLs never
/// reach a resolver; [`check_url`] judges them.
#[derive(Clone)]
pub struct GuardedResolver {
    allow_local: bool,
    exempt_names: Arc<[String]>,
}

impl fmt::Debug for GuardedResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedResolver")
            .field("allow_local", &self.allow_local)
            .field("exempt_names", &self.exempt_names)
            .finish()
    }
}

impl GuardedResolver {
    /// A resolver applying `cfg`. Invalid `allowed_hosts` entries are
    /// ignored here; [`SsrfConfig::validate`] reports them.
    pub fn new(cfg: &SsrfConfig) -> Self {
        let exempt_names = cfg
            .allowed_hosts
            .iter()
            .filter_map(|e| parse_entry(e).ok())
            .filter_map(|e| match e.host {
                Host::Domain(d) => Some(d),
                _ => None,
            })
            .collect();
        Self {
            allow_local: cfg.allow_local,
            exempt_names,
        }
    }

    /// Keeps the permitted addresses of `host`'s lookup result.
    ///
    /// # Errors
    /// [`SsrfError::ResolvesToBlocked`] (naming the first blocked address)
    /// when none remain, or [`SsrfError::NoHost`] for an empty lookup.
    pub fn filter(
        &self,
        host: &str,
        addrs: impl IntoIterator<Item = SocketAddr>,
    ) -> Result<Vec<SocketAddr>, SsrfError> {
        let all: Vec<SocketAddr> = addrs.into_iter().collect();
        if self.exempt_names.iter().any(|n| n == host) {
            return Ok(all);
        }
        let mut first_blocked = None;
        let mut kept = Vec::with_capacity(all.len());
        for addr in all {
            match classify(addr.ip()) {
                Some(v) if !(v.local && self.allow_local) => {
                    first_blocked.get_or_insert((addr.ip(), v));
                }
                _ => kept.push(addr),
            }
        }
        match (kept.is_empty(), first_blocked) {
            (false, _) => Ok(kept),
            (true, Some((ip, v))) => Err(SsrfError::ResolvesToBlocked {
                host: host.to_owned(),
                ip,
                reason: v.reason,
                local: v.local,
            }),
            (true, None) => Err(SsrfError::NoHost),
        }
    }

    /// Looks `host` up with the system resolver and filters the result.
    ///
    /// # Errors
    /// The lookup's I/O error, or [`GuardedResolver::filter`]'s.
    pub async fn lookup(
        &self,
        host: &str,
    ) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let addrs = tokio::net::lookup_host((host, 0)).await?;
        Ok(self.filter(host, addrs)?)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        Box::pin(async move {
            let addrs = this.lookup(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
#[path = "ssrf_tests.rs"]
mod tests;
