//! Raft groups on Wharf's storage: a partition's replicas and the controller group on three
//! nodes over the in-memory transport, partition snapshots, and openraft's storage suite.
//!
//! One test binary: each file below was a binary of its own.

mod controller;
mod heartbeats;
mod replication;
mod snapshot;
mod storage_suite;
mod support;
