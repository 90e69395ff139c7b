//! The memory budget: one count of the bytes that requests and responses hold in memory at
//! once, so that no mix of clients (many producers, consumers that never read their answers)
//! can take the process past a known size.
//!
//! Who charges what:
//! - the edge charges a request body **before** reading it: its `Content-Length` times
//!   [`REQUEST_BYTES_HELD_PER_BODY_BYTE`], or frame by frame as a chunked body streams in; a
//!   request that does not fit is answered 503 `overloaded` at once, its body not read;
//! - a receive or offset read reserves room for its answer before the broker reads, and
//!   asks the broker for no more value bytes than fit ([`answer_memory`]);
//! - every response body is charged its size until it has been handed to the socket
//!   ([`ChargedBody`]); a client that does not read is cut off by the connection's write
//!   timeout ([`crate::http::io_timeout`]), which drops the body and returns its bytes.
//!
//! Charges are RAII ([`MemoryCharge`]): dropping one returns its bytes. The budget never
//! queues: it answers at once.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
pub use broker_core::memory::{AnswerMemory, MemoryBudget, MemoryCharge};
use broker_core::sync::lock;
use http_body::{Frame, SizeHint};

/// Default `max_memory_bytes`: request and response bytes held at once. Wharf's own resident
/// set is about 16 MiB idle, plus sled's cache (8 MiB by sled's count, some 13 MiB of heap),
/// the partitions' tail caches and up to 48 MiB of connection buffers (1,024 × 48 KiB); 96
/// MiB of requests and answers on top kept the peak at 1,000 overloading producers under
/// 256 MiB on the machine it was chosen on, with room for the allocator's slack (at 128 MiB
/// one run of the load test's overload scenario peaked at 258 MiB). A faster machine
/// carries more through it: 249–288 MiB on the Intel one; 64 MiB peaked at 230 there but
/// acked 0.55 of the unloaded rate against 0.66–0.70 (the README's Performance). Machines with more memory raise it.
pub const DEFAULT_MAX_MEMORY_BYTES: usize = 96 * 1024 * 1024;
/// Smallest `max_memory_bytes` accepted: below 1 MiB a single ordinary answer cannot fit.
pub const MIN_MAX_MEMORY_BYTES: usize = 1024 * 1024;
/// Memory a request holds per byte of its body while it is read and parsed: the body itself,
/// plus the message values decoded out of it into one buffer (base64 shrinks them to 3/4;
/// text values without escapes are slices of the body, no copy). The edge charges this
/// much before it reads a body. (The frame a partition's writer encodes from a batch is
/// transient, one per writer at a time.)
pub const REQUEST_BYTES_HELD_PER_BODY_BYTE: usize = 2;
/// Largest request body that is not charged to the budget: it fits in the read buffer its
/// connection holds anyway ([`crate::http::accept::MIN_CONNECTION_BUFFER_BYTES`]), so the
/// connection cap bounds it. Receives, acks and admin calls are that small, and are not
/// refused because producers spent the budget.
pub const UNCHARGED_BODY_BYTES: usize = 16 * 1024;
/// Memory a parsed produce holds per message beyond its values: the parsed and the broker's
/// form of each message (structs, vectors growing by doubling), about 230 bytes measured,
/// with room for the broker's own per-message records. Once it knows the count, the
/// handler sets its body's charge to what it holds while it waits for its write: its values
/// (and the body, if text values are slices of it) plus this per message
/// ([`BodyCharge::fit`]). A parse runs on a runtime worker without yielding, so at most one
/// per worker can pass its charge before that. `produce_memory` (gateway/tests) measures
/// both: a 139 KB batch of 100 base64 values of 1 KiB peaks at 1.98 bytes per body byte
/// while parsed, within the edge's charge, then holds what the handler charges.
pub const PRODUCE_BYTES_PER_MESSAGE: usize = 384;
/// Memory an answer holds per byte of message value while it is built: the records read
/// from the log (1), their values as base64 text (4/3) and the serialized JSON (4/3 plus
/// the fields around each value), rounded up.
pub const ANSWER_BYTES_PER_VALUE_BYTE: usize = 4;
/// Largest reservation one answer takes: the broker's read cap
/// ([`broker_core::limits::MAX_READ_BYTES`], 16 MiB of values) would need 64 MiB while
/// built. 16 MiB reserved still answers 4 MiB of values at once, a thousand 4 KiB messages.
pub const MAX_ANSWER_RESERVE_BYTES: usize = 16 * 1024 * 1024;
/// Smallest reservation an answer proceeds with: below it the budget is spent and the
/// request is refused (503) instead of answering one message at a time. 256 KiB holds
/// one message of 64 KiB; a larger first message is still answered whole (the broker always
/// returns at least one) and charged in full once built.
pub const MIN_ANSWER_RESERVE_BYTES: usize = 256 * 1024;
/// Size of the frames a large response body is handed to the socket in. The socket layer
/// buffers a few frames; the answer's memory stays charged until its last frame is taken.
pub const RESPONSE_FRAME_BYTES: usize = 64 * 1024;

/// The charge of a request's body, which the edge puts in the request's extensions: a
/// handler that has parsed the body sets it to what it still holds ([`BodyCharge::fit`]),
/// so that a produce waiting for its write is charged its values, not the parse's peak.
/// The edge returns it once the handler is done. A charge changes in single steps, so its
/// lock stays usable after a holder panicked ([`broker_core::sync`]).
#[derive(Debug, Clone)]
pub struct BodyCharge(Arc<Mutex<MemoryCharge>>);

impl BodyCharge {
    /// Shares `charge` with the handler.
    pub fn new(charge: MemoryCharge) -> Self {
        BodyCharge(Arc::new(Mutex::new(charge)))
    }

    /// Makes the charge `bytes`: returns the excess at once; takes more only if it fits
    /// (whether it did).
    pub fn fit(&self, bytes: usize) -> bool {
        let mut charge = lock(&self.0);
        let now = charge.bytes();
        if bytes <= now {
            charge.set(bytes);
            true
        } else {
            charge.try_grow(bytes - now)
        }
    }

    /// Bytes charged now.
    pub fn bytes(&self) -> usize {
        lock(&self.0).bytes()
    }
}

/// The refusal of a request for which the memory budget has no room.
pub const OVERLOADED_MEMORY: crate::http::problem::ApiError =
    crate::http::problem::ApiError::Overloaded {
        resource: "the memory budget",
    };

/// The room a receive or offset read answer takes from `budget`, with the gateway's bounds.
pub fn answer_memory(budget: &MemoryBudget) -> AnswerMemory {
    AnswerMemory::new(
        budget.clone(),
        MAX_ANSWER_RESERVE_BYTES,
        MIN_ANSWER_RESERVE_BYTES,
        ANSWER_BYTES_PER_VALUE_BYTE,
    )
}

/// A response body charged to the budget until its last frame is taken, handed out in
/// frames of at most [`RESPONSE_FRAME_BYTES`] so that the socket layer never buffers the
/// whole answer beyond the charge. It also keeps whatever else the request held (`held`)
/// until then.
pub struct ChargedBody<H> {
    body: Body,
    pending: Bytes,
    charge: Option<MemoryCharge>,
    _held: H,
}

impl<H> ChargedBody<H> {
    /// `body`, charged with `charge` (if any) and keeping `held` until it is sent or dropped.
    pub fn new(body: Body, charge: Option<MemoryCharge>, held: H) -> Self {
        ChargedBody {
            body,
            pending: Bytes::new(),
            charge,
            _held: held,
        }
    }

    /// The next piece of `pending`: a copy when it is a part of a larger buffer, so that the
    /// frames the socket layer still buffers after this body is done do not keep the whole
    /// answer alive; the last piece is handed out as is.
    fn next_piece(&mut self) -> Bytes {
        if self.pending.len() <= RESPONSE_FRAME_BYTES {
            return std::mem::take(&mut self.pending);
        }
        let piece = Bytes::copy_from_slice(&self.pending[..RESPONSE_FRAME_BYTES]);
        let rest = self.pending.split_off(RESPONSE_FRAME_BYTES);
        self.pending = rest;
        piece
    }
}

impl<H: Unpin> HttpBody for ChargedBody<H> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if !self.pending.is_empty() {
            let piece = self.next_piece();
            if self.pending.is_empty() && self.body.is_end_stream() {
                self.charge = None;
            }
            return Poll::Ready(Some(Ok(Frame::data(piece))));
        }
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) if data.len() > RESPONSE_FRAME_BYTES => {
                    self.pending = data;
                    let piece = self.next_piece();
                    Poll::Ready(Some(Ok(Frame::data(piece))))
                }
                Ok(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            Poll::Ready(None) => {
                self.charge = None;
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_empty() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let body = self.body.size_hint();
        let pending = self.pending.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(body.lower() + pending);
        if let Some(upper) = body.upper() {
            hint.set_upper(upper + pending);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_charged_body_is_sent_in_bounded_frames_and_released_after_the_last() {
        let budget = MemoryBudget::new(1 << 30);
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let charge = budget.charge(payload.len());
        let mut body = ChargedBody::new(Body::from(payload.clone()), Some(charge), ());
        let mut received = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.expect("frame").into_data().expect("data");
            assert!(data.len() <= RESPONSE_FRAME_BYTES);
            received.extend_from_slice(&data);
            if received.len() < payload.len() {
                assert_eq!(budget.used(), payload.len(), "charged until the last frame");
            }
        }
        assert_eq!(received, payload);
        assert_eq!(budget.used(), 0);
    }
}
