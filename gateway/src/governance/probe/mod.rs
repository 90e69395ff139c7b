//! Synthetic probes (issue 12): every `probe_interval_ms` a node produces one message with a
//! nonce on its internal probe topic ([`PROBE_TOPIC`] on a single node; in a cluster each
//! node's own, see [`keeper`]), receives it on the topic's internal
//! subscription, acks it, and records the produce → received latency
//! (`wharf_probe_round_trip_seconds`), failures (`wharf_probe_failures_total`, by step) and
//! its state ([`ProbeHealth`], shown in `/readyz` and sampled by the `probe` alert kind).
//!
//! The probe calls the broker in process, not over HTTP: it checks storage, the produce
//! path, delivery and settling, which is what a failing node gets wrong; the HTTP layer is
//! already watched by the request metrics.
//!
//! # Layout
//! - [`health`]: [`ProbeHealth`], the shared state of the last rounds, and [`ProbeStatus`],
//!   what `/readyz` shows.
//! - [`round`]: one round, each step under [`round::STEP_TIMEOUT_MS`], and the set-up of the
//!   internal topic and subscription.
//! - [`task`]: [`ProbeTask`], the background loop, and [`ProbeHooks`], the tests' fault.
//! - [`keeper`]: probes in a cluster: each node's own probe topic, kept by the controller
//!   leader ([`ProbeKeeper`]).

pub(crate) mod health;
pub(crate) mod keeper;
pub(crate) mod round;
pub(crate) mod task;

pub use health::{ProbeHealth, ProbeState, ProbeStatus};
pub use keeper::{ProbeKeeper, node_probe_topic};
pub use round::{PROBE_SUBSCRIPTION, PROBE_TOPIC, ProbeFailure, ProbeStep};
pub use task::{ProbeHooks, ProbeScope, ProbeTask};
