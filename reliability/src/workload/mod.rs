//! The workload that records a history: setup, open-loop producers, consumers that receive and
//! ack, and the drain that reads every partition of every node after the faults stop.
//!
//! # Layout
//! - [`Workload`] and [`RunningWorkload`] (this file): the phases of a run.
//! - [`spec`]: [`WorkloadSpec`], every figure bounded.
//! - [`recorder`]: [`Recorder`], the history file and its clock; faults and leaders are
//!   recorded by whoever injects or observes them, through it.
//! - [`api`]: the Wharf calls, each with a timeout, and what their replies prove.
//! - [`leader_watch`]: [`LeaderWatch`], which records every partition leader and Raft term the
//!   nodes report.
//! - [`batch_retry`]: [`BatchRetry`], producers that send batches and retry each unchanged
//!   (same client ids) at random nodes until a 200.
//! - `produce`, `consume`, `drain`: the tasks.
//!
//! A run: [`Recorder::create`] (writes the `run` header), [`Workload::setup`],
//! [`Workload::start`], faults, [`RunningWorkload::finish`], heal, [`Workload::drain`],
//! [`Recorder::finish`] (the history's path), then [`crate::reader::read_file`] and
//! [`crate::check`]. Producers and consumers are tokio tasks: call `start` inside a runtime.
//!
//! ```no_run
//! use std::time::Duration;
//! use wharf_reliability::event::{Phase, Run};
//! use wharf_reliability::harness::{Cluster, ClusterSpec};
//! use wharf_reliability::reader::read_file;
//! use wharf_reliability::workload::{Recorder, Workload, WorkloadSpec};
//!
//! # async fn three_nodes() -> Result<(), Box<dyn std::error::Error>> {
//! let mut cluster = Cluster::start(ClusterSpec::new("target/debug/wharf", 3))?;
//! let spec = WorkloadSpec::new(200, Duration::from_secs(10));
//! let run = Run {
//!     id: "R1".into(),
//!     name: "node-kill".into(),
//!     seed: 7,
//!     faults: vec!["kill_node".into()],
//!     require_leader_change: true,
//!     partitions: spec.partitions,
//!     nodes: cluster.node_ids(),
//!     consumed_through: vec![],
//!     replicas: Default::default(),
//!     exactly_once_ids: false,
//!     idle_delivery_bound_ms: None,
//! };
//! let recorder = Recorder::create(&cluster.root().join("history.jsonl"), run)?;
//! let workload = Workload::new(spec, cluster.endpoints(), recorder.clone())?;
//! workload.setup().await?;
//! let running = workload.start();
//! running.wait_acked(100, Duration::from_secs(5)).await;
//! let killed = tokio::task::block_in_place(|| cluster.kill9(2));
//! recorder.record_fault("kill_node", Some(2), Phase::Start, killed.is_ok());
//! tokio::task::block_in_place(|| cluster.restart(2))?;
//! recorder.record_fault("kill_node", Some(2), Phase::End, true);
//! running.finish().await?;
//! workload.drain().await?;
//! let report = wharf_reliability::check(&read_file(&recorder.finish()?)?);
//! println!("{}", report.line());
//! # Ok(())
//! # }
//! ```

pub mod api;
pub mod batch_retry;
mod consume;
mod drain;
pub mod leader_watch;
mod produce;
pub mod recorder;
pub mod spec;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::task::JoinSet;

pub use batch_retry::BatchRetry;
pub use leader_watch::LeaderWatch;
pub use recorder::Recorder;
pub use spec::WorkloadSpec;

use crate::event::{NodeId, Partition};
use crate::harness::Endpoint;
use api::{Api, Reply, is_conflict};

/// Pause after a failed call before a task tries again, so a dead node is not hammered.
pub const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Why a workload could not do its part.
#[derive(Debug, Error)]
pub enum WorkloadError {
    /// A spec figure out of its bound.
    #[error("workload setting {setting} = {value}: {reason}")]
    Invalid {
        /// The setting.
        setting: &'static str,
        /// Its value.
        value: String,
        /// The bound.
        reason: &'static str,
    },
    /// No endpoint to talk to.
    #[error("a workload needs at least one node")]
    NoEndpoints,
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// Creating the topic or the subscription failed or did not succeed in time.
    #[error("setup: creating {what} failed: {detail}")]
    Setup {
        /// The topic or the subscription.
        what: String,
        /// The last reply.
        detail: String,
    },
    /// Reading a node's partition failed or did not finish in time.
    #[error("drain of node {node} partition {partition}: {detail}")]
    Drain {
        /// The node.
        node: NodeId,
        /// The partition.
        partition: Partition,
        /// What went wrong.
        detail: String,
    },
    /// A producer or consumer task panicked.
    #[error("a workload task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// What the producers and consumers did, counted as they went.
#[derive(Debug, Default)]
pub struct Counters {
    /// Produce operations completed.
    pub attempts: AtomicU64,
    /// Of them, acknowledged.
    pub acked: AtomicU64,
    /// Of them, definitely not stored.
    pub failed: AtomicU64,
    /// Of them, unknown.
    pub unknown: AtomicU64,
    /// Messages received by consumers.
    pub delivered: AtomicU64,
    /// Acks confirmed.
    pub acks_ok: AtomicU64,
    /// Batch attempts after a batch's first ([`BatchRetry`] producers).
    pub batch_retries: AtomicU64,
    /// Batches given up without a 200 (their bound ran out, or a 4xx no retry changes).
    pub batches_abandoned: AtomicU64,
    /// Messages an `ok` reply marked `"duplicate": true`.
    pub duplicate_replies: AtomicU64,
}

/// A snapshot of [`Counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkloadStats {
    /// Produce operations completed.
    pub attempts: u64,
    /// Of them, acknowledged.
    pub acked: u64,
    /// Of them, definitely not stored.
    pub failed: u64,
    /// Of them, unknown.
    pub unknown: u64,
    /// Messages received by consumers.
    pub delivered: u64,
    /// Acks confirmed.
    pub acks_ok: u64,
    /// Batch attempts after a batch's first.
    pub batch_retries: u64,
    /// Batches given up without a 200.
    pub batches_abandoned: u64,
    /// Messages an `ok` reply marked `"duplicate": true`.
    pub duplicate_replies: u64,
}

impl Counters {
    fn snapshot(&self) -> WorkloadStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WorkloadStats {
            attempts: get(&self.attempts),
            acked: get(&self.acked),
            failed: get(&self.failed),
            unknown: get(&self.unknown),
            delivered: get(&self.delivered),
            acks_ok: get(&self.acks_ok),
            batch_retries: get(&self.batch_retries),
            batches_abandoned: get(&self.batches_abandoned),
            duplicate_replies: get(&self.duplicate_replies),
        }
    }
}

/// Which acknowledged values consumers have yet to consume (receive and ack, the ack `ok` or
/// of unknown outcome), so they know when they are done.
#[derive(Debug, Default)]
struct Progress {
    /// Acknowledged by a producer, not yet consumed.
    outstanding: HashSet<String>,
    /// Consumed (perhaps before its producer heard back).
    consumed: HashSet<String>,
}

/// What every task of a workload shares.
#[derive(Debug)]
struct Context {
    spec: WorkloadSpec,
    endpoints: Vec<Endpoint>,
    api: Api,
    /// The batch producers' client, whose calls end within [`BatchRetry::timeout`].
    batch_api: Option<Api>,
    recorder: Recorder,
    counters: Counters,
    stop_producing: AtomicBool,
    producers_done: AtomicBool,
    progress: Mutex<Progress>,
}

impl Context {
    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that a producer's write of `value` was acknowledged (only tracked with consumers).
    fn produced(&self, value: &str) {
        if self.spec.consumers == 0 {
            return;
        }
        let mut progress = self.progress();
        if !progress.consumed.contains(value) {
            progress.outstanding.insert(value.to_owned());
        }
    }

    /// Notes that a consumer's ack of `value` was confirmed or may have taken effect.
    fn consumed(&self, value: &str) {
        let mut progress = self.progress();
        progress.outstanding.remove(value);
        progress.consumed.insert(value.to_owned());
    }

    /// Whether the producers are done and every value they got acknowledged was consumed.
    fn all_consumed(&self) -> bool {
        self.producers_done.load(Ordering::Acquire) && self.progress().outstanding.is_empty()
    }

    /// The endpoint for the `n`th call of a task: round-robin from the task's own offset, or,
    /// with the spec's `random_nodes`, drawn from (seed, task, `n`), so a call and its record
    /// name the same node however often it is asked.
    fn endpoint(&self, process: u32, n: u64) -> &Endpoint {
        let len = self.endpoints.len() as u64;
        let index = if self.spec.random_nodes {
            mix(self.spec.seed ^ mix(u64::from(process)) ^ mix(n.wrapping_add(1) << 8)) % len
        } else {
            (u64::from(process) + n) % len
        };
        &self.endpoints[index as usize]
    }
}

/// SplitMix64's finaliser: spreads `x`'s bits, so nearby inputs draw unrelated nodes.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A workload over a set of nodes, recording into one history.
#[derive(Debug, Clone)]
pub struct Workload {
    context: Arc<Context>,
}

impl Workload {
    /// A workload of `spec` over `endpoints`, recording into `recorder`.
    pub fn new(
        spec: WorkloadSpec,
        endpoints: Vec<Endpoint>,
        recorder: Recorder,
    ) -> Result<Workload, WorkloadError> {
        spec.validate()?;
        if endpoints.is_empty() {
            return Err(WorkloadError::NoEndpoints);
        }
        let api = Api::new(spec.request_timeout)?;
        let batch_api = match &spec.batch_retry {
            Some(batch) => Some(Api::new(batch.timeout)?),
            None => None,
        };
        Ok(Workload {
            context: Arc::new(Context {
                spec,
                endpoints,
                api,
                batch_api,
                recorder,
                counters: Counters::default(),
                stop_producing: AtomicBool::new(false),
                producers_done: AtomicBool::new(false),
                progress: Mutex::new(Progress::default()),
            }),
        })
    }

    /// The history this workload records into.
    pub fn recorder(&self) -> &Recorder {
        &self.context.recorder
    }

    /// Creates the topic and (unless the spec has no consumers) the subscription (from the
    /// earliest offset), trying the nodes in
    /// turn while the replies are transient (503, 404, no connection, timeout), within the
    /// spec's `setup_timeout`. A 409 (made by an earlier try) counts as done.
    pub async fn setup(&self) -> Result<(), WorkloadError> {
        let c = &self.context;
        let deadline = Instant::now() + c.spec.setup_timeout;
        let topic = format!("topic {}", c.spec.topic);
        self.retry(&topic, deadline, |url| async move {
            c.api
                .create_topic(&url, &c.spec.topic, c.spec.partitions)
                .await
        })
        .await?;
        if c.spec.consumers == 0 {
            return Ok(());
        }
        let subscription = format!("subscription {}", c.spec.subscription);
        self.retry(&subscription, deadline, |url| async move {
            c.api
                .create_subscription(
                    &url,
                    &c.spec.topic,
                    &c.spec.subscription,
                    c.spec.ack_timeout_ms,
                )
                .await
        })
        .await
    }

    async fn retry<F, Fut>(
        &self,
        what: &str,
        deadline: Instant,
        call: F,
    ) -> Result<(), WorkloadError>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Reply<()>>,
    {
        let failed = |detail: String| WorkloadError::Setup {
            what: what.to_owned(),
            detail,
        };
        for n in 0_u64.. {
            let url = self.context.endpoint(0, n).url.clone();
            let reply = call(url.clone()).await;
            if matches!(reply, Reply::Ok(())) || is_conflict(&reply) {
                return Ok(());
            }
            if !reply.is_transient() || Instant::now() >= deadline {
                return Err(failed(format!("{url}: {reply:?}")));
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
        Err(failed("no attempt made".to_owned()))
    }

    /// Starts the producers (the spec's [`BatchRetry`] producers when it has one) and the
    /// consumers. Producers stop after the spec's `duration`;
    /// consumers once producers stopped and every value they got acknowledged was consumed
    /// (received, and its ack confirmed or of unknown outcome), or `consume_grace` after the
    /// producers stopped.
    pub fn start(&self) -> RunningWorkload {
        let mut producers = JoinSet::new();
        let batches = self.context.spec.batch_retry.clone();
        for process in 0..self.context.spec.producers {
            match (&batches, &self.context.batch_api) {
                (Some(batch), Some(api)) => producers.spawn(batch_retry::run(
                    self.context.clone(),
                    process,
                    batch.clone(),
                    api.clone(),
                )),
                _ => producers.spawn(produce::run(self.context.clone(), process)),
            };
        }
        let mut consumers = JoinSet::new();
        let first = self.context.spec.producers;
        for process in first..first + self.context.spec.consumers {
            consumers.spawn(consume::run(self.context.clone(), process));
        }
        RunningWorkload {
            context: self.context.clone(),
            producers,
            consumers,
        }
    }

    /// Reads every partition of every node by offset, writing `drain` lines and one `drained`
    /// line per node and partition, within the spec's `drain_timeout`. Call it after the faults
    /// stopped and the cluster healed.
    pub async fn drain(&self) -> Result<u64, WorkloadError> {
        drain::all(&self.context).await
    }
}

/// Producers and consumers at work.
#[derive(Debug)]
pub struct RunningWorkload {
    context: Arc<Context>,
    producers: JoinSet<()>,
    consumers: JoinSet<()>,
}

impl RunningWorkload {
    /// What has been done so far.
    pub fn stats(&self) -> WorkloadStats {
        self.context.counters.snapshot()
    }

    /// Waits until at least `acked` produces were acknowledged, for at most `timeout`; returns
    /// whether they were.
    pub async fn wait_acked(&self, acked: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.stats().acked >= acked {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Makes the producers stop sending now rather than at the end of the spec's `duration`
    /// (requests in flight still complete and are recorded): for a run whose faults took as
    /// long as they took.
    pub fn stop_producing(&self) {
        self.context.stop_producing.store(true, Ordering::Release);
    }

    /// Waits for the producers to finish, then for the consumers.
    pub async fn finish(mut self) -> Result<WorkloadStats, WorkloadError> {
        while let Some(done) = self.producers.join_next().await {
            done?;
        }
        self.context.producers_done.store(true, Ordering::Release);
        while let Some(done) = self.consumers.join_next().await {
            done?;
        }
        Ok(self.stats())
    }
}
