//! `produce-1` (one 1 KiB message per request) and `produce-batch` (100 per request):
//! closed-loop (each connection sends as soon as its last reply came) or open-loop (a fixed
//! arrival rate, latency from the intended send time). The server's `/metrics`, scraped when
//! measuring starts and ends, adds group-commit sizes and fsync times of the window. An
//! open-loop run also reports the longest time without a successful reply (`max_gap_ms`), the
//! client's view of a failover; `partition` keys every message to one partition (in a cluster,
//! to reach its leader or to be forwarded there on purpose).

use bytes::Bytes;
use tokio::time::Instant;

use super::{
    Budget, Load, Measurement, RunShape, ScenarioError, SuccessGaps, Tally, Turns, Usage, Window,
    create_topic, join_tallies, key_for_partition, unique_name,
};
use crate::client::Connection;
use crate::pacing::Schedule;
use crate::server_metrics::{self, StageFigures, WriterFigures};
use crate::wire;

/// What to produce and how.
#[derive(Debug, Clone)]
pub struct ProduceSpec {
    /// The scenario's name in results.
    pub scenario: String,
    /// Messages per request.
    pub batch: usize,
    /// Partitions of the topic created for the run.
    pub partitions: u32,
    /// Connections.
    pub connections: usize,
    /// Requests per second across all connections (open loop); `None`: closed loop.
    pub rate_per_s: Option<f64>,
    /// The topic to produce to (created if missing); `None`: a fresh one.
    pub topic: Option<String>,
    /// Key every message so that it lands on this partition; `None`: unkeyed.
    pub partition: Option<u32>,
}

/// Runs the scenario on the given topic or a fresh one.
pub async fn produce(load: &Load, spec: &ProduceSpec) -> Result<Measurement, ScenarioError> {
    let topic = spec
        .topic
        .clone()
        .unwrap_or_else(|| unique_name(&format!("{}-r{}", spec.scenario, load.round)));
    create_topic(load, &topic, spec.partitions).await?;
    let key = match spec.partition {
        Some(partition) => Some(key_for_partition(load, &topic, partition).await?),
        None => None,
    };
    let body = wire::keyed_produce_body(spec.batch, wire::MESSAGE_BYTES, key.as_deref());
    let path = wire::messages_path(&topic);
    let budget = Budget::new(load.max_requests);
    let window = Window::after_warmup(load.warmup, load.duration);
    let gaps = SuccessGaps::new(window.measure_from);
    let started = Instant::now();
    let workers: Vec<_> = (0..spec.connections)
        .map(|index| {
            let worker = Worker {
                connection: load.connect(),
                path: path.clone(),
                body: body.clone(),
                batch: spec.batch,
                turns: Turns::new(
                    window,
                    budget.clone(),
                    spec.rate_per_s
                        .map(|rate| Schedule::new(started, rate, spec.connections, index)),
                ),
                gaps: gaps.clone(),
            };
            tokio::spawn(worker.run())
        })
        .collect();
    tokio::time::sleep_until(window.measure_from).await;
    let usage = Usage::start(load);
    let mut scraper = load.connect();
    let before = server_metrics::scrape(&mut scraper).await;
    let tally = join_tallies(workers).await;
    let elapsed = window.measure_from.elapsed();
    let longest_gap = gaps.longest(Instant::now());
    let after = server_metrics::scrape(&mut scraper).await;
    let shape = RunShape::new(spec.scenario.clone(), spec.connections, spec.rate_per_s);
    let mut measurement =
        Measurement::from_tally(load, shape, tally, elapsed, usage.finish().await);
    let scrapes = before.zip(after);
    add_stage_figures(&mut measurement, scrapes.as_ref());
    add_writer_figures(&mut measurement, scrapes);
    measurement.add_max_gap(longest_gap);
    if let Some(partition) = spec.partition {
        measurement.notes.push(format!(
            "every message keyed to partition {partition} of {topic}"
        ));
    }
    Ok(measurement)
}

/// The replicated-write stages of the window on the node the load hit (a cluster node only),
/// from two scrapes of its `/metrics`.
fn add_stage_figures(measurement: &mut Measurement, scrapes: Option<&(String, String)>) {
    let figures = scrapes.and_then(|(before, after)| StageFigures::between(before, after));
    if let Some(figures) = figures {
        measurement.figures.extend(figures.named());
        measurement.notes.push(figures.note());
    }
}

/// Group-commit and fsync figures of the window, from two scrapes of the server's
/// `/metrics`; a note says so when a Wharf server had none.
fn add_writer_figures(measurement: &mut Measurement, scrapes: Option<(String, String)>) {
    let figures = scrapes.and_then(|(before, after)| WriterFigures::between(&before, &after));
    match figures {
        Some(figures) => {
            let named = figures.named().into_iter();
            measurement
                .figures
                .extend(named.map(|(name, value)| (name.to_owned(), value)));
            measurement.notes.push(figures.note());
        }
        None if measurement.target == "wharf" => measurement
            .notes
            .push("no group-commit figures: /metrics unreadable or no commit measured".to_owned()),
        None => {}
    }
}

struct Worker {
    connection: Connection,
    path: String,
    body: Bytes,
    batch: usize,
    turns: Turns,
    gaps: SuccessGaps,
}

impl Worker {
    async fn run(mut self) -> Tally {
        let mut tally = Tally::default();
        while let Some(start) = self.turns.next().await {
            let result = self.connection.post(&self.path, self.body.clone()).await;
            if !self.turns.measures(start) {
                continue;
            }
            if tally.request(start.elapsed(), result).is_some() {
                self.gaps.success(Instant::now());
                tally.messages += self.batch as u64;
                tally.payload_bytes += (self.batch * wire::MESSAGE_BYTES) as u64;
            }
        }
        tally
    }
}
