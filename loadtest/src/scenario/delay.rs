//! `delay`: how precisely delayed messages arrive. Long-polling consumers start first; then
//! producers send `messages` small messages in batches, each with a `delay_ms` drawn
//! uniformly from `1..=spread_ms` (0 would not be delayed and has no `deliver_at_ms`), and keep the `deliver_at_ms` of each from the reply. Every
//! message's value starts with its index, so a consumer only notes (index, receive time) and
//! the lateness (receive time − `deliver_at_ms`, both on this machine's wall clock, the
//! receive time in microseconds) is worked out once all is in. A message received before its
//! `deliver_at_ms` counts as `early` (it must never happen). The main latency is the produce
//! request's; the lateness is the `lateness` histogram (non-negative values only).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::Rng;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::e2e::spawn_acker;
use super::{
    Load, Measurement, RunShape, ScenarioError, Tally, Usage, create_subscription, create_topic,
    unique_name,
};
use crate::client::Connection;
use crate::latency::Latencies;
use crate::pacing::Schedule;
use crate::wire::{self, ProduceReply, ReceiveReply};

/// Long-poll `wait_ms` of each receive.
pub const LONG_POLL_MS: u64 = 1_000;

/// What to schedule and who receives it.
#[derive(Debug, Clone)]
pub struct DelaySpec {
    /// Messages produced, all delayed.
    pub messages: u64,
    /// Delays are drawn uniformly from `1..=spread_ms`.
    pub spread_ms: u64,
    /// Messages per produce request.
    pub batch: usize,
    /// Producer connections.
    pub producers: usize,
    /// Long-polling consumers (each with a second connection for acks).
    pub consumers: usize,
    /// `max_messages` of each receive.
    pub max_messages: usize,
    /// Bytes of each message's value.
    pub value_bytes: usize,
    /// Partitions of the topic created for the run.
    pub partitions: u32,
    /// Messages produced per second over all producers, paced open-loop a batch at a time;
    /// `None` produces as fast as the producers can (a burst that saturates a small machine).
    pub rate_per_s: Option<f64>,
}

/// Counts shared by producers and consumers.
#[derive(Debug, Default)]
struct Progress {
    next_batch: AtomicU64,
    produced: AtomicU64,
    received: AtomicU64,
    producers_done: AtomicU64,
}

/// Microseconds since the Unix epoch, on the wall clock the server's `deliver_at_ms` uses.
fn epoch_us() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_micros()).unwrap_or(i128::MAX))
}

/// Runs the scenario on a fresh topic and subscription; `load.duration` bounds the whole run.
pub async fn delay(load: &Load, spec: &DelaySpec) -> Result<Measurement, ScenarioError> {
    let topic = unique_name(&format!("delay-r{}", load.round));
    let sub = "load";
    create_topic(load, &topic, spec.partitions).await?;
    create_subscription(load, &topic, sub, "latest").await?;
    let mut rng = rand::thread_rng();
    let delays: Arc<Vec<u64>> = Arc::new(
        (0..spec.messages)
            .map(|_| rng.gen_range(1..=spec.spread_ms.max(1)))
            .collect(),
    );
    let batch = spec.batch.max(1);
    let started = Instant::now();
    let deadline = started + load.duration;
    let usage = Usage::start(load);
    let progress = Arc::new(Progress::default());
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
                deadline,
                progress: Arc::clone(&progress),
                producers: spec.producers as u64,
            };
            tokio::spawn(consumer.run())
        })
        .collect();
    let producers: Vec<_> = (0..spec.producers)
        .map(|index| {
            let producer = Producer {
                schedule: spec
                    .rate_per_s
                    .map(|rate| Schedule::new(started, rate / batch as f64, spec.producers, index)),
                connection: load.connect(),
                path: wire::messages_path(&topic),
                delays: Arc::clone(&delays),
                batch,
                value_bytes: spec.value_bytes,
                deadline,
                max_requests: load.max_requests,
                progress: Arc::clone(&progress),
            };
            tokio::spawn(producer.run())
        })
        .collect();
    let mut tally = Tally::default();
    let mut due_ms: Vec<Option<u64>> = vec![None; delays.len()];
    for producer in producers {
        match producer.await {
            Ok((part, dues)) => {
                tally.merge(part);
                for (index, due) in dues {
                    if let Some(slot) = usize::try_from(index).ok().and_then(|i| due_ms.get_mut(i))
                    {
                        *slot = Some(due);
                    }
                }
            }
            Err(_) => tally.error("worker_panicked"),
        }
    }
    let produced_s = started.elapsed().as_secs_f64();
    let mut receipts: Vec<(u64, i128)> = Vec::new();
    for consumer in consumers {
        match consumer.await {
            Ok((part, got)) => {
                tally.merge(part);
                receipts.extend(got);
            }
            Err(_) => tally.error("worker_panicked"),
        }
    }
    let elapsed = started.elapsed();
    let lateness = Lateness::of(&due_ms, &receipts);
    let produced = due_ms.iter().filter(|d| d.is_some()).count() as u64;
    if lateness.received < produced {
        *tally.errors.entry("not_received".to_owned()).or_default() += produced - lateness.received;
    }
    if lateness.early > 0 {
        *tally.errors.entry("early".to_owned()).or_default() += lateness.early;
    }
    tally.messages = lateness.received;
    tally.payload_bytes = lateness.received * spec.value_bytes as u64;
    let summary = lateness.histogram.summary();
    tally
        .other
        .insert("lateness".to_owned(), lateness.histogram);
    let shape = RunShape::new("delay", spec.producers, spec.rate_per_s);
    let mut measurement =
        Measurement::from_tally(load, shape, tally, elapsed, usage.finish().await);
    let figures = [
        ("produced", produced as f64),
        ("received", lateness.received as f64),
        ("duplicates", lateness.duplicates as f64),
        ("early", lateness.early as f64),
        ("early_max_ms", lateness.early_max_us as f64 / 1000.0),
        ("lateness_p50_ms", summary.p50_us as f64 / 1000.0),
        ("lateness_p99_ms", summary.p99_us as f64 / 1000.0),
        ("lateness_p999_ms", summary.p999_us as f64 / 1000.0),
        ("lateness_max_ms", summary.max_us as f64 / 1000.0),
        ("lateness_mean_ms", summary.mean_us / 1000.0),
    ];
    measurement
        .figures
        .extend(figures.map(|(name, value)| (name.to_owned(), value)));
    measurement.notes.push(format!(
        "{produced} messages of {} bytes, delay_ms uniform over 1..={} ({} per request, {} producers, {}, all produced in {produced_s:.2} s); {} long-polling consumers (max_messages {}, wait_ms {LONG_POLL_MS}); lateness = receive time (µs wall clock) − deliver_at_ms from the produce reply; {} received, {} early, {} duplicates",
        spec.value_bytes,
        spec.spread_ms,
        batch,
        spec.producers,
        spec.rate_per_s.map_or_else(
            || "as fast as they could".to_owned(),
            |rate| format!("paced at {rate} messages/s")
        ),
        spec.consumers,
        spec.max_messages,
        lateness.received,
        lateness.early,
        lateness.duplicates,
    ));
    Ok(measurement)
}

/// The lateness of every received message.
#[derive(Debug, Default)]
struct Lateness {
    histogram: Latencies,
    received: u64,
    early: u64,
    early_max_us: u64,
    duplicates: u64,
}

impl Lateness {
    /// Matches receipts `(index, receive µs)` with due times by index; the first receipt of
    /// an index counts, later ones are duplicates.
    fn of(due_ms: &[Option<u64>], receipts: &[(u64, i128)]) -> Lateness {
        let mut seen = vec![false; due_ms.len()];
        let mut out = Lateness::default();
        for &(index, received_us) in receipts {
            let Some(i) = usize::try_from(index).ok().filter(|i| *i < due_ms.len()) else {
                continue;
            };
            if seen[i] {
                out.duplicates += 1;
                continue;
            }
            seen[i] = true;
            let Some(due) = due_ms[i] else { continue };
            out.received += 1;
            let late_us = received_us - i128::from(due) * 1000;
            if late_us < 0 {
                out.early += 1;
                out.early_max_us = out
                    .early_max_us
                    .max(u64::try_from(-late_us).unwrap_or(u64::MAX));
            } else {
                let late_us = u64::try_from(late_us).unwrap_or(u64::MAX);
                out.histogram.record(Duration::from_micros(late_us));
            }
        }
        out
    }
}

struct Producer {
    /// Intended send times when paced.
    schedule: Option<Schedule>,
    connection: Connection,
    path: String,
    delays: Arc<Vec<u64>>,
    batch: usize,
    value_bytes: usize,
    deadline: Instant,
    max_requests: u64,
    progress: Arc<Progress>,
}

impl Producer {
    async fn run(mut self) -> (Tally, Vec<(u64, u64)>) {
        let mut tally = Tally::default();
        let mut dues = Vec::new();
        let total = self.delays.len() as u64;
        loop {
            let k = self.progress.next_batch.fetch_add(1, Ordering::Relaxed);
            let first = k.saturating_mul(self.batch as u64);
            if first >= total || k >= self.max_requests || Instant::now() >= self.deadline {
                break;
            }
            let last = (first + self.batch as u64).min(total);
            let messages: Vec<(u64, u64)> = (first..last)
                .map(|i| {
                    let delay = usize::try_from(i)
                        .ok()
                        .and_then(|i| self.delays.get(i).copied())
                        .unwrap_or(0);
                    (i, delay)
                })
                .collect();
            let body = wire::delayed_produce_body(&messages, self.value_bytes);
            if let Some(schedule) = &mut self.schedule {
                tokio::time::sleep_until(schedule.next_send()).await;
            }
            let start = Instant::now();
            let result = self.connection.post(&self.path, body).await;
            let Some(reply) = tally.request(start.elapsed(), result) else {
                continue;
            };
            let Ok(produced) = serde_json::from_slice::<ProduceReply>(&reply.body) else {
                tally.error("bad_produce_reply");
                continue;
            };
            if produced.messages.len() != messages.len() {
                tally.error("short_produce_reply");
            }
            let mut count = 0;
            for ((index, _), entry) in messages.iter().zip(produced.messages) {
                match entry.deliver_at_ms {
                    Some(due) => {
                        dues.push((*index, due));
                        count += 1;
                    }
                    None => tally.error("no_deliver_at_ms"),
                }
            }
            self.progress.produced.fetch_add(count, Ordering::Relaxed);
        }
        self.progress.producers_done.fetch_add(1, Ordering::Relaxed);
        (tally, dues)
    }
}

struct Consumer {
    connection: Connection,
    acks: mpsc::Sender<Vec<String>>,
    path: String,
    body: bytes::Bytes,
    deadline: Instant,
    progress: Arc<Progress>,
    producers: u64,
}

impl Consumer {
    async fn run(mut self) -> (Tally, Vec<(u64, i128)>) {
        let mut tally = Tally::default();
        let mut got = Vec::new();
        while Instant::now() < self.deadline && !self.all_received() {
            let result = self.connection.post(&self.path, self.body.clone()).await;
            let received_us = epoch_us();
            let Some(reply) = tally.check(result) else {
                continue;
            };
            let Ok(received) = serde_json::from_slice::<ReceiveReply>(&reply.body) else {
                tally.error("bad_receive_reply");
                continue;
            };
            let mut receipts = Vec::with_capacity(received.messages.len());
            for message in received.messages {
                match message.value.as_deref().and_then(wire::parse_stamp) {
                    Some(index) => got.push((index, received_us)),
                    None => tally.error("unknown_message"),
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
        (tally, got)
    }

    fn all_received(&self) -> bool {
        self.progress.producers_done.load(Ordering::Relaxed) >= self.producers
            && self.progress.received.load(Ordering::Relaxed)
                >= self.progress.produced.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_counts_early_late_missing_and_duplicates() {
        let due = [Some(1_000), Some(2_000), None, Some(3_000)];
        let receipts = [
            (0, 1_000_500), // 0.5 ms late
            (1, 1_999_900), // 0.1 ms early
            (0, 1_000_900), // duplicate
            (9, 5_000_000), // unknown index
        ];
        let lateness = Lateness::of(&due, &receipts);
        assert_eq!(lateness.received, 2);
        assert_eq!(lateness.early, 1);
        assert_eq!(lateness.early_max_us, 100);
        assert_eq!(lateness.duplicates, 1);
        let summary = lateness.histogram.summary();
        assert_eq!(summary.count, 1);
        assert!((499..=501).contains(&summary.max_us), "{summary:?}");
    }
}
