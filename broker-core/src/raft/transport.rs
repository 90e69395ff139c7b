//! The seam between Raft groups and the wire: bytes to a node, bytes back.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;

/// Largest RPC body either side accepts: an append of a few full frames
/// ([`crate::limits::MAX_FRAME_BYTES`], 32 MiB) plus their envelope; Raft's batching keeps
/// ordinary appends far below it.
pub const MAX_RPC_BYTES: usize = 96 * 1024 * 1024;

/// Which Raft group an RPC is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupId {
    /// The controller group: cluster metadata.
    Controller,
    /// One partition of a topic.
    Partition {
        /// The topic's name.
        topic: String,
        /// The partition.
        partition: u32,
    },
}

/// The controller's name in a path.
const CONTROLLER: &str = "__controller";

impl GroupId {
    /// The group's name in a path: `__controller`, or `topic:partition` (`:` is in no topic
    /// name, so the name parses back unambiguously).
    pub fn to_path(&self) -> String {
        match self {
            GroupId::Controller => CONTROLLER.to_owned(),
            GroupId::Partition { topic, partition } => format!("{topic}:{partition}"),
        }
    }

    /// Parses [`GroupId::to_path`]'s form; `None` for anything else.
    pub fn from_path(text: &str) -> Option<GroupId> {
        if text == CONTROLLER {
            return Some(GroupId::Controller);
        }
        let (topic, partition) = text.rsplit_once(':')?;
        // Reserved names (`__…`) are topics too: internal ones have groups as any other.
        let valid_topic = !topic.is_empty()
            && topic.len() <= crate::limits::MAX_NAME_LEN
            && topic
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        let partition = partition.parse().ok()?;
        valid_topic.then(|| GroupId::Partition {
            topic: topic.to_owned(),
            partition,
        })
    }
}

impl std::fmt::Display for GroupId {
    /// How errors name the group: `cluster metadata`, or `topic 'orders' partition 2`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupId::Controller => f.write_str("cluster metadata"),
            GroupId::Partition { topic, partition } => {
                write!(f, "topic '{topic}' partition {partition}")
            }
        }
    }
}

/// The Raft RPCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rpc {
    /// Append entries (and heartbeats).
    Append,
    /// Request a vote.
    Vote,
    /// Install (a chunk of) a snapshot.
    Snapshot,
    /// Propose a command to the group's leader (a node that is not the leader asks it: the
    /// controller's commands from any node).
    Propose,
    /// One step of moving the group's leadership to a chosen voter (see `transfer`).
    Transfer,
    /// One step of changing the group's members, at its leader (see `membership`).
    Membership,
    /// Append an already-built message batch at the group's leader (see `remote_write`).
    Write,
}

impl Rpc {
    /// Every RPC.
    pub const ALL: [Rpc; 7] = [
        Rpc::Append,
        Rpc::Vote,
        Rpc::Snapshot,
        Rpc::Propose,
        Rpc::Transfer,
        Rpc::Membership,
        Rpc::Write,
    ];

    /// The RPC's name in a path.
    pub fn as_str(self) -> &'static str {
        match self {
            Rpc::Append => "append",
            Rpc::Vote => "vote",
            Rpc::Snapshot => "snapshot",
            Rpc::Propose => "propose",
            Rpc::Transfer => "transfer",
            Rpc::Membership => "membership",
            Rpc::Write => "write",
        }
    }

    /// Parses [`Rpc::as_str`]'s form.
    pub fn parse(text: &str) -> Option<Rpc> {
        Rpc::ALL.into_iter().find(|rpc| rpc.as_str() == text)
    }
}

/// One RPC to send.
#[derive(Debug, Clone)]
pub struct RpcCall {
    /// The group it is for.
    pub group: GroupId,
    /// Which RPC.
    pub rpc: Rpc,
    /// Its encoded request.
    pub body: Bytes,
    /// How long the whole call may take, connecting included.
    pub timeout: Duration,
}

/// Why an RPC got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The node is not in the cluster's address book.
    #[error("node {0} has no known address")]
    UnknownNode(u64),
    /// No connection: the call never reached the node.
    #[error("node {node} is unreachable: {reason}")]
    Unreachable {
        /// The node.
        node: u64,
        /// What failed.
        reason: String,
    },
    /// The connection broke after the call went out, before its whole answer came: the node
    /// may have acted on it (a write may be committed).
    #[error("the call to node {node} was lost after it was sent: {reason}")]
    Lost {
        /// The node.
        node: u64,
        /// What failed.
        reason: String,
    },
    /// No answer within the call's timeout.
    #[error("node {node} did not answer within {ms} ms")]
    Timeout {
        /// The node.
        node: u64,
        /// The timeout.
        ms: u64,
    },
    /// The node answered with a refusal (wrong secret, unknown group, bad request).
    #[error("node {node} refused the call ({status}): {reason}")]
    Refused {
        /// The node.
        node: u64,
        /// The HTTP status (or 0 off HTTP).
        status: u16,
        /// Its reason.
        reason: String,
    },
}

/// The future of one call.
pub type TransportFuture = Pin<Box<dyn Future<Output = Result<Bytes, TransportError>> + Send>>;

/// Sends RPCs to other nodes. Every call ends within its timeout.
pub trait Transport: Send + Sync + 'static {
    /// Sends `call` to node `target` and returns its answer's bytes.
    fn call(&self, target: u64, call: RpcCall) -> TransportFuture;

    /// Learns (or updates) the cluster address of `node` from the cluster metadata, so a
    /// node that joined after this one started can be reached. A transport that routes by
    /// node id alone ignores it.
    fn learn(&self, node: u64, cluster_addr: &str) {
        let _ = (node, cluster_addr);
    }
}

/// Why this node could not answer an RPC.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// No such group on this node (not a replica, or not opened yet).
    #[error("no Raft group {0} on this node")]
    UnknownGroup(String),
    /// The request's bytes do not decode.
    #[error("malformed {rpc} request: {reason}")]
    Malformed {
        /// Which RPC.
        rpc: &'static str,
        /// Why.
        reason: String,
    },
    /// The group is still taking in an earlier append from its leader (see
    /// [`super::append_guard::APPENDS_IN_FLIGHT`]): send again shortly.
    #[error("Raft group {0} is still taking in an earlier append")]
    Busy(String),
    /// The group is shutting down or failed.
    #[error("Raft group {group} cannot answer: {reason}")]
    Unavailable {
        /// The group.
        group: String,
        /// Why.
        reason: String,
    },
}

/// The future of one answer.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Bytes, RpcError>> + Send>>;

/// Answers RPCs for the groups of this node.
pub trait RpcHandler: Send + Sync + 'static {
    /// The encoded answer to `body`, a `rpc` request for `group`.
    fn handle(&self, group: GroupId, rpc: Rpc, body: Bytes) -> HandlerFuture;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_ids_round_trip_through_their_path_form() {
        let groups = [
            GroupId::Controller,
            GroupId::Partition {
                topic: "orders.eu-1_x".into(),
                partition: 7,
            },
            GroupId::Partition {
                topic: "__probe".into(),
                partition: 0,
            },
        ];
        for group in groups {
            assert_eq!(GroupId::from_path(&group.to_path()), Some(group));
        }
        for bad in [
            "",
            "orders",
            "orders:",
            "orders:x",
            "a b:1",
            ":1",
            "orders:-1",
        ] {
            assert_eq!(GroupId::from_path(bad), None, "{bad:?} parsed");
        }
        for rpc in Rpc::ALL {
            assert_eq!(Rpc::parse(rpc.as_str()), Some(rpc));
        }
    }
}
