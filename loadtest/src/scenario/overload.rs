//! `overload`: what the server does when offered three times what it sustains (the issue's
//! acceptance: "open loop at 3× what the node sustains, 1,000 connections, reporting peak RSS,
//! the share of 503, p99 of accepted requests and the acked throughput compared with the
//! unloaded figure").
//!
//! Every request is one produce batch of `batch` messages of `value_bytes` random bytes sent
//! as `value_base64` (100 × 1 KiB: about 139 KB), taken in turn from [`BODIES`] bodies built
//! once. Two phases on one topic of `partitions` partitions, each a warm-up and
//! `load.duration` long:
//! 1. `overload-unloaded`: a closed loop on `unloaded_connections`; its acked requests per
//!    second are the sustained rate.
//! 2. `overload`: the server's `VmHWM` is reset, `connections` connections are dialled (at
//!    most [`DIAL_CONCURRENCY`] at a time, all within [`DIAL_LIMIT`]), and a dispatcher offers
//!    `factor` × the sustained rate. Each intended send time goes to an idle connection; when
//!    every connection still waits for a reply it counts as not sent, so nothing queues.
//!    Requests meant to start in the window are counted by outcome (2xx, 503 with or without
//!    `Retry-After`, 429, other status, connect failure, reset, timeout); the main latency is
//!    the accepted (2xx) requests', from the intended send time. The measured seconds, the
//!    server's CPU and its sampled RSS are the window's, so acked req/s is "acked of what was
//!    offered in the window, per second"; the peak RSS (`peak_rss_mib`) is the `VmHWM` read
//!    after the last reply, which covers the dial, the warm-up, the window and the drain.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rand::SeedableRng;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

mod outcomes;

use outcomes::{OutcomeCounts, Outcomes};

use super::{
    Budget, Load, Measurement, RunShape, ScenarioError, Tally, Usage, Window, create_topic,
    join_tallies, unique_name,
};
use crate::client::{Connection, Reply, RequestError};
use crate::pacing::Schedule;
use crate::procfs;
use crate::wire;

/// Distinct request bodies, sent in turn: random values, without generating 139 KB of them
/// per request on the cores the server needs.
pub const BODIES: usize = 8;
/// Dials in flight at once while opening the overload phase's connections: a burst of a
/// thousand SYNs would overflow the server's accept backlog and measure that instead.
pub const DIAL_CONCURRENCY: usize = 64;
/// Longest the overload phase's connections may take to open, all together.
pub const DIAL_LIMIT: Duration = Duration::from_secs(10);

/// The load of both phases.
#[derive(Debug, Clone)]
pub struct OverloadSpec {
    /// Connections of the overload phase.
    pub connections: usize,
    /// Connections of the unloaded phase (closed loop).
    pub unloaded_connections: usize,
    /// The overload phase offers this many times the unloaded phase's acked req/s.
    pub factor: f64,
    /// Messages per request.
    pub batch: usize,
    /// Random bytes per message.
    pub value_bytes: usize,
    /// Partitions of the topic created for the run.
    pub partitions: u32,
}

/// The measurements of both phases.
#[derive(Debug, Clone)]
pub struct OverloadRun {
    /// `overload-unloaded`: the closed loop whose acked req/s is the sustained rate.
    pub unloaded: Measurement,
    /// `overload`: the open loop at `factor` × that rate, with its outcome counts as figures.
    pub overloaded: Measurement,
}

/// Runs both phases on a fresh topic.
pub async fn overload(load: &Load, spec: &OverloadSpec) -> Result<OverloadRun, ScenarioError> {
    let topic = unique_name(&format!("overload-r{}", load.round));
    create_topic(load, &topic, spec.partitions).await?;
    let produce = Produce::new(&topic, spec);
    let unloaded = closed_loop(load, spec, &produce).await;
    if unloaded.req_per_s <= 0.0 {
        return Err(ScenarioError::Setup {
            step: "overload-unloaded".to_owned(),
            detail: format!("no request was acked: errors {:?}", unloaded.errors),
        });
    }
    let overloaded = open_loop(load, spec, &produce, &unloaded).await;
    Ok(OverloadRun {
        unloaded,
        overloaded,
    })
}

/// The request both phases send.
#[derive(Debug, Clone)]
struct Produce {
    path: String,
    bodies: Arc<[Bytes]>,
    messages: u64,
    payload_bytes: u64,
}

impl Produce {
    fn new(topic: &str, spec: &OverloadSpec) -> Produce {
        // Seeded: the same bytes in every run, so runs differ only in the server.
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x0f10_ad00);
        Produce {
            path: wire::messages_path(topic),
            bodies: (0..BODIES)
                .map(|_| wire::random_produce_body(&mut rng, spec.batch, spec.value_bytes))
                .collect(),
            messages: spec.batch as u64,
            payload_bytes: (spec.batch * spec.value_bytes) as u64,
        }
    }

    async fn send(&self, connection: &mut Connection, turn: usize) -> Result<Reply, RequestError> {
        let body = self.bodies[turn % self.bodies.len()].clone();
        connection.post(&self.path, body).await
    }
}

async fn closed_loop(load: &Load, spec: &OverloadSpec, produce: &Produce) -> Measurement {
    let window = Window::after_warmup(load.warmup, load.duration);
    let budget = Budget::new(load.max_requests);
    let workers: Vec<_> = (0..spec.unloaded_connections)
        .map(|index| {
            let (produce, budget, connection) = (produce.clone(), budget.clone(), load.connect());
            tokio::spawn(closed_worker(connection, produce, index, window, budget))
        })
        .collect();
    tokio::time::sleep_until(window.measure_from).await;
    let usage = Usage::start(load);
    let tally = join_tallies(workers).await;
    let elapsed = window.measure_from.elapsed();
    let shape = RunShape::new("overload-unloaded", spec.unloaded_connections, None);
    Measurement::from_tally(load, shape, tally, elapsed, usage.finish().await)
}

async fn closed_worker(
    mut connection: Connection,
    produce: Produce,
    index: usize,
    window: Window,
    budget: Budget,
) -> Tally {
    let mut tally = Tally::default();
    let mut turn = index;
    while Instant::now() < window.deadline && budget.take() {
        let start = Instant::now();
        let result = produce.send(&mut connection, turn).await;
        turn += 1;
        if window.measures(start) && tally.request(start.elapsed(), result).is_some() {
            tally.messages += produce.messages;
            tally.payload_bytes += produce.payload_bytes;
        }
    }
    tally
}

async fn open_loop(
    load: &Load,
    spec: &OverloadSpec,
    produce: &Produce,
    unloaded: &Measurement,
) -> Measurement {
    let rate = spec.factor * unloaded.req_per_s;
    let hwm_reset = load
        .server_pid
        .is_some_and(|pid| procfs::reset_peak_rss(pid).is_ok());
    let dial_started = Instant::now();
    let (connections, dial_failed) = open_connections(load, spec.connections).await;
    let dial_s = dial_started.elapsed().as_secs_f64();
    let window = Window::after_warmup(load.warmup, load.duration);
    let (jobs, idle, workers) = start_workers(connections, produce, window);
    let schedule = Schedule::new(Instant::now(), rate, 1, 0);
    let dispatcher = tokio::spawn(dispatch(schedule, window, jobs, idle, load.max_requests));
    tokio::time::sleep_until(window.measure_from).await;
    let usage = Usage::start(load);
    let dispatched = dispatcher.await.unwrap_or_default();
    tokio::time::sleep_until(window.deadline).await;
    let server = usage.finish().await;
    let outcomes = Outcomes::join(workers).await;
    let hwm_kib = load
        .server_pid
        .and_then(|pid| procfs::status_kib(Some(pid), "VmHWM"));
    let shape = RunShape::new("overload", spec.connections, Some(rate));
    let mut m = Measurement::from_tally(load, shape, outcomes.tally, load.duration, server);
    let phase = Phase {
        counts: OutcomeCounts::of(&m, outcomes.without_retry_after),
        rate,
        dispatched,
        dial_failed,
        dial_s,
        hwm_kib: hwm_kib.filter(|_| hwm_reset),
    };
    phase.describe(&mut m, spec, unloaded);
    m
}

/// Spawns one [`OpenWorker`] per connection: their job senders, the queue of idle workers,
/// and their handles.
fn start_workers(
    connections: Vec<Connection>,
    produce: &Produce,
    window: Window,
) -> (
    Vec<mpsc::Sender<Instant>>,
    mpsc::Receiver<usize>,
    Vec<tokio::task::JoinHandle<Outcomes>>,
) {
    let (idle_tx, idle) = mpsc::channel(connections.len().max(1));
    let (jobs, workers) = connections
        .into_iter()
        .enumerate()
        .map(|(index, connection)| {
            let (job_tx, jobs) = mpsc::channel(1);
            let worker = OpenWorker {
                index,
                connection,
                produce: produce.clone(),
                window,
                idle: idle_tx.clone(),
                jobs,
            };
            (job_tx, tokio::spawn(worker.run()))
        })
        .unzip();
    (jobs, idle, workers)
}

/// What the overload phase found, beside the measurement's own fields.
#[derive(Debug)]
struct Phase {
    counts: OutcomeCounts,
    rate: f64,
    dispatched: Dispatched,
    dial_failed: u64,
    dial_s: f64,
    /// `VmHWM` after the last reply, if it was reset before the phase.
    hwm_kib: Option<u64>,
}

impl Phase {
    /// Adds the figures the report reads and a note.
    fn describe(&self, m: &mut Measurement, spec: &OverloadSpec, unloaded: &Measurement) {
        let figures = self.counts.figures().into_iter().chain([
            ("offered_req_per_s", Some(self.rate)),
            ("not_sent", Some(self.dispatched.not_sent as f64)),
            ("unloaded_req_per_s", Some(unloaded.req_per_s)),
            ("unloaded_mib_per_s", Some(unloaded.mib_per_s)),
            ("acked_vs_unloaded", Some(m.req_per_s / unloaded.req_per_s)),
            ("accepted_p50_ms", Some(m.latency.p50_us as f64 / 1000.0)),
            ("accepted_p99_ms", Some(m.latency.p99_us as f64 / 1000.0)),
            ("peak_rss_mib", self.hwm_kib.map(|kib| kib as f64 / 1024.0)),
            ("dial_failed", Some(self.dial_failed as f64)),
            ("dial_s", Some(self.dial_s)),
        ]);
        m.figures.extend(figures.filter_map(|(name, value)| {
            value
                .filter(|v| v.is_finite())
                .map(|v| (name.to_owned(), v))
        }));
        m.notes.push(format!(
            "{} × the unloaded {:.0} req/s ({} connections, closed loop) = {:.0} req/s offered on {} connections (dialled in {:.1} s, {} failed), one request at a time each; {} sent, {} not sent (no idle connection); {}; peak RSS: {}",
            spec.factor,
            unloaded.req_per_s,
            spec.unloaded_connections,
            self.rate,
            spec.connections,
            self.dial_s,
            self.dial_failed,
            self.dispatched.sent,
            self.dispatched.not_sent,
            self.counts.summary(),
            match self.hwm_kib {
                Some(kib) => format!(
                    "VmHWM {:.1} MiB, reset before the connections opened",
                    kib as f64 / 1024.0
                ),
                None => "unknown (no --server-pid, or its VmHWM could not be reset)".to_owned(),
            },
        ));
    }
}

/// Opens `count` connections, [`DIAL_CONCURRENCY`] at a time, giving up on the rest after
/// [`DIAL_LIMIT`]; a connection that failed to open dials again on its first request.
async fn open_connections(load: &Load, count: usize) -> (Vec<Connection>, u64) {
    let permits = Arc::new(Semaphore::new(DIAL_CONCURRENCY));
    let deadline = Instant::now() + DIAL_LIMIT;
    let dials: Vec<_> = (0..count)
        .map(|_| {
            let (permits, mut connection) = (Arc::clone(&permits), load.connect());
            tokio::spawn(async move {
                let opened = tokio::time::timeout_at(deadline, async {
                    let _permit = permits.acquire().await;
                    connection.open().await
                })
                .await;
                let ok = matches!(opened, Ok(Ok(())));
                (connection, ok)
            })
        })
        .collect();
    let mut connections = Vec::with_capacity(count);
    let mut failed = 0;
    for dial in dials {
        let (connection, ok) = dial.await.unwrap_or_else(|_| (load.connect(), false));
        failed += u64::from(!ok);
        connections.push(connection);
    }
    (connections, failed)
}

/// What the dispatcher handed out in the window.
#[derive(Debug, Default)]
struct Dispatched {
    sent: u64,
    not_sent: u64,
}

/// Hands each intended send time of `schedule` before the window's end to an idle worker, or
/// counts it as not sent; at most `max_requests` in all. Dropping the job senders at the end
/// tells the workers to stop once their last reply is in.
async fn dispatch(
    mut schedule: Schedule,
    window: Window,
    jobs: Vec<mpsc::Sender<Instant>>,
    mut idle: mpsc::Receiver<usize>,
    max_requests: u64,
) -> Dispatched {
    let mut dispatched = Dispatched::default();
    for _ in 0..max_requests {
        let at = schedule.next_send();
        if at >= window.deadline {
            break;
        }
        tokio::time::sleep_until(at).await;
        let handed = idle
            .try_recv()
            .ok()
            .and_then(|worker| jobs.get(worker))
            .is_some_and(|job| job.try_send(at).is_ok());
        if window.measures(at) {
            match handed {
                true => dispatched.sent += 1,
                false => dispatched.not_sent += 1,
            }
        }
    }
    dispatched
}

/// One connection of the overload phase: says it is idle, waits for an intended send time,
/// sends, counts the outcome if that time was in the window, and again.
struct OpenWorker {
    index: usize,
    connection: Connection,
    produce: Produce,
    window: Window,
    idle: mpsc::Sender<usize>,
    jobs: mpsc::Receiver<Instant>,
}

impl OpenWorker {
    async fn run(mut self) -> Outcomes {
        let mut outcomes = Outcomes::default();
        let mut turn = self.index;
        // The idle queue holds every worker at most once, so this send never waits.
        while self.idle.send(self.index).await.is_ok() {
            let Some(intended) = self.jobs.recv().await else {
                break;
            };
            let result = self.produce.send(&mut self.connection, turn).await;
            turn += 1;
            if self.window.measures(intended) {
                outcomes.count(intended.elapsed(), result, &self.produce);
            }
        }
        outcomes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_dispatcher_counts_a_send_time_with_no_idle_worker_as_not_sent() {
        let window = Window::after_warmup(Duration::ZERO, Duration::from_millis(50));
        let (job_tx, mut jobs) = mpsc::channel(1);
        let (idle_tx, idle) = mpsc::channel(1);
        idle_tx.send(0).await.expect("queued");
        let schedule = Schedule::new(window.measure_from, 100.0, 1, 0);
        let dispatched = dispatch(schedule, window, vec![job_tx], idle, 1_000).await;
        assert_eq!((dispatched.sent, dispatched.not_sent), (1, 4));
        assert!(jobs.recv().await.is_some());
        assert!(jobs.recv().await.is_none());
    }
}
