//! Wharf's load test: a load generator that measures Wharf and its ceilings side by side, the
//! bare-HTTP ceiling server, and the report that turns rounds of measurements into ratios.
//!
//! # Layout
//! - `target`: where the load goes, refused unless it is a loopback address.
//! - `client`: one keep-alive HTTP/1.1 connection with a per-request timeout
//!   ([`client::Connection`]).
//! - `latency`: HDR histograms of latencies and their summaries.
//! - `pacing`: the open-loop schedule: when each request was *meant* to start, so latency is
//!   measured from there and a stalled server cannot hide behind coordinated omission.
//! - `wire`: the request bodies and reply shapes of Wharf's API that the scenarios use.
//! - `scenario`: the scenarios (`produce`, `consume`, `e2e`, `backlog`, `delay`, `schedule`,
//!   `overload`) and the [`scenario::Measurement`] each produces; `disk`: the append +
//!   fdatasync ceiling.
//! - `server_metrics`: group-commit and fsync histograms read from Wharf's `/metrics`.
//! - `procfs`: a server's CPU time and resident memory, read from `/proc`; this process's
//!   limit of open files.
//! - `ceiling`: the bare axum app (`wharf-ceiling`) answering the same requests without storage.
//! - `report`: medians, ranges, ratios and targets, written as Markdown and JSON.

pub mod ceiling;
pub mod client;
pub mod disk;
pub mod latency;
pub mod pacing;
pub mod procfs;
pub mod report;
pub mod scenario;
pub mod server_metrics;
pub mod target;
pub mod wire;
