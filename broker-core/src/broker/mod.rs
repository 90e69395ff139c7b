//! The facade: the one type the gateway calls. It owns the metadata store, the open topics and
//! their partition logs and subscriptions, and the background retention task.
//!
//! - `types`: request and reply types.
//! - `metadata`: what lives in sled besides the log indexes (topic and subscription configs,
//!   the receipt key, the node id) and where things live on disk.
//! - `topics`, `produce`, `subscriptions`, `consume`, `reads`: the operations, one file each;
//!   `produce_plan`: placing a batch before `produce` writes it; `grants`: one round of a
//!   receive, granting leases and reading the granted records; `detached`: the
//!   fire-and-forget (`ack=none`) writes of `produce`; `delays`: scheduling, cancelling and
//!   moving delayed messages.
//! - `tables`: the applier that derives each topic's delay schedule and dedup index from its
//!   logs; `checkpoint`: the same for subscription state.
//! - `cluster_retention`: retention on a cluster node (a snapshot carrying the subscription
//!   tables, then Raft's purge); `cluster_release`: dropping a replica moved off this node;
//!   `partition_state`: what both do to the state derived from a replaced partition log.
//! - `cluster_redrive`: redrive in a cluster (each dead-letter partition by its leader, the
//!   redriven records appended at the source partitions' leaders, the cursor in the
//!   dead-letter partition's own log).
//! - `alert_rules`: the gateway's alert rules (opaque) and the figures they sample.
//! - `history_totals`: the counters the per-minute history samples.
//! - `zones`: keeping traffic in a node's zone; `follower_reads`: offset reads an in-sync
//!   follower serves.
//!
//! The broker's locks (the topic map, each topic's `config` and `subscriptions`, the task
//! list) change only by single inserts, removes and assignments, so they are taken through
//! [`crate::sync`] and stay usable after a holder panicked.

mod alert_rules;
mod carried;
mod checkpoint;
mod cluster;
mod cluster_redrive;
mod cluster_release;
mod cluster_retention;
mod consume;
mod dead_letters;
mod delays;
mod detached;
mod follower_reads;
mod grants;
mod history_totals;
mod live_tables;
mod metadata;
mod partition_state;
mod produce;
mod produce_ids;
mod produce_plan;
mod produce_writes;
mod reads;
mod seek;
mod settle;
mod subscriptions;
mod tables;
mod topic_ticks;
mod topics;
mod trace;
pub mod types;
mod zones;

pub use checkpoint::CHECKPOINT_EVERY_MS;
pub use consume::REDRIVE_HEADER;
pub use dead_letters::{DEFAULT_REDRIVE_PER_SECOND, ORIGIN_PREFIX};
pub use delays::PRESTAGE_LEAD_MS;
pub use history_totals::TopicHistoryTotals;
pub use produce::valid_id;
pub use seek::SeekTarget;
pub use settle::MAX_NACK_DELAY_MS;
pub use tables::{APPLY_EVERY_MS, ROOM_WAIT_MS};
pub use trace::{
    MAX_ID_MATCHES, MAX_KEY_LOOKUP, MessageState, MessageTrace, SubscriptionTrace, TRACE_FOLLOW_MS,
    TracedEvent,
};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::{Mutex as AsyncMutex, Notify};

pub use cluster::{FORM_GRACE_MS, PartitionHint, PlacedPartition};
pub use types::*;
pub use zones::LeaderNear;

use crate::config::{BrokerConfig, FsyncPolicy};
use crate::dedup::DedupIndex;
use crate::error::{BrokerError, Result};
use crate::in_flight::InFlightIds;
use crate::partitioner::Partitioner;
use crate::raft::{PartitionGroup, Replication};
use crate::schedule::DelayStore;
use crate::storage::PartitionHandle;
use crate::subscription::{ReceiptCodec, Subscription};
use crate::sync::{lock, read};
use crate::topic::TopicConfig;
use metadata::Metadata;

/// One open topic: its settings, partition logs, subscriptions and the wake-up signal that
/// every commit to any of its partitions fires.
#[derive(Debug)]
struct Topic {
    config: RwLock<TopicConfig>,
    partitions: Vec<PartitionHandle>,
    /// This node's seat in each partition's Raft group, in partition order (unused on a
    /// single node).
    groups: Vec<Arc<PartitionGroup>>,
    partitioner: Partitioner,
    on_commit: Arc<Notify>,
    subscriptions: RwLock<BTreeMap<String, Arc<Subscription>>>,
    deleted: AtomicBool,
    /// The schedule of delayed messages, derived from the logs (see [`crate::schedule`]).
    delays: DelayStore,
    /// Wakes the delay task: a message was scheduled (maybe sooner than it sleeps), or the
    /// topic or broker is going away.
    delay_wake: Notify,
    /// The time the delay task means to wake at (ms since the epoch; `u64::MAX` while it is
    /// awake): a produce wakes it only for a message it would otherwise move too late, so a
    /// burst of schedules does not keep it reading the schedule over and over.
    delay_wake_at: AtomicU64,
    /// Messages on the schedule.
    scheduled: AtomicU64,
    /// First results of client-chosen ids, derived from the logs (see [`crate::dedup`]).
    dedup: DedupIndex,
    /// Client ids of the produces under way.
    in_flight: Arc<InFlightIds>,
    /// For each partition, the last Raft term in which this node, leading it, found its
    /// dedup index holding every id of its log (0: none yet); see `produce`.
    ids_ready: Vec<AtomicU64>,
    /// Its produce counters.
    counters: crate::telemetry::TopicCounters,
    /// Woken after each round of the applier (`tables`), for produces and cancels waiting
    /// for room in memory.
    tables_applied: Notify,
    /// Each partition's trace index, derived from its log (see [`trace`]).
    trace: Vec<crate::trace_store::TraceStore>,
}

impl Topic {
    fn config(&self) -> TopicConfig {
        read(&self.config).clone()
    }

    fn subscription(&self, name: &str) -> Result<Arc<Subscription>> {
        read(&self.subscriptions).get(name).cloned().ok_or_else(|| {
            BrokerError::SubscriptionNotFound {
                topic: read(&self.config).name.clone(),
                subscription: name.to_owned(),
            }
        })
    }
}

/// The embedded broker. Cheap to share (`Arc<Broker>`); every method is safe to call
/// concurrently.
#[derive(Debug)]
pub struct Broker {
    config: BrokerConfig,
    /// In a cluster: how this node's partitions replicate (none on a single node).
    replication: Option<Replication>,
    metadata: Metadata,
    receipts: ReceiptCodec,
    topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    /// Serializes creating and deleting topics and subscriptions.
    admin: AsyncMutex<()>,
    shutting_down: AtomicBool,
    shutdown_signal: Notify,
    /// This broker, for the background tasks it starts (they must not keep it alive).
    me: std::sync::Weak<Broker>,
    /// The background tasks (retention, checkpoints, one delay mover and one table applier
    /// per topic), stopped at shutdown.
    tasks: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The memory budget that `ack=none` produces charge while their records wait for the
    /// writer (the caller's own charge ends with its reply), if the server has one.
    memory: std::sync::OnceLock<crate::memory::MemoryBudget>,
    /// Blocking work of the background tasks holds a read guard until it has let go of what
    /// it uses (topics, sled trees); shutdown takes the write guard to wait for all of it, so
    /// that the data folder can be opened again once shutdown returns.
    background: Arc<tokio::sync::RwLock<()>>,
    /// Each node's zone as the cluster metadata records it (empty on a single node).
    zones: RwLock<BTreeMap<u64, String>>,
    /// In a cluster, whether this node's copy of the metadata may still lack topics and
    /// subscriptions that exist (a restarted node re-applying it, see
    /// [`Broker::set_metadata_behind`]): a topic or subscription it does not know is then not
    /// known to be missing. Never set on a single node.
    metadata_behind: AtomicBool,
    /// The data folder's free-space reserve, checked by every produce.
    disk: crate::disk_space::DiskSpace,
}

impl Broker {
    /// Charges the records of `ack=none` produces to `budget` until they are written (once;
    /// later calls change nothing): such a produce is answered before its write, so without
    /// this only the partition writers' queue bounds (per partition) would hold them.
    pub fn set_memory_budget(&self, budget: crate::memory::MemoryBudget) {
        let _ = self.memory.set(budget);
    }

    /// Opens a single node's broker on `config.data_dir`, creating it if needed: recovers
    /// every partition's log tail and reloads topics, subscriptions, cursors and leases.
    /// Starts retention.
    pub async fn open(config: BrokerConfig) -> Result<Arc<Broker>> {
        Broker::open_with(config, None).await
    }

    /// [`Broker::open`] for a node of a cluster, whose partitions replicate through
    /// `replication`.
    pub async fn open_replicated(
        config: BrokerConfig,
        replication: Replication,
    ) -> Result<Arc<Broker>> {
        Broker::open_with(config, Some(replication)).await
    }

    async fn open_with(
        config: BrokerConfig,
        replication: Option<Replication>,
    ) -> Result<Arc<Broker>> {
        let (opening, replicated) = (config.clone(), replication.is_some());
        let (metadata, topics) =
            tokio::task::spawn_blocking(move || metadata::load(&opening, replicated))
                .await
                .map_err(|error| join_error("opening the data folder", &error))??;
        // In a cluster every node signs receipts with the key the cluster shares, so the
        // receipt of a delivery stays good after its partition's leadership moves.
        let receipt_key = match &replication {
            Some(replication) => replication.receipt_key,
            None => metadata.receipt_key()?,
        };
        let receipts = ReceiptCodec::new(receipt_key);
        let disk = crate::disk_space::DiskSpace::new(&config.data_dir, config.min_free_bytes);
        let broker = Arc::new_cyclic(|me| Broker {
            disk,
            me: me.clone(),
            receipts,
            config,
            replication,
            metadata,
            topics: RwLock::new(topics),
            admin: AsyncMutex::new(()),
            shutting_down: AtomicBool::new(false),
            shutdown_signal: Notify::new(),
            tasks: std::sync::Mutex::new(Vec::new()),
            memory: std::sync::OnceLock::new(),
            background: Arc::default(),
            zones: RwLock::new(BTreeMap::new()),
            metadata_behind: AtomicBool::new(false),
        });
        broker.start_replication().await?;
        broker.spawn_task(topics::retention_loop(Arc::downgrade(&broker)));
        broker.spawn_task(checkpoint::checkpoint_loop(Arc::downgrade(&broker)));
        let topics: Vec<Arc<Topic>> = read(&broker.topics).values().cloned().collect();
        for topic in topics {
            broker.spawn_topic_tasks(&topic);
        }
        Ok(broker)
    }

    /// Stops taking work: wakes every long-poll (they return what they have), stops the
    /// writers after they commit what is queued, checkpoints every subscription and flushes
    /// the metadata store. Idempotent.
    pub async fn shutdown(&self) {
        if self.shutting_down.swap(true, Ordering::SeqCst) {
            return;
        }
        self.shutdown_signal.notify_waiters();
        let topics: Vec<Arc<Topic>> = read(&self.topics).values().cloned().collect();
        for topic in &topics {
            topic.on_commit.notify_waiters();
            topic.delay_wake.notify_one();
        }
        // The background tasks hold topics (and so sled trees): they must be gone before the
        // data folder can be opened again. Stopping one mid-move is safe (see `schedule`).
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        for task in tasks {
            task.abort();
            let _ = task.await;
        }
        // An aborted task's blocking work goes on (or has yet to start): wait for it.
        drop(self.background.write().await);
        for topic in &topics {
            self.stop_groups(topic).await;
        }
        let partitions: Vec<PartitionHandle> = topics
            .iter()
            .flat_map(|t| t.partitions.iter().cloned())
            .collect();
        let _ = tokio::task::spawn_blocking(move || {
            partitions.iter().for_each(PartitionHandle::shutdown)
        })
        .await;
        // The writers are stopped: a last checkpoint covers the whole log.
        if let Err(error) = self.checkpoint_all().await {
            tracing::error!(%error, "the last checkpoint at shutdown failed");
        }
        if let Err(error) = self.apply_all_tables().await {
            tracing::error!(%error, "the last apply of the delay and dedup tables failed");
        }
        if let Err(error) = self.metadata.flush().await {
            tracing::error!(%error, "flushing the metadata store at shutdown failed");
        }
    }

    /// Starts a topic's delay mover and table applier, and its trace follower unless the
    /// trace is off ([`BrokerConfig::trace_index`]).
    fn spawn_topic_tasks(&self, topic: &Arc<Topic>) {
        self.spawn_task(delays::delay_loop(self.me.clone(), Arc::clone(topic)));
        self.spawn_task(tables::apply_loop(self.me.clone(), Arc::clone(topic)));
        if self.config.trace_index {
            self.spawn_task(trace::follow_loop(self.me.clone(), Arc::clone(topic)));
        }
    }

    /// Whether the message trace is kept ([`BrokerConfig::trace_index`]): off, nothing
    /// indexes the logs for lookups by id or key, and a single node records no first
    /// deliveries.
    pub fn trace_index(&self) -> bool {
        self.config.trace_index
    }

    /// Starts a background task that shutdown stops.
    fn spawn_task(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task);
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    /// The fsync policy of every partition log.
    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.config.log.fsync
    }

    /// This node's id, stable across restarts of the same data folder.
    pub fn node_id(&self) -> &str {
        self.metadata.node_id()
    }

    fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        read(&self.topics).get(name).cloned().ok_or_else(|| {
            self.unless_behind(BrokerError::TopicNotFound {
                topic: name.to_owned(),
            })
        })
    }

    /// Subscription `name` of `topic`, as [`Topic::subscription`], but not called missing
    /// while this node's metadata is behind.
    fn subscription_in(&self, topic: &Topic, name: &str) -> Result<Arc<Subscription>> {
        topic.subscription(name).map_err(|e| self.unless_behind(e))
    }

    /// `missing` (a topic or subscription this node does not know), or, while this node's
    /// cluster metadata is behind ([`Broker::set_metadata_behind`]), `not_leader` for the
    /// metadata: 503 with `Retry-After` rather than a 404 a client would take as final.
    fn unless_behind(&self, missing: BrokerError) -> BrokerError {
        if self.metadata_behind.load(Ordering::SeqCst) {
            BrokerError::NotLeader {
                what: "cluster metadata (this node is catching up)".into(),
                leader: None,
            }
        } else {
            missing
        }
    }

    /// In a cluster: whether this node's copy of the metadata may still lack what exists. A
    /// restarted node is behind until the metadata it applied holds its own registration of
    /// this start (proposed after it started, so committed after everything before it); a
    /// topic or subscription it does not know meanwhile answers `not_leader` instead of
    /// not-found.
    pub fn set_metadata_behind(&self, behind: bool) {
        self.metadata_behind.store(behind, Ordering::SeqCst);
    }

    /// Whether this node's metadata may still lack topics and subscriptions that exist (see
    /// [`Broker::set_metadata_behind`]); never on a single node.
    pub fn metadata_behind(&self) -> bool {
        self.metadata_behind.load(Ordering::SeqCst)
    }

    fn check_running(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::SeqCst) {
            Err(BrokerError::ShuttingDown)
        } else {
            Ok(())
        }
    }

    /// Makes a metadata change (a topic or subscription created, deleted or materialized)
    /// durable before it is answered, whatever the fsync policy: sled holds unflushed writes in
    /// the process, so without this a `kill -9` soon after an answer lost the topic or
    /// subscription it announced under `--fsync` at an interval (while the messages, in the page
    /// cache, survived). Admin changes are rare; the flush costs them milliseconds.
    async fn persist(&self) -> Result<()> {
        self.metadata.flush().await
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| join_error("a blocking broker task", &error))?
}

/// [`blocking`] for a background task: the work holds a read guard of `gate` (the broker's
/// `background`) until it is done and has dropped what it captured.
async fn background_blocking<T: Send + 'static>(
    gate: &Arc<tokio::sync::RwLock<()>>,
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let guard = Arc::clone(gate).read_owned().await;
    blocking(move || {
        let done = work();
        drop(guard);
        done
    })
    .await
}

/// Why a spawned task gave no result: it panicked ([`BrokerError::Panicked`]), or the runtime
/// is shutting down and cancelled it.
fn join_error(task: &str, error: &tokio::task::JoinError) -> BrokerError {
    if error.is_panic() {
        BrokerError::Panicked {
            task: task.to_owned(),
        }
    } else {
        BrokerError::ShuttingDown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_blocking_task_that_panics_is_an_internal_failure_not_a_shutdown() {
        let error = blocking(|| -> Result<()> { panic!("injected") })
            .await
            .expect_err("it panicked");
        assert!(
            matches!(error, BrokerError::Panicked { .. }),
            "expected Panicked, got {error:?}"
        );
    }
}
