//! A small JSON-RPC client for the daemon's control socket, used by the
//! CLI (`toolgate tools`, `call`, `breakers` talk to the running daemon
//! when there is one) and the desktop app. Every connection starts by
//! presenting the control credential (`toolgate/auth`, see
//! [`crate::barrier::credential`]).

use std::path::Path;

use serde_json::{Value, json};

use crate::barrier::credential::Credential;
use crate::wire::AUTH_METHOD;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Why a control request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Connecting or talking failed.
    #[error("control socket: {0}")]
    Io(#[from] std::io::Error),
    /// The daemon answered with a JSON-RPC error.
    #[error("daemon refused: {message} ({code})")]
    Rpc {
        /// JSON-RPC code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The daemon closed the connection or sent something unreadable.
    #[error("daemon sent no usable reply")]
    NoReply,
}

/// A connection to the control socket.
#[derive(Debug)]
pub struct ControlClient {
    rd: BufReader<OwnedReadHalf>,
    wr: OwnedWriteHalf,
    next: u64,
}

impl ControlClient {
    /// Connects and presents `credential`.
    ///
    /// # Errors
    /// No daemon listens there (I/O), or it refused the credential (RPC).
    pub async fn connect(path: &Path, credential: &Credential) -> Result<Self, ClientError> {
        let (rd, wr) = UnixStream::connect(path).await?.into_split();
        let mut client = Self {
            rd: BufReader::new(rd),
            wr,
            next: 1,
        };
        client
            .request(AUTH_METHOD, json!({"credential": credential.expose()}))
            .await?;
        Ok(client)
    }

    /// Sends one request and returns its `result`, skipping notifications.
    ///
    /// # Errors
    /// I/O, a JSON-RPC error reply, or no reply.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.next;
        self.next += 1;
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        self.wr.write_all(line.as_bytes()).await?;
        loop {
            let mut reply = String::new();
            if self.rd.read_line(&mut reply).await? == 0 {
                return Err(ClientError::NoReply);
            }
            let v: Value = serde_json::from_str(&reply).map_err(|_| ClientError::NoReply)?;
            if v.get("id") != Some(&json!(id)) {
                continue;
            }
            if let Some(e) = v.get("error") {
                return Err(ClientError::Rpc {
                    code: e["code"].as_i64().unwrap_or(0),
                    message: e["message"].as_str().unwrap_or_default().to_owned(),
                });
            }
            return v.get("result").cloned().ok_or(ClientError::NoReply);
        }
    }
}
