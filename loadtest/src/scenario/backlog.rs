//! `backlog-empty` / `backlog-full`: does receive slow down when a subscription is far behind?
//! One connection repeats: produce 10 messages, receive up to 10 (`wait_ms` 1000, so an
//! empty subscription gets the ones just produced), ack. Only the receive is the measured
//! latency. With `behind` 0 the subscription starts at the topic's end, so every receive
//! takes what was just produced; otherwise the topic is filled to `behind` messages (once:
//! a topic that already holds them is reused) and a new subscription starts at the earliest
//! offset, so every receive reads from the head of that backlog while the produce adds to its
//! tail and the backlog stays put.

use std::time::Duration;

use tokio::time::Instant;

use super::setup::stored_messages;
use super::{
    Load, Measurement, RunShape, ScenarioError, Tally, Usage, create_subscription, create_topic,
    fill, unique_name,
};
use crate::wire::{self, AckReply, ReceiveReply};

/// Messages produced, received and acked per sample.
pub const SAMPLE_MESSAGES: usize = 10;

/// The backlog and the sample count.
#[derive(Debug, Clone)]
pub struct BacklogSpec {
    /// The scenario's name in results.
    pub scenario: String,
    /// Messages behind the cursor while measuring.
    pub behind: u64,
    /// Samples (produce + receive + ack cycles), at most.
    pub samples: u64,
    /// The topic to use (and fill, if it holds fewer than `behind`); `None`: a fresh one.
    pub topic: Option<String>,
    /// Longest the fill may take.
    pub fill_limit: Duration,
}

/// Runs the scenario.
pub async fn backlog(load: &Load, spec: &BacklogSpec) -> Result<Measurement, ScenarioError> {
    let topic = spec
        .topic
        .clone()
        .unwrap_or_else(|| unique_name(&format!("{}-r{}", spec.scenario, load.round)));
    create_topic(load, &topic, 1).await?;
    let stored = stored_messages(load, &topic).await;
    if spec.behind > stored {
        fill(load, &topic, spec.behind - stored, spec.fill_limit).await?;
    }
    let sub = unique_name(&format!("r{}", load.round));
    let start = if spec.behind == 0 {
        "latest"
    } else {
        "earliest"
    };
    create_subscription(load, &topic, &sub, start).await?;
    let behind = if spec.behind == 0 {
        0
    } else {
        stored_messages(load, &topic).await
    };
    let produce_path = wire::messages_path(&topic);
    let produce_body = wire::produce_body(SAMPLE_MESSAGES, wire::MESSAGE_BYTES);
    let receive_path = wire::subscription_action_path(&topic, &sub, "receive");
    let receive_body = wire::receive_body(SAMPLE_MESSAGES, 1_000);
    let ack_path = wire::subscription_action_path(&topic, &sub, "ack");
    let mut connection = load.connect();
    let mut tally = Tally::default();
    let usage = Usage::start(load);
    let measure_from = Instant::now();
    let deadline = measure_from + load.duration;
    let mut samples = 0;
    while samples < spec.samples.min(load.max_requests) && Instant::now() < deadline {
        samples += 1;
        let produced = connection.post(&produce_path, produce_body.clone()).await;
        if tally.check(produced).is_none() {
            continue;
        }
        let start = Instant::now();
        let result = connection.post(&receive_path, receive_body.clone()).await;
        let Some(reply) = tally.request(start.elapsed(), result) else {
            continue;
        };
        let receipts: Vec<String> = serde_json::from_slice::<ReceiveReply>(&reply.body)
            .map(|r| r.messages.into_iter().map(|m| m.receipt).collect())
            .unwrap_or_default();
        if receipts.is_empty() {
            tally.error("empty_receive");
            continue;
        }
        let start = Instant::now();
        let acked = connection.post(&ack_path, wire::ack_body(&receipts)).await;
        tally.record_other("ack", start.elapsed());
        if let Some(reply) = tally.check(acked) {
            let acked = serde_json::from_slice::<AckReply>(&reply.body).map_or(0, |a| a.acked);
            tally.messages += acked as u64;
            tally.payload_bytes += (acked * wire::MESSAGE_BYTES) as u64;
        }
    }
    let elapsed = measure_from.elapsed();
    let shape = RunShape::new(spec.scenario.clone(), 1, None);
    let mut measurement =
        Measurement::from_tally(load, shape, tally, elapsed, usage.finish().await);
    measurement.backlog = Some(behind);
    measurement.notes.push(format!(
        "{behind} messages behind the cursor; each sample produces {SAMPLE_MESSAGES}, receives up to {SAMPLE_MESSAGES}, acks"
    ));
    Ok(measurement)
}
