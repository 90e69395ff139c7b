//! What the gateway's integration test binaries share. Each binary is one area,
//! `tests/<area>/main.rs` with the area's files as modules, and includes this folder once:
//!
//! ```ignore
//! #[path = "../support/mod.rs"]
//! pub mod support;
//! ```
//!
//! `pub`: a binary uses only part of these helpers, and the public items of a test crate are
//! not dead code to rustc (a helper no binary uses any more should be deleted, not kept).
//!
//! - [`common`]: a real server in this process ([`common::Harness`]) and problem+json checks;
//! - [`edge_common`]: tokens, settings with auth on, raw TCP exchanges, the key fixtures;
//! - [`child`]: a real `wharf serve` child process, for crash and memory tests;
//! - [`webhook_common`]: a webhook receiver for the alert and probe tests.
//!
//! Helpers used by one area only live in that area's folder (`cluster/cluster_common.rs`,
//! `delivery/restartable.rs`).

pub mod child;
pub mod common;
pub mod edge_common;
pub mod webhook_common;

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A free port on 127.0.0.1 (free when asked: bind it soon).
pub fn free_port() -> SocketAddr {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    socket.local_addr().expect("its address")
}

/// Polls `<base>/readyz` with `client` until it answers 200, asserting that it does within
/// `within`.
pub async fn wait_ready(client: &reqwest::Client, base: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let ready = client.get(format!("{base}/readyz")).send().await;
        if ready.is_ok_and(|response| response.status() == reqwest::StatusCode::OK) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{base} not ready within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Unix epoch milliseconds now (client and server share the clock).
pub fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    u64::try_from(since.as_millis()).expect("millis fit")
}

/// A small deterministic generator (xorshift64), so that a failing run can be repeated from
/// its seed.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next number, below `bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}
