//! The accept loop, in place of `axum::serve` (which in axum 0.8 has no header-read timeout,
//! so a slowloris client is never cut off). Per connection:
//! - a slot of `max_connections`, or an immediate `503 overloaded` and close (never a hang in
//!   the kernel backlog);
//! - TCP keepalive (`tcp_keepalive_secs`) and `TCP_NODELAY`;
//! - hyper's HTTP/1.1 with a timer: the request head must arrive within
//!   `header_read_timeout_ms`, a timer that also runs while a keep-alive connection waits for
//!   its next request, so it is the idle timeout too; a head over `max_headers` headers or
//!   `max_header_bytes` reaches the edge for its 431 problem, one over those plus
//!   [`head_size::hyper_max_headers`] or [`HEAD_SLACK_BYTES`] gets hyper's bare 431 and a close;
//! - a write timeout ([`WriteTimeout`], `write_timeout_ms`): a client that reads nothing of
//!   a response for that long is disconnected and its answer dropped;
//! - the peer address as [`ConnectInfo`] for the edge.
//!
//! On shutdown the loop stops accepting, asks every connection to close once its current
//! request is answered, and waits for them at most the drain timeout. A connection a route
//! upgrades (answering `101`, the cluster port's peer connections) leaves the loop then: the
//! route serves and ends it.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::IntoResponse;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

use crate::config::EdgeSettings;
use crate::http::edge::Edge;
use crate::http::head_size::{self, HEAD_SLACK_BYTES, HeadLimits};
use crate::http::io_timeout::WriteTimeout;
use crate::http::problem::ApiError;

/// How long the refusal of a connection over `max_connections` may take to write: it is one
/// small packet; a peer that does not read it is dropped.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);
/// Pause after an accept error (out of file handles, say) before accepting again, so the
/// loop does not spin while the condition lasts.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Connections the kernel may hold for the accept loop (capped by `net.core.somaxconn`). A
/// thousand clients connecting at once (a fleet restarting, a load test) overflow a queue of
/// 1,024 while the runtime is busy: the kernel then drops SYNs and resets some handshakes,
/// which a client sees as a reset before its first request. Each queued connection costs
/// the kernel a few hundred bytes, nothing in this process.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds `address` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, so a restart does not wait
/// for the old sockets' TIME_WAIT).
pub fn bind(address: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains for at most
/// `drain_timeout`. Each connection holds one of `edge`'s connection slots.
pub async fn serve_connections(
    listener: TcpListener,
    router: Router,
    edge: &Edge,
    shutdown: impl Future<Output = ()>,
    drain_timeout: Duration,
) {
    let slots = &edge.connections;
    let edge = &edge.settings;
    // Every connection's task holds a receiver: the sender is closed once all have ended.
    let (closing, connections) = tokio::sync::watch::channel(false);
    let builder = http1_builder(edge);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accept failed; pausing");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(slot) = slots.try_acquire() else {
            crate::governance::metrics::connection_refused();
            tokio::spawn(refuse(stream));
            continue;
        };
        configure_socket(&stream, edge.tcp_keepalive);
        let router = router.clone();
        let limits = HeadLimits::from(edge);
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let oversized = head_size::check(&request, limits).err();
            request.extensions_mut().insert(ConnectInfo(peer));
            let router = router.clone();
            async move {
                if let Some(refusal) = oversized {
                    return Ok(refusal.into_response());
                }
                let response = router.oneshot(request.map(Body::new)).await;
                Ok::<_, Infallible>(match response {
                    Ok(response) => response,
                    Err(never) => match never {},
                })
            }
        });
        let stream = WriteTimeout::new(stream, edge.write_timeout);
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let mut closing = connections.clone();
        tokio::spawn(async move {
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                _ = async { closing.wait_for(|closing| *closing).await.is_ok() } => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = ended {
                tracing::debug!(%error, %peer, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    drop(connections);
    closing.send_replace(true);
    tokio::select! {
        () = closing.closed() => {}
        () = tokio::time::sleep(drain_timeout) => {
            tracing::warn!(
                "connections still open {} ms after shutdown began; closing anyway",
                drain_timeout.as_millis()
            );
        }
    }
}

fn http1_builder(edge: &EdgeSettings) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(edge.header_read_timeout)
        .keep_alive(true)
        .max_headers(head_size::hyper_max_headers(edge.max_headers))
        .max_header_size(edge.max_header_bytes + HEAD_SLACK_BYTES)
        .max_buf_size(connection_buffer_bytes(edge.max_header_bytes));
    builder
}

/// Largest read buffer one connection keeps: room for the longest allowed request head
/// (which must fit whole) and a body frame. Hyper's own default, about 400 KiB, lets each of
/// 1,024 connections keep that much once one large body has streamed through it: 400 MiB
/// held by idle buffers, outside any budget. Bodies are read in frames of at most this
/// size instead; the kernel's socket buffers hold the rest until it is read.
pub const MIN_CONNECTION_BUFFER_BYTES: usize = 16 * 1024;

/// The read buffer limit for a given `max_header_bytes`.
fn connection_buffer_bytes(max_header_bytes: usize) -> usize {
    max_header_bytes.max(MIN_CONNECTION_BUFFER_BYTES) + MIN_CONNECTION_BUFFER_BYTES
}

/// `TCP_NODELAY`, and TCP keepalive probes after `keepalive` idle (none for `None`).
pub(crate) fn configure_socket(stream: &TcpStream, keepalive: Option<Duration>) {
    let _ = stream.set_nodelay(true);
    if let Some(idle) = keepalive {
        let settings = socket2::TcpKeepalive::new()
            .with_time(idle)
            .with_interval(idle.div_f64(6.0).max(Duration::from_secs(1)));
        if let Err(error) = socket2::SockRef::from(stream).set_tcp_keepalive(&settings) {
            tracing::debug!(%error, "cannot set TCP keepalive");
        }
    }
}

/// Answers a connection over `max_connections` with a 503 problem and closes it.
async fn refuse(mut stream: TcpStream) {
    let problem = ApiError::Overloaded {
        resource: "the connection limit",
    }
    .problem();
    let body = serde_json::to_vec(&problem).unwrap_or_default();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&body).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, write).await;
}
