//! One keep-alive HTTP/1.1 connection (hyper's low-level client) with a per-request timeout.
//!
//! A worker owns one [`Connection`] and sends one request at a time on it, so "N connections"
//! means exactly N sockets. A request that times out or fails leaves the socket in an unknown
//! state, so the connection is dropped and the next request dials again.

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::target::Target;

/// Why a request got no HTTP reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The TCP connect or HTTP handshake failed.
    #[error("connect failed")]
    Connect,
    /// No complete reply within the per-request timeout.
    #[error("timed out")]
    Timeout,
    /// The connection broke mid-request.
    #[error("transport error")]
    Transport,
    /// The request could not be built (a bad path).
    #[error("invalid request")]
    Invalid,
}

impl RequestError {
    /// A short name for error counts.
    pub fn kind(self) -> &'static str {
        match self {
            RequestError::Connect => "connect",
            RequestError::Timeout => "timeout",
            RequestError::Transport => "transport",
            RequestError::Invalid => "invalid_request",
        }
    }
}

/// A reply: status and the whole body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The body, collected.
    pub body: Bytes,
}

impl Reply {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }
}

/// One HTTP/1.1 connection to a target, dialled lazily and redialled after a failure.
#[derive(Debug)]
pub struct Connection {
    target: Target,
    timeout: Duration,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    /// A connection to `target` whose requests each get at most `timeout` (dialling included).
    pub fn new(target: Target, timeout: Duration) -> Connection {
        Connection {
            target,
            timeout,
            sender: None,
        }
    }

    /// `POST path` with a JSON body.
    pub async fn post(&mut self, path: &str, body: Bytes) -> Result<Reply, RequestError> {
        self.send(Method::POST, path, body).await
    }

    /// `GET path`.
    pub async fn get(&mut self, path: &str) -> Result<Reply, RequestError> {
        self.send(Method::GET, path, Bytes::new()).await
    }

    async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Bytes,
    ) -> Result<Reply, RequestError> {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.target.authority())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .map_err(|_| RequestError::Invalid)?;
        match tokio::time::timeout(self.timeout, self.exchange(request)).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(error)) => {
                self.sender = None;
                Err(error)
            }
            Err(_) => {
                self.sender = None;
                Err(RequestError::Timeout)
            }
        }
    }

    async fn exchange(&mut self, request: Request<Full<Bytes>>) -> Result<Reply, RequestError> {
        let sender = match self.sender.take() {
            Some(sender) if !sender.is_closed() => sender,
            _ => dial(&self.target).await?,
        };
        let sender = self.sender.insert(sender);
        sender.ready().await.map_err(|_| RequestError::Transport)?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|_| RequestError::Transport)?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|_| RequestError::Transport)?
            .to_bytes();
        Ok(Reply { status, body })
    }
}

async fn dial(target: &Target) -> Result<SendRequest<Full<Bytes>>, RequestError> {
    let stream = TcpStream::connect(target.address())
        .await
        .map_err(|_| RequestError::Connect)?;
    stream
        .set_nodelay(true)
        .map_err(|_| RequestError::Connect)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| RequestError::Connect)?;
    tokio::spawn(async move {
        let _closed = connection.await;
    });
    Ok(sender)
}
