//! Each check against the clean hand-written history and the same history with exactly one
//! anomaly injected.

#[path = "../support/mod.rs"]
mod support;

mod backlog;
mod consumption;
mod coverage;
mod delivery;
mod deposed;
mod divergence;
mod idempotence;
mod log;
mod lost;
mod offset_mismatch;
mod order;
mod queue;
mod report_line;
mod server_errors;
mod unavailability;
