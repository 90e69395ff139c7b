//! The cluster of R8 (`power_loss_pause.rs`): three brokers in one process over the
//! in-memory [`Net`], one of them (the "lossy" node) on a [`SimulatedDisk`]; producers that
//! follow the partition's leader and keep every acknowledged message; a watcher that cuts the
//! lossy node off the network the moment its power goes (a machine without power answers
//! nothing); an observer of which node claims leadership in which term; and the reading of
//! each node's own replica for the checks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use broker_core::Broker;
use broker_core::broker::AckMode;
use broker_core::config::FsyncPolicy;
use broker_core::raft::NodeInfo;
use broker_core::storage::crash_sim::SimulatedDisk;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::support::{Net, one_partition_topic, temp_root, text_message, try_open_cluster_broker};

/// The replicated topic (one partition, on all three nodes).
pub const TOPIC: &str = "orders";
/// The nodes.
pub const NODES: u64 = 3;
/// A produce that takes longer is given up (not counted as acknowledged): a leader that lost
/// its majority never answers.
const PRODUCE_TIMEOUT: Duration = Duration::from_secs(3);
/// Messages per produce request at most.
const MAX_BATCH: usize = 3;
/// How long a producer waits after a failed produce or while no leader is known.
const RETRY: Duration = Duration::from_millis(20);
/// How often the watcher looks at the lossy node's power and the observer at the leaders.
const WATCH_EVERY: Duration = Duration::from_millis(1);
/// How long a replica may refuse reads (not in sync yet) before it counts as holding
/// nothing more.
const READ_WAIT: Duration = Duration::from_secs(5);
/// A shutdown of a broker (its power already cut) that takes longer is a hang.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(20);

/// One acknowledged message: where it landed and what it holds.
#[derive(Debug, Clone)]
pub struct Acked {
    /// Its offset.
    pub offset: u64,
    /// Its value (unique per message).
    pub value: Bytes,
}

/// The three nodes, their network and the lossy node's disk.
pub struct Cluster {
    _root: tempfile::TempDir,
    /// Where each node's data folder lies (`node-{id}`).
    pub root: std::path::PathBuf,
    /// The network.
    pub net: Arc<Net>,
    /// Each node's broker while it is up (index: id - 1).
    slots: Vec<Mutex<Option<Arc<Broker>>>>,
    /// The node whose power goes.
    pub lossy: u64,
    /// Its disk.
    pub disk: SimulatedDisk,
    /// Every acknowledged message.
    pub acked: Mutex<Vec<Acked>>,
    /// Per term, the nodes that claimed to lead it.
    pub leaders: Mutex<BTreeMap<u64, BTreeSet<u64>>>,
    /// Set to stop the producers, the watcher and the observer.
    pub stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().expect("lock")
}

impl Cluster {
    /// Three brokers under `fsync always` with the topic materialized on each, node `lossy`
    /// on a simulated disk.
    pub async fn start(lossy: u64) -> Arc<Cluster> {
        let root = temp_root();
        let path = root.path().to_path_buf();
        let net = Arc::new(Net::default());
        let disk = SimulatedDisk::watch(&path.join(format!("node-{lossy}")));
        let cluster = Arc::new(Cluster {
            _root: root,
            root: path,
            net,
            slots: (0..NODES).map(|_| Mutex::new(None)).collect(),
            lossy,
            disk,
            acked: Mutex::new(Vec::new()),
            leaders: Mutex::new(BTreeMap::new()),
            stop: AtomicBool::new(false),
        });
        let members: BTreeMap<u64, NodeInfo> =
            (1..=NODES).map(|id| (id, NodeInfo::default())).collect();
        for id in 1..=NODES {
            let broker = cluster.open(id).await.expect("a fresh node opens");
            broker
                .materialize_topic(one_partition_topic(TOPIC, 42), members.clone())
                .await
                .expect("materialized");
            *lock(&cluster.slots[(id - 1) as usize]) = Some(broker);
        }
        cluster
    }

    async fn open(&self, id: u64) -> broker_core::Result<Arc<Broker>> {
        try_open_cluster_broker(id, &self.root, &self.net, |c| {
            c.log.fsync = FsyncPolicy::Always;
            // tmpfs is shared with other tests: the free-space guard is not what is tested.
            c.min_free_bytes = 0;
        })
        .await
    }

    /// Node `id`'s broker, while it is up.
    pub fn broker(&self, id: u64) -> Option<Arc<Broker>> {
        lock(&self.slots[(id - 1) as usize]).clone()
    }

    /// Reopens node `id` from its data folder (put back on the network first): whether it
    /// opened. A failed open leaves it down.
    pub async fn restart(&self, id: u64) -> bool {
        match self.open(id).await {
            Ok(broker) => {
                *lock(&self.slots[(id - 1) as usize]) = Some(broker);
                true
            }
            Err(_) => {
                lock(&self.net.nodes).remove(&id);
                false
            }
        }
    }

    /// Takes node `id` down: off the network, then its broker shut down and dropped (once
    /// the producers let go of it) so its folder can be opened again.
    pub async fn stop_node(&self, id: u64) {
        let broker = lock(&self.slots[(id - 1) as usize]).take();
        lock(&self.net.nodes).remove(&id);
        let Some(broker) = broker else { return };
        tokio::time::timeout(SHUTDOWN_TIMEOUT, broker.shutdown())
            .await
            .expect("a broker whose power went shuts down");
        for _ in 0..500 {
            if Arc::strong_count(&broker) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Pauses node `id`: every RPC to or from it is held until [`Cluster::resume`].
    pub fn pause(&self, id: u64) {
        lock(&self.net.paused).insert(id);
    }

    /// Resumes node `id`: the RPCs held are delivered.
    pub fn resume(&self, id: u64) {
        lock(&self.net.paused).remove(&id);
    }

    /// Powers the lossy node's disk back on and puts the node back on the network, under the
    /// network's lock so the watcher cannot cut it again for the loss just undone.
    pub fn revive_lossy(&self) {
        let mut cut = lock(&self.net.cut);
        self.disk.revive();
        cut.remove(&self.lossy);
    }

    /// The node that leads the partition in its own view and can be reached (up, not
    /// paused, not cut off), with its broker.
    fn reachable_leader(&self) -> Option<(u64, Arc<Broker>)> {
        let paused = lock(&self.net.paused).clone();
        let cut = lock(&self.net.cut).clone();
        (1..=NODES)
            .filter(|id| !paused.contains(id) && !cut.contains(id))
            .find_map(|id| {
                let broker = self.broker(id)?;
                let status = broker.partition_status(TOPIC, 0)?;
                (status.leader == Some(id)).then_some((id, broker))
            })
    }

    /// Whether an answer `broker` (node `id`) just gave was given with its power on: always
    /// for a node on a real disk; for the lossy node, when its power is still on and the
    /// broker is still the one up (a revive comes only after the crashed one was taken down).
    fn answered_powered(&self, id: u64, broker: &Arc<Broker>) -> bool {
        if id != self.lossy {
            return true;
        }
        let crashed = self.disk.is_crashed();
        let current = self.broker(id).is_some_and(|b| Arc::ptr_eq(&b, broker));
        !crashed && current
    }

    /// Messages acknowledged so far.
    pub fn acked_count(&self) -> usize {
        lock(&self.acked).len()
    }

    /// Waits until `more` messages were acknowledged after `from` of them, or `within` ran
    /// out: whether they were.
    pub async fn until_acked(&self, from: usize, more: usize, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if self.acked_count() >= from + more {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

/// Produces batches to whichever node leads until the cluster stops, keeping what was
/// acknowledged with the power on.
pub async fn produce(cluster: Arc<Cluster>, name: String, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut n = 0u64;
    while !cluster.stop.load(Ordering::SeqCst) {
        let Some((id, broker)) = cluster.reachable_leader() else {
            tokio::time::sleep(RETRY).await;
            continue;
        };
        let values: Vec<String> = (0..rng.gen_range(1..=MAX_BATCH))
            .map(|i| format!("{name}-{n}-{i}-{}", rng.r#gen::<u32>()))
            .collect();
        n += 1;
        let messages = values.iter().cloned().map(text_message).collect();
        let answer = tokio::time::timeout(
            PRODUCE_TIMEOUT,
            broker.produce(TOPIC, messages, AckMode::All),
        )
        .await;
        let powered = cluster.answered_powered(id, &broker);
        drop(broker);
        match answer {
            Ok(Ok(outcome)) if powered => {
                let mut acked = lock(&cluster.acked);
                for (produced, value) in outcome.messages.iter().zip(values) {
                    let offset = produced.offset.expect("an offset under ack=all");
                    let value = Bytes::from(value);
                    acked.push(Acked { offset, value });
                }
            }
            _ => tokio::time::sleep(RETRY).await,
        }
    }
}

/// Cuts the lossy node off the network as soon as its power goes, until the cluster stops.
pub async fn watch_power(cluster: Arc<Cluster>) {
    while !cluster.stop.load(Ordering::SeqCst) {
        {
            let mut cut = lock(&cluster.net.cut);
            if cluster.disk.is_crashed() {
                cut.insert(cluster.lossy);
            }
        }
        tokio::time::sleep(WATCH_EVERY).await;
    }
}

/// Notes, per term, every node that claims to lead it, until the cluster stops.
pub async fn observe_leaders(cluster: Arc<Cluster>) {
    while !cluster.stop.load(Ordering::SeqCst) {
        for id in 1..=NODES {
            let status = cluster
                .broker(id)
                .and_then(|b| b.partition_status(TOPIC, 0));
            if let Some(status) = status
                && status.leader == Some(id)
            {
                let mut leaders = lock(&cluster.leaders);
                leaders.entry(status.term).or_default().insert(id);
            }
        }
        tokio::time::sleep(WATCH_EVERY).await;
    }
}

/// Node `broker`'s own replica: every visible message's value, by offset; what it served
/// before it stopped serving reads itself (a follower out of sync sends them to the leader)
/// for [`READ_WAIT`].
pub async fn replica(broker: &Broker) -> BTreeMap<u64, Bytes> {
    let mut log = BTreeMap::new();
    let mut next = 0;
    let deadline = tokio::time::Instant::now() + READ_WAIT;
    loop {
        let read = match broker.read_partition(TOPIC, 0, next, 1000, 0, None).await {
            Ok(read) => read,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(RETRY).await;
                continue;
            }
            Err(_) => return log,
        };
        if read.messages.is_empty() {
            return log;
        }
        for m in read.messages {
            log.insert(m.offset, m.record.value);
        }
        next = read.next_offset;
    }
}

/// Waits (up to `within`) until the three replicas are identical and hold every
/// acknowledged message; returns them as they are then, converged or not.
pub async fn settled_replicas(cluster: &Cluster, within: Duration) -> Vec<BTreeMap<u64, Bytes>> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let mut replicas = Vec::new();
        for id in 1..=NODES {
            let broker = cluster.broker(id).expect("every node is up at the end");
            replicas.push(replica(&broker).await);
        }
        let acked = lock(&cluster.acked).clone();
        let same = replicas.iter().all(|r| *r == replicas[0]);
        let complete = acked
            .iter()
            .all(|a| replicas[0].get(&a.offset) == Some(&a.value));
        if (same && complete) || tokio::time::Instant::now() >= deadline {
            return replicas;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Acknowledged messages `replica` does not hold at their offset.
pub fn lost_on(replica: &BTreeMap<u64, Bytes>, acked: &[Acked]) -> u64 {
    acked
        .iter()
        .filter(|a| replica.get(&a.offset) != Some(&a.value))
        .count() as u64
}

/// Offsets any replica holds where the replicas do not all hold the same message.
pub fn disagreements(replicas: &[BTreeMap<u64, Bytes>]) -> u64 {
    let offsets: BTreeSet<u64> = replicas.iter().flat_map(|r| r.keys().copied()).collect();
    offsets
        .iter()
        .filter(|o| {
            let first = replicas[0].get(o);
            replicas.iter().any(|r| r.get(o) != first)
        })
        .count() as u64
}

/// Terms in which more than one node claimed to lead.
pub fn split_terms(cluster: &Cluster) -> Vec<(u64, BTreeSet<u64>)> {
    lock(&cluster.leaders)
        .iter()
        .filter(|(_, ids)| ids.len() > 1)
        .map(|(t, ids)| (*t, ids.clone()))
        .collect()
}
