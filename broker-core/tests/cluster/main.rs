//! Clusters in one process: brokers and cluster nodes (controller replicas, reconcilers) over
//! the in-memory transport of `tests/support/raft/`, which can cut a node off, lose its
//! answers or pause it. Replication, follower reads, leadership moves, placement and drains,
//! retention through snapshots, idempotent produce across failovers, consumer events, delayed
//! messages, joins, and one node's power loss while another is paused (R8).
//!
//! One test binary: each file below was a binary of its own.

mod brokers;
mod consumer_events;
mod delays;
mod follower_reads;
mod idempotency;
mod join;
mod leader_moves;
mod nodes;
mod placement;
mod power_loss_pause;
mod power_pause_support;
mod remote_write;
mod retention;
mod support;
