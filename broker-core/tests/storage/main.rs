//! A partition's storage: segments, the writer thread, control batches, recovery from damaged
//! tails, corruption on disk (D5), zeros written ahead, simulated power losses (D3, D4), a
//! model-based test, lazily fsynced control batches, the trace index's files, and a
//! subscription table installed from a snapshot.
//!
//! One test binary: each file below was a binary of its own.

mod control;
mod corruption;
mod lazy_sync;
// proptest keeps the cases that failed in `tests/proptest-regressions/log_model.txt`, named after
// this file: no two binaries' model tests may share a file name.
mod log_model;
mod power_loss;
mod power_loss_support;
mod recovery;
mod segments;
mod subscription_snapshot_install;
mod support;
mod trace_store_files;
mod writer;
mod zero_ahead;
