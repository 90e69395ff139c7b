//! Watching a server: alert rules and their webhooks, the per-minute history and its bounds,
//! synthetic probes, `/metrics`, the message trace, and the trace and history turned off.
//!
//! Every server in this process shares the one global metrics recorder: tests check their own
//! series or presence, never process-wide totals.

#[path = "../support/mod.rs"]
pub mod support;

mod alerts;
mod governance_off;
mod history;
mod history_bounds;
mod message_trace;
mod metrics;
mod probes;
