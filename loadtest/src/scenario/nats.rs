//! `nats-publish`: the NATS JetStream peer of `loadtest/cluster`. The same shape as
//! `produce` (one 1 KiB message per request, closed loop or a fixed arrival rate with latency
//! from the intended send time), through the NATS project's own Rust client (`async-nats`): each
//! connection is a client of its own, spread over the servers given, and a publish counts once
//! JetStream acknowledged it (stored by a quorum of the stream's replicas).

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use tokio::time::Instant;

use super::{Budget, Measurement, RunShape, ScenarioError, SuccessGaps, Tally, Turns, Window};
use crate::pacing::Schedule;
use crate::procfs::{CpuMeter, ServerUsage};
use crate::wire;

/// What to publish and how.
#[derive(Debug, Clone)]
pub struct NatsSpec {
    /// The scenario's name in results.
    pub scenario: String,
    /// The target's label in results (`nats-r3`).
    pub target_name: String,
    /// The round, from 1.
    pub round: u32,
    /// The servers, `nats://127.0.0.1:PORT`; connection `i` uses server `i % len`.
    pub servers: Vec<String>,
    /// The stream (created when missing, file storage) and its subject.
    pub stream: String,
    /// The stream's replicas.
    pub replicas: usize,
    /// Connections (clients).
    pub connections: usize,
    /// Publishes per second across all connections (open loop); `None`: closed loop.
    pub rate_per_s: Option<f64>,
    /// Per-publish timeout.
    pub timeout: Duration,
    /// Load before measuring, not counted.
    pub warmup: Duration,
    /// The measured phase.
    pub duration: Duration,
    /// Most publishes to send.
    pub max_requests: u64,
    /// The servers' processes, to measure their CPU time together while measuring.
    pub node_pids: Vec<u32>,
}

fn failed(what: &str, error: impl std::fmt::Display) -> ScenarioError {
    ScenarioError::Setup {
        step: format!("NATS: {what}"),
        detail: error.to_string(),
    }
}

/// Runs the scenario: makes the stream, publishes, and measures.
pub async fn nats_publish(spec: &NatsSpec) -> Result<Measurement, ScenarioError> {
    let first = spec
        .servers
        .first()
        .ok_or_else(|| failed("servers", "none given"))?;
    let admin = connect(first, spec.timeout).await?;
    let context = jetstream::new(admin);
    let config = stream::Config {
        name: spec.stream.clone(),
        subjects: vec![spec.stream.clone()],
        num_replicas: spec.replicas,
        storage: stream::StorageType::File,
        ..stream::Config::default()
    };
    context
        .get_or_create_stream(config)
        .await
        .map_err(|e| failed("create the stream", e))?;
    let payload = Bytes::from(vec![b'x'; wire::MESSAGE_BYTES]);
    let budget = Budget::new(spec.max_requests);
    let window = Window::after_warmup(spec.warmup, spec.duration);
    let gaps = SuccessGaps::new(window.measure_from);
    let started = Instant::now();
    let mut workers = Vec::new();
    for index in 0..spec.connections {
        let server = &spec.servers[index % spec.servers.len()];
        let client = connect(server, spec.timeout).await?;
        let worker = Worker {
            context: jetstream::new(client),
            subject: spec.stream.clone(),
            payload: payload.clone(),
            timeout: spec.timeout,
            turns: Turns::new(
                window,
                budget.clone(),
                spec.rate_per_s
                    .map(|rate| Schedule::new(started, rate, spec.connections, index)),
            ),
            gaps: gaps.clone(),
        };
        workers.push(tokio::spawn(worker.run()));
    }
    // The servers' CPU over the measured phase only, as a Wharf run's.
    let pids = spec.node_pids.clone();
    let meter = tokio::spawn(async move {
        tokio::time::sleep_until(window.measure_from).await;
        CpuMeter::start(&pids)
    });
    let tally = super::join_tallies(workers).await;
    let elapsed = window.measure_from.elapsed();
    let server = meter
        .await
        .ok()
        .flatten()
        .map(|meter| ServerUsage::of_nodes(meter.finish()));
    let shape = RunShape::new(spec.scenario.clone(), spec.connections, spec.rate_per_s);
    let mut measurement = Measurement::from_counts(
        &spec.target_name,
        spec.round,
        shape,
        tally,
        elapsed,
        (server, None),
    );
    measurement.add_max_gap(gaps.longest(Instant::now()));
    measurement.notes.push(format!(
        "NATS JetStream: stream {} of {} replicas, file storage, {} servers; a publish counts once acknowledged",
        spec.stream,
        spec.replicas,
        spec.servers.len()
    ));
    Ok(measurement)
}

async fn connect(server: &str, timeout: Duration) -> Result<async_nats::Client, ScenarioError> {
    async_nats::ConnectOptions::new()
        .connection_timeout(timeout)
        .request_timeout(Some(timeout))
        .connect(server)
        .await
        .map_err(|e| failed(&format!("connect to {server}"), e))
}

struct Worker {
    context: jetstream::Context,
    subject: String,
    payload: Bytes,
    timeout: Duration,
    turns: Turns,
    gaps: SuccessGaps,
}

impl Worker {
    async fn run(mut self) -> Tally {
        let mut tally = Tally::default();
        while let Some(start) = self.turns.next().await {
            let outcome = tokio::time::timeout(self.timeout, self.publish()).await;
            if !self.turns.measures(start) {
                continue;
            }
            tally.requests += 1;
            tally.latency.record(start.elapsed());
            match outcome {
                Ok(Ok(())) => {
                    self.gaps.success(Instant::now());
                    tally.messages += 1;
                    tally.payload_bytes += self.payload.len() as u64;
                }
                Ok(Err(kind)) => tally.error(kind),
                Err(_) => tally.error("timeout"),
            }
        }
        tally
    }

    /// One publish until JetStream acknowledged it; the error's kind otherwise.
    async fn publish(&self) -> Result<(), &'static str> {
        let ack = self
            .context
            .publish(self.subject.clone(), self.payload.clone())
            .await
            .map_err(|_| "publish")?;
        ack.await.map(|_| ()).map_err(|_| "not_acknowledged")
    }
}
