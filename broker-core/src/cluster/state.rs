//! The cluster metadata every node keeps a copy of, and the invariants it always satisfies.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::node::NodeRecord;
use super::placement::PartitionPlacement;
use crate::error::{ClusterError, PlacementFault};
use crate::limits::MAX_PARTITIONS;
use crate::subscription::SubscriptionConfig;
use crate::topic::TopicConfig;

/// A topic's settings and where each of its partitions lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicRecord {
    /// The topic's settings.
    pub config: TopicConfig,
    /// One placement per partition, in partition order, each of
    /// `config.replication_factor` replicas.
    pub placement: Vec<PartitionPlacement>,
}

/// The node leading a partition, as it reported (see [`super::Command::SetPartitionLeader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionLeader {
    /// The leader.
    pub node: u64,
    /// Its term.
    pub term: u64,
}

/// The controller's state: nodes, topics with their placements, subscriptions, and the
/// leaders the partitions' leaders reported.
///
/// Changed only by [`ClusterState::apply`]; serialized whole as the controller's snapshot.
/// Maps are ordered so that equal states serialize to equal bytes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ClusterState {
    pub(super) nodes: BTreeMap<u64, NodeRecord>,
    pub(super) topics: BTreeMap<String, TopicRecord>,
    /// Per topic, its subscriptions by name; a topic without subscriptions has no entry.
    pub(super) subscriptions: BTreeMap<String, BTreeMap<String, SubscriptionConfig>>,
    /// Per topic, the last leader each partition's leader reported; a topic none reported
    /// for has no entry. A hint for the nodes outside a partition's group: it may name a
    /// leader since deposed (or dead) until the next one reports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) leaders: BTreeMap<String, BTreeMap<u32, PartitionLeader>>,
    /// Per topic, the partitions whose replicas changed since the topic was created: a node
    /// placed on one joins its existing group (its leader adds it), never forms one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) moved: BTreeMap<String, BTreeSet<u32>>,
    /// The gateway's alert rules by name, each as the text the gateway encoded (opaque
    /// here). Absent from snapshots taken before alerts were cluster metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) alert_rules: BTreeMap<String, String>,
}

impl ClusterState {
    /// An empty cluster: no nodes, no topics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every node, by id.
    pub fn nodes(&self) -> &BTreeMap<u64, NodeRecord> {
        &self.nodes
    }

    /// One node.
    pub fn node(&self, id: u64) -> Option<&NodeRecord> {
        self.nodes.get(&id)
    }

    /// The nodes that take new replicas, in id order.
    pub fn active_nodes(&self) -> Vec<NodeRecord> {
        self.nodes
            .values()
            .filter(|n| n.is_active())
            .cloned()
            .collect()
    }

    /// Every topic, by name.
    pub fn topics(&self) -> &BTreeMap<String, TopicRecord> {
        &self.topics
    }

    /// One topic.
    pub fn topic(&self, name: &str) -> Option<&TopicRecord> {
        self.topics.get(name)
    }

    /// A topic's subscriptions, by name, in name order (empty for an unknown topic).
    pub fn subscriptions(&self, topic: &str) -> impl Iterator<Item = &SubscriptionConfig> {
        self.subscriptions
            .get(topic)
            .into_iter()
            .flat_map(|subs| subs.values())
    }

    /// One subscription.
    pub fn subscription(&self, topic: &str, name: &str) -> Option<&SubscriptionConfig> {
        self.subscriptions.get(topic)?.get(name)
    }

    /// The partitions of `topic` whose replicas changed since it was created.
    pub fn moved_partitions(&self, topic: &str) -> BTreeSet<u32> {
        self.moved.get(topic).cloned().unwrap_or_default()
    }

    /// The leader a partition's leader last reported, if any did.
    pub fn partition_leader(&self, topic: &str, partition: u32) -> Option<PartitionLeader> {
        self.leaders.get(topic)?.get(&partition).copied()
    }

    /// Every alert rule, `(name, encoded rule)` in name order.
    pub fn alert_rules(&self) -> &BTreeMap<String, String> {
        &self.alert_rules
    }

    /// One alert rule, as the gateway encoded it.
    pub fn alert_rule(&self, name: &str) -> Option<&str> {
        self.alert_rules.get(name).map(String::as_str)
    }

    /// The first partition (topic, partition) whose placement names the node, if any.
    pub fn first_replica_on(&self, node: u64) -> Option<(&str, u32)> {
        self.topics.iter().find_map(|(name, topic)| {
            let partition = topic
                .placement
                .iter()
                .position(|p| p.replicas.contains(&node))?;
            Some((name.as_str(), u32::try_from(partition).ok()?))
        })
    }

    /// Checks every invariant: keys match records; cluster addresses are unique; while there
    /// are nodes at least one is Active and there are at least as many Active nodes as any
    /// topic's replication factor; every topic has 1 to [`MAX_PARTITIONS`] partitions, a
    /// replication factor of at least 1 and one placement per partition of that many
    /// distinct known nodes; every reported leader's partition and every subscription's
    /// topic exist.
    pub fn validate(&self) -> Result<(), ClusterError> {
        self.validate_nodes()?;
        for (name, topic) in &self.topics {
            check_key(name, &topic.config.name)?;
            self.check_topic(topic, false)?;
        }
        self.validate_leaders()?;
        self.validate_subscriptions()
    }

    fn validate_leaders(&self) -> Result<(), ClusterError> {
        for (topic, leaders) in &self.leaders {
            let Some(record) = self.topics.get(topic) else {
                return Err(ClusterError::TopicNotFound {
                    topic: topic.clone(),
                });
            };
            if let Some((&partition, _)) = leaders.range(record.config.partitions..).next() {
                return Err(ClusterError::PartitionNotFound {
                    topic: topic.clone(),
                    partition,
                    partitions: record.config.partitions,
                });
            }
        }
        Ok(())
    }

    fn validate_nodes(&self) -> Result<(), ClusterError> {
        let mut addrs = BTreeMap::new();
        for (id, node) in &self.nodes {
            check_key(&id.to_string(), &node.id.to_string())?;
            if let Some(holder) = addrs.insert(node.cluster_addr.as_str(), node.id) {
                return Err(ClusterError::AddressInUse {
                    node: node.id,
                    addr: node.cluster_addr.clone(),
                    holder,
                });
            }
        }
        let active = self.active_count();
        if let Some(node) = self.nodes.values().next().filter(|_| active == 0) {
            return Err(ClusterError::LastNode { node: node.id });
        }
        Ok(())
    }

    fn validate_subscriptions(&self) -> Result<(), ClusterError> {
        for (topic, subs) in &self.subscriptions {
            if !self.topics.contains_key(topic) {
                return Err(ClusterError::TopicNotFound {
                    topic: topic.clone(),
                });
            }
            if subs.is_empty() {
                return Err(ClusterError::EmptySubscriptionMap {
                    topic: topic.clone(),
                });
            }
            for (name, sub) in subs {
                check_key(name, &sub.name)?;
                check_key(topic, &sub.topic)?;
            }
        }
        Ok(())
    }

    /// Number of Active nodes.
    pub fn active_count(&self) -> usize {
        self.nodes.values().filter(|n| n.is_active()).count()
    }

    /// Checks a topic's shape and placement against the nodes. `new` also requires every
    /// replica to be Active (a new topic may not be placed on a draining node).
    pub(super) fn check_topic(&self, topic: &TopicRecord, new: bool) -> Result<(), ClusterError> {
        let config = &topic.config;
        check_shape(config.partitions, config.replication_factor)?;
        let active = self.active_count();
        if usize::try_from(config.replication_factor).map_or(true, |rf| rf > active) {
            return Err(ClusterError::ReplicationFactorTooHigh {
                replication_factor: config.replication_factor,
                nodes: active,
            });
        }
        if topic.placement.len() != config.partitions as usize {
            return Err(ClusterError::PlacementCount {
                topic: config.name.clone(),
                partitions: config.partitions,
                placements: topic.placement.len(),
            });
        }
        for (partition, placement) in (0u32..).zip(&topic.placement) {
            let admitted = |_: u64| !new;
            self.check_replicas(config, partition, &placement.replicas, admitted)?;
        }
        Ok(())
    }

    /// Checks one partition's replica list: replication-factor many, distinct, known, and
    /// Active unless `admitted` says the node may stay although it is draining.
    pub(super) fn check_replicas(
        &self,
        config: &TopicConfig,
        partition: u32,
        replicas: &[u64],
        admitted: impl Fn(u64) -> bool,
    ) -> Result<(), ClusterError> {
        let fault = |reason| ClusterError::BadPlacement {
            topic: config.name.clone(),
            partition,
            reason,
        };
        if replicas.len() != config.replication_factor as usize {
            return Err(fault(PlacementFault::ReplicaCount {
                expected: config.replication_factor,
                got: replicas.len(),
            }));
        }
        let mut seen = BTreeSet::new();
        for &node in replicas {
            if !seen.insert(node) {
                return Err(fault(PlacementFault::DuplicateReplica { node }));
            }
            match self.nodes.get(&node) {
                None => return Err(fault(PlacementFault::UnknownNode { node })),
                Some(record) if !record.is_active() && !admitted(node) => {
                    return Err(fault(PlacementFault::NodeNotActive { node }));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Checks a partition count and replication factor on their own.
pub(super) fn check_shape(partitions: u32, replication_factor: u32) -> Result<(), ClusterError> {
    if !(1..=MAX_PARTITIONS).contains(&partitions) {
        return Err(ClusterError::PartitionCount {
            partitions,
            max: MAX_PARTITIONS,
        });
    }
    if replication_factor == 0 {
        return Err(ClusterError::ReplicationFactorZero);
    }
    Ok(())
}

fn check_key(key: &str, inner: &str) -> Result<(), ClusterError> {
    if key == inner {
        Ok(())
    } else {
        Err(ClusterError::KeyMismatch {
            key: key.to_owned(),
            inner: inner.to_owned(),
        })
    }
}
