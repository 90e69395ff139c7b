//! The broker in a cluster: a topic's partitions are replicated, each by its own Raft group
//! whose log is the partition log (see [`crate::raft`]).
//!
//! The controller decides which topics exist and where their partitions live; each node's
//! reconciler then calls [`Broker::materialize_topic`] (open this node's replicas and start
//! their groups, joining them to the placement) or [`Broker::delete_topic`]. A restarted
//! node reopens its replicas from its own files and restarts their groups
//! ([`Broker::start_replication`]). Writes to a partition this node does not lead are refused
//! with [`BrokerError::NotLeader`] naming the leader it knows; reads serve what the
//! partition's Raft applied here.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::cluster_retention::PartitionTables;
use super::{Broker, Topic, blocking, metadata};
use crate::config::Replication;
use crate::error::{BrokerError, Result};
use crate::raft::{GroupId, GroupParts, GroupStatus, NodeInfo, PartitionGroup, PartitionReplica};
use crate::sync::{read, write};
use crate::topic::TopicConfig;

impl Broker {
    /// This node's replication settings: [`BrokerError::InvalidArgument`] on a single node.
    fn replication(&self) -> Result<&Replication> {
        self.config
            .replication
            .as_ref()
            .ok_or_else(|| BrokerError::invalid("cluster", "this node is not part of a cluster"))
    }

    /// Opens topic `config` as the controller placed it (`members`: every partition's
    /// replicas, each on this node for now) unless it is open already, and starts its
    /// partitions' groups. A brand-new partition's group is formed with `members` (every
    /// replica does this; forming twice with the same members is safe).
    pub async fn materialize_topic(
        &self,
        config: TopicConfig,
        members: BTreeMap<u64, NodeInfo>,
    ) -> Result<()> {
        self.check_running()?;
        let replication = self.replication()?.clone();
        if !members.contains_key(&replication.node_id) {
            return Err(BrokerError::invalid(
                "placement",
                format!(
                    "node {} holds no replica of '{}'",
                    replication.node_id, config.name
                ),
            ));
        }
        let _admin = self.admin.lock().await;
        if let Some(open) = read(&self.topics).get(&config.name)
            && open.config().uid == config.uid
        {
            return Ok(());
        }
        let dir = self.metadata.topic_dir(&config);
        let indexes = (0..config.partitions)
            .map(|p| self.metadata.index_tree(config.uid, p))
            .collect::<Result<Vec<_>>>()?;
        let trees = self.metadata.topic_trees(config.uid)?;
        let (broker_config, opened) = (self.config.clone(), config.clone());
        let topic = blocking(move || {
            metadata::open_topic_files(&dir, indexes, trees, &broker_config, opened)
        })
        .await?;
        self.metadata.save_topic(&config)?;
        self.persist().await?;
        let topic = Arc::new(topic);
        self.start_groups(&replication, &topic, Some(&members))
            .await?;
        write(&self.topics).insert(config.name.clone(), Arc::clone(&topic));
        self.spawn_topic_tasks(&topic);
        tracing::info!(topic = %config.name, partitions = config.partitions, "materialized topic");
        Ok(())
    }

    /// Starts the groups of every topic opened from this node's files (a restart in a
    /// cluster): their members are in their logs.
    pub(super) async fn start_replication(&self) -> Result<()> {
        let Some(replication) = self.config.replication.clone() else {
            return Ok(());
        };
        let topics: Vec<Arc<Topic>> = read(&self.topics).values().cloned().collect();
        for topic in topics {
            self.start_groups(&replication, &topic, None).await?;
        }
        Ok(())
    }

    /// Starts a Raft for each partition of `topic`, seats it on the topic, registers it, and
    /// forms brand-new groups with `members`.
    async fn start_groups(
        &self,
        replication: &Replication,
        topic: &Arc<Topic>,
        members: Option<&BTreeMap<u64, NodeInfo>>,
    ) -> Result<()> {
        let name = topic.config().name;
        for (partition, log) in (0u32..).zip(&topic.partitions) {
            let group = GroupId::Partition {
                topic: name.clone(),
                partition,
            };
            let parts = GroupParts {
                transport: Arc::clone(&replication.transport),
                config: Arc::clone(&replication.raft),
                on_commit: Arc::clone(&topic.on_commit),
                derived: Arc::new(PartitionTables::new(
                    self.me.clone(),
                    topic,
                    partition as usize,
                )),
            };
            let raft =
                PartitionReplica::start(replication.node_id, group.clone(), log.clone(), parts)
                    .await?;
            if !topic.groups[partition as usize].hold(replication.node_id, raft.clone()) {
                // Started before: this second Raft over the same log must not run.
                if let Err(e) = raft.shutdown().await {
                    tracing::warn!(error = %e, topic = %name, partition, "a group did not stop");
                }
                continue;
            }
            replication.groups.insert(group, raft.clone());
            if let Some(members) = members
                && let Err(e) = raft.initialize(members.clone()).await
            {
                // NotAllowed: the group was formed before (its log is not empty).
                tracing::debug!(error = %e, topic = %name, partition, "group already formed");
            }
        }
        Ok(())
    }

    /// Stops the groups of `topic`'s partitions (before its logs are shut down).
    pub(super) async fn stop_groups(&self, topic: &Topic) {
        let Some(replication) = &self.config.replication else {
            return;
        };
        let name = topic.config().name;
        for (partition, seat) in (0u32..).zip(&topic.groups) {
            let Some(raft) = seat.raft() else { continue };
            let group = GroupId::Partition {
                topic: name.clone(),
                partition,
            };
            replication.groups.remove(&group);
            if let Err(e) = raft.shutdown().await {
                tracing::warn!(error = %e, topic = %name, partition, "a group did not stop");
            }
        }
    }

    /// [`BrokerError::InvalidArgument`] in a cluster, for what this stage of the cluster does
    /// not replicate yet (it would change one node only).
    pub(super) fn refuse_in_cluster(&self, what: &str) -> Result<()> {
        match self.config.replication {
            None => Ok(()),
            Some(_) => Err(BrokerError::invalid(
                "cluster",
                format!("{what}: not replicated across the cluster yet (issue 9 continues)"),
            )),
        }
    }

    /// This node's replication settings, in a cluster.
    pub fn replication_settings(&self) -> Option<&Replication> {
        self.config.replication.as_ref()
    }

    /// The log settings of every partition.
    pub fn log_config(&self) -> &crate::config::LogConfig {
        &self.config.log
    }

    /// The tree holding the controller log's index, in this node's metadata store.
    pub fn controller_index(&self) -> Result<sled::Tree> {
        self.metadata.controller_tree()
    }

    /// The names of the topics open here.
    pub fn topic_names(&self) -> Vec<String> {
        read(&self.topics).keys().cloned().collect()
    }

    /// The uid of topic `name` as open here.
    pub fn topic_uid(&self, name: &str) -> Option<u64> {
        read(&self.topics).get(name).map(|t| t.config().uid)
    }

    /// The partitions of `topic` this node leads (none on a single node, where unkeyed
    /// messages take every partition in turn).
    pub(super) fn partitions_led_here(&self, topic: &Topic) -> Vec<u32> {
        let Some(replication) = &self.config.replication else {
            return Vec::new();
        };
        (0u32..)
            .zip(&topic.groups)
            .filter(|(_, seat)| seat.leader() == Some(replication.node_id))
            .map(|(p, _)| p)
            .collect()
    }

    /// This node's seat in the group of `topic`'s partition `partition` (`None` on a single
    /// node, or for an unknown topic or partition).
    fn seat(&self, topic: &str, partition: u32) -> Option<Arc<PartitionGroup>> {
        self.config.replication.as_ref()?;
        let topics = read(&self.topics);
        topics.get(topic)?.groups.get(partition as usize).cloned()
    }

    /// What this node knows of the group of `topic`'s partition `partition` (`None` on a
    /// single node, or when this node holds no replica of it).
    pub fn partition_status(&self, topic: &str, partition: u32) -> Option<GroupStatus> {
        self.seat(topic, partition)?.raft().map(GroupStatus::of)
    }

    /// The node leading partition `partition` of `topic`, as this node knows it (`None` on a
    /// single node, or during an election).
    pub fn partition_leader(&self, topic: &str, partition: u32) -> Option<u64> {
        self.seat(topic, partition)?.leader()
    }
}
