//! Helpers of the Raft tests: the in-memory network of `tests/support/raft/net.rs`, shared
//! with the `cluster` and `failpoints` binaries.

#[path = "../support/raft/net.rs"]
mod net;

pub use net::{Net, NodeTransport};
