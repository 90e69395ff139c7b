//! `consume`: from a pre-filled backlog, each connection repeats receive (`max_messages`,
//! `wait_ms` 0) then ack with the receipts, until the backlog is drained or time is up.
//! Throughput is messages acked per second; the main latency is the receive's, the ack's is
//! kept as `ack`.

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::{
    Budget, Load, Measurement, RunShape, ScenarioError, Tally, Usage, Window, create_subscription,
    create_topic, fill, join_tallies, unique_name,
};
use crate::client::Connection;
use crate::wire::{self, AckReply, ReceiptsReply};

/// What to consume and how.
#[derive(Debug, Clone)]
pub struct ConsumeSpec {
    /// Messages to pre-fill; 0 for a server that makes messages up (the ceiling).
    pub backlog: u64,
    /// Partitions of the topic created for the run.
    pub partitions: u32,
    /// Connections, each a receive + ack loop.
    pub connections: usize,
    /// `max_messages` of each receive.
    pub max_messages: usize,
    /// Longest the fill may take.
    pub fill_limit: Duration,
    /// Pause between the fill and the drain (and the CPU measurement).
    pub settle: Duration,
}

/// Runs the scenario on a fresh topic and subscription.
pub async fn consume(load: &Load, spec: &ConsumeSpec) -> Result<Measurement, ScenarioError> {
    let topic = unique_name(&format!("consume-r{}", load.round));
    let sub = "load";
    create_topic(load, &topic, spec.partitions).await?;
    create_subscription(load, &topic, sub, "earliest").await?;
    let filled = if spec.backlog > 0 {
        fill(load, &topic, spec.backlog, spec.fill_limit).await?
    } else {
        0
    };
    tokio::time::sleep(spec.settle).await;
    let window = Window::after_warmup(Duration::ZERO, load.duration);
    let budget = Budget::new(load.max_requests);
    let usage = Usage::start(load);
    let workers: Vec<_> = (0..spec.connections)
        .map(|_| {
            let worker = Worker {
                connection: load.connect(),
                receive_path: wire::subscription_action_path(&topic, sub, "receive"),
                ack_path: wire::subscription_action_path(&topic, sub, "ack"),
                receive_body: wire::receive_body(spec.max_messages, 0),
                window,
                budget: budget.clone(),
            };
            tokio::spawn(worker.run())
        })
        .collect();
    let tally = join_tallies(workers).await;
    let elapsed = window.measure_from.elapsed();
    let shape = RunShape::new("consume", spec.connections, None);
    let mut measurement =
        Measurement::from_tally(load, shape, tally, elapsed, usage.finish().await);
    if spec.backlog > 0 {
        measurement.backlog = Some(filled);
        measurement.notes.push(format!(
            "drained a pre-filled backlog of {filled} messages, {} per receive",
            spec.max_messages
        ));
    }
    Ok(measurement)
}

struct Worker {
    connection: Connection,
    receive_path: String,
    ack_path: String,
    receive_body: Bytes,
    window: Window,
    budget: Budget,
}

impl Worker {
    async fn run(mut self) -> Tally {
        let mut tally = Tally::default();
        while Instant::now() < self.window.deadline && self.budget.take() {
            let start = Instant::now();
            let result = self
                .connection
                .post(&self.receive_path, self.receive_body.clone())
                .await;
            let Some(reply) = tally.request(start.elapsed(), result) else {
                continue;
            };
            let Ok(received) = serde_json::from_slice::<ReceiptsReply>(&reply.body) else {
                tally.error("bad_receive_reply");
                continue;
            };
            if received.messages.is_empty() {
                break;
            }
            let receipts: Vec<String> = received.messages.into_iter().map(|m| m.receipt).collect();
            self.ack(&mut tally, &receipts).await;
        }
        tally
    }

    async fn ack(&mut self, tally: &mut Tally, receipts: &[String]) {
        let start = Instant::now();
        let result = self
            .connection
            .post(&self.ack_path, wire::ack_body(receipts))
            .await;
        tally.record_other("ack", start.elapsed());
        let Some(reply) = tally.check(result) else {
            return;
        };
        let acked = serde_json::from_slice::<AckReply>(&reply.body).map_or(0, |a| a.acked);
        if acked < receipts.len() {
            tally.error("ack_failed_receipts");
        }
        tally.messages += acked as u64;
        tally.payload_bytes += (acked * wire::MESSAGE_BYTES) as u64;
    }
}
