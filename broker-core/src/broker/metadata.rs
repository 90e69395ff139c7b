//! What the broker keeps in sled besides the log indexes, and where things live on disk:
//!
//! ```text
//! <data_dir>/meta/                          the sled database
//!   tree "meta":          node_id, receipt_key
//!   tree "topics":        <topic name> → TopicConfig (JSON)
//!   tree "subscriptions": <topic>\0<name> → SubscriptionConfig (JSON)
//!   tree "log/<topic uid>/<partition>":  that partition's offset and time index
//!   tree "sub/<subscription uid>":        that subscription's cursors and leases
//!   tree "delay/<topic uid>":             the delay schedule, derived from the logs
//!   tree "ids/<topic uid>":               the dedup index, derived from the logs
//!   tree "controller":                    the controller log's index (in a cluster)
//!   tree "alert_rules":   <rule name> → the gateway's alert rule (opaque bytes, single node)
//! <data_dir>/topics/<name>-<uid>/<partition>/<base offset>.log   segment files
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rand::RngCore;
use tokio::sync::Notify;

use super::Topic;
use crate::config::BrokerConfig;
use crate::dedup::{self, DedupIndex};
use crate::error::{BrokerError, Result};
use crate::partitioner::Partitioner;
use crate::raft::{GroupId, PartitionGroup};
use crate::schedule::{self, DelayStore};
use crate::storage::{PartitionHandle, Proposer};
use crate::subscription::receipt::RECEIPT_KEY_BYTES;
use crate::subscription::{Subscription, SubscriptionConfig, SubscriptionStore, store};
use crate::sync::{read, write};
use crate::topic::TopicConfig;

/// sled's page cache. Its default (1 GiB) would let the metadata store alone pass the node's
/// memory budget; indexes and leases are small and read mostly near their tails, and the
/// delay mover reads only the schedule's head. sled counts a page by its size on disk, and
/// the decoded page costs about 1.6 times that on the heap: with 1,000,000 messages
/// scheduled a day ahead, 32 MiB here held some 50 MiB, and the resident set grew by
/// 127–154 MiB; at 8 MiB it grew by 83–101 MiB, with the same produce and delivery times
/// (the README's "Limits and back-pressure").
const METADATA_CACHE_BYTES: u64 = 8 * 1024 * 1024;

/// The metadata store.
#[derive(Debug)]
pub(super) struct Metadata {
    db: sled::Db,
    meta: sled::Tree,
    topics: sled::Tree,
    subscriptions: sled::Tree,
    alert_rules: sled::Tree,
    node_id: String,
    data_dir: PathBuf,
    /// Flushes asked for so far, and the count covered by the last finished flush.
    flush_requests: AtomicU64,
    flushed: AtomicU64,
    flush_turn: tokio::sync::Mutex<()>,
}

impl Metadata {
    pub(super) fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The receipt signing key, made on first start and kept so receipts survive restarts.
    /// A stored key of the wrong size is [`BrokerError::Corrupt`]: replacing it would
    /// invalidate every outstanding receipt without a word.
    pub(super) fn receipt_key(&self) -> Result<[u8; RECEIPT_KEY_BYTES]> {
        if let Some(key) = self.meta.get("receipt_key")? {
            return <[u8; RECEIPT_KEY_BYTES]>::try_from(key.as_ref()).map_err(|_| {
                BrokerError::Corrupt {
                    path: self.data_dir.join("meta"),
                    position: 0,
                    reason: format!(
                        "the stored receipt_key is {} bytes, not {RECEIPT_KEY_BYTES}",
                        key.len()
                    ),
                }
            });
        }
        let mut key = [0; RECEIPT_KEY_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut key);
        self.meta.insert("receipt_key", &key[..])?;
        self.db.flush()?;
        Ok(key)
    }

    /// A fresh unique id for a topic or subscription incarnation.
    pub(super) fn new_uid(&self) -> Result<u64> {
        Ok(self.db.generate_id()?)
    }

    /// Makes every change made before the call durable (sled flush, fsync). Concurrent
    /// callers share flushes: one that finds a flush started after its changes waits for that
    /// one instead of starting another (group commit for metadata).
    pub(super) async fn flush(&self) -> Result<()> {
        let wanted = self.flush_requests.fetch_add(1, Ordering::SeqCst) + 1;
        let _turn = self.flush_turn.lock().await;
        if self.flushed.load(Ordering::SeqCst) >= wanted {
            return Ok(());
        }
        let covered = self.flush_requests.load(Ordering::SeqCst);
        fail::fail_point!("metadata::flush");
        self.db.flush_async().await?;
        self.flushed.store(covered, Ordering::SeqCst);
        Ok(())
    }

    pub(super) fn topic_dir(&self, config: &TopicConfig) -> PathBuf {
        topic_dir(&self.data_dir, config)
    }

    /// The trees of a topic's delay schedule and dedup index.
    pub(super) fn topic_trees(&self, topic_uid: u64) -> Result<(DelayStore, DedupIndex)> {
        Ok((
            DelayStore::new(self.db.open_tree(schedule::tree_name(topic_uid))?),
            DedupIndex::new(self.db.open_tree(dedup::tree_name(topic_uid))?),
        ))
    }

    pub(super) fn controller_tree(&self) -> Result<sled::Tree> {
        Ok(self.db.open_tree("controller")?)
    }

    pub(super) fn index_tree(&self, topic_uid: u64, partition: u32) -> Result<sled::Tree> {
        Ok(self.db.open_tree(format!("log/{topic_uid}/{partition}"))?)
    }

    pub(super) fn subscription_store(&self, subscription_uid: u64) -> Result<SubscriptionStore> {
        Ok(SubscriptionStore::new(
            self.db.open_tree(store::tree_name(subscription_uid))?,
        ))
    }

    pub(super) fn save_topic(&self, config: &TopicConfig) -> Result<()> {
        self.topics
            .insert(config.name.as_bytes(), to_json(config)?)?;
        Ok(())
    }

    /// Forgets a topic: its config, its subscriptions' configs and all their trees.
    pub(super) fn remove_topic(
        &self,
        config: &TopicConfig,
        subscription_uids: &[u64],
    ) -> Result<()> {
        self.topics.remove(config.name.as_bytes())?;
        for item in self
            .subscriptions
            .scan_prefix(subscription_prefix(&config.name))
        {
            let (key, _) = item?;
            self.subscriptions.remove(key)?;
        }
        for partition in 0..config.partitions {
            self.db
                .drop_tree(format!("log/{}/{partition}", config.uid))?;
        }
        self.db.drop_tree(schedule::tree_name(config.uid))?;
        self.db.drop_tree(dedup::tree_name(config.uid))?;
        for uid in subscription_uids {
            self.db.drop_tree(store::tree_name(*uid))?;
        }
        Ok(())
    }

    pub(super) fn save_subscription(&self, config: &SubscriptionConfig) -> Result<()> {
        self.subscriptions.insert(
            subscription_key(&config.topic, &config.name),
            to_json(config)?,
        )?;
        Ok(())
    }

    /// Every stored alert rule, `(name, bytes)` in name order.
    pub(super) fn alert_rules(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let mut rules = Vec::new();
        for item in self.alert_rules.iter() {
            let (key, value) = item?;
            rules.push((String::from_utf8_lossy(&key).into_owned(), value.to_vec()));
        }
        Ok(rules)
    }

    /// Stores (or replaces) an alert rule's bytes under its name; durable after
    /// [`Metadata::flush`].
    pub(super) fn save_alert_rule(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.alert_rules.insert(name.as_bytes(), bytes)?;
        Ok(())
    }

    /// Forgets an alert rule; whether it was stored.
    pub(super) fn remove_alert_rule(&self, name: &str) -> Result<bool> {
        Ok(self.alert_rules.remove(name.as_bytes())?.is_some())
    }

    pub(super) fn remove_subscription(&self, config: &SubscriptionConfig) -> Result<()> {
        self.subscriptions
            .remove(subscription_key(&config.topic, &config.name))?;
        self.db.drop_tree(store::tree_name(config.uid))?;
        Ok(())
    }
}

/// How long an open waits for the metadata store's lock file. sled lets go of it from its
/// own I/O threads once the last handle is dropped, a few milliseconds later: a broker
/// reopened in the same process (an embedding app, the tests) found it still held. Another
/// live process holding it still fails the open, after this wait.
const METADATA_LOCK_WAIT_MS: u64 = 2_000;

/// Opens the metadata store, waiting up to [`METADATA_LOCK_WAIT_MS`] for its lock.
fn open_db(meta_dir: &std::path::Path) -> Result<sled::Db> {
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_millis(METADATA_LOCK_WAIT_MS);
    loop {
        match sled::Config::new()
            .path(meta_dir)
            .cache_capacity(METADATA_CACHE_BYTES)
            .open()
        {
            // sled reports a held lock only as text: "could not acquire lock on …".
            Err(sled::Error::Io(e))
                if e.to_string().contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            opened => return Ok(opened?),
        }
    }
}

/// Opens the metadata store and every topic in it, with logs recovered and subscriptions
/// loaded; removes what an interrupted delete left behind. Blocking.
pub(super) fn load(
    config: &BrokerConfig,
    replicated: bool,
) -> Result<(Metadata, BTreeMap<String, Arc<Topic>>)> {
    let meta_dir = config.data_dir.join("meta");
    std::fs::create_dir_all(&meta_dir).map_err(|e| BrokerError::io(&meta_dir, e))?;
    let db = open_db(&meta_dir)?;
    let metadata = Metadata {
        meta: db.open_tree("meta")?,
        topics: db.open_tree("topics")?,
        subscriptions: db.open_tree("subscriptions")?,
        alert_rules: db.open_tree("alert_rules")?,
        node_id: String::new(),
        data_dir: config.data_dir.clone(),
        flush_requests: AtomicU64::new(0),
        flushed: AtomicU64::new(0),
        flush_turn: tokio::sync::Mutex::new(()),
        db,
    };
    let metadata = Metadata {
        node_id: load_node_id(&metadata)?,
        ..metadata
    };
    let mut topics = BTreeMap::new();
    for item in metadata.topics.iter() {
        let (_, value) = item?;
        let topic_config: TopicConfig = from_json(&value)?;
        let topic = open_topic(&metadata, config, replicated, topic_config)?;
        let name = read_name(&topic);
        topics.insert(name, Arc::new(topic));
    }
    load_subscriptions(&metadata, &topics, replicated)?;
    remove_leftovers(&metadata, &topics)?;
    Ok((metadata, topics))
}

/// Opens (creating if needed) the logs of a topic known to the metadata store. Blocking.
pub(super) fn open_topic(
    metadata: &Metadata,
    config: &BrokerConfig,
    replicated: bool,
    topic: TopicConfig,
) -> Result<Topic> {
    let indexes = (0..topic.partitions)
        .map(|p| metadata.index_tree(topic.uid, p))
        .collect::<Result<Vec<_>>>()?;
    let trees = metadata.topic_trees(topic.uid)?;
    open_topic_files(
        &metadata.topic_dir(&topic),
        indexes,
        trees,
        config,
        replicated,
        topic,
    )
}

/// Opens (creating if needed) the partition logs of a topic in `dir`, one index tree each.
/// On failure, the partitions opened so far are shut down again. Blocking.
pub(super) fn open_topic_files(
    dir: &Path,
    indexes: Vec<sled::Tree>,
    (delays, dedup): (DelayStore, DedupIndex),
    config: &BrokerConfig,
    replicated: bool,
    topic: TopicConfig,
) -> Result<Topic> {
    let on_commit = Arc::new(Notify::new());
    let OpenedPartitions {
        partitions,
        groups,
        partition_dirs,
    } = open_partitions(dir, indexes, config, replicated, &topic.name, &on_commit)?;
    let tables = super::tables::Tables {
        delays: &delays,
        dedup: &dedup,
        partitions: &partitions,
        groups: &groups,
        remembers_ids: topic.dedup_window_ms > 0,
        at_open: true,
    };
    if let Err(error) = tables.apply() {
        partitions.iter().for_each(PartitionHandle::shutdown);
        return Err(error);
    }
    let scheduled = AtomicU64::new(delays.count() as u64);
    let ids_ready = (0..partitions.len()).map(|_| AtomicU64::new(0)).collect();
    Ok(Topic {
        config: RwLock::new(topic),
        partitions,
        groups,
        partitioner: Partitioner::default(),
        on_commit,
        subscriptions: RwLock::new(BTreeMap::new()),
        deleted: AtomicBool::new(false),
        delays,
        delay_wake: Notify::new(),
        delay_wake_at: AtomicU64::new(u64::MAX),
        scheduled,
        dedup,
        in_flight: Arc::default(),
        ids_ready,
        counters: crate::telemetry::TopicCounters::default(),
        tables_applied: Notify::new(),
        trace: super::trace::stores(&partition_dirs),
    })
}

/// Opens (creating if needed) the partition logs of topic `topic` in `dir`, one index tree
/// each, with this node's seat in each partition's group and each partition's directory. On
/// failure, the partitions opened so far are shut down again. Blocking.
fn open_partitions(
    dir: &Path,
    indexes: Vec<sled::Tree>,
    config: &BrokerConfig,
    replicated: bool,
    topic: &str,
    on_commit: &Arc<Notify>,
) -> Result<OpenedPartitions> {
    let mut partitions = Vec::with_capacity(indexes.len());
    let mut groups = Vec::with_capacity(indexes.len());
    let mut partition_dirs = Vec::with_capacity(indexes.len());
    for (partition, index) in (0u32..).zip(indexes) {
        let group = Arc::new(PartitionGroup::new(
            GroupId::Partition {
                topic: topic.to_owned(),
                partition,
            }
            .to_string(),
        ));
        let partition_dir = dir.join(partition.to_string());
        partition_dirs.push(partition_dir.clone());
        let handle = match replicated {
            false => {
                PartitionHandle::open(partition_dir, index, config.log.clone(), on_commit.clone())
            }
            // Replicated: readers see what Raft applies; its Raft starts once the topic is open.
            true => PartitionHandle::open_replicated(
                partition_dir,
                index,
                config.log.clone(),
                on_commit.clone(),
                None,
            ),
        };
        match handle {
            Ok(handle) => {
                // A replicated partition's writes go through this node's seat in its group:
                // its Raft once it holds a replica, refused naming the leader before.
                if replicated {
                    handle.set_proposer(Arc::clone(&group) as Arc<dyn Proposer>);
                }
                partitions.push(handle);
                groups.push(group);
            }
            Err(error) => {
                partitions.iter().for_each(PartitionHandle::shutdown);
                return Err(error);
            }
        }
    }
    Ok(OpenedPartitions {
        partitions,
        groups,
        partition_dirs,
    })
}

/// A topic's partitions as [`open_partitions`] opened them.
struct OpenedPartitions {
    /// Each partition's log.
    partitions: Vec<PartitionHandle>,
    /// This node's seat in each partition's group.
    groups: Vec<Arc<PartitionGroup>>,
    /// Each partition's directory.
    partition_dirs: Vec<PathBuf>,
}

fn read_name(topic: &Topic) -> String {
    read(&topic.config).name.clone()
}

fn load_subscriptions(
    metadata: &Metadata,
    topics: &BTreeMap<String, Arc<Topic>>,
    replicated: bool,
) -> Result<()> {
    for item in metadata.subscriptions.iter() {
        let (key, value) = item?;
        let config: SubscriptionConfig = from_json(&value)?;
        let Some(topic) = topics.get(&config.topic) else {
            metadata.subscriptions.remove(key)?;
            continue;
        };
        let starts: Vec<u64> = topic
            .partitions
            .iter()
            .map(PartitionHandle::start_offset)
            .collect();
        let store = metadata.subscription_store(config.uid)?;
        let name = config.name.clone();
        let subscription =
            Subscription::open(config, store, &starts, &topic.partitions, replicated)?;
        write(&topic.subscriptions).insert(name, Arc::new(subscription));
    }
    Ok(())
}

/// Deletes topic folders and sled trees that belong to no known topic or subscription: what a
/// delete interrupted by a crash left behind.
fn remove_leftovers(metadata: &Metadata, topics: &BTreeMap<String, Arc<Topic>>) -> Result<()> {
    let mut known_dirs = BTreeSet::new();
    let mut known_trees = BTreeSet::new();
    for topic in topics.values() {
        let config = topic.config();
        known_dirs.insert(metadata.topic_dir(&config));
        for partition in 0..config.partitions {
            known_trees.insert(format!("log/{}/{partition}", config.uid));
        }
        known_trees.insert(schedule::tree_name(config.uid));
        known_trees.insert(dedup::tree_name(config.uid));
        for subscription in read(&topic.subscriptions).values() {
            known_trees.insert(store::tree_name(subscription.config.uid));
        }
    }
    for name in metadata.db.tree_names() {
        let name = String::from_utf8_lossy(&name).into_owned();
        let ours = ["log/", "sub/", "delay/", "ids/"]
            .iter()
            .any(|p| name.starts_with(p));
        if ours && !known_trees.contains(&name) {
            metadata.db.drop_tree(name.as_bytes())?;
        }
    }
    let topics_dir = metadata.data_dir.join("topics");
    let Ok(entries) = std::fs::read_dir(&topics_dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !known_dirs.contains(&path) {
            tracing::warn!(path = %path.display(), "removing the files of a deleted topic");
            std::fs::remove_dir_all(&path).map_err(|e| BrokerError::io(&path, e))?;
        }
    }
    Ok(())
}

fn load_node_id(metadata: &Metadata) -> Result<String> {
    if let Some(id) = metadata.meta.get("node_id")? {
        return Ok(String::from_utf8_lossy(&id).into_owned());
    }
    let id = format!("node-{:08x}", rand::random::<u32>());
    metadata.meta.insert("node_id", id.as_bytes())?;
    Ok(id)
}

pub(super) fn topic_dir(data_dir: &Path, config: &TopicConfig) -> PathBuf {
    data_dir
        .join("topics")
        .join(format!("{}-{}", config.name, config.uid))
}

fn subscription_prefix(topic: &str) -> Vec<u8> {
    let mut key = topic.as_bytes().to_vec();
    key.push(0);
    key
}

fn subscription_key(topic: &str, name: &str) -> Vec<u8> {
    let mut key = subscription_prefix(topic);
    key.extend_from_slice(name.as_bytes());
    key
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| BrokerError::Corrupt {
        path: "metadata".into(),
        position: 0,
        reason: format!("cannot encode: {e}"),
    })
}

fn from_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| BrokerError::Corrupt {
        path: "metadata".into(),
        position: 0,
        reason: format!("cannot decode: {e}"),
    })
}
