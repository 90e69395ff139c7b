//! [`Connection`]: the calling side of one peer connection (see [`super::peer_session`]):
//! a TCP connection to a node's cluster port, upgraded from HTTP once (the cluster proof
//! checked then), that carries many calls at once, each answered by id.
//!
//! A reader task hands each answer to its waiting caller; a writer task sends the callers'
//! frames, as many as are queued in one write. A connection that has been silent for
//! [`PING_AFTER`] gets a ping; one silent for [`SILENCE_LIMIT`] is closed. When a connection
//! ends, a call whose frame was never written fails as unreachable (nothing reached the
//! node) and one whose frame was written as lost (the node may have acted on it).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use broker_core::raft::{RpcCall, TransportError};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::liveness::Liveness;
use super::peer_auth::AUTH_HEADER;
use super::peer_frame::{self, Frame};
use super::peer_session::{PEER_PATH, PEER_PROTOCOL, READ_BUFFER_BYTES, gather};

/// A connection silent this long (no answer, no pong) is sent a ping.
pub(super) const PING_AFTER: Duration = Duration::from_secs(1);
/// A connection silent this long, its pings unanswered, is closed: its calls fail and the
/// next call connects again. As long as [`super::LIVE_WITHIN`]: a peer counted live has
/// answered on it.
pub(super) const SILENCE_LIMIT: Duration = Duration::from_secs(3);
/// Frames queued for a connection's writer; a caller beyond them waits (within its
/// deadline) for the writer to catch up, so a stalled peer holds a bounded amount.
const OUTGOING_FRAMES: usize = 1024;
/// Longest answer to the upgrade request read (a `101` head is ~100 bytes; a refusal's
/// reason is one line).
const MAX_UPGRADE_ANSWER_BYTES: usize = 4096;
/// Largest refusal reason kept from a peer's answer.
const MAX_REASON_BYTES: usize = 512;
/// TCP keepalive on a peer connection: the kernel's own check under the pings.
const TCP_KEEPALIVE: Duration = Duration::from_secs(10);

/// What a caller waiting on a frame is told.
enum Reply {
    /// The peer's answer.
    Answer { status: u16, body: Bytes },
    /// The connection ended first; `sent` if the call's frame had gone to the socket.
    Closed { sent: bool, reason: String },
}

/// A frame for the writer; `id` names the caller waiting on it (none for pings).
struct Outgoing {
    id: Option<u64>,
    bytes: Bytes,
}

/// One open connection to node `target`.
pub(super) struct Connection {
    target: u64,
    outgoing: mpsc::Sender<Outgoing>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    next_id: AtomicU64,
    /// Set (with its reason) once the connection is ending.
    closed: watch::Sender<Option<String>>,
    opened: Instant,
    /// Milliseconds after `opened` when the peer last sent anything.
    heard_ms: AtomicU64,
}

impl Connection {
    /// Connects to `address` (node `target`) and upgrades with `proof`, all within
    /// `timeout`. Every failure here is [`TransportError::Unreachable`] (no call has gone
    /// out), or [`TransportError::Refused`] with the peer's status for a refused upgrade.
    pub(super) async fn open(
        target: u64,
        address: SocketAddr,
        proof: &str,
        timeout: Duration,
        liveness: Liveness,
    ) -> Result<Arc<Connection>, TransportError> {
        let unreachable = |reason: String| TransportError::Unreachable {
            node: target,
            reason,
        };
        let opened = tokio::time::timeout(timeout, upgrade(target, address, proof)).await;
        let (stream, leftover) = opened
            .map_err(|_| unreachable(format!("no connection within {} ms", timeout.as_millis())))?
            .map_err(|e| match e {
                Upgrade::Io(error) => unreachable(error.to_string()),
                Upgrade::Refused(error) => error,
            })?;
        liveness.heard(target);
        let (reader, writer) = stream.into_split();
        let (outgoing, queued) = mpsc::channel(OUTGOING_FRAMES);
        let connection = Arc::new(Connection {
            target,
            outgoing,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: watch::Sender::new(None),
            opened: Instant::now(),
            heard_ms: AtomicU64::new(0),
        });
        tokio::spawn(Arc::clone(&connection).read(reader, leftover, liveness));
        tokio::spawn(Arc::clone(&connection).write(writer, queued));
        Ok(connection)
    }

    /// Whether calls may still go out on it.
    pub(super) fn is_open(&self) -> bool {
        self.closed.borrow().is_none()
    }

    /// Sends `call` and waits for its answer until `deadline`.
    pub(super) async fn call(
        &self,
        call: &RpcCall,
        deadline: Instant,
    ) -> Result<Bytes, TransportError> {
        let node = self.target;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut frame = BytesMut::new();
        peer_frame::put_request(&mut frame, id, &call.group, call.rpc, &call.body);
        let (answer, answered) = oneshot::channel();
        self.pending_calls().insert(id, answer);
        // Whatever ends this call (an answer, a timeout, the caller giving up), its entry goes.
        let _forget = Forget {
            connection: self,
            id,
        };
        let ms = u64::try_from(call.timeout.as_millis()).unwrap_or(u64::MAX);
        let queued = Outgoing {
            id: Some(id),
            bytes: frame.freeze(),
        };
        match tokio::time::timeout_at(deadline, self.outgoing.send(queued)).await {
            Err(_) => return Err(TransportError::Timeout { node, ms }),
            Ok(Err(_)) => {
                return Err(TransportError::Unreachable {
                    node,
                    reason: self.closed_reason(),
                });
            }
            Ok(Ok(())) => {}
        }
        match tokio::time::timeout_at(deadline, answered).await {
            Err(_) => Err(TransportError::Timeout { node, ms }),
            Ok(Err(_)) => Err(TransportError::Lost {
                node,
                reason: self.closed_reason(),
            }),
            Ok(Ok(Reply::Answer { status: 200, body })) => Ok(body),
            Ok(Ok(Reply::Answer { status, body })) => Err(TransportError::Refused {
                node,
                status,
                reason: reason(&body),
            }),
            Ok(Ok(Reply::Closed { sent: true, reason })) => {
                Err(TransportError::Lost { node, reason })
            }
            Ok(Ok(Reply::Closed {
                sent: false,
                reason,
            })) => Err(TransportError::Unreachable { node, reason }),
        }
    }

    fn pending_calls(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Reply>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn close(&self, reason: String) {
        self.closed.send_if_modified(|closed| {
            let first = closed.is_none();
            if first {
                tracing::info!(node = self.target, %reason, "peer connection closed");
                *closed = Some(reason);
            }
            first
        });
    }

    fn closed_reason(&self) -> String {
        let closed = self.closed.borrow();
        closed
            .clone()
            .unwrap_or_else(|| "the connection closed".to_owned())
    }

    fn heard(&self) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.heard_ms.store(ms, Ordering::Relaxed);
    }

    fn silent_for(&self) -> Duration {
        let heard = self.opened + Duration::from_millis(self.heard_ms.load(Ordering::Relaxed));
        heard.elapsed()
    }

    /// The reader: answers to their callers until the connection ends.
    async fn read(self: Arc<Self>, mut reader: OwnedReadHalf, leftover: Bytes, liveness: Liveness) {
        let mut buffer = BytesMut::with_capacity(READ_BUFFER_BYTES);
        buffer.extend_from_slice(&leftover);
        let mut closed = self.closed.subscribe();
        let reason = loop {
            loop {
                match peer_frame::take_frame(&mut buffer) {
                    Ok(Some(Frame::Answer { id, status, body })) => {
                        if let Some(caller) = self.pending_calls().remove(&id) {
                            let _ = caller.send(Reply::Answer { status, body });
                        }
                    }
                    // Pongs only prove the peer is there, which `heard` noted; a peer sends
                    // no requests or pings on a connection it accepted.
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(error) => {
                        self.close(error.to_string());
                        return;
                    }
                }
            }
            if buffer.capacity() - buffer.len() < READ_BUFFER_BYTES / 4 {
                buffer.reserve(READ_BUFFER_BYTES);
            }
            tokio::select! {
                read = reader.read_buf(&mut buffer) => match read {
                    Ok(0) => break "the peer closed the connection".to_owned(),
                    Ok(_) => {
                        self.heard();
                        liveness.heard(self.target);
                    }
                    Err(error) => break error.to_string(),
                },
                _ = closed.wait_for(Option::is_some) => return,
            }
        };
        self.close(reason);
    }

    /// The writer: queued frames to the socket, pings when silent, and at the end every
    /// waiting caller told.
    async fn write(
        self: Arc<Self>,
        mut writer: OwnedWriteHalf,
        mut queued: mpsc::Receiver<Outgoing>,
    ) {
        let mut closed = self.closed.subscribe();
        let mut look = tokio::time::interval(PING_AFTER);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut pings = 0u64;
        loop {
            let batch = tokio::select! {
                first = queued.recv() => match first {
                    Some(first) => gather(first.bytes, &mut queued, |next| next.bytes),
                    None => break,
                },
                _ = look.tick() => {
                    let silent = self.silent_for();
                    if silent >= SILENCE_LIMIT {
                        self.close(format!("no word from the peer in {} ms", silent.as_millis()));
                        break;
                    }
                    if silent < PING_AFTER {
                        continue;
                    }
                    pings += 1;
                    let mut ping = BytesMut::new();
                    peer_frame::put_ping(&mut ping, pings, false);
                    ping.freeze()
                }
                _ = closed.wait_for(Option::is_some) => break,
            };
            let wrote = tokio::select! {
                wrote = tokio::time::timeout(SILENCE_LIMIT, writer.write_all(&batch)) => wrote,
                _ = closed.wait_for(Option::is_some) => break,
            };
            match wrote {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    self.close(error.to_string());
                    break;
                }
                Err(_) => {
                    self.close(format!(
                        "the peer read nothing for {} ms",
                        SILENCE_LIMIT.as_millis()
                    ));
                    break;
                }
            }
        }
        self.close("the connection ended".to_owned());
        let reason = self.closed_reason();
        // Frames still queued never reached the socket; everything else did.
        queued.close();
        while let Ok(unsent) = queued.try_recv() {
            let caller = unsent.id.and_then(|id| self.pending_calls().remove(&id));
            if let Some(caller) = caller {
                let _ = caller.send(Reply::Closed {
                    sent: false,
                    reason: reason.clone(),
                });
            }
        }
        let sent: Vec<_> = self.pending_calls().drain().collect();
        for (_, caller) in sent {
            let _ = caller.send(Reply::Closed {
                sent: true,
                reason: reason.clone(),
            });
        }
        let _ = writer.shutdown().await;
    }
}

/// Removes a call's entry when the call ends, however it ends.
struct Forget<'a> {
    connection: &'a Connection,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.connection.pending_calls().remove(&self.id);
    }
}

/// Why an upgrade failed.
enum Upgrade {
    /// The connection or its upgrade broke.
    Io(std::io::Error),
    /// The peer answered with a refusal.
    Refused(TransportError),
}

impl From<std::io::Error> for Upgrade {
    fn from(error: std::io::Error) -> Self {
        Upgrade::Io(error)
    }
}

/// Connects and upgrades: the stream, and any bytes read past the `101` answer.
async fn upgrade(
    target: u64,
    address: SocketAddr,
    proof: &str,
) -> Result<(TcpStream, Bytes), Upgrade> {
    let mut stream = TcpStream::connect(address).await?;
    crate::http::accept::configure_socket(&stream, Some(TCP_KEEPALIVE));
    let request = format!(
        "POST {PEER_PATH} HTTP/1.1\r\nhost: {address}\r\nconnection: upgrade\r\n\
         upgrade: {PEER_PROTOCOL}\r\n{AUTH_HEADER}: {proof}\r\ncontent-length: 0\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut answer = BytesMut::with_capacity(1024);
    let head_end = loop {
        if let Some(at) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if answer.len() >= MAX_UPGRADE_ANSWER_BYTES {
            return Err(Upgrade::Io(std::io::Error::other(
                "the peer's answer head is too long",
            )));
        }
        if stream.read_buf(&mut answer).await? == 0 {
            return Err(Upgrade::Io(std::io::Error::other(
                "the peer closed the connection before answering",
            )));
        }
    };
    let head = String::from_utf8_lossy(&answer[..head_end]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .unwrap_or(0);
    let leftover = answer.split_off(head_end).freeze();
    if status == 101 {
        return Ok((stream, leftover));
    }
    let first_line = head.lines().next().unwrap_or_default();
    let reason = match leftover.is_empty() {
        true => first_line.to_owned(),
        false => reason(&leftover),
    };
    Err(Upgrade::Refused(TransportError::Refused {
        node: target,
        status,
        reason,
    }))
}

fn reason(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(MAX_REASON_BYTES)]).into_owned()
}
