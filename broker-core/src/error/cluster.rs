//! Why the controller refused a command or a placement.

use thiserror::Error;

/// Why a command cannot be applied to the cluster state, or a placement cannot be made.
///
/// Every node applies the same commands in the same order, so a refused command is refused
/// on every node with the same error and changes nothing anywhere.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ClusterError {
    /// The command names a node the cluster does not know.
    #[error("node {node} is not a member of the cluster")]
    UnknownNode {
        /// The node named.
        node: u64,
    },
    /// Another node already uses this cluster address.
    #[error("node {node} cannot use cluster address {addr:?}: node {holder} uses it")]
    AddressInUse {
        /// The node that asked for the address.
        node: u64,
        /// The address.
        addr: String,
        /// The node that holds it.
        holder: u64,
    },
    /// The command would leave the cluster without an Active node.
    #[error("node {node} is the last active node")]
    LastNode {
        /// The node whose removal or drain was asked.
        node: u64,
    },
    /// The command would leave fewer Active nodes than a topic's replication factor, so that
    /// topic's replicas could no longer all be placed on Active nodes.
    #[error(
        "node {node} cannot leave: topic {topic:?} keeps {replication_factor} copies and only \
         {active_after} active nodes would remain"
    )]
    TooFewActiveNodes {
        /// The node whose removal or drain was asked.
        node: u64,
        /// A topic that needs more Active nodes.
        topic: String,
        /// That topic's replication factor.
        replication_factor: u32,
        /// Active nodes after the command.
        active_after: usize,
    },
    /// A placement still names the node, so it cannot be removed yet.
    #[error("node {node} still holds a replica of {topic:?} partition {partition}")]
    NodeStillHoldsReplicas {
        /// The node.
        node: u64,
        /// A topic with a replica on it.
        topic: String,
        /// The partition of that replica.
        partition: u32,
    },
    /// A topic of that name exists already.
    #[error("topic {topic:?} exists")]
    TopicExists {
        /// The name.
        topic: String,
    },
    /// No topic of that name.
    #[error("topic {topic:?} does not exist")]
    TopicNotFound {
        /// The name.
        topic: String,
    },
    /// The topic has no such partition.
    #[error("topic {topic:?} has {partitions} partitions, not partition {partition}")]
    PartitionNotFound {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: u32,
        /// The topic's partition count.
        partitions: u32,
    },
    /// A subscription of that name exists already on the topic.
    #[error("subscription {name:?} exists on topic {topic:?}")]
    SubscriptionExists {
        /// The topic.
        topic: String,
        /// The subscription's name.
        name: String,
    },
    /// No subscription of that name on the topic.
    #[error("subscription {name:?} does not exist on topic {topic:?}")]
    SubscriptionNotFound {
        /// The topic.
        topic: String,
        /// The subscription's name.
        name: String,
    },
    /// A partition count outside `1..=max`.
    #[error("a topic has 1 to {max} partitions, got {partitions}")]
    PartitionCount {
        /// The count given.
        partitions: u32,
        /// The largest count accepted ([`crate::limits::MAX_PARTITIONS`]).
        max: u32,
    },
    /// A replication factor of zero: every partition needs a copy.
    #[error("the replication factor must be at least 1")]
    ReplicationFactorZero,
    /// More copies wanted than there are Active nodes to hold them.
    #[error(
        "replication factor {replication_factor} needs as many active nodes, there are {nodes}"
    )]
    ReplicationFactorTooHigh {
        /// The replication factor asked for.
        replication_factor: u32,
        /// Active nodes available.
        nodes: usize,
    },
    /// A topic record whose placement list does not have one entry per partition.
    #[error("topic {topic:?} has {partitions} partitions but {placements} placements")]
    PlacementCount {
        /// The topic.
        topic: String,
        /// Its partition count.
        partitions: u32,
        /// Placements given.
        placements: usize,
    },
    /// One partition's replica list is not acceptable.
    #[error("bad placement of {topic:?} partition {partition}: {reason}")]
    BadPlacement {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// What is wrong with it.
        reason: PlacementFault,
    },
    /// An update tried to change a topic setting fixed at creation.
    #[error("topic {topic:?}: {field} is fixed at {stored}, cannot become {proposed}")]
    ImmutableTopicField {
        /// The topic.
        topic: String,
        /// The setting.
        field: &'static str,
        /// Its stored value.
        stored: u64,
        /// The value proposed.
        proposed: u64,
    },
    /// An update tried to change a subscription setting fixed at creation.
    #[error(
        "subscription {name:?} on {topic:?}: {field} is fixed at {stored}, cannot become {proposed}"
    )]
    ImmutableSubscriptionField {
        /// The topic.
        topic: String,
        /// The subscription.
        name: String,
        /// The setting.
        field: &'static str,
        /// Its stored value.
        stored: u64,
        /// The value proposed.
        proposed: u64,
    },
    /// A map key disagrees with the name or id inside its record (only `validate` finds
    /// this: commands cannot produce it).
    #[error("record stored under {key:?} names itself {inner:?}")]
    KeyMismatch {
        /// The key in the map.
        key: String,
        /// The name or id inside the record.
        inner: String,
    },
    /// A leadership report about an earlier topic of the same name, or of an older term
    /// than the one recorded.
    #[error("stale leader report for {topic:?} partition {partition} (term {term})")]
    StaleLeaderReport {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The term reported.
        term: u64,
    },
    /// A topic's subscription map is present but empty (only `validate` finds this: the
    /// state keeps one form so that equal states serialize to equal bytes).
    #[error("topic {topic:?} has an empty subscription map")]
    EmptySubscriptionMap {
        /// The topic.
        topic: String,
    },
}

/// What is wrong with one partition's replica list.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlacementFault {
    /// The list does not hold replication-factor replicas.
    #[error("{got} replicas, the replication factor is {expected}")]
    ReplicaCount {
        /// The topic's replication factor.
        expected: u32,
        /// Replicas in the list.
        got: usize,
    },
    /// A node appears twice.
    #[error("node {node} is named twice")]
    DuplicateReplica {
        /// The node.
        node: u64,
    },
    /// A node the cluster does not know.
    #[error("node {node} is not a member")]
    UnknownNode {
        /// The node.
        node: u64,
    },
    /// A node that is draining cannot receive a new replica.
    #[error("node {node} is draining and takes no new replicas")]
    NodeNotActive {
        /// The node.
        node: u64,
    },
}
