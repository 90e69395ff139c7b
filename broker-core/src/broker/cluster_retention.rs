//! Retention on a cluster node: a replicated partition's old segments are its Raft log's
//! prefix, so they go through Raft (see [`crate::raft::purge_through_snapshot`]). Each
//! replica decides on its own, by the single node's rule: whole segments, oldest first, by
//! age and size, none from the one holding the oldest position its derived state still needs
//! (subscription checkpoints, the delay schedule's and dedup index's positions). A leader
//! first checkpoints the tables its committed log makes (its live tables are never
//! checkpointed), so its checkpoints move too.
//!
//! The snapshot stands in for the purged prefix, so it carries what the partition's log made
//! as of its last entry ([`PartitionTables`], in the format of [`super::carried`]): its
//! subscription tables and, since snapshot version 3, its delayed messages not yet due and
//! the dedup index's first results of its ids (binary since version 4). A follower too far
//! behind installs it, its log restarting where the snapshot ends, and its tables, its share
//! of the schedule and of the dedup index become the snapshot's: a delayed message whose
//! scheduled event was purged is still moved when it is due once that follower leads, and a
//! retried produce of an id is still answered as a duplicate. (Without them, retention, which
//! keeps only what the schedule's and index's positions need, would lose such a message: the
//! single node's rule relies on its own sled holding the schedule.)
//! A version 2 snapshot carries neither: the schedule and index then replay the new log.

use std::sync::{Arc, Weak};

use bytes::Bytes;

use super::carried::{CarriedDelay, CarriedId, CarriedTable, CarriedTables};
use super::live_tables::Lead;
use super::partition_state::{Replaced, partition_number, replace_partition_state};
use super::{Broker, Topic, background_blocking};
use crate::clock::now_ms;
use crate::error::{BrokerError, Result};
use crate::raft::{DerivedState, GroupRaft, purge_through_snapshot};
use crate::storage::LogPosition;
use crate::sync::read;

/// The state derived from one partition's log that its snapshots carry: its subscription
/// tables.
pub(super) struct PartitionTables {
    broker: Weak<Broker>,
    topic: Weak<Topic>,
    partition: usize,
}

impl PartitionTables {
    /// The tables of `topic`'s partition `partition` on `broker`.
    pub(super) fn new(broker: Weak<Broker>, topic: &Arc<Topic>, partition: usize) -> Self {
        PartitionTables {
            broker,
            topic: Arc::downgrade(topic),
            partition,
        }
    }

    fn topic(&self) -> Result<Arc<Topic>> {
        self.topic
            .upgrade()
            .ok_or_else(|| BrokerError::TopicNotFound {
                topic: "a deleted topic".into(),
            })
    }
}

impl DerivedState for PartitionTables {
    fn snapshot_point(&self) -> Result<Option<u64>> {
        let topic = self.topic()?;
        let config = topic.config();
        if config.retention_ms.is_none() && config.retention_bytes.is_none() {
            return Ok(None);
        }
        let keep_from = topic.reflected(partition_number(self.partition))?;
        topic.partitions[self.partition].retention_purge_index(
            now_ms(),
            config.retention_ms,
            config.retention_bytes,
            keep_from,
        )
    }

    fn capture(&self, until: LogPosition) -> Result<Bytes> {
        let topic = self.topic()?;
        let log = &topic.partitions[self.partition];
        let subscriptions: Vec<_> = read(&topic.subscriptions).values().cloned().collect();
        let partition = partition_number(self.partition);
        let schedule = topic
            .delays
            .partition_image(partition)?
            .into_iter()
            .map(|(due_ms, seq, entry)| CarriedDelay { due_ms, seq, entry })
            .collect();
        // Ids past the dedup window dedup nothing: they stay behind.
        let horizon = now_ms().saturating_sub(topic.config().dedup_window_ms);
        let ids = topic
            .dedup
            .partition_firsts(partition)?
            .into_iter()
            .filter(|(_, first)| first.produced_ms > horizon)
            .map(|(id, first)| CarriedId {
                id,
                produced_ms: first.produced_ms,
                offset: first.offset,
                deliver_at_ms: first.deliver_at_ms,
            })
            .collect();
        let mut carried = CarriedTables {
            schedule: Some(schedule),
            ids: Some(ids),
            ..CarriedTables::default()
        };
        for sub in subscriptions {
            if let Some(table) = sub.snapshot_table(self.partition, log, until)? {
                carried.tables.push(CarriedTable {
                    subscription: sub.config.uid,
                    table,
                });
            }
        }
        carried.encode().map(Bytes::from)
    }

    fn install(&self, derived: &[u8]) -> Result<()> {
        let carried = CarriedTables::decode(derived)?;
        let topic = self.topic()?;
        let log = &topic.partitions[self.partition];
        let subscriptions =
            replace_partition_state(&topic, self.partition, &carried, Replaced::BySnapshot(log))?;
        let partition = partition_number(self.partition);
        let start = LogPosition::default();
        // A subscription the controller created that this node has not opened yet gets its
        // table as a checkpoint, which opening it starts from (its start is in the purged
        // log, which opening it could not replay).
        let Some(broker) = self.broker.upgrade() else {
            return Ok(());
        };
        for carried in &carried.tables {
            if subscriptions
                .iter()
                .all(|s| s.config.uid != carried.subscription)
            {
                broker
                    .metadata
                    .subscription_store(carried.subscription)?
                    .replace(partition, Some(&carried.table), start)?;
            }
        }
        Ok(())
    }
}

/// Applies `topic`'s retention limits to the partitions this node holds, through their
/// groups in `groups`: returns how many partitions asked for a purge. Blocking work runs on
/// the blocking pool.
pub(super) async fn enforce_in_cluster(
    gate: &Arc<tokio::sync::RwLock<()>>,
    topic: &Arc<Topic>,
    leading: Vec<bool>,
    rafts: Vec<Option<GroupRaft>>,
) -> Result<usize> {
    let config = topic.config();
    let mut purged = 0;
    for (partition, (raft, leads)) in rafts.into_iter().zip(leading).enumerate() {
        let Some(raft) = raft else { continue };
        let held = Arc::clone(topic);
        let upto = background_blocking(gate, move || {
            let log = &held.partitions[partition];
            if leads {
                let subscriptions: Vec<_> = read(&held.subscriptions).values().cloned().collect();
                for sub in subscriptions {
                    sub.checkpoint_committed(partition, log)?;
                }
            }
            let keep_from = held.reflected(partition_number(partition))?;
            log.retention_purge_index(
                now_ms(),
                config.retention_ms,
                config.retention_bytes,
                keep_from,
            )
        })
        .await?;
        if let Some(upto) = upto {
            let asked = purge_through_snapshot(&raft, upto).await?;
            tracing::info!(topic = %config.name, partition, upto = asked, "retention purges the Raft log");
            purged += 1;
        }
    }
    Ok(purged)
}

/// What retention in a cluster needs of one topic: per partition, whether this node leads
/// it and its group here.
pub(super) type ClusterRetentionWork = (Vec<bool>, Vec<Option<GroupRaft>>);

impl Broker {
    /// What [`enforce_in_cluster`] needs for `topic` now; `None` on a single node.
    pub(super) fn cluster_retention_work(&self, topic: &Topic) -> Option<ClusterRetentionWork> {
        self.replication.as_ref()?;
        let leading = (0..topic.partitions.len())
            .map(|p| matches!(self.lead(topic, p), Lead::Leader(_)))
            .collect();
        let rafts = topic.groups.iter().map(|seat| seat.raft()).collect();
        Some((leading, rafts))
    }
}
