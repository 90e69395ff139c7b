//! The broker's one error enum. The gateway maps each variant to an HTTP status and a stable
//! problem `code` in one place (`gateway::problem`).

use std::path::PathBuf;

mod cluster;

pub use cluster::{ClusterError, PlacementFault};

/// Everything a broker operation can fail with. Variants carry the values that failed.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// No topic of that name exists.
    #[error("topic '{topic}' does not exist")]
    TopicNotFound {
        /// The topic asked for.
        topic: String,
    },
    /// A topic of that name already exists.
    #[error("topic '{topic}' already exists")]
    TopicExists {
        /// The topic asked for.
        topic: String,
    },
    /// No subscription of that name exists on the topic.
    #[error("subscription '{subscription}' does not exist on topic '{topic}'")]
    SubscriptionNotFound {
        /// The topic.
        topic: String,
        /// The subscription asked for.
        subscription: String,
    },
    /// A subscription of that name already exists on the topic.
    #[error("subscription '{subscription}' already exists on topic '{topic}'")]
    SubscriptionExists {
        /// The topic.
        topic: String,
        /// The subscription asked for.
        subscription: String,
    },
    /// No message of that id is known (or it can no longer be acted on).
    #[error(
        "message '{id}' of topic '{topic}' was not found (a cancel finds only a delayed message \
         not yet due)"
    )]
    MessageNotFound {
        /// The topic.
        topic: String,
        /// The message id asked for.
        id: String,
    },
    /// The topic has no partition with that number.
    #[error("topic '{topic}' has no partition {partition} (it has {partitions})")]
    PartitionNotFound {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: u32,
        /// How many partitions the topic has.
        partitions: u32,
    },
    /// A request field is out of its range or malformed.
    #[error("invalid {field}: {reason}")]
    InvalidArgument {
        /// The field (JSON name) at fault.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A message value is larger than the topic allows.
    #[error("message value of {size} bytes exceeds the limit of {limit} bytes")]
    MessageTooLarge {
        /// The value's size.
        size: usize,
        /// The topic's `max_message_bytes`.
        limit: usize,
    },
    /// An offset read asked for an offset past the end of the log.
    #[error("offset {offset} is past the end of partition {partition} (end offset {end_offset})")]
    OffsetOutOfRange {
        /// The partition.
        partition: u32,
        /// The offset asked for.
        offset: u64,
        /// The partition's end offset.
        end_offset: u64,
    },
    /// A bounded queue is full; the caller should retry after a pause.
    #[error("the broker is overloaded: {resource} is full")]
    Overloaded {
        /// Which bound was hit.
        resource: &'static str,
        /// How long the caller should wait before retrying, in milliseconds.
        retry_after_ms: u64,
    },
    /// This node does not lead the partition (or cluster metadata) the request needs, and no
    /// forwarding took it there: `leader` is the node that does, when one is known (none
    /// during an election). The caller retries, here or at the leader.
    #[error("{what} has no leader on this node{}", leader.map(|l| format!(" (node {l} leads it)")).unwrap_or_else(|| " (an election is in progress)".to_owned()))]
    NotLeader {
        /// What needs a leader: `topic 'orders' partition 2`, or `cluster metadata`.
        what: String,
        /// The node leading it, if known.
        leader: Option<u64>,
    },
    /// The cluster metadata refuses the change (an unknown node, the last active node, a
    /// node a placement still names, …): nothing was changed.
    #[error("the cluster refuses the change: {refusal}{}", note.map(|n| format!(" ({n})")).unwrap_or_default())]
    Cluster {
        /// The metadata's refusal.
        refusal: ClusterError,
        /// Why, when the refusal alone does not say (a limit of this stage).
        note: Option<&'static str>,
    },
    /// A partition's leadership was asked to move to a node that holds no replica of it.
    #[error("node {node} holds no replica of topic '{topic}' partition {partition}")]
    NotAReplica {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The node named.
        node: u64,
    },
    /// A leadership move did not end with the target leading: the group keeps (or elects)
    /// another leader, and the caller may retry.
    #[error("{what}: the leadership did not move to node {target}: {reason}")]
    LeaderNotMoved {
        /// The group: `topic 'orders' partition 2`.
        what: String,
        /// The node that was to lead.
        target: u64,
        /// What went wrong.
        reason: String,
    },
    /// A message id whose earlier produce ended with its outcome unknown (a write that timed
    /// out or was cut short by a leadership change, and may still be committed): the batch
    /// is refused whole, storing nothing, until that outcome is known; a retry then answers
    /// with the first result or stores the message.
    #[error(
        "message id {id:?}: an earlier produce of it may still be stored and its outcome is not known yet; retry with the same id"
    )]
    OutcomePending {
        /// The id.
        id: String,
    },
    /// A write was proposed but not committed within the time allowed (the leader lost its
    /// majority, or replicas are too slow): it may still be committed later, so the caller
    /// must treat its outcome as unknown and retry with the same message ids.
    #[error("{what}: not committed by a majority within {ms} ms; it may still be")]
    ReplicationTimeout {
        /// What was written: `topic 'orders' partition 2`.
        what: String,
        /// The time allowed.
        ms: u64,
    },
    /// The broker is shutting down and takes no new work.
    #[error("the broker is shutting down")]
    ShuttingDown,
    /// A task of the broker panicked (or died without answering): a bug, not a reason to
    /// retry. Only a real shutdown is [`BrokerError::ShuttingDown`].
    #[error("internal failure: {task} panicked")]
    Panicked {
        /// The task that failed: a partition writer (with its folder) or a blocking task.
        task: String,
    },
    /// The disk is full.
    #[error("storage is full while writing {path}")]
    StorageFull {
        /// The file being written.
        path: PathBuf,
    },
    /// An I/O operation on a data file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The metadata store (sled) failed.
    #[error("metadata store error: {0}")]
    Metadata(#[from] sled::Error),
    /// Stored data failed a validity check (CRC, framing, decoding).
    #[error("corrupt data in {path} at byte {position}: {reason}")]
    Corrupt {
        /// The file involved.
        path: PathBuf,
        /// Byte position of the bad data.
        position: u64,
        /// What check failed.
        reason: String,
    },
}

impl BrokerError {
    /// Wraps an I/O error with the file it concerns, telling a full disk apart.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::StorageFull {
            BrokerError::StorageFull { path }
        } else {
            BrokerError::Io { path, source }
        }
    }

    /// Shorthand for [`BrokerError::InvalidArgument`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        BrokerError::InvalidArgument {
            field,
            reason: reason.into(),
        }
    }
}

impl From<ClusterError> for BrokerError {
    fn from(refusal: ClusterError) -> Self {
        BrokerError::Cluster {
            refusal,
            note: None,
        }
    }
}

/// Result alias for broker operations.
pub type Result<T, E = BrokerError> = std::result::Result<T, E>;
