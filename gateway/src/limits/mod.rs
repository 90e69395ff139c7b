//! Every bound the gateway enforces at its edge, each with the reason for its number, and the
//! RAII permits that hold them: [`ConnectionSlots`] (open connections) and [`ConcurrencyCap`]
//! (long-polls, SSE streams: global and per principal). The memory budget (request bodies
//! and answers) is [`crate::limits::memory`].
//!
//! Each `DEFAULT_*` is the default of the setting of the same name (see [`crate::config`]);
//! the broker's own bounds live in [`broker_core::limits`].

pub mod memory;
pub(crate) mod rate;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use broker_core::sync::lock;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default `max_connections`: open TCP connections served at once. Each costs a file handle
/// and a few KiB of buffers; 1024 stays inside the common `ulimit -n` of 1024–4096 with room
/// for segment files, and past it new connections get an immediate 503 instead of a hang.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default `header_read_timeout_ms`: a client has 10 s to send a request's head (line and
/// headers). Hyper starts this timer whenever it waits for a request head, so it is also the
/// idle keep-alive timeout: a slowloris client or a forgotten keep-alive connection is closed
/// after 10 s, well inside a load balancer's usual 60 s idle timeout.
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// Default `body_read_timeout_ms`: a request body must arrive whole within 30 s of the head,
/// enough for 8 MiB at 2.2 Mbit/s, short enough that a trickling upload frees its memory.
pub const DEFAULT_BODY_READ_TIMEOUT_MS: u64 = 30_000;
/// Default `request_timeout_ms`: the longest a request may take end to end (long-polls get
/// their `wait_ms` ceiling plus [`LONG_POLL_MARGIN_MS`] instead). A request stuck past 30 s
/// is answered `request_timeout` rather than holding its permits forever.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
/// What a long-poll route may take beyond the broker's longest wait: the last one-second
/// slice, the reply's serialization and a slow disk.
pub const LONG_POLL_MARGIN_MS: u64 = 5_000;
/// Default `tcp_keepalive_secs`: probe an idle accepted socket after 60 s, so a peer that
/// vanished (power loss, a NAT that dropped the mapping) is found without waiting on a read.
pub const DEFAULT_TCP_KEEPALIVE_SECS: u64 = 60;
/// Default `max_headers`: request headers per request. Real clients send 5–20; 64 leaves
/// room for proxies and tracing headers while refusing header floods (431 `headers_too_large`).
pub const DEFAULT_MAX_HEADERS: usize = 64;
/// Default `max_header_bytes`: the request line and headers together. 32 KiB lets an
/// oversized 16 KiB token reach the edge and get a clear 401 (tokens are capped at
/// [`MAX_TOKEN_BYTES`]) and fits every sane header set; past it: 431 `headers_too_large`.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 32 * 1024;
/// Smallest `max_header_bytes` accepted: below 1 KiB a request with a token cannot be sent.
pub const MIN_MAX_HEADER_BYTES: usize = 1024;
/// Longest bearer token accepted, in bytes. Real JWTs are under 2 KiB; parsing and verifying
/// an 8 KiB one is still cheap, and anything longer is refused before any base64 decoding.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Default `write_timeout_ms`: how long writing a response may wait for the client to read.
/// A reader on the slowest link still takes a 64 KiB frame within a second or two; a client
/// that sent a request and stopped reading (the QMQ incident in `shared/seeds/`) holds its
/// answer's memory for at most these 10 s, then its connection is closed and the answer
/// dropped.
pub const DEFAULT_WRITE_TIMEOUT_MS: u64 = 10_000;
pub use crate::limits::memory::{DEFAULT_MAX_MEMORY_BYTES, MIN_MAX_MEMORY_BYTES};
/// Default `max_long_polls`: pending long-polls (receive, offset reads with `wait_ms`)
/// across all clients. Each holds a connection and a small future; the cap keeps a
/// consumer stampede from starving producers of connections.
pub const DEFAULT_MAX_LONG_POLLS: usize = 512;
/// Default `max_long_polls_per_principal`: one client's share of [`DEFAULT_MAX_LONG_POLLS`],
/// so one misbehaving consumer fleet cannot take every slot.
pub const DEFAULT_MAX_LONG_POLLS_PER_PRINCIPAL: usize = 64;
/// Default `max_streams`: open SSE delivery streams across all clients.
pub const DEFAULT_MAX_STREAMS: usize = 256;
/// Default `max_streams_per_principal`: one client's share of [`DEFAULT_MAX_STREAMS`].
pub const DEFAULT_MAX_STREAMS_PER_PRINCIPAL: usize = 16;
/// Default `principal_requests_per_second`: requests one principal (token subject, or peer
/// address when anonymous) may make per second; 0 is unlimited, the default. A node serves
/// tens of thousands of single-message produces a second, and one service producing without
/// batching legitimately uses most of that; a default cap would throttle it (and every
/// benchmark from one loopback address). Operators who share a node among teams set it.
pub const DEFAULT_PRINCIPAL_REQUESTS_PER_SECOND: u32 = 0;
/// Default `rate_limit_burst_ms`: how much of a rate a quiet bucket saves up, in ms of that
/// rate. One second is the usual token-bucket burst; shorter makes limits stricter.
pub const DEFAULT_RATE_LIMIT_BURST_MS: u64 = 1_000;
/// Most principals (and topics) the rate limiters remember. Idle entries are dropped every
/// [`LIMITER_SWEEP_MS`]; past the cap the oldest are swept at once, so a flood of forged
/// anonymous addresses cannot grow the maps without bound.
pub const MAX_LIMITER_KEYS: usize = 100_000;
/// How often idle rate-limiter entries are swept, in milliseconds.
pub const LIMITER_SWEEP_MS: u64 = 10_000;
/// Default `auth_leeway_secs`: clock skew tolerated on `exp` and `nbf`. Small, because a
/// leaked token stays usable for the leeway past its expiry.
pub const DEFAULT_AUTH_LEEWAY_SECS: u64 = 10;
/// Shortest HS256 secret accepted: RFC 7518 §3.2 asks for a key at least as long as the hash
/// output (256 bits); shorter secrets can be brute-forced offline from one token.
pub const MIN_HS256_SECRET_BYTES: usize = 32;
/// `Retry-After` of an `overloaded` 503 from a gateway budget, in seconds: in-flight bytes
/// and slots free as soon as current requests end, usually within a second.
pub const OVERLOADED_RETRY_AFTER_SECS: u64 = 1;

/// The `max_connections` slots of the accept loop: [`ConnectionSlots::try_acquire`] takes one
/// for a connection's life or refuses at once. Shared with `/metrics`, which reports
/// [`ConnectionSlots::open`].
#[derive(Debug, Clone)]
pub struct ConnectionSlots {
    semaphore: Arc<Semaphore>,
    capacity: usize,
}

impl ConnectionSlots {
    /// `capacity` slots.
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.min(Semaphore::MAX_PERMITS);
        ConnectionSlots {
            semaphore: Arc::new(Semaphore::new(capacity)),
            capacity,
        }
    }

    /// A slot for one connection, given back on drop; `None` when all are taken.
    pub fn try_acquire(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.semaphore).try_acquire_owned().ok()
    }

    /// Connections holding a slot right now.
    pub fn open(&self) -> usize {
        self.capacity - self.semaphore.available_permits()
    }
}

/// A cap on concurrent holders, global and per principal: long-polls, SSE streams.
#[derive(Debug, Clone)]
pub struct ConcurrencyCap {
    inner: Arc<CapInner>,
}

#[derive(Debug)]
struct CapInner {
    global: usize,
    per_principal: usize,
    /// Slots held. A count and its principal's entry change together with nothing between
    /// them that can panic, so a panicked holder leaves them whole ([`broker_core::sync`]).
    held: Mutex<CapCounts>,
}

#[derive(Debug, Default)]
struct CapCounts {
    total: usize,
    by_principal: HashMap<String, usize>,
}

/// Why a [`ConcurrencyCap`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapExceeded {
    /// Every slot on the node is taken (503 `overloaded`).
    Global,
    /// This principal holds its share already (429 `rate_limited`).
    PerPrincipal,
}

/// A slot of a [`ConcurrencyCap`], given back on drop.
#[derive(Debug)]
pub struct CapPermit {
    cap: Arc<CapInner>,
    principal: String,
}

/// A long-poll's slot (receive, offset reads that wait).
pub type LongPollPermit = CapPermit;
/// An SSE stream's slot, held for the stream's life.
pub type StreamPermit = CapPermit;

impl ConcurrencyCap {
    /// A cap of `global` holders in all, `per_principal` for any one principal.
    pub fn new(global: usize, per_principal: usize) -> Self {
        ConcurrencyCap {
            inner: Arc::new(CapInner {
                global,
                per_principal,
                held: Mutex::new(CapCounts::default()),
            }),
        }
    }

    /// Takes a slot for `principal`, or says which cap is full. The map holds only
    /// principals with a slot, so it is bounded by `global`.
    pub fn try_acquire(&self, principal: &str) -> Result<CapPermit, CapExceeded> {
        let mut held = lock(&self.inner.held);
        let mine = held.by_principal.get(principal).copied().unwrap_or(0);
        if mine >= self.inner.per_principal {
            return Err(CapExceeded::PerPrincipal);
        }
        if held.total >= self.inner.global {
            return Err(CapExceeded::Global);
        }
        held.total += 1;
        held.by_principal.insert(principal.to_owned(), mine + 1);
        Ok(CapPermit {
            cap: Arc::clone(&self.inner),
            principal: principal.to_owned(),
        })
    }

    /// Slots held right now.
    pub fn held(&self) -> usize {
        lock(&self.inner.held).total
    }
}

impl Drop for CapPermit {
    fn drop(&mut self) {
        let mut held = lock(&self.cap.held);
        held.total = held.total.saturating_sub(1);
        if let Some(count) = held.by_principal.get_mut(&self.principal) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.by_principal.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_slots_refuse_past_capacity_and_count_open_ones() {
        let slots = ConnectionSlots::new(2);
        let first = slots.try_acquire().expect("limit - 1");
        let second = slots.try_acquire().expect("exactly the limit");
        assert!(slots.try_acquire().is_none(), "limit + 1 refused");
        assert_eq!(slots.open(), 2);
        drop((first, second));
        assert_eq!(slots.open(), 0);
    }

    #[test]
    fn concurrency_cap_checks_both_sides_per_principal_and_globally() {
        let cap = ConcurrencyCap::new(3, 2);
        let a1 = cap.try_acquire("a").expect("1st");
        let a2 = cap.try_acquire("a").expect("per-principal limit");
        assert_eq!(cap.try_acquire("a").err(), Some(CapExceeded::PerPrincipal));
        let b1 = cap.try_acquire("b").expect("global limit");
        assert_eq!(cap.try_acquire("c").err(), Some(CapExceeded::Global));
        drop(a1);
        let _c1 = cap.try_acquire("c").expect("a slot freed");
        drop((a2, b1));
        assert_eq!(cap.held(), 1);
    }
}
