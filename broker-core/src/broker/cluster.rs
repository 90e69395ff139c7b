//! The broker in a cluster: a topic's partitions are replicated, each by its own Raft group
//! whose log is the partition log (see [`crate::raft`]).
//!
//! The controller decides which topics exist and where their partitions live; each node's
//! reconciler then calls [`Broker::materialize_placed_topic`] (open the topic and start the
//! groups of the partitions placed here, each formed with that partition's replicas) or
//! [`Broker::delete_topic`]. A restarted node reopens its replicas from its own files and
//! restarts their groups ([`Broker::start_replication`]). Writes to a partition this node
//! does not lead are refused with [`BrokerError::NotLeader`] naming the leader it knows;
//! reads serve what the partition's Raft applied here.
//!
//! # Partitions held elsewhere (replication factor below the node count)
//!
//! Every node opens every topic the metadata has, whether it holds replicas of it or not,
//! so any node knows every topic and answers for it. Each partition has a seat on the topic
//! ([`PartitionGroup`]): a partition placed here has its Raft there; a partition held only
//! by other nodes has an empty log here that nothing writes (its seat refuses its writes)
//! and a leader *hint*: the leader the cluster metadata records for it. Each partition's
//! leader reports itself to the controller when it gains the leadership
//! ([`crate::cluster::Command::SetPartitionLeader`], with its term so an older report never
//! overwrites a newer one), and every node's reconciler copies the reports onto the seats
//! ([`Broker::set_partition_hints`]). Every request on a partition held elsewhere (produce,
//! receive, settle, seek, offset reads) is refused with [`BrokerError::NotLeader`] naming
//! the hint, and the gateway forwards it there (one hop); a hint naming a node that since
//! lost the leadership (or died) costs the client one retry. Subscriptions are opened on
//! every node, but only a replica's tables follow a log, and only the leader's is live.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::cluster_retention::PartitionTables;
use super::{Broker, Topic, blocking, metadata};
use crate::error::{BrokerError, Result};
use crate::raft::Replication;
use crate::raft::{GroupId, GroupParts, GroupStatus, NodeInfo, PartitionGroup, PartitionReplica};
use crate::sync::{read, write};
use crate::topic::TopicConfig;

/// What the cluster metadata says of one partition, for [`Broker::set_partition_hints`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionHint {
    /// The leader its leader last reported (none before any report).
    pub leader: Option<u64>,
    /// Its replicas.
    pub replicas: Vec<u64>,
}

/// One partition as the controller placed it, for [`Broker::materialize_placed_topic`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedPartition {
    /// Its replicas.
    pub members: BTreeMap<u64, NodeInfo>,
    /// The replica that should lead it (`None`: any).
    pub preferred: Option<u64>,
}

/// A topic's placement as [`Broker::materialize_placed_topic`] takes it: each partition's
/// replicas, and the partitions moved since the topic was created.
type Placed<'a> = (&'a [PlacedPartition], &'a BTreeSet<u32>);

/// How long the replicas of a new partition other than its preferred leader wait for a
/// leader before forming the group themselves: twice the longest election timeout, so the
/// preferred replica's first campaign (retried once, when a peer had not opened the topic
/// yet) normally wins and a new topic's leaders are spread as the placement spread them;
/// past it, a preferred replica that is down or slow costs the topic no leader, only its
/// balance (which `rebalance` restores).
pub const FORM_GRACE_MS: u64 = 2 * crate::raft::ELECTION_TIMEOUT_MS.1;

impl Broker {
    /// This node's replication settings: [`BrokerError::InvalidArgument`] on a single node.
    fn replication(&self) -> Result<&Replication> {
        self.replication
            .as_ref()
            .ok_or_else(|| BrokerError::invalid("cluster", "this node is not part of a cluster"))
    }

    /// Opens topic `config` with every partition placed on `members` (tests of clusters
    /// whose replication factor is the node count): [`Broker::materialize_placed_topic`].
    pub async fn materialize_topic(
        &self,
        config: TopicConfig,
        members: BTreeMap<u64, NodeInfo>,
    ) -> Result<()> {
        let placed = PlacedPartition {
            members,
            preferred: None,
        };
        let replicas = vec![placed; config.partitions as usize];
        self.materialize_placed_topic(config, replicas, &BTreeSet::new())
            .await
    }

    /// Opens topic `config` as the controller placed it unless it is open already, and
    /// starts the groups of the partitions placed here: `replicas[p]` holds partition `p`'s
    /// replicas. A brand-new partition's group is formed with its replicas (by its preferred
    /// leader at once, by the others after [`FORM_GRACE_MS`] without a leader; forming twice
    /// with the same members is safe), unless it is in `moved` (its
    /// replicas changed since the topic was created): a replica placed here by a move joins
    /// the group its leader adds it to; forming one would fork the group. Every node opens every
    /// topic, holding a replica or not: a partition held elsewhere keeps an empty log here,
    /// and its seat refuses its requests naming its leader (see the module docs).
    pub async fn materialize_placed_topic(
        &self,
        config: TopicConfig,
        replicas: Vec<PlacedPartition>,
        moved: &BTreeSet<u32>,
    ) -> Result<()> {
        self.check_running()?;
        let replication = self.replication()?.clone();
        if replicas.len() != config.partitions as usize {
            return Err(BrokerError::invalid(
                "placement",
                format!(
                    "{} placements for the {} partitions of '{}'",
                    replicas.len(),
                    config.partitions,
                    config.name
                ),
            ));
        }
        let _admin = self.admin.lock().await;
        let open = read(&self.topics)
            .get(&config.name)
            .filter(|open| open.config().uid == config.uid)
            .cloned();
        if let Some(open) = open {
            // Open already: start the groups of partitions placed here since.
            return self
                .start_groups(&replication, &open, Some((&replicas, moved)))
                .await;
        }
        let dir = self.metadata.topic_dir(&config);
        let indexes = (0..config.partitions)
            .map(|p| self.metadata.index_tree(config.uid, p))
            .collect::<Result<Vec<_>>>()?;
        let trees = self.metadata.topic_trees(config.uid)?;
        let (broker_config, opened) = (self.config.clone(), config.clone());
        let topic = blocking(move || {
            metadata::open_topic_files(&dir, indexes, trees, &broker_config, true, opened)
        })
        .await?;
        self.metadata.save_topic(&config)?;
        self.persist().await?;
        let topic = Arc::new(topic);
        self.start_groups(&replication, &topic, Some((&replicas, moved)))
            .await?;
        write(&self.topics).insert(config.name.clone(), Arc::clone(&topic));
        self.spawn_topic_tasks(&topic);
        let held = topic.groups.iter().filter(|g| g.held()).count();
        tracing::info!(topic = %config.name, partitions = config.partitions, held, "materialized topic");
        Ok(())
    }

    /// Starts the groups of every topic opened from this node's files (a restart in a
    /// cluster): their members are in their logs. Only a partition whose log has entries or
    /// whose Raft state has a vote held a replica here; the reconciler starts the others
    /// placed here once the metadata is back.
    pub(super) async fn start_replication(&self) -> Result<()> {
        let Some(replication) = self.replication.clone() else {
            return Ok(());
        };
        let topics: Vec<Arc<Topic>> = read(&self.topics).values().cloned().collect();
        for topic in topics {
            self.start_groups(&replication, &topic, None).await?;
        }
        Ok(())
    }

    /// Starts a Raft for each partition of `topic` placed here that has none yet, seats it
    /// on the topic and registers it: the partitions the placement names this node in, or,
    /// at a restart (`None`), those whose logs have entries, with the members in them. A
    /// placed partition not `moved` is formed with its placement's replicas (refused, and
    /// harmless, when it was formed before); a moved one waits for its leader to add it.
    async fn start_groups(
        &self,
        replication: &Replication,
        topic: &Arc<Topic>,
        placement: Option<Placed<'_>>,
    ) -> Result<()> {
        let replicas = placement.map(|(r, _)| r);
        let name = topic.config().name;
        for (partition, log) in (0u32..).zip(&topic.partitions) {
            let seat = &topic.groups[partition as usize];
            let placed = replicas.and_then(|r| r.get(partition as usize));
            let placed_here = match replicas {
                Some(_) => placed.is_some_and(|p| p.members.contains_key(&replication.node_id)),
                None => held_before(log).await?,
            };
            if seat.held() || !placed_here {
                continue;
            }
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
            let started =
                PartitionReplica::start(replication.node_id, group.clone(), log.clone(), parts)
                    .await?;
            let raft = started.raft.clone();
            let write_hold = replication.groups.write_hold(group.clone());
            if !seat.hold(replication.node_id, started, write_hold) {
                // Started meanwhile: this second Raft over the same log must not run.
                if let Err(e) = raft.shutdown().await {
                    tracing::warn!(error = %e, topic = %name, partition, "a group did not stop");
                }
                continue;
            }
            replication
                .groups
                .insert_followed(group, raft.clone(), Arc::clone(seat));
            let form = placement.is_some_and(|(_, moved)| !moved.contains(&partition));
            if let Some(placed) = placed.filter(|_| form) {
                form_group(raft, placed, replication.node_id, &name, partition).await;
            }
        }
        Ok(())
    }

    /// Stops the groups of `topic`'s partitions (before its logs are shut down).
    pub(super) async fn stop_groups(&self, topic: &Topic) {
        let Some(replication) = &self.replication else {
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
        match self.replication {
            None => Ok(()),
            Some(_) => Err(BrokerError::invalid(
                "cluster",
                format!("{what}: not replicated across the cluster yet (issue 9 continues)"),
            )),
        }
    }

    /// This node's replication settings, in a cluster.
    pub fn replication_settings(&self) -> Option<&Replication> {
        self.replication.as_ref()
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
        let Some(replication) = &self.replication else {
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
        self.replication.as_ref()?;
        let topics = read(&self.topics);
        topics.get(topic)?.groups.get(partition as usize).cloned()
    }

    /// What this node knows of the group of `topic`'s partition `partition` (`None` on a
    /// single node, or when this node holds no replica of it).
    pub fn partition_status(&self, topic: &str, partition: u32) -> Option<GroupStatus> {
        self.seat(topic, partition)?
            .raft()
            .as_ref()
            .map(GroupStatus::of)
    }

    /// The node leading partition `partition` of `topic`, as this node knows it: its own
    /// replica's view, or the leader the metadata records for a partition held elsewhere
    /// (`None` on a single node, during an election, or before any leader reported).
    pub fn partition_leader(&self, topic: &str, partition: u32) -> Option<u64> {
        self.seat(topic, partition)?.leader()
    }

    /// Whether this node holds a replica of `topic`'s partition `partition` (always on a
    /// single node).
    pub fn holds_partition(&self, topic: &str, partition: u32) -> bool {
        match &self.replication {
            None => true,
            Some(_) => self.seat(topic, partition).is_some_and(|s| s.held()),
        }
    }

    /// The nodes holding a replica of `topic`'s partition `partition`, its leader (as
    /// [`Broker::partition_leader`] knows it) first, then the other replicas the metadata
    /// places; empty on a single node, for an unknown topic or partition, or before the
    /// metadata placed it and named a leader.
    pub fn partition_holders(&self, topic: &str, partition: u32) -> Vec<u64> {
        let Some(seat) = self.seat(topic, partition) else {
            return Vec::new();
        };
        let leader = seat.leader();
        let others = seat.replicas().into_iter().filter(|n| Some(*n) != leader);
        leader.into_iter().chain(others).collect()
    }

    /// The partitions of topic `name` (incarnation `uid`) this node leads now, each with
    /// its term, for the leaders the metadata records.
    pub fn led_partitions(&self, name: &str, uid: u64) -> Vec<(u32, u64)> {
        let Some(replication) = &self.replication else {
            return Vec::new();
        };
        let Some(topic) = read(&self.topics).get(name).cloned() else {
            return Vec::new();
        };
        if topic.config().uid != uid {
            return Vec::new();
        }
        (0u32..)
            .zip(&topic.groups)
            .filter_map(|(p, seat)| {
                let view = seat.view()?;
                (view.leader == Some(replication.node_id)).then_some((p, view.term))
            })
            .collect()
    }

    /// Records what the metadata says of the partitions of topic `name` (incarnation
    /// `uid`): `hints[p]` for partition `p`, its leader and replicas. The leader of a
    /// partition held here is what its replica knows; the others' requests are refused
    /// naming these, and their offset reads may go to a replica in this node's zone.
    pub fn set_partition_hints(&self, name: &str, uid: u64, hints: &[PartitionHint]) {
        let Some(topic) = read(&self.topics).get(name).cloned() else {
            return;
        };
        if topic.config().uid != uid {
            return;
        }
        for (seat, hint) in topic.groups.iter().zip(hints) {
            seat.set_hint(hint.leader);
            seat.set_replicas(&hint.replicas);
        }
    }

    /// [`BrokerError::NotLeader`] naming the leader the metadata records, unless this node
    /// holds a replica of `topic`'s partition `partition` (or is a single node).
    pub(super) fn require_held(&self, topic: &Topic, partition: u32) -> Result<()> {
        if self.replication.is_none() {
            return Ok(());
        }
        match topic.groups.get(partition as usize) {
            Some(seat) if !seat.held() => Err(BrokerError::NotLeader {
                what: format!(
                    "partition {partition} of topic '{}' (held on other nodes)",
                    topic.config().name
                ),
                leader: seat.hint(),
            }),
            _ => Ok(()),
        }
    }
}

/// Whether this node held a replica of the partition of `log` before a restart: its log has
/// entries (forming a group writes the first), or it voted in the group's elections (the
/// log's tail may not be loaded yet). Blocking file I/O on the blocking pool.
async fn held_before(log: &crate::storage::PartitionHandle) -> Result<bool> {
    if log.last_entry().is_some() {
        return Ok(true);
    }
    let dir = log.dir().to_path_buf();
    let state = blocking(move || crate::storage::RaftState::load(&dir)).await?;
    Ok(state.vote.is_some() || state.committed.is_some())
}

/// Forms a brand-new partition's group with its placed replicas: at once on its preferred
/// leader (or on every replica when it has none), so that replica campaigns first and leads;
/// elsewhere only once [`FORM_GRACE_MS`] passed with no leader known, in a task of its own.
/// Forming is refused harmlessly where the group was formed already (a vote or entries).
async fn form_group(
    raft: crate::raft::GroupRaft,
    placed: &PlacedPartition,
    me: u64,
    topic: &str,
    partition: u32,
) {
    let members = placed.members.clone();
    let waits = placed
        .preferred
        .is_some_and(|p| p != me && placed.members.contains_key(&p));
    if !waits {
        if let Err(e) = raft.initialize(members).await {
            tracing::debug!(error = %e, topic, partition, "group already formed");
        }
        return;
    }
    let topic = topic.to_owned();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(FORM_GRACE_MS)).await;
        if raft.metrics().borrow().current_leader.is_some() {
            return;
        }
        match raft.initialize(members).await {
            Ok(()) => tracing::info!(
                topic,
                partition,
                "formed a new partition's group: its preferred leader did not within the grace"
            ),
            Err(e) => tracing::debug!(error = %e, topic, partition, "group already formed"),
        }
    });
}
