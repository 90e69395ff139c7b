//! Governance built in: what an operator sees and is told about a running node.
//!
//! # Layout
//! - [`metrics`]: the process's Prometheus recorder and the request counter/timer;
//!   `routes::metrics` serves `GET /metrics` with gauges computed at scrape time.
//! - [`history`]: the per-minute history of topics and subscriptions: the sampler, the
//!   request figures, the ring files under `<data>/history/`; `routes::stats` serves it.
//!   [`produce_errors`]: the node's one count of failed produce requests, which the history
//!   and the `produce_errors` alerts both read.
//! - [`alerts`]: rules and their validation, the webhook target policy, the evaluation state
//!   machine, signed event bodies, the delivery schedule and queue (a pure core), and the
//!   runtime, rule book, watcher and outbox that wire it to the broker and the network
//!   (served by `routes::alerts`).
//! - [`probe`]: the synthetic probe: a round trip through the node's internal probe topic
//!   every `probe_interval_ms`, its latency metric, its state in `/readyz` and the `probe`
//!   alert kind.
//! - [`console`]: the web console's files (served at `/ui` by `routes::console`), built into
//!   the binary.

pub mod alerts;
pub(crate) mod console;
pub mod history;
pub(crate) mod metrics;
pub mod probe;
pub(crate) mod produce_errors;
