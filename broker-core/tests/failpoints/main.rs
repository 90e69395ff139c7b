//! Failures injected with the `fail` crate (`fail::fail_point!` in the broker's code): what
//! callers see when a part of the broker breaks. The failpoints are global to the process, so
//! these tests share no binary with the others, and each holds a [`fail::FailScenario`], which
//! clears every failpoint before and after it and runs the tests of this binary one at a time.
//! `broker-core/Cargo.toml` builds this binary only with the `fail/failpoints` feature.
//!
//! One test binary: each file below was a binary of its own.

mod broker;
mod cluster_replica_release;
mod leader_flush;
mod raft_log_read_race;
mod raft_written_reads;
mod slow_disk;
mod storage;
mod support;
