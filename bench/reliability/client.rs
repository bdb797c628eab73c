//! The harness's clients, each what a real one sends: an agent on the Unix
//! socket (newline-delimited JSON-RPC), an agent on the HTTP endpoint
//! (bearer token, `Mcp-Session-Id`), and a console script (the console's
//! bearer token, its own `Origin`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::daemon::Endpoints;

/// How long any one answer may take before the harness calls it lost.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// An `initialize` request with this client name.
pub fn initialize(id: u64, client: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": client, "version": "1"}}})
}

/// A `tools/call` request.
pub fn call_request(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
}

/// The error kind toolgate put on a call's answer, if it refused or failed.
pub fn error_kind(reply: &Value) -> Option<String> {
    reply["result"]["_meta"]["toolgate/error"]["kind"]
        .as_str()
        .map(str::to_owned)
}

/// The text parts of a call's answer, joined.
pub fn reply_text(reply: &Value) -> String {
    reply["result"]["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}

/// An agent on the Unix socket.
pub struct SocketAgent {
    rd: BufReader<OwnedReadHalf>,
    wr: OwnedWriteHalf,
    line: String,
    next_id: u64,
    /// Methods of the notifications the daemon sent, in order.
    pub notified: Vec<String>,
}

impl SocketAgent {
    /// Connects without saying anything.
    pub async fn raw(socket: &Path) -> anyhow::Result<Self> {
        let (rd, wr) = UnixStream::connect(socket)
            .await
            .with_context(|| format!("connect {}", socket.display()))?
            .into_split();
        Ok(Self {
            rd: BufReader::new(rd),
            wr,
            line: String::new(),
            next_id: 1_000_000,
            notified: Vec::new(),
        })
    }

    /// Connects and completes the MCP handshake as `client`.
    pub async fn connect(socket: &Path, client: &str) -> anyhow::Result<Self> {
        let mut a = Self::raw(socket).await?;
        let id = a.fresh_id();
        a.request(&initialize(id, client)).await?;
        a.send_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await?;
        Ok(a)
    }

    /// An id this agent has not used.
    pub fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Writes one frame and its newline.
    pub async fn send_line(&mut self, frame: &[u8]) -> std::io::Result<()> {
        self.wr.write_all(frame).await?;
        self.wr.write_all(b"\n").await
    }

    /// The next message from the daemon; `None` at end of stream.
    pub async fn next_message(&mut self) -> anyhow::Result<Option<Value>> {
        tokio::time::timeout(ANSWER_WITHIN, self.next_message_unbounded())
            .await
            .context("no answer within the limit")?
    }

    /// [`Self::next_message`] without a time limit: for an agent that
    /// waits for a person.
    pub async fn next_message_unbounded(&mut self) -> anyhow::Result<Option<Value>> {
        self.line.clear();
        let n = self.rd.read_line(&mut self.line).await?;
        if n == 0 {
            return Ok(None);
        }
        Ok(Some(serde_json::from_str(&self.line).with_context(
            || format!("the daemon sent a line that is not JSON: {}", self.line),
        )?))
    }

    /// Sends `req` and reads until the answer with its id (notifications
    /// in between are skipped).
    pub async fn request(&mut self, req: &Value) -> anyhow::Result<Value> {
        self.send_line(req.to_string().as_bytes()).await?;
        loop {
            match self.next_message().await? {
                Some(m) if m.get("id") == req.get("id") => return Ok(m),
                Some(m) => {
                    if let Some(method) = m["method"].as_str() {
                        self.notified.push(method.to_owned());
                    }
                }
                None => bail!("the daemon closed the connection before answering {req}"),
            }
        }
    }

    /// Calls `tool`; returns the answer and how long it took.
    pub async fn call(&mut self, tool: &str, args: Value) -> anyhow::Result<(Value, Duration)> {
        let id = self.fresh_id();
        let t = Instant::now();
        let reply = self.request(&call_request(id, tool, args)).await?;
        Ok((reply, t.elapsed()))
    }

    /// Splits into the raw halves, for a writer and a reader that run
    /// apart (the fuzzer pipelines frames).
    pub fn into_halves(self) -> (BufReader<OwnedReadHalf>, OwnedWriteHalf) {
        (self.rd, self.wr)
    }
}

/// A reqwest client that goes nowhere but loopback.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(ANSWER_WITHIN)
        .build()
        .expect("http client")
}

/// An agent on the HTTP endpoint.
#[derive(Clone)]
pub struct HttpAgent {
    http: reqwest::Client,
    url: String,
    token: String,
    /// Its `Mcp-Session-Id`.
    pub session: String,
}

impl HttpAgent {
    /// Initialises a session as `client`.
    pub async fn connect(at: &Endpoints, client: &str) -> anyhow::Result<Self> {
        let http = http_client();
        let r = http
            .post(&at.mcp_url)
            .bearer_auth(&at.mcp_token)
            .json(&initialize(1, client))
            .send()
            .await?;
        let session = r
            .headers()
            .get("mcp-session-id")
            .context("no Mcp-Session-Id on initialize")?
            .to_str()?
            .to_owned();
        let a = Self {
            http,
            url: at.mcp_url.clone(),
            token: at.mcp_token.clone(),
            session,
        };
        a.post(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec())
            .await?;
        Ok(a)
    }

    /// Posts a raw body in this session; returns the status and body.
    pub async fn post(&self, body: Vec<u8>) -> anyhow::Result<(u16, Vec<u8>)> {
        let r = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("mcp-session-id", &self.session)
            .body(body)
            .send()
            .await?;
        let status = r.status().as_u16();
        Ok((status, r.bytes().await?.to_vec()))
    }

    /// Calls `tool` with request id `id`; returns the answer and how long
    /// it took.
    pub async fn call(
        &self,
        id: u64,
        tool: &str,
        args: Value,
    ) -> anyhow::Result<(Value, Duration)> {
        let t = Instant::now();
        let (status, body) = self
            .post(call_request(id, tool, args).to_string().into_bytes())
            .await?;
        if status != 200 {
            bail!("HTTP {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok((serde_json::from_slice(&body)?, t.elapsed()))
    }
}

/// A console script: the console's bearer token and its own Origin.
#[derive(Clone)]
pub struct Console {
    http: reqwest::Client,
    origin: String,
    token: String,
}

impl Console {
    /// The console of the daemon at `at`.
    pub fn new(at: &Endpoints) -> Self {
        Self {
            http: http_client(),
            origin: at.origin.clone(),
            token: at.console_token.clone(),
        }
    }

    /// Sends `method path` with `body`; returns the status and body.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> anyhow::Result<(u16, Vec<u8>)> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.origin))
            .bearer_auth(&self.token)
            .header("origin", &self.origin);
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let r = req.send().await?;
        let status = r.status().as_u16();
        Ok((status, r.bytes().await?.to_vec()))
    }

    /// `GET path` as JSON; an error unless it answered 200.
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let (status, body) = self.send(reqwest::Method::GET, path, None).await?;
        if status != 200 {
            bail!(
                "GET {path}: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        Ok(serde_json::from_slice(&body)?)
    }

    /// The console's whole state.
    pub async fn snapshot(&self) -> anyhow::Result<Value> {
        self.get("/api/snapshot").await
    }

    /// Follows the event stream from now on: every envelope's `event`, in
    /// order, on the returned channel (until the stream ends).
    pub async fn events(&self) -> anyhow::Result<tokio::sync::mpsc::UnboundedReceiver<Value>> {
        let r = self
            .http
            .get(format!("{}/api/events", self.origin))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(3600))
            .send()
            .await?;
        if r.status() != 200 {
            bail!("GET /api/events: HTTP {}", r.status());
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut body = r.bytes_stream();
        tokio::spawn(async move {
            let mut buf = String::new();
            while let Some(Ok(chunk)) = body.next().await {
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let event: String = buf.drain(..end + 2).collect();
                    for data in event.lines().filter_map(|l| l.strip_prefix("data: ")) {
                        if let Ok(v) = serde_json::from_str::<Value>(data) {
                            let _ = tx.send(v["event"].clone());
                        }
                    }
                }
            }
        });
        Ok(rx)
    }
}
