//! [`Liveness`]: when this node last heard from each other node, either way (an answer to
//! its RPC, or an RPC from it on the cluster port), for `GET /v1/cluster`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A node heard from within this long counts as live: leaders send heartbeats every 100 ms,
/// so three seconds of silence is thirty missed ones.
pub const LIVE_WITHIN: Duration = Duration::from_secs(3);

/// When each node was last heard from. Clonable; clones share the record.
#[derive(Debug, Clone, Default)]
pub struct Liveness {
    seen: Arc<Mutex<BTreeMap<u64, Instant>>>,
}

impl Liveness {
    /// Notes that `node` was heard from now.
    pub fn heard(&self, node: u64) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.insert(node, Instant::now());
    }

    /// How long ago `node` was last heard from, if ever.
    pub fn since(&self, node: u64) -> Option<Duration> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.get(&node).map(Instant::elapsed)
    }
}
