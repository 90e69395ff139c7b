//! The controller log's entries: one change to the cluster state each.

use serde::{Deserialize, Serialize};

use super::node::NodeRecord;
use super::state::TopicRecord;
use crate::subscription::SubscriptionConfig;
use crate::topic::TopicConfig;

/// One change to the cluster state, as the controller leader proposes it and every node
/// applies it ([`super::ClusterState::apply`]).
///
/// Serialized as JSON tagged by `"type"` (`"upsert_node"`, `"create_topic"`, …): it is a log
/// entry, so variants and fields are only ever added, never renamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Adds a node, or replaces the record of a known one (new addresses or zone; back to
    /// Active cancels a drain; Draining here is checked as [`Command::DrainNode`] is).
    UpsertNode(NodeRecord),
    /// Marks a node Draining: it takes no new replicas and its replicas are to move away.
    DrainNode {
        /// The node.
        id: u64,
    },
    /// Forgets a node that no placement names any more.
    RemoveNode {
        /// The node.
        id: u64,
    },
    /// Creates a topic with its placement.
    CreateTopic(TopicRecord),
    /// Replaces a topic's settings; partitions, replication factor, uid and creation time
    /// stay as they are.
    UpdateTopic {
        /// The new settings.
        config: TopicConfig,
    },
    /// Deletes a topic and its subscriptions.
    DeleteTopic {
        /// The topic.
        name: String,
    },
    /// Creates a subscription on an existing topic.
    CreateSubscription(SubscriptionConfig),
    /// Replaces a subscription's settings; its uid and creation time stay as they are.
    UpdateSubscription(SubscriptionConfig),
    /// Deletes a subscription.
    DeleteSubscription {
        /// Its topic.
        topic: String,
        /// Its name.
        name: String,
    },
    /// Replaces one partition's replica list (the first is the preferred leader).
    SetPlacement {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The new replicas: replication-factor many distinct known nodes; a node not
        /// already in the list must be Active.
        replicas: Vec<u64>,
    },
    /// Records the node leading a partition, as that node reports it: the other nodes
    /// (those holding no replica of it among them) forward the partition's requests there.
    SetPartitionLeader {
        /// The topic.
        topic: String,
        /// The topic's uid: a report about an earlier topic of the same name is refused.
        uid: u64,
        /// The partition.
        partition: u32,
        /// The leader.
        node: u64,
        /// Its term: a report of an older term than the one recorded is refused.
        term: u64,
    },
    /// Stores (or replaces) an alert rule. `rule` is the gateway's JSON of the rule with its
    /// secret, kept as text: the broker never reads it.
    PutAlertRule {
        /// The rule's name.
        name: String,
        /// The rule as the gateway encoded it.
        rule: String,
    },
    /// Forgets an alert rule; forgetting one that is not stored changes nothing.
    DeleteAlertRule {
        /// The rule's name.
        name: String,
    },
}
