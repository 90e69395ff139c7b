//! One keep-alive HTTP/1.1 connection with a per-request timeout, spoken directly on the
//! socket by the task that sends (`socket`): the request written from one buffer (`request`), the
//! reply read with `httparse` (`response`, chunked bodies in `chunked`). No connection task and
//! no channel between the sender and the socket, so a reply wakes one task, and the generator
//! costs about what wrk costs per request (loadtest/README.md, "The instrument").
//!
//! A worker owns one [`Connection`] and sends one request at a time on it, so "N connections"
//! means exactly N sockets. A request that times out or fails leaves the socket in an unknown
//! state, so the connection is dropped and the next request dials again; so is one whose reply
//! said `connection: close`, and one the server closed while it was idle.

mod chunked;
mod request;
mod response;
mod socket;

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::{HeaderMap, StatusCode};
use tokio::time::{Instant, Sleep};

use crate::target::Target;
use socket::Socket;

pub use response::MAX_BODY_BYTES;

/// Why a request got no HTTP reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The TCP connect failed.
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
    /// The reply was not HTTP/1.1 this client reads, or passed one of its bounds.
    #[error("malformed reply")]
    Malformed,
}

impl RequestError {
    /// A short name for error counts.
    pub fn kind(self) -> &'static str {
        match self {
            RequestError::Connect => "connect",
            RequestError::Timeout => "timeout",
            RequestError::Transport => "transport",
            RequestError::Invalid => "invalid_request",
            RequestError::Malformed => "malformed_reply",
        }
    }
}

impl From<response::ReadError> for RequestError {
    fn from(error: response::ReadError) -> RequestError {
        match error {
            response::ReadError::Transport => RequestError::Transport,
            response::ReadError::Malformed(_) => RequestError::Malformed,
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
    /// The body, whole (chunked bodies decoded).
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
}

/// One HTTP/1.1 connection to a target, dialled lazily and redialled after a failure.
///
/// The per-request timeout is one alarm per connection, armed lazily: a request that starts
/// before the alarm is due leaves it alone, and an alarm that goes off before the request's
/// own deadline is re-armed to it. So a connection touches the runtime's timer about once per
/// timeout period, not once per request (a timer per request cost a wake-up of the runtime's
/// driver per request, a syscall each).
#[derive(Debug)]
pub struct Connection {
    target: Target,
    timeout: Duration,
    socket: Socket,
    /// Goes off at or before the current request's deadline; made by the first request, on
    /// the runtime that runs it.
    alarm: Option<Pin<Box<Sleep>>>,
}

impl Connection {
    /// A connection to `target` whose requests each get at most `timeout` (dialling included).
    pub fn new(target: Target, timeout: Duration) -> Connection {
        Connection {
            target,
            timeout,
            socket: Socket::default(),
            alarm: None,
        }
    }

    /// Dials now unless already connected, so that the next request does not pay for it.
    pub async fn open(&mut self) -> Result<(), RequestError> {
        self.socket.drop_if_closed_by_server();
        if self.socket.is_open() {
            return Ok(());
        }
        tokio::time::timeout(self.timeout, self.socket.dial(&self.target))
            .await
            .map_err(|_| RequestError::Timeout)?
    }

    /// `POST path` with a JSON body.
    pub async fn post(&mut self, path: &str, body: Bytes) -> Result<Reply, RequestError> {
        self.send("POST", path, &body).await
    }

    /// `GET path`.
    pub async fn get(&mut self, path: &str) -> Result<Reply, RequestError> {
        self.send("GET", path, b"").await
    }

    async fn send(&mut self, method: &str, path: &str, body: &[u8]) -> Result<Reply, RequestError> {
        let authority = self.target.authority();
        request::encode(&mut self.socket.outgoing, method, path, authority, body)
            .map_err(|_| RequestError::Invalid)?;
        self.socket.drop_if_closed_by_server();
        let deadline = Instant::now() + self.timeout;
        let alarm = self
            .alarm
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        let result = {
            let exchange = self.socket.exchange(&self.target);
            tokio::pin!(exchange);
            loop {
                tokio::select! {
                    biased;
                    result = &mut exchange => break result,
                    () = alarm.as_mut() => {
                        if Instant::now() >= deadline {
                            break Err(RequestError::Timeout);
                        }
                        alarm.as_mut().reset(deadline);
                    }
                }
            }
        };
        if result.is_err() {
            self.socket.close();
        }
        result
    }
}
