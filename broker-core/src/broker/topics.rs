//! Topic administration and the retention task.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Broker, Topic, background_blocking, blocking, metadata};
use crate::clock::now_ms;
use crate::error::{BrokerError, Result};
use crate::storage::{LogPosition, PartitionHandle};
use crate::sync::{read, write};
use crate::topic::{PartitionInfo, TopicInfo, TopicPatch, TopicSpec};

impl Broker {
    /// Creates a topic with its partition logs. `TopicExists` if the name is taken.
    pub async fn create_topic(&self, spec: TopicSpec) -> Result<TopicInfo> {
        self.check_running()?;
        let _admin = self.admin.lock().await;
        let config = spec.into_config(now_ms(), self.metadata.new_uid()?)?;
        if read(&self.topics).contains_key(&config.name) {
            return Err(BrokerError::TopicExists { topic: config.name });
        }
        let dir = self.metadata.topic_dir(&config);
        let topic = {
            let (broker_config, metadata_config) = (self.config.clone(), config.clone());
            let replicated = self.replication.is_some();
            let indexes = (0..config.partitions)
                .map(|p| self.metadata.index_tree(config.uid, p))
                .collect::<Result<Vec<_>>>()?;
            let trees = self.metadata.topic_trees(config.uid)?;
            blocking(move || {
                metadata::open_topic_files(
                    &dir,
                    indexes,
                    trees,
                    &broker_config,
                    replicated,
                    metadata_config,
                )
            })
            .await?
        };
        self.metadata.save_topic(&config)?;
        self.persist().await?;
        let topic = Arc::new(topic);
        write(&self.topics).insert(config.name.clone(), topic.clone());
        self.spawn_topic_tasks(&topic);
        // The server's own topics are made at every fresh start: not news to an operator.
        match crate::names::is_internal(&config.name) {
            true => tracing::debug!(topic = %config.name, "created internal topic"),
            false => {
                tracing::info!(topic = %config.name, partitions = config.partitions, "created topic")
            }
        }
        Ok(self.info(&topic))
    }

    /// Every topic, in name order, but the server's own ([`crate::names::is_internal`]).
    pub fn list_topics(&self) -> Vec<TopicInfo> {
        let topics: Vec<Arc<Topic>> = read(&self.topics)
            .iter()
            .filter(|(name, _)| !crate::names::is_internal(name))
            .map(|(_, topic)| topic.clone())
            .collect();
        topics.iter().map(|t| self.info(t)).collect()
    }

    /// One topic's settings and partition stats.
    pub fn describe_topic(&self, topic: &str) -> Result<TopicInfo> {
        let open = self.topic(topic)?;
        Ok(self.info(&open))
    }

    /// Changes a topic's retention or message size limit.
    pub async fn update_topic(&self, topic: &str, patch: TopicPatch) -> Result<TopicInfo> {
        self.check_running()?;
        self.refuse_in_cluster("changing a topic")?;
        let _admin = self.admin.lock().await;
        let open = self.topic(topic)?;
        let next = open.config().patched(&patch)?;
        self.metadata.save_topic(&next)?;
        self.persist().await?;
        *write(&open.config) = next;
        Ok(self.info(&open))
    }

    /// Deletes a topic, its subscriptions and all their data. Long-polls on it end.
    pub async fn delete_topic(&self, topic: &str) -> Result<()> {
        self.check_running()?;
        let _admin = self.admin.lock().await;
        let open = self.topic(topic)?;
        let config = open.config();
        let subscription_uids: Vec<u64> = read(&open.subscriptions)
            .values()
            .map(|s| s.config.uid)
            .collect();
        // Forget it in the metadata first: a crash after this point leaves only files that the
        // next start removes, never a topic whose files are half gone.
        self.metadata.remove_topic(&config, &subscription_uids)?;
        self.persist().await?;
        write(&self.topics).remove(topic);
        open.deleted.store(true, Ordering::SeqCst);
        open.on_commit.notify_waiters();
        open.delay_wake.notify_one();
        self.stop_groups(&open).await;
        let dir = self.metadata.topic_dir(&config);
        let partitions = open.partitions.clone();
        blocking(move || {
            partitions.iter().for_each(PartitionHandle::shutdown);
            std::fs::remove_dir_all(&dir).map_err(|e| BrokerError::io(&dir, e))
        })
        .await?;
        tracing::info!(topic = %config.name, "deleted topic");
        Ok(())
    }

    /// How a partition's leader is named in its stats: this node's id on a single node; in a
    /// cluster the leading node's id, or empty during an election.
    fn leader_name(&self, topic: &str, partition: u32) -> String {
        match &self.replication {
            None => self.node_id().to_owned(),
            Some(_) => self
                .partition_leader(topic, partition)
                .map(|l| l.to_string())
                .unwrap_or_default(),
        }
    }

    pub(super) fn info(&self, topic: &Topic) -> TopicInfo {
        let config = topic.config();
        let partitions = (0u32..)
            .zip(&topic.partitions)
            .map(|(partition, log)| PartitionInfo {
                partition,
                start_offset: log.start_offset(),
                end_offset: log.end_offset(),
                bytes: log.size_bytes(),
                leader: self.leader_name(&config.name, partition),
            })
            .collect();
        TopicInfo {
            config,
            partitions,
            subscriptions: read(&topic.subscriptions).len(),
            delayed: topic.scheduled.load(Ordering::SeqCst),
        }
    }
}

impl Topic {
    /// The oldest log position of `partition` that its derived state reflects: the delay
    /// schedule's, the dedup index's and each subscription's checkpoint (the start of the log
    /// for any not yet written). Retention keeps the segments from there on, so a restart
    /// can replay every control entry after it. Blocking (sled reads).
    pub(super) fn reflected(&self, partition: u32) -> Result<LogPosition> {
        let tables = [
            self.delays.position(partition)?,
            self.dedup.position(partition)?,
        ];
        let subscriptions: Vec<Option<LogPosition>> = read(&self.subscriptions)
            .values()
            .map(|s| s.checkpointed(partition as usize))
            .collect();
        Ok(tables
            .into_iter()
            .chain(subscriptions)
            .map(Option::unwrap_or_default)
            .min()
            .unwrap_or(LogPosition::MAX))
    }
}

/// Applies every topic's retention every `retention_check_ms`, until the broker is gone.
pub(super) async fn retention_loop(broker: Weak<Broker>) {
    let period = match broker.upgrade() {
        Some(broker) => Duration::from_millis(broker.config.retention_check_ms.max(1)),
        None => return,
    };
    let mut ticks = tokio::time::interval(period);
    loop {
        ticks.tick().await;
        let Some(broker) = broker.upgrade() else {
            return;
        };
        if broker.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        let topics: Vec<Arc<Topic>> = read(&broker.topics).values().cloned().collect();
        let gate = Arc::clone(&broker.background);
        // A replicated partition's segments are its Raft log: deleting them is Raft's purge
        // after a snapshot (see `cluster_retention`).
        let replicated: Vec<_> = topics
            .iter()
            .map(|t| broker.cluster_retention_work(t))
            .collect();
        drop(broker);
        for (topic, replicated) in topics.into_iter().zip(replicated) {
            let config = topic.config();
            let dedup = topic.dedup.clone();
            let window = config.dedup_window_ms;
            let swept = background_blocking(&gate, move || dedup.sweep(now_ms(), window)).await;
            if let Err(error) = swept {
                tracing::error!(%error, "sweeping expired message ids failed");
            }
            if config.retention_ms.is_none() && config.retention_bytes.is_none() {
                continue;
            }
            if let Some((leading, rafts)) = replicated {
                let enforced =
                    super::cluster_retention::enforce_in_cluster(&gate, &topic, leading, rafts);
                match enforced.await {
                    Ok(_) => {}
                    Err(error) => tracing::error!(%error, "retention in the cluster failed"),
                }
                continue;
            }
            let held = Arc::clone(&topic);
            let outcome = background_blocking(&gate, move || {
                let now = now_ms();
                (0u32..)
                    .zip(&held.partitions)
                    .try_fold(0, |deleted, (p, log)| {
                        let keep_from = held.reflected(p)?;
                        Ok(deleted
                            + log.enforce_retention(
                                now,
                                config.retention_ms,
                                config.retention_bytes,
                                keep_from,
                            )?)
                    })
            })
            .await;
            match outcome {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(segments = deleted, "retention deleted old segments"),
                Err(error) => tracing::error!(%error, "retention failed"),
            }
        }
    }
}
