//! One keep-alive HTTP/1.1 connection (hyper's low-level client) with a per-request timeout.
//!
//! A worker owns one [`Connection`] and sends one request at a time on it, so "N connections"
//! means exactly N sockets. A request that times out or fails leaves the socket in an unknown
//! state, so the connection is dropped and the next request dials again; so is one whose reply
//! said `connection: close`.

use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE, HOST, RETRY_AFTER};
use http::{HeaderMap, Method, Request, StatusCode};
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

/// A reply: status, headers and the whole body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, collected.
    pub body: Bytes,
}

impl Reply {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }

    /// Whether the reply carries a `Retry-After` header.
    pub fn has_retry_after(&self) -> bool {
        self.headers.contains_key(RETRY_AFTER)
    }

    /// Whether the server said it closes the connection after this reply.
    fn closes_connection(&self) -> bool {
        self.headers
            .get_all(CONNECTION)
            .iter()
            .any(|value| value.as_bytes().eq_ignore_ascii_case(b"close"))
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

    /// Dials now unless already connected, so that the next request does not pay for it.
    pub async fn open(&mut self) -> Result<(), RequestError> {
        if self
            .sender
            .as_ref()
            .is_some_and(|sender| !sender.is_closed())
        {
            return Ok(());
        }
        let dialled = tokio::time::timeout(self.timeout, dial(&self.target)).await;
        self.sender = Some(dialled.map_err(|_| RequestError::Timeout)??);
        Ok(())
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
            Ok(Ok(reply)) => {
                if reply.closes_connection() {
                    self.sender = None;
                }
                Ok(reply)
            }
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
        let (head, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|_| RequestError::Transport)?
            .to_bytes();
        Ok(Reply {
            status: head.status,
            headers: head.headers,
            body,
        })
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
