//! The answering side of a peer connection: after `POST` [`PEER_PATH`] with
//! `upgrade: wharf-peer/1` and a valid cluster proof, the cluster port answers `101` and the
//! connection carries [`super::peer_frame`] frames from then on. Each request is handed to
//! the node's [`RpcHandler`] in a task of its own (so a slow snapshot does not hold up a
//! heartbeat behind it), at most [`MAX_CALLS_PER_SESSION`] at once; answers go back in the
//! order they are ready, as many as are waiting in one write.
//!
//! Why not one HTTP request per call: a call over pooled HTTP/1.1 cost the caller about
//! twice the CPU (160–246 µs against 68–78 µs) and 40–140 µs more latency than a frame on
//! a connection of its own, measured in `docs/performance-cluster.md`; and one connection per
//! node pair lets the appends of many groups share a write.

use std::sync::Arc;
use std::time::Duration;

use broker_core::raft::{RpcError, RpcHandler};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{Semaphore, mpsc, watch};

use super::liveness::Liveness;
use super::peer_connection::{PING_AFTER, SILENCE_LIMIT};
use super::peer_frame::{self, Frame};

/// Where a peer asks for the upgrade.
pub const PEER_PATH: &str = "/cluster/v1/peer";
/// The `upgrade` token of the peer protocol; another version is another token.
pub const PEER_PROTOCOL: &str = "wharf-peer/1";
/// Calls one connection may have in its handlers at once; beyond it the session stops
/// reading until one is answered, and TCP holds the caller back. Raft sends one append at
/// a time per group and follower, so this is hundreds of groups' worth.
pub(super) const MAX_CALLS_PER_SESSION: usize = 1024;
/// Answers queued for a session's writer.
const ANSWER_FRAMES: usize = 1024;
/// A session that has read nothing for this long is closed: its caller pings after
/// [`PING_AFTER`] of silence, so only a caller that is gone stays quiet this long.
pub(super) const SESSION_IDLE_LIMIT: Duration = Duration::from_secs(10);
const _: () = assert!(SESSION_IDLE_LIMIT.as_millis() > 3 * PING_AFTER.as_millis());
/// How long a closing session's handlers get to have their answers written.
const SESSION_DRAIN: Duration = Duration::from_secs(1);
/// A read buffer's size (a full one grows by as much).
pub(super) const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Most bytes gathered into one write.
const WRITE_BATCH_BYTES: usize = 256 * 1024;

/// `first` and whatever else is already queued behind it, up to [`WRITE_BATCH_BYTES`], as
/// one buffer to write.
pub(super) fn gather<T>(
    first: Bytes,
    queued: &mut mpsc::Receiver<T>,
    bytes: impl Fn(T) -> Bytes,
) -> Bytes {
    let mut batch: Option<BytesMut> = None;
    let mut size = first.len();
    while size < WRITE_BATCH_BYTES {
        let Ok(next) = queued.try_recv() else { break };
        let next = bytes(next);
        size += next.len();
        batch
            .get_or_insert_with(|| {
                let mut batch = BytesMut::with_capacity(WRITE_BATCH_BYTES.min(2 * size));
                batch.extend_from_slice(&first);
                batch
            })
            .extend_from_slice(&next);
    }
    batch.map_or(first, BytesMut::freeze)
}

/// Serves one upgraded connection from node `caller` until it ends, it goes idle, or
/// `stop` turns true. `leftover` is what was read past the upgrade request.
pub(super) async fn serve_session(
    stream: TcpStream,
    leftover: Bytes,
    caller: u64,
    handler: Arc<dyn RpcHandler>,
    liveness: Liveness,
    mut stop: watch::Receiver<bool>,
) {
    let (mut reader, writer) = stream.into_split();
    let (answers, queued) = mpsc::channel(ANSWER_FRAMES);
    let mut writing = tokio::spawn(write_answers(writer, queued));
    let mut written = false;
    let calls = Arc::new(Semaphore::new(MAX_CALLS_PER_SESSION));
    let mut buffer = BytesMut::with_capacity(READ_BUFFER_BYTES);
    buffer.extend_from_slice(&leftover);
    let ended = 'session: loop {
        loop {
            let frame = match peer_frame::take_frame(&mut buffer) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(error) => break 'session error.to_string(),
            };
            match frame {
                Frame::Request { id, route, body } => {
                    let call = tokio::select! {
                        call = Arc::clone(&calls).acquire_owned() => call,
                        _ = stop.wait_for(|stop| *stop) => break 'session "shutting down".to_owned(),
                    };
                    let Ok(call) = call else {
                        break 'session "closed".to_owned();
                    };
                    let handler = Arc::clone(&handler);
                    let answers = answers.clone();
                    tokio::spawn(async move {
                        let (status, body) = match route {
                            None => (404, Bytes::from_static(b"no such group or RPC")),
                            Some((group, rpc)) => match handler.handle(group, rpc, body).await {
                                Ok(answer) => (200, answer),
                                Err(error) => {
                                    tracing::debug!(%error, caller, "cluster RPC refused");
                                    (refusal_status(&error), Bytes::from(error.to_string()))
                                }
                            },
                        };
                        let mut frame = BytesMut::new();
                        peer_frame::put_answer(&mut frame, id, status, &body);
                        let _ = answers.send(frame.freeze()).await;
                        drop(call);
                    });
                }
                Frame::Ping { id } => {
                    let mut pong = BytesMut::new();
                    peer_frame::put_ping(&mut pong, id, true);
                    if answers.send(pong.freeze()).await.is_err() {
                        break 'session "the writer ended".to_owned();
                    }
                }
                Frame::Answer { .. } | Frame::Pong { .. } => {
                    break 'session "a caller sent an answer".to_owned();
                }
            }
        }
        if buffer.capacity() - buffer.len() < READ_BUFFER_BYTES / 4 {
            buffer.reserve(READ_BUFFER_BYTES);
        }
        tokio::select! {
            read = tokio::time::timeout(SESSION_IDLE_LIMIT, reader.read_buf(&mut buffer)) => match read {
                Ok(Ok(0)) => break "the caller closed the connection".to_owned(),
                Ok(Ok(_)) => liveness.heard(caller),
                Ok(Err(error)) => break error.to_string(),
                Err(_) => break format!("nothing read in {} s", SESSION_IDLE_LIMIT.as_secs()),
            },
            _ = stop.wait_for(|stop| *stop) => break "shutting down".to_owned(),
            _ = &mut writing => {
                written = true;
                break "the writer ended".to_owned();
            }
        }
    };
    tracing::debug!(caller, reason = %ended, "peer session ended");
    // The writer ends once every handler has sent its answer (each holds a sender).
    drop(answers);
    if !written
        && tokio::time::timeout(SESSION_DRAIN, &mut writing)
            .await
            .is_err()
    {
        writing.abort();
    }
}

/// Writes answers as they come until every sender is gone or a write fails.
async fn write_answers(mut writer: OwnedWriteHalf, mut queued: mpsc::Receiver<Bytes>) {
    while let Some(first) = queued.recv().await {
        let batch = gather(first, &mut queued, |next| next);
        match tokio::time::timeout(SILENCE_LIMIT, writer.write_all(&batch)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(%error, "a peer session's write failed");
                return;
            }
            Err(_) => {
                tracing::debug!("a peer read nothing of its answers; closing");
                return;
            }
        }
    }
    let _ = writer.shutdown().await;
}

/// The HTTP status of a refusal, the same on the HTTP route and in an answer frame.
pub(super) fn refusal_status(error: &RpcError) -> u16 {
    match error {
        RpcError::UnknownGroup(_) => 404,
        RpcError::Malformed { .. } => 400,
        RpcError::Unavailable { .. } | RpcError::Busy(_) => 503,
    }
}
