//! `http_fetch`: GET or HEAD one http(s) URL behind the SSRF guard.
//!
//! Contract:
//! * The URL is checked by [`check_url`] before any connection; names are
//!   resolved once by [`GuardedResolver`] and the client connects only to
//!   the addresses that passed (no DNS-rebinding window). No proxy is ever
//!   used, because a proxy would resolve the name itself.
//! * Redirects are followed by a policy that runs the same check on every
//!   hop, at most [`MAX_REDIRECTS`] of them.
//! * One total timeout covers connect, redirects and the body.
//! * The result is the status, content type and body as text (lossy UTF-8),
//!   cut at `max_bytes` with a note saying how much was cut; binary bodies
//!   are described, not dumped. The output is `External` trust: a web page
//!   may carry injected instructions, so the pipeline trust-wraps it.
//! * Failures are classified by type, never by message: SSRF refusals are
//!   [`CallError::GuardDenied`], connect errors [`CallError::Connection`],
//!   timeouts [`CallError::Timeout`], 429 [`CallError::RateLimited`] (with
//!   `Retry-After`), 5xx [`CallError::Upstream`]. Other 4xx are a normal
//!   result with `is_error` set, so the model sees the page and can adapt.

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{
    CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER,
};
use reqwest::{Client, Response, StatusCode, redirect};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::context::CallContext;
use crate::error::{ArgProblem, CallError};
use crate::guard::ssrf::{GuardedResolver, SsrfConfig, SsrfError, check_parsed, check_url};
use crate::tool::{
    Annotations, GuardKind, Risk, Tool, ToolDef, ToolNameError, ToolResult, Trust, TypedTool,
    typed_tool,
};

/// Most redirects followed for one fetch; more usually means a loop.
pub const MAX_REDIRECTS: usize = 5;
/// Total time for one fetch when the caller does not choose one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Body bytes returned when `max_bytes` is not given: a long article, but
/// well inside a model's context.
pub const DEFAULT_MAX_BYTES: u64 = 100_000;
/// Upper bound for `max_bytes`, whatever the model asks for.
pub const MAX_MAX_BYTES: u64 = 1_000_000;
/// Body bytes quoted in an upstream (5xx) error.
const ERROR_SNIPPET: usize = 300;

/// Fetches one web page or API response over http(s) and returns its status,
/// content type and body as text. Local and private network addresses are
/// refused.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpFetchArgs {
    /// The http:// or https:// URL to fetch.
    pub url: String,
    /// `GET` (default) returns the body; `HEAD` only status and headers.
    pub method: Option<Method>,
    /// Extra request headers, name to value (e.g. `{"Accept": "application/json"}`).
    pub headers: Option<BTreeMap<String, String>>,
    /// Most body bytes to return (default 100000, at most 1000000).
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_bytes: Option<u64>,
}

/// The HTTP methods `http_fetch` offers: both read-only.
// Variant doc comments would turn the schema's plain `enum` into a `oneOf`
// that models handle worse; the field's description explains both.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
pub enum Method {
    #[default]
    #[serde(rename = "GET")]
    Get,
    #[serde(rename = "HEAD")]
    Head,
}

/// Why the tool could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpFetchError {
    /// The SSRF configuration has an invalid entry.
    #[error("invalid SSRF configuration: {0}")]
    Config(#[from] SsrfError),
    /// The timeout is zero.
    #[error("http_fetch timeout must be greater than zero")]
    ZeroTimeout,
    /// reqwest could not build its client (TLS backend initialisation).
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// The tool name broke the naming rule (a bug).
    #[error(transparent)]
    Name(#[from] ToolNameError),
}

/// The `http_fetch` tool: a reqwest client wired to the SSRF guard.
#[derive(Debug, Clone)]
pub struct HttpFetch {
    client: Client,
    ssrf: Arc<SsrfConfig>,
    timeout: Duration,
}

impl HttpFetch {
    /// Builds the client: guarded resolver, re-checking redirect policy, no
    /// proxy, `timeout` for the whole fetch.
    ///
    /// # Errors
    /// An invalid `allowed_hosts` entry, a zero timeout, or a client that
    /// cannot be built.
    pub fn new(ssrf: SsrfConfig, timeout: Duration) -> Result<Self, HttpFetchError> {
        ssrf.validate()?;
        if timeout.is_zero() {
            return Err(HttpFetchError::ZeroTimeout);
        }
        let ssrf = Arc::new(ssrf);
        let client = Client::builder()
            .dns_resolver(Arc::new(GuardedResolver::new(&ssrf)))
            .redirect(redirect_policy(Arc::clone(&ssrf)))
            // A proxy would resolve the name itself, bypassing the resolver.
            .no_proxy()
            .timeout(timeout)
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            client,
            ssrf,
            timeout,
        })
    }
}

/// `http_fetch` with the default timeout, ready to register.
///
/// # Errors
/// As [`HttpFetch::new`].
pub fn tool(cfg: SsrfConfig) -> Result<(ToolDef, Arc<dyn Tool>), HttpFetchError> {
    Ok(typed_tool(HttpFetch::new(cfg, DEFAULT_TIMEOUT)?)?)
}

/// Stops after [`MAX_REDIRECTS`] hops.
#[derive(Debug, thiserror::Error)]
#[error("stopped after {MAX_REDIRECTS} redirects")]
struct TooManyRedirects;

/// Re-runs the SSRF check on every redirect target, before it is fetched.
fn redirect_policy(ssrf: Arc<SsrfConfig>) -> redirect::Policy {
    redirect::Policy::custom(move |attempt| {
        // `previous` holds the original URL plus every hop already taken.
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(TooManyRedirects);
        }
        match check_parsed(attempt.url(), &ssrf) {
            Ok(()) => attempt.follow(),
            Err(e) => attempt.error(e),
        }
    })
}

impl TypedTool for HttpFetch {
    type Args = HttpFetchArgs;
    const NAME: &'static str = "http_fetch";

    fn configure(def: ToolDef) -> ToolDef {
        def.with_trust(Trust::External)
            .with_risk(Risk::Medium)
            .with_guard("url", GuardKind::Url)
            .with_annotations(Annotations {
                title: Some("Fetch a URL".into()),
                read_only_hint: Some(true),
                open_world_hint: Some(true),
                ..Annotations::default()
            })
    }

    /// Headers that cannot be sent are refused with validation, before a
    /// person could be asked about a call that would fail anyway.
    fn check(&self, args: &serde_json::Value) -> Result<(), CallError> {
        let Some(serde_json::Value::Object(headers)) = args.get("headers") else {
            return Ok(());
        };
        let raw = headers
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect();
        build_headers(raw).map(drop)
    }

    async fn run(&self, args: HttpFetchArgs, _ctx: &CallContext) -> Result<ToolResult, CallError> {
        let url = check_url(&args.url, &self.ssrf).map_err(guard_denied)?;
        let headers = build_headers(args.headers.unwrap_or_default())?;
        let method = args.method.unwrap_or_default();
        let max_bytes = clamp_max_bytes(args.max_bytes);
        let request = match method {
            Method::Get => self.client.get(url),
            Method::Head => self.client.head(url),
        };
        let mut resp = request
            .headers(headers)
            .send()
            .await
            .map_err(|e| self.classify(&e))?;
        let status = resp.status();
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(CallError::RateLimited {
                retry_after: retry_after(resp.headers(), SystemTime::now()),
            });
        }
        if status.is_server_error() {
            return Err(self.upstream(resp).await);
        }
        let body = match method {
            Method::Get => Some(
                read_capped(&mut resp, max_bytes)
                    .await
                    .map_err(|e| self.classify(&e))?,
            ),
            Method::Head => None,
        };
        Ok(render(&resp, body))
    }
}

impl HttpFetch {
    /// Maps a reqwest failure to its class by walking the error's types.
    fn classify(&self, e: &reqwest::Error) -> CallError {
        if let Some(ssrf) = find_source::<SsrfError>(e) {
            return guard_denied(ssrf.clone());
        }
        if e.is_timeout() {
            return CallError::Timeout {
                after: self.timeout,
            };
        }
        if find_source::<TooManyRedirects>(e).is_some() {
            // The URL the caller chose loops or redirects too often.
            return CallError::caller_error(format!("{} (last: {})", TooManyRedirects, url_of(e)));
        }
        if e.is_connect() || e.is_request() || e.is_body() {
            return CallError::Connection {
                message: error_chain(e),
            };
        }
        if e.is_builder() {
            return CallError::internal(error_chain(e));
        }
        CallError::tool_failed(error_chain(e))
    }

    async fn upstream(&self, mut resp: Response) -> CallError {
        let status = resp.status();
        let snippet = match read_capped(&mut resp, ERROR_SNIPPET as u64).await {
            Ok(b) if !b.bytes.is_empty() && !looks_binary(&b.bytes, None) => {
                format!(": {}", String::from_utf8_lossy(&b.bytes).trim())
            }
            _ => String::new(),
        };
        CallError::Upstream {
            status: status.as_u16(),
            message: format!("{status}{snippet}"),
        }
    }
}

fn guard_denied(e: SsrfError) -> CallError {
    CallError::GuardDenied {
        arg: "url".into(),
        reason: e.to_string(),
    }
}

fn find_source<'e, T: StdError + 'static>(e: &'e (dyn StdError + 'static)) -> Option<&'e T> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(t) = err.downcast_ref::<T>() {
            return Some(t);
        }
        cur = err.source();
    }
    None
}

/// The error and its causes on one line; reqwest's own `Display` stops at
/// "error sending request", which tells nobody what went wrong.
fn error_chain(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        out.push_str(": ");
        out.push_str(&err.to_string());
        cur = err.source();
    }
    out
}

fn url_of(e: &reqwest::Error) -> String {
    e.url().map(ToString::to_string).unwrap_or_default()
}

/// Headers that would let the model steer the connection or the framing
/// rather than the request: refused.
const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "te",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
];

fn build_headers(raw: BTreeMap<String, String>) -> Result<HeaderMap, CallError> {
    let mut map = HeaderMap::new();
    let mut problems = Vec::new();
    for (name, value) in raw {
        let problem = |message: String| ArgProblem {
            pointer: format!("/headers/{name}"),
            message,
        };
        let Ok(hname) = HeaderName::from_bytes(name.as_bytes()) else {
            problems.push(problem("not a valid header name".into()));
            continue;
        };
        if FORBIDDEN_HEADERS.contains(&hname.as_str()) {
            problems.push(problem(format!("header `{hname}` cannot be set")));
            continue;
        }
        match HeaderValue::from_str(&value) {
            Ok(v) => {
                map.insert(hname, v);
            }
            Err(_) => problems.push(problem("value must be visible ASCII text".into())),
        }
    }
    if problems.is_empty() {
        Ok(map)
    } else {
        Err(CallError::InvalidArgs {
            tool: HttpFetch::NAME.into(),
            problems,
        })
    }
}

fn clamp_max_bytes(asked: Option<u64>) -> u64 {
    asked.unwrap_or(DEFAULT_MAX_BYTES).clamp(1, MAX_MAX_BYTES)
}

/// The body bytes kept, and whether more followed.
struct Body {
    bytes: Vec<u8>,
    truncated: bool,
}

/// Reads at most `cap` bytes; stops reading there rather than downloading
/// (and discarding) the rest.
async fn read_capped(resp: &mut Response, cap: u64) -> Result<Body, reqwest::Error> {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = cap - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Body {
                bytes,
                truncated: true,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body {
        bytes,
        truncated: false,
    })
}

/// Content types that are text whatever their bytes look like.
fn is_textual(content_type: &str) -> bool {
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    ct.starts_with("text/")
        || ct.ends_with("+json")
        || ct.ends_with("+xml")
        || matches!(
            ct.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-www-form-urlencoded"
                | "application/yaml"
                | "application/toml"
        )
}

/// Binary unless the type says text, or the bytes are UTF-8 without NULs
/// (an incomplete character at a truncation point is not evidence).
fn looks_binary(bytes: &[u8], content_type: Option<&str>) -> bool {
    if content_type.is_some_and(is_textual) {
        return false;
    }
    if bytes.contains(&0) {
        return true;
    }
    matches!(std::str::from_utf8(bytes), Err(e) if e.error_len().is_some())
}

/// `bytes` as text, dropping a character split by truncation.
fn body_text(bytes: &[u8], truncated: bool) -> String {
    let end = match std::str::from_utf8(bytes) {
        Err(e) if truncated && e.error_len().is_none() => e.valid_up_to(),
        _ => bytes.len(),
    };
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn render(resp: &Response, body: Option<Body>) -> ToolResult {
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // The header, not `Response::content_length`, which shrinks to what is
    // left unread.
    let total = resp
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    let mut text = format!(
        "HTTP {status}\nurl: {}\ncontent-type: {}\n",
        resp.url(),
        content_type.as_deref().unwrap_or("(none)")
    );
    if let Some(t) = total {
        text.push_str(&format!("content-length: {t}\n"));
    }
    let (kept, truncated) = body
        .as_ref()
        .map_or((0, false), |b| (b.bytes.len(), b.truncated));
    if let Some(b) = &body {
        if b.truncated {
            text.push_str(&truncation_note(kept, total));
        }
        text.push('\n');
        if looks_binary(&b.bytes, content_type.as_deref()) {
            let size = total.map_or(format!("at least {kept}"), |t| t.to_string());
            text.push_str(&format!(
                "[binary body of {size} bytes ({}); not shown]",
                content_type.as_deref().unwrap_or("unknown type")
            ));
        } else {
            text.push_str(&body_text(&b.bytes, b.truncated));
        }
    }
    let mut result = ToolResult::text(text);
    // 4xx is an answer the model can act on (wrong path, missing auth), not
    // a transport failure: shown, and flagged.
    result.is_error = status.is_client_error();
    let meta = json!({
        "status": status.as_u16(),
        "content_type": content_type,
        "final_url": resp.url().as_str(),
        "body_bytes": kept,
        "truncated": truncated,
    });
    if let serde_json::Value::Object(m) = meta {
        result.meta = m;
    }
    result
}

fn truncation_note(kept: usize, total: Option<u64>) -> String {
    match total {
        Some(t) => format!(
            "truncated: showing the first {kept} of {t} bytes ({} bytes cut)\n",
            t.saturating_sub(kept as u64)
        ),
        None => format!(
            "truncated: showing the first {kept} bytes; the rest (size unknown) was not downloaded\n"
        ),
    }
}

/// `Retry-After` as a wait from `now`: delay-seconds or an HTTP date (all
/// three formats RFC 9110 §5.6.7 requires recipients to accept). A date in
/// the past means "now".
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let raw = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = raw.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = UNIX_EPOCH + Duration::from_secs(parse_http_date(raw)?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Seconds since the Unix epoch of an IMF-fixdate (`Sun, 06 Nov 1994
/// 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) or asctime
/// (`Sun Nov  6 08:49:37 1994`) date.
fn parse_http_date(s: &str) -> Option<u64> {
    let t: Vec<&str> = s.split([' ', ',', '-']).filter(|p| !p.is_empty()).collect();
    let (day, month, year, time) = match t.as_slice() {
        [_, d, m, y, hms, "GMT"] => (*d, *m, *y, *hms),
        [_, m, d, hms, y] => (*d, *m, *y, *hms),
        _ => return None,
    };
    let year: i64 = match (year.len(), year.parse::<i64>().ok()?) {
        (2, y) if y < 70 => 2000 + y,
        (2, y) => 1900 + y,
        (4, y) => y,
        _ => return None,
    };
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let day: i64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let [h, mi, sec]: [i64; 3] = time
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<Vec<i64>>>()?
        .try_into()
        .ok()?;
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + mi * 60 + sec;
    u64::try_from(secs).ok()
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
