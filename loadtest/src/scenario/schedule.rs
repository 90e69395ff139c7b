//! `schedule`: what a large schedule costs the server in memory. Creates a topic and a
//! subscription, reads the server's `VmRSS` (and `VmHWM`) from `/proc`, then schedules
//! `messages` small messages `delay_ms` ahead (a day, by default) in batches on several
//! connections, as fast as they go, until all are scheduled or `load.duration` is up; then
//! reads `VmRSS` and `VmHWM` again and asks the subscription's stats whether `delayed` counts
//! exactly what was scheduled. The main latency is the produce request's.

use std::time::Duration;

use tokio::time::Instant;

use super::{
    Budget, Load, Measurement, RunShape, ScenarioError, Tally, Usage, create_subscription,
    create_topic, join_tallies, unique_name,
};
use crate::client::Connection;
use crate::procfs::status_kib;
use crate::wire::{self, SubscriptionReply};

/// Pause before the first reading, so the setup requests' allocations have settled.
const SETTLE: Duration = Duration::from_millis(500);
/// Timeout of the stats request: counting a large schedule may walk all of it.
const STATS_TIMEOUT: Duration = Duration::from_secs(120);

/// What to schedule and how.
#[derive(Debug, Clone)]
pub struct ScheduleSpec {
    /// Messages to schedule.
    pub messages: u64,
    /// Messages per produce request.
    pub batch: usize,
    /// Bytes of each message's value.
    pub value_bytes: usize,
    /// `delay_ms` of every message.
    pub delay_ms: u64,
    /// Producer connections.
    pub connections: usize,
    /// Partitions of the topic created for the run.
    pub partitions: u32,
}

/// Runs the scenario on a fresh topic; `load.duration` bounds the producing.
pub async fn schedule(load: &Load, spec: &ScheduleSpec) -> Result<Measurement, ScenarioError> {
    let topic = unique_name(&format!("schedule-r{}", load.round));
    let sub = "load";
    create_topic(load, &topic, spec.partitions).await?;
    create_subscription(load, &topic, sub, "latest").await?;
    tokio::time::sleep(SETTLE).await;
    let rss = |field| load.server_pid.and_then(|pid| status_kib(Some(pid), field));
    let rss_before = rss("VmRSS");
    let hwm_before = rss("VmHWM");
    let batch = spec.batch.max(1);
    let requests = spec.messages.div_ceil(batch as u64).min(load.max_requests);
    let budget = Budget::new(requests);
    let started = Instant::now();
    let deadline = started + load.duration;
    let usage = Usage::start(load);
    let workers: Vec<_> = (0..spec.connections)
        .map(|_| {
            let worker = Worker {
                connection: load.connect(),
                path: wire::messages_path(&topic),
                budget: budget.clone(),
                deadline,
                batch,
                total: spec.messages,
                value_bytes: spec.value_bytes,
                delay_ms: spec.delay_ms,
            };
            tokio::spawn(worker.run())
        })
        .collect();
    let mut tally = join_tallies(workers).await;
    let elapsed = started.elapsed();
    let server = usage.finish().await;
    let rss_after = rss("VmRSS");
    let hwm_after = rss("VmHWM");
    let scheduled = tally.messages;
    let stats_started = Instant::now();
    let mut stats = Connection::new(load.target.clone(), STATS_TIMEOUT);
    let delayed = match stats.get(&wire::subscription_path(&topic, sub)).await {
        Ok(reply) if reply.is_success() => serde_json::from_slice::<SubscriptionReply>(&reply.body)
            .ok()
            .map(|s| s.stats.delayed),
        _ => None,
    };
    let stats_ms = stats_started.elapsed().as_secs_f64() * 1000.0;
    match delayed {
        Some(delayed) if delayed != scheduled => {
            tally.error("delayed_mismatch");
        }
        Some(_) => {}
        None => tally.error("no_subscription_stats"),
    }
    let shape = RunShape::new("schedule", spec.connections, None);
    let mut measurement = Measurement::from_tally(load, shape, tally, elapsed, server);
    let mib = |kib: Option<u64>| kib.map(|k| k as f64 / 1024.0);
    let figures = [
        ("asked", Some(spec.messages as f64)),
        ("scheduled", Some(scheduled as f64)),
        ("delayed_reported", delayed.map(|d| d as f64)),
        ("stats_ms", Some(stats_ms)),
        ("rss_before_mib", mib(rss_before)),
        ("rss_after_mib", mib(rss_after)),
        (
            "rss_growth_mib",
            mib(rss_after.zip(rss_before).map(|(a, b)| a.saturating_sub(b))),
        ),
        ("hwm_before_mib", mib(hwm_before)),
        ("hwm_mib", mib(hwm_after)),
    ];
    measurement.figures.extend(
        figures
            .into_iter()
            .filter_map(|(name, value)| value.map(|v| (name.to_owned(), v))),
    );
    let timed_out = if scheduled < spec.messages {
        format!(
            " (stopped by the {:.0} s limit or errors)",
            load.duration.as_secs_f64()
        )
    } else {
        String::new()
    };
    measurement.notes.push(format!(
        "{scheduled} of {} messages scheduled{timed_out}: {} bytes each, delay_ms {}, {batch} per request on {} connections; subscription stats.delayed {} (answered in {stats_ms:.0} ms); RSS {} → {} MiB, VmHWM {} MiB",
        spec.messages,
        spec.value_bytes,
        spec.delay_ms,
        spec.connections,
        delayed.map_or_else(|| "unknown".to_owned(), |d| d.to_string()),
        mib(rss_before).map_or_else(|| "?".to_owned(), |v| format!("{v:.1}")),
        mib(rss_after).map_or_else(|| "?".to_owned(), |v| format!("{v:.1}")),
        mib(hwm_after).map_or_else(|| "?".to_owned(), |v| format!("{v:.1}")),
    ));
    Ok(measurement)
}

struct Worker {
    connection: Connection,
    path: String,
    budget: Budget,
    deadline: Instant,
    batch: usize,
    total: u64,
    value_bytes: usize,
    delay_ms: u64,
}

impl Worker {
    async fn run(mut self) -> Tally {
        let mut tally = Tally::default();
        let mut next = 0u64;
        while Instant::now() < self.deadline && self.budget.take() {
            // Values differ (they start with a counter) but their contents do not matter.
            let count = (self.batch as u64).min(self.total.max(1));
            let messages: Vec<(u64, u64)> =
                (next..next + count).map(|i| (i, self.delay_ms)).collect();
            next += count;
            let body = wire::delayed_produce_body(&messages, self.value_bytes);
            let start = Instant::now();
            let result = self.connection.post(&self.path, body).await;
            if tally.request(start.elapsed(), result).is_some() {
                tally.messages += count;
                tally.payload_bytes += count * self.value_bytes as u64;
            }
        }
        tally
    }
}
