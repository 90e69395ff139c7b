//! The scenarios and what they share: the run's limits ([`Load`]), per-worker counts
//! ([`Tally`]), the measurement window, setup calls (topics, subscriptions, filling a
//! backlog), and the [`Measurement`] each scenario returns.
//!
//! - `produce`: `produce-1` and `produce-batch`, closed- or open-loop.
//! - `consume`: receive + ack from a pre-filled backlog.
//! - `e2e`: open-loop producers and long-polling consumers; publish-to-receive latency.
//! - `gaps`: the longest time a run went without a successful reply (a failover's outage).
//! - `backlog`: receive latency with a given number of messages behind the cursor.
//! - `delay`: how late delayed messages arrive after their due time (never early).
//! - `schedule`: the server's memory before and after scheduling many messages a day ahead.
//! - `overload`: 3× the sustained produce rate, open loop on 1,000 connections: peak RSS,
//!   503s, accepted latency and acked throughput beside the unloaded figure.

mod backlog;
mod consume;
mod delay;
mod e2e;
mod gaps;
#[cfg(feature = "nats")]
mod nats;
mod overload;
mod produce;
mod schedule;
mod setup;
mod turns;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

pub use backlog::{BacklogSpec, backlog};
pub use consume::{ConsumeSpec, consume};
pub use delay::{DelaySpec, delay};
pub use e2e::{E2eSpec, e2e};
pub use gaps::SuccessGaps;
#[cfg(feature = "nats")]
pub use nats::{NatsSpec, nats_publish};
pub use overload::{OverloadRun, OverloadSpec, overload};
pub use produce::{ProduceSpec, produce};
pub use schedule::{ScheduleSpec, schedule};
pub use setup::{create_subscription, create_topic, fill, key_for_partition, unique_name};
pub use turns::Turns;

use crate::client::{Connection, Reply, RequestError};
use crate::latency::{Latencies, LatencySummary};
use crate::procfs::{CpuMeter, ServerUsage, UsageProbe, cpu_seconds};
use crate::target::Target;

/// Why a scenario could not run (its measurement phase never fails; it counts errors).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A setup request (create topic or subscription, fill) did not succeed.
    #[error("setup step {step} failed: {detail}")]
    Setup {
        /// What was being set up.
        step: String,
        /// The status and body, or the transport error.
        detail: String,
    },
}

/// Limits and labels every scenario run shares.
#[derive(Debug, Clone)]
pub struct Load {
    /// Where requests go.
    pub target: Target,
    /// The label of the target in results (`wharf`, `ceiling-http`).
    pub target_name: String,
    /// The round this run belongs to.
    pub round: u32,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Length of the measured phase.
    pub duration: Duration,
    /// Load sent before measuring starts, not counted.
    pub warmup: Duration,
    /// Most requests one run sends (measured or not), whatever the duration.
    pub max_requests: u64,
    /// The server's process, to measure its CPU time and memory.
    pub server_pid: Option<u32>,
    /// Every node of the server's cluster (itself included), to measure their CPU time
    /// together ([`ServerUsage::cluster_cpu_s`]); empty for a single node.
    pub node_pids: Vec<u32>,
}

impl Load {
    /// A fresh connection to the target.
    pub fn connect(&self) -> Connection {
        Connection::new(self.target.clone(), self.timeout)
    }
}

/// The measured phase: requests that start at or after `measure_from` are counted;
/// none starts at or after `deadline`.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Measuring starts.
    pub measure_from: Instant,
    /// No request starts after this.
    pub deadline: Instant,
}

impl Window {
    /// A window that starts after `warmup` from now and lasts `duration`.
    pub fn after_warmup(warmup: Duration, duration: Duration) -> Window {
        let measure_from = Instant::now() + warmup;
        Window {
            measure_from,
            deadline: measure_from + duration,
        }
    }

    /// Whether a request that started at `at` is measured.
    pub fn measures(&self, at: Instant) -> bool {
        at >= self.measure_from
    }
}

/// A count of requests shared by all workers of a run: bounds a run in count as its window
/// bounds it in time.
#[derive(Debug, Clone)]
pub struct Budget(Arc<AtomicU64>);

impl Budget {
    /// A budget of `requests`.
    pub fn new(requests: u64) -> Budget {
        Budget(Arc::new(AtomicU64::new(requests)))
    }

    /// Takes one request from the budget; false once it is spent.
    pub fn take(&self) -> bool {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(1)
            })
            .is_ok()
    }
}

/// What one worker counted.
#[derive(Debug, Default)]
pub struct Tally {
    /// Requests measured (successful or not).
    pub requests: u64,
    /// Failed requests by kind: `timeout`, `connect`, `status_503`, ...
    pub errors: BTreeMap<String, u64>,
    /// Messages produced or consumed by successful requests.
    pub messages: u64,
    /// Payload bytes of those messages.
    pub payload_bytes: u64,
    /// Latency of the scenario's main request.
    pub latency: Latencies,
    /// Other latencies (`ack`, `e2e`, `produce`).
    pub other: BTreeMap<String, Latencies>,
}

impl Tally {
    /// Counts one measured request that took `latency`; returns the reply if it was a 2xx.
    pub fn request(
        &mut self,
        latency: Duration,
        result: Result<Reply, RequestError>,
    ) -> Option<Reply> {
        self.requests += 1;
        self.latency.record(latency);
        self.check(result)
    }

    /// Counts the error in `result`, if any; returns the reply if it was a 2xx.
    pub fn check(&mut self, result: Result<Reply, RequestError>) -> Option<Reply> {
        match result {
            Ok(reply) if reply.is_success() => Some(reply),
            Ok(reply) => {
                self.error(format!("status_{}", reply.status.as_u16()));
                None
            }
            Err(error) => {
                self.error(error.kind());
                None
            }
        }
    }

    /// Counts one error of `kind`.
    pub fn error(&mut self, kind: impl Into<String>) {
        *self.errors.entry(kind.into()).or_default() += 1;
    }

    /// Records a latency in the named secondary histogram.
    pub fn record_other(&mut self, name: &str, latency: Duration) {
        self.other
            .entry(name.to_owned())
            .or_default()
            .record(latency);
    }

    /// Adds `other`'s counts to this one.
    pub fn merge(&mut self, other: Tally) {
        self.requests += other.requests;
        self.messages += other.messages;
        self.payload_bytes += other.payload_bytes;
        self.latency.merge(&other.latency);
        for (kind, count) in other.errors {
            *self.errors.entry(kind).or_default() += count;
        }
        for (name, latencies) in other.other {
            self.other.entry(name).or_default().merge(&latencies);
        }
    }
}

/// Joins worker tasks and merges their tallies; a worker that panicked counts as an error.
pub async fn join_tallies(workers: Vec<tokio::task::JoinHandle<Tally>>) -> Tally {
    let mut total = Tally::default();
    for worker in workers {
        match worker.await {
            Ok(tally) => total.merge(tally),
            Err(_) => total.error("worker_panicked"),
        }
    }
    total
}

/// What the server and this process used while measuring.
#[derive(Debug)]
pub struct Usage {
    probe: Option<UsageProbe>,
    nodes: Option<CpuMeter>,
    client_cpu_at_start: Option<f64>,
}

impl Usage {
    /// Starts measuring at once.
    pub fn start(load: &Load) -> Usage {
        Usage {
            probe: load.server_pid.map(UsageProbe::start),
            nodes: CpuMeter::start(&load.node_pids),
            client_cpu_at_start: cpu_seconds(None),
        }
    }

    /// Stops measuring: the server's usage and this process's CPU seconds.
    pub async fn finish(self) -> (Option<ServerUsage>, Option<f64>) {
        let client = cpu_seconds(None)
            .zip(self.client_cpu_at_start)
            .map(|(end, start)| end - start);
        let cluster_cpu_s = self.nodes.as_ref().map(CpuMeter::finish);
        let server = match self.probe {
            Some(probe) => Some(ServerUsage {
                cluster_cpu_s,
                ..probe.finish().await
            }),
            None => cluster_cpu_s.map(ServerUsage::of_nodes),
        };
        (server, client)
    }
}

/// One scenario run against one target: what the report aggregates.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    /// The scenario (`produce-1`, `produce-batch`, `consume`, `e2e`, `backlog-empty`,
    /// `backlog-full`, `delay`, `schedule`, `overload-unloaded`, `overload`, `disk-1k`,
    /// `disk-100k`).
    pub scenario: String,
    /// The target's label (`wharf`, `ceiling-http`, `ceiling-disk`).
    pub target: String,
    /// The round, from 1.
    pub round: u32,
    /// `closed` (as fast as N connections go) or `open` (fixed arrival rate).
    pub mode: String,
    /// Connections (or threads, for the disk).
    pub connections: usize,
    /// The open-loop arrival rate, per second.
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    /// Seconds measured.
    pub elapsed_s: f64,
    /// Requests measured.
    pub requests: u64,
    /// Failed requests by kind.
    pub errors: BTreeMap<String, u64>,
    /// Messages moved by successful requests.
    pub messages: u64,
    /// Their payload bytes.
    pub payload_bytes: u64,
    /// Successful requests per second.
    pub req_per_s: f64,
    /// Messages per second.
    pub msg_per_s: f64,
    /// Payload MiB per second.
    pub mib_per_s: f64,
    /// Latency of the main request.
    pub latency: LatencySummary,
    /// Other latencies by name (`ack`, `e2e`, `produce`).
    #[serde(default)]
    pub latencies: BTreeMap<String, LatencySummary>,
    /// Messages behind the subscription's cursor when measuring started (backlog scenarios).
    #[serde(default)]
    pub backlog: Option<u64>,
    /// What the server used while measuring.
    #[serde(default)]
    pub server: Option<ServerUsage>,
    /// CPU seconds the load generator itself used while measuring.
    #[serde(default)]
    pub client_cpu_s: Option<f64>,
    /// Scenario-specific figures by name (`early`, `rss_before_mib`, `delayed_reported`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
    /// Anything a reader of the figures should know.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The shape of a run, for [`Measurement::from_tally`].
#[derive(Debug, Clone)]
pub struct RunShape {
    /// The scenario's name.
    pub scenario: String,
    /// Connections.
    pub connections: usize,
    /// Open-loop rate (`None`: a closed loop).
    pub rate_per_s: Option<f64>,
}

impl RunShape {
    /// The shape of `scenario` over `connections`, an open loop at `rate_per_s` if given.
    pub fn new(scenario: impl Into<String>, connections: usize, rate_per_s: Option<f64>) -> Self {
        RunShape {
            scenario: scenario.into(),
            connections,
            rate_per_s,
        }
    }

    /// `open` (at a rate) or `closed`.
    pub fn mode(&self) -> &'static str {
        match self.rate_per_s {
            Some(_) => "open",
            None => "closed",
        }
    }
}

impl Measurement {
    /// Records an open loop's longest time without a successful reply (`max_gap_ms`): how
    /// long the target was unavailable (a closed loop records none: its pauses are its own).
    pub fn add_max_gap(&mut self, gap: Duration) {
        if self.rate_per_s.is_some() {
            self.figures
                .insert("max_gap_ms".to_owned(), gap.as_secs_f64() * 1000.0);
        }
    }

    /// The measurement of a run that counted `tally` over `elapsed`.
    pub fn from_tally(
        load: &Load,
        shape: RunShape,
        tally: Tally,
        elapsed: Duration,
        usage: (Option<ServerUsage>, Option<f64>),
    ) -> Measurement {
        Measurement::from_counts(&load.target_name, load.round, shape, tally, elapsed, usage)
    }

    /// [`Measurement::from_tally`] of a target named `target` in round `round` (a peer that
    /// is not reached through a [`Load`]).
    pub fn from_counts(
        target: &str,
        round: u32,
        shape: RunShape,
        tally: Tally,
        elapsed: Duration,
        usage: (Option<ServerUsage>, Option<f64>),
    ) -> Measurement {
        let seconds = elapsed.as_secs_f64().max(1e-9);
        let failed: u64 = tally.errors.values().sum();
        let succeeded = tally.requests.saturating_sub(failed);
        let mode = shape.mode().to_owned();
        Measurement {
            scenario: shape.scenario,
            target: target.to_owned(),
            round,
            mode,
            connections: shape.connections,
            rate_per_s: shape.rate_per_s,
            elapsed_s: seconds,
            requests: tally.requests,
            messages: tally.messages,
            payload_bytes: tally.payload_bytes,
            req_per_s: succeeded as f64 / seconds,
            msg_per_s: tally.messages as f64 / seconds,
            mib_per_s: tally.payload_bytes as f64 / seconds / (1024.0 * 1024.0),
            latency: tally.latency.summary(),
            latencies: tally
                .other
                .iter()
                .map(|(name, latencies)| (name.clone(), latencies.summary()))
                .collect(),
            errors: tally.errors,
            backlog: None,
            server: usage.0,
            client_cpu_s: usage.1,
            figures: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// One line for a person watching the run.
    pub fn headline(&self) -> String {
        let errors: u64 = self.errors.values().sum();
        format!(
            "round {} {:<14} {:<13} {:>10.0} req/s {:>10.0} msg/s {:>8.1} MiB/s  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>8.2} ms  errors {}{}",
            self.round,
            self.scenario,
            self.target,
            self.req_per_s,
            self.msg_per_s,
            self.mib_per_s,
            self.latency.p50_us as f64 / 1000.0,
            self.latency.p99_us as f64 / 1000.0,
            self.latency.max_us as f64 / 1000.0,
            errors,
            self.server.map(usage_line).unwrap_or_default(),
        )
    }
}

/// The server's usage in a [`Measurement::headline`].
fn usage_line(usage: ServerUsage) -> String {
    let mut line = format!("  server cpu {:.2} s", usage.cpu_s);
    if usage.rss_peak_kib > 0 {
        line += &format!(" rss {} MiB", usage.rss_peak_kib / 1024);
    }
    if let Some(cluster) = usage.cluster_cpu_s {
        line += &format!(" (every node: {cluster:.2} s)");
    }
    line
}
