//! `e2e`: open-loop producers send one stamped 1 KiB message per request at a fixed total
//! rate while long-polling consumers receive and ack. Each message's value starts with its
//! intended send time, so publish-to-receive latency (`e2e`) includes any time the message
//! waited to be sent. The main latency is the produce request's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{
    Budget, Load, Measurement, RunShape, ScenarioError, Tally, Turns, Usage, Window,
    create_subscription, create_topic, join_tallies, unique_name,
};
use crate::client::Connection;
use crate::pacing::Schedule;
use crate::wire::{self, ReceiveReply};

/// How long consumers keep receiving after the producers stop, for messages still in flight.
pub const DRAIN: Duration = Duration::from_secs(3);
/// Long-poll `wait_ms` of each receive: short enough for consumers to notice the end quickly.
pub const LONG_POLL_MS: u64 = 1_000;
/// Receipt batches queued for a consumer's acker before the consumer waits for it.
const ACK_QUEUE: usize = 64;

/// The rate and the parties.
#[derive(Debug, Clone)]
pub struct E2eSpec {
    /// Messages per second, all producers together (one message per request).
    pub rate_per_s: f64,
    /// Producer connections.
    pub producers: usize,
    /// Long-polling consumers (each with a second connection for acks).
    pub consumers: usize,
    /// `max_messages` of each receive.
    pub max_messages: usize,
    /// Partitions of the topic created for the run.
    pub partitions: u32,
}

/// Counts shared by producers and consumers.
#[derive(Debug, Default)]
struct Progress {
    produced: AtomicU64,
    received: AtomicU64,
    producers_done: AtomicU64,
}

/// Runs the scenario on a fresh topic and subscription.
pub async fn e2e(load: &Load, spec: &E2eSpec) -> Result<Measurement, ScenarioError> {
    let topic = unique_name(&format!("e2e-r{}", load.round));
    let sub = "load";
    create_topic(load, &topic, spec.partitions).await?;
    create_subscription(load, &topic, sub, "latest").await?;
    let base = Instant::now();
    let window = Window::after_warmup(load.warmup, load.duration);
    let progress = Arc::new(Progress::default());
    let budget = Budget::new(load.max_requests);
    let consumers: Vec<_> = (0..spec.consumers)
        .map(|_| {
            let consumer = Consumer {
                connection: load.connect(),
                acks: spawn_acker(
                    load.connect(),
                    wire::subscription_action_path(&topic, sub, "ack"),
                ),
                path: wire::subscription_action_path(&topic, sub, "receive"),
                body: wire::receive_body(spec.max_messages, LONG_POLL_MS),
                base,
                window,
                progress: Arc::clone(&progress),
                producers: spec.producers as u64,
            };
            tokio::spawn(consumer.run())
        })
        .collect();
    let producers: Vec<_> = (0..spec.producers)
        .map(|index| {
            let producer = Producer {
                connection: load.connect(),
                path: wire::messages_path(&topic),
                turns: Turns::new(
                    window,
                    budget.clone(),
                    Some(Schedule::new(base, spec.rate_per_s, spec.producers, index)),
                ),
                base,
                progress: Arc::clone(&progress),
            };
            tokio::spawn(producer.run())
        })
        .collect();
    tokio::time::sleep_until(window.measure_from).await;
    let usage = Usage::start(load);
    let mut tally = join_tallies(producers).await;
    let elapsed = window.measure_from.elapsed();
    tally.merge(join_tallies(consumers).await);
    let produced = progress.produced.load(Ordering::Relaxed);
    let received = progress.received.load(Ordering::Relaxed);
    if received < produced {
        *tally.errors.entry("not_received".to_owned()).or_default() += produced - received;
    }
    let shape = RunShape::new("e2e", spec.producers, Some(spec.rate_per_s));
    let mut measurement =
        Measurement::from_tally(load, shape, tally, elapsed, usage.finish().await);
    measurement.notes.push(format!(
        "{} producers, {} long-polling consumers (max_messages {}, wait_ms {LONG_POLL_MS}); {produced} produced, {received} received",
        spec.producers, spec.consumers, spec.max_messages
    ));
    Ok(measurement)
}

struct Producer {
    connection: Connection,
    path: String,
    turns: Turns,
    base: Instant,
    progress: Arc<Progress>,
}

impl Producer {
    async fn run(mut self) -> Tally {
        let mut tally = Tally::default();
        while let Some(intended) = self.turns.next().await {
            let stamp = u64::try_from((intended - self.base).as_nanos()).unwrap_or(u64::MAX);
            let body = wire::stamped_produce_body(stamp, wire::MESSAGE_BYTES);
            let result = self.connection.post(&self.path, body).await;
            let ok = if self.turns.measures(intended) {
                let ok = tally.request(intended.elapsed(), result).is_some();
                if ok {
                    tally.messages += 1;
                    tally.payload_bytes += wire::MESSAGE_BYTES as u64;
                }
                ok
            } else {
                matches!(result, Ok(reply) if reply.is_success())
            };
            if ok {
                self.progress.produced.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.progress.producers_done.fetch_add(1, Ordering::Relaxed);
        tally
    }
}

struct Consumer {
    connection: Connection,
    acks: mpsc::Sender<Vec<String>>,
    path: String,
    body: bytes::Bytes,
    base: Instant,
    window: Window,
    progress: Arc<Progress>,
    producers: u64,
}

impl Consumer {
    async fn run(mut self) -> Tally {
        let mut tally = Tally::default();
        let hard_stop = self.window.deadline + DRAIN;
        while Instant::now() < hard_stop && !self.all_received() {
            let result = self.connection.post(&self.path, self.body.clone()).await;
            let now = Instant::now();
            let Some(reply) = tally.check(result) else {
                continue;
            };
            let Ok(received) = serde_json::from_slice::<ReceiveReply>(&reply.body) else {
                tally.error("bad_receive_reply");
                continue;
            };
            let mut receipts = Vec::with_capacity(received.messages.len());
            for message in received.messages {
                let stamp = message.value.as_deref().and_then(wire::parse_stamp);
                if let Some(stamp) = stamp {
                    let intended = self.base + Duration::from_nanos(stamp);
                    if self.window.measures(intended) {
                        tally.record_other("e2e", now.saturating_duration_since(intended));
                    }
                }
                receipts.push(message.receipt);
            }
            self.progress
                .received
                .fetch_add(receipts.len() as u64, Ordering::Relaxed);
            if !receipts.is_empty() && self.acks.send(receipts).await.is_err() {
                tally.error("acker_gone");
            }
        }
        drop(self.acks);
        tally
    }

    fn all_received(&self) -> bool {
        self.progress.producers_done.load(Ordering::Relaxed) >= self.producers
            && self.progress.received.load(Ordering::Relaxed)
                >= self.progress.produced.load(Ordering::Relaxed)
    }
}

pub(super) fn spawn_acker(mut connection: Connection, path: String) -> mpsc::Sender<Vec<String>> {
    let (sender, mut receiver) = mpsc::channel::<Vec<String>>(ACK_QUEUE);
    tokio::spawn(async move {
        while let Some(receipts) = receiver.recv().await {
            let _acked = connection.post(&path, wire::ack_body(&receipts)).await;
        }
    });
    sender
}
