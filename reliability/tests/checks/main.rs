//! The checker's side of the kit, on hand-written histories: each check against the clean
//! history and the same history with exactly one anomaly injected; a history written and read
//! back (`history_io`); `wharf-check` run as a process (`wharf_check_binary`).

#[path = "../support/mod.rs"]
mod support;

mod backlog;
mod consumption;
mod coverage;
mod delivery;
mod deposed;
mod divergence;
mod history_io;
mod idempotence;
mod log;
mod lost;
mod offset_mismatch;
mod order;
mod queue;
mod report_line;
mod server_errors;
mod unavailability;
mod wharf_check_binary;
