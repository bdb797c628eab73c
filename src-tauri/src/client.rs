//! The shell as a console client (docs/architecture/overview.md, "One
//! client, two modes"): the snapshot, the live stream and decisions over the engine's
//! console HTTP API, with the console bearer token. The same in both modes:
//! an engine in this app is reached exactly like an attached one.
//!
//! [`ConsoleSource`] is what [`crate::follow`] needs of it, so the loop that
//! feeds [`crate::state::DesktopState`] is tested without a server;
//! [`HttpConsole`] is the real one.

use std::future::Future;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, ORIGIN};
use sse_stream::SseStream;
use toolgate::wire::{DecisionBody, Via};
use url::Url;

use crate::wire::{Envelope, Snapshot, TeamLine, TeamSlice, Verdict};

/// Why a console request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The console could not be reached, or the connection broke.
    #[error("console {url}: {source}")]
    Http {
        /// What was asked.
        url: String,
        /// The error.
        source: reqwest::Error,
    },
    /// The console answered with an error (`{"error": {code, message}}`).
    #[error("console refused {url}: {status} {code}: {message}")]
    Refused {
        /// What was asked.
        url: String,
        /// HTTP status.
        status: u16,
        /// `unauthorized`, `stale`, `not_found`, ...
        code: String,
        /// What the console said to do.
        message: String,
        /// The request field an `invalid` answer is about.
        field: Option<String>,
    },
    /// The answer was not what the console API promises.
    #[error("console {url} sent something unreadable: {detail}")]
    Unreadable {
        /// What was asked.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The bearer token has characters no header may carry.
    #[error("the console bearer token is not a valid header value")]
    BadToken,
}

impl ClientError {
    /// Whether the request ended elsewhere first (decided from another
    /// place, timed out): `409 stale`. Not a failure worth telling about.
    pub fn is_stale(&self) -> bool {
        matches!(self, Self::Refused { code, .. } if code == "stale")
    }
}

/// One item of the live stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamItem {
    /// An event.
    Envelope(Envelope),
    /// The stream cannot give every event after the one asked for: fetch a
    /// snapshot and subscribe again from its `seq`. Always the last item.
    Reload,
}

/// The live stream of one subscription; it ends when the connection does.
pub type EventStream = BoxStream<'static, Result<StreamItem, ClientError>>;

/// What the shell needs of the console.
pub trait ConsoleSource: Send + Sync + 'static {
    /// `GET /api/snapshot`.
    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, ClientError>> + Send;
    /// `GET /api/events?after=<seq>`.
    fn events(&self, after: u64) -> impl Future<Output = Result<EventStream, ClientError>> + Send;
    /// `POST /api/approvals/{id}/approve|deny` with the decider.
    fn decide(
        &self,
        id: i64,
        verdict: Verdict,
        via: Via,
    ) -> impl Future<Output = Result<(), ClientError>> + Send;
    /// `GET /api/state/team`: the team link now (`None`: the engine runs
    /// alone).
    fn team(&self) -> impl Future<Output = Result<Option<TeamLine>, ClientError>> + Send;
}

/// The console of one engine over HTTP, with its bearer token.
#[derive(Debug, Clone)]
pub struct HttpConsole {
    base: Url,
    http: reqwest::Client,
}

impl HttpConsole {
    /// A client of the console at `base` (`http://127.0.0.1:PORT`).
    ///
    /// Every request carries the bearer token and the console's own
    /// `Origin`: the console refuses a state-changing request without it
    /// (docs/architecture/console-api.md, Auth).
    ///
    /// # Errors
    /// [`ClientError::BadToken`].
    pub fn new(base: Url, bearer: &str) -> Result<Self, ClientError> {
        let mut headers = HeaderMap::new();
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", bearer.trim()))
            .map_err(|_| ClientError::BadToken)?;
        auth.set_sensitive(true);
        headers.insert(AUTHORIZATION, auth);
        let origin = base.origin().ascii_serialization();
        headers.insert(
            ORIGIN,
            HeaderValue::from_str(&origin).map_err(|_| ClientError::BadToken)?,
        );
        let http = reqwest::Client::builder()
            .default_headers(headers)
            // Loopback only: a proxy from the environment must not see
            // the console's traffic or its token.
            .no_proxy()
            .build()
            .map_err(|source| ClientError::Http {
                url: base.to_string(),
                source,
            })?;
        Ok(Self { base, http })
    }

    /// The console's base URL.
    pub fn base(&self) -> &Url {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base.as_str().trim_end_matches('/'), path)
    }

    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<reqwest::Response, ClientError> {
        let resp = req.send().await.map_err(|source| ClientError::Http {
            url: url.to_owned(),
            source,
        })?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status().as_u16();
        let body: serde_json::Value = resp.json().await.unwrap_or_default();
        let text = |k: &str| body["error"][k].as_str().unwrap_or_default().to_owned();
        Err(ClientError::Refused {
            url: url.to_owned(),
            status,
            code: text("code"),
            message: text("message"),
            field: body["error"]["field"].as_str().map(str::to_owned),
        })
    }
}

impl HttpConsole {
    /// `GET path`, read as JSON.
    async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let url = self.url(path);
        let resp = self.send(self.http.get(&url), &url).await?;
        resp.json().await.map_err(|e| ClientError::Unreadable {
            url,
            detail: e.to_string(),
        })
    }
}

impl ConsoleSource for HttpConsole {
    async fn snapshot(&self) -> Result<Snapshot, ClientError> {
        self.get_json("/api/snapshot").await
    }

    async fn team(&self) -> Result<Option<TeamLine>, ClientError> {
        let slice: TeamSlice = self.get_json("/api/state/team").await?;
        Ok(slice.team)
    }

    async fn events(&self, after: u64) -> Result<EventStream, ClientError> {
        let url = self.url(&format!("/api/events?after={after}"));
        let resp = self.send(self.http.get(&url), &url).await?;
        let parse_url = url.clone();
        let stream = SseStream::from_bytes_stream(resp.bytes_stream())
            .filter_map(move |item| {
                let url = parse_url.clone();
                async move { sse_item(item, &url).transpose() }
            })
            .boxed();
        Ok(stream)
    }

    async fn decide(&self, id: i64, verdict: Verdict, via: Via) -> Result<(), ClientError> {
        let url = self.url(&format!("/api/approvals/{id}/{}", verdict.as_str()));
        let req = self.http.post(&url).json(&DecisionBody {
            decider: Some(via),
            ..DecisionBody::default()
        });
        match self.send(req, &url).await {
            // A console that does not know the field yet refuses the whole
            // body (422 on `decider`): the person's decision must still
            // count, recorded as the bearer client's instead of the tray's.
            Err(ClientError::Refused {
                status: 422,
                field: Some(f),
                ..
            }) if f == "decider" => {
                tracing::warn!("the console does not record `decider` yet; deciding without it");
                let req = self.http.post(&url).json(&serde_json::json!({}));
                self.send(req, &url).await.map(drop)
            }
            other => other.map(drop),
        }
    }
}

/// One SSE event as a stream item: `message` carries an envelope, `reload`
/// ends the stream; keep-alive comments and unknown event types are
/// skipped (`Ok(None)`).
fn sse_item(
    item: Result<sse_stream::Sse, sse_stream::Error>,
    url: &str,
) -> Result<Option<StreamItem>, ClientError> {
    let unreadable = |detail: String| ClientError::Unreadable {
        url: url.to_owned(),
        detail,
    };
    let sse = item.map_err(|e| unreadable(e.to_string()))?;
    match sse.event.as_deref() {
        Some("reload") => Ok(Some(StreamItem::Reload)),
        None | Some("message") => match sse.data {
            Some(data) => serde_json::from_str(&data)
                .map(|e| Some(StreamItem::Envelope(e)))
                .map_err(|e| unreadable(format!("{e} in {data:.200}"))),
            None => Ok(None),
        },
        Some(_) => Ok(None),
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
