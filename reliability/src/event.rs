//! The events of a history: one JSON object per line, tagged by `"type"`.
//!
//! Every `*_ms` field is read from one monotonic clock of the harness (milliseconds since the run
//! started), so times of different events compare; node clocks never appear in a history.
//! Unknown fields are refused, so a misspelt field in the harness is a parse error rather than a
//! silently missing value.

use serde::{Deserialize, Serialize};

/// A cluster node's id (the openraft node id).
pub type NodeId = u64;

/// A partition's index within the topic under test, from 0.
pub type Partition = u32;

/// A record's offset within its partition.
pub type Offset = u64;

/// One line of a history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The run's header: what the run is and what it intends to inject.
    Run(Run),
    /// One producer operation, written at its completion.
    Produce(Produce),
    /// A consumer received a message.
    Deliver(Deliver),
    /// A consumer's ack of a delivery, written at its completion.
    Ack(Ack),
    /// One record read directly from one node's log after healing.
    Drain(Drain),
    /// The drain of one partition on one node finished.
    Drained(Drained),
    /// A fault started or ended.
    Fault(Fault),
    /// A leader of a partition, as the harness observed it.
    Leader(Leader),
    /// A window of produce unavailability the harness measured itself.
    Unavailable(Unavailable),
}

/// The run's header; a history holds exactly one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// The test's ID in the plan (`R1`, `D3`…), the report line's first word.
    pub id: String,
    /// The test's name (`leader-kill`), the report line's second word.
    pub name: String,
    /// The seed every random choice of the run was drawn from.
    pub seed: u64,
    /// The faults the run intends to inject (`["kill_leader", "pause_leader"]`); each must be
    /// installed at least once or the verdict is `unknown`.
    pub faults: Vec<String>,
    /// Whether the run only proves something if every partition changed leader at least once.
    pub require_leader_change: bool,
    /// How many partitions the topic under test has; they are numbered from 0.
    pub partitions: Partition,
    /// The cluster's nodes; each must be drained for every partition it holds.
    pub nodes: Vec<NodeId>,
    /// The subscriptions whose consumers ran until everything acknowledged was consumed (or
    /// their bound ran out): every acknowledged value must have been delivered through each.
    /// Empty when consumers did not run to the end (or at all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumed_through: Vec<String>,
    /// In partition order, the nodes holding a replica of each partition when the replication
    /// factor is below the node count: each partition must be drained from these only.
    /// Empty: every node holds every partition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<Vec<NodeId>>,
    /// Whether the run's producers retried every unanswered write with the same client `id`
    /// (the value) and the topic promised to store each id once (within its dedup window): a
    /// value at two positions of one node's logs is then an anomaly (an id stored twice),
    /// not an at-least-once duplicate. `false` (the default): duplicates are only counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exactly_once_ids: bool,
    /// With consumers run to the end ([`Run::consumed_through`]): how long after the
    /// producers' last completion (the start of the idle phase) an acknowledged value not yet
    /// delivered may take to be delivered, in milliseconds. One that takes longer, or never
    /// comes, is a stalled backlog: an anomaly. `None` (the default): not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_delivery_bound_ms: Option<u64>,
}

/// What a client learnt about an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Definitely not applied: a 4xx or 503 refusal before anything was stored.
    Fail,
    /// Unknown: a timeout, a connection reset, a 5xx other than 503. It may have been applied.
    Info,
    /// Acknowledged.
    Ok,
}

/// One producer operation (`ack=all`), written when it completed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Produce {
    /// The producing process (a harness-side worker), unique within the run.
    pub process: u32,
    /// The message's value, unique within the run (`p3-17`).
    pub value: String,
    /// The message's key, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The partition the reply named, when the reply gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Partition>,
    /// The offset the reply named, when the reply gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<Offset>,
    /// The node the request was sent to.
    pub node: NodeId,
    /// When the request was sent.
    pub invoke_ms: u64,
    /// When the reply (or the error) arrived.
    pub complete_ms: u64,
    /// What the reply proved.
    pub outcome: Outcome,
    /// The HTTP status of the reply, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The problem `code` of a refusal, when it gave one (what a failed write was told).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Whether an `ok` reply marked the message `"duplicate": true`: its id had been stored
    /// before within the dedup window, nothing was stored now, and the partition and offset
    /// repeat the first result. `false` (the default) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
}

/// A consumer received a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deliver {
    /// The consuming process.
    pub process: u32,
    /// The subscription the message was received through.
    pub subscription: String,
    /// The message's value.
    pub value: String,
    /// The partition the delivery named.
    pub partition: Partition,
    /// The offset the delivery named.
    pub offset: Offset,
    /// The delivery's `delivery_attempt`, from 1.
    pub attempt: u32,
    /// When the message arrived at the consumer.
    pub received_ms: u64,
    /// When the receive that returned it was sent, when the history recorded it: a delivery
    /// whose receive was sent after its ack was confirmed is a violation; one whose receive was
    /// already in flight is not (the node may have leased it before applying the ack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_invoke_ms: Option<u64>,
    /// The node the consumer was talking to.
    pub node: NodeId,
}

/// A consumer's ack of a delivery, written when it completed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ack {
    /// The consuming process.
    pub process: u32,
    /// The subscription the ack was sent to.
    pub subscription: String,
    /// The value of the message acked.
    pub value: String,
    /// When the ack was sent.
    pub invoke_ms: u64,
    /// When its reply (or error) arrived.
    pub complete_ms: u64,
    /// What the reply proved: `ok` means the ack is confirmed.
    pub outcome: Outcome,
    /// The HTTP status of the reply, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it was not confirmed, when the reply said: the `code` of this receipt's entry in a
    /// 200's `failed` list (`receipt_invalid`), or a refusal's problem `code`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// One record read directly from one node's log after the faults stopped and the cluster healed.
/// A node's records of a partition appear in the order they were read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drain {
    /// The node whose log was read.
    pub node: NodeId,
    /// The partition read.
    pub partition: Partition,
    /// The record's offset.
    pub offset: Offset,
    /// The record's value.
    pub value: String,
    /// The record's key, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// The drain of one partition on one node finished. It tells an empty log from one never read:
/// a node that lost every record still has this line, with `records: 0`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drained {
    /// The node whose log was read.
    pub node: NodeId,
    /// The partition read.
    pub partition: Partition,
    /// How many `drain` lines the harness wrote for this node and partition; a different count in
    /// the history means the history is incomplete.
    pub records: u64,
}

/// Whether a fault event marks its start or its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The fault was (or was meant to be) injected.
    Start,
    /// The fault was healed.
    End,
}

/// A fault started or ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// The fault's kind, as named in [`Run::faults`] (`kill_leader`).
    pub name: String,
    /// The node it targeted, when it targeted one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
    /// When it started or ended.
    pub at_ms: u64,
    /// Start or end.
    pub phase: Phase,
    /// Whether the fault really took effect (the signal was delivered, the rule was installed);
    /// `false` when the harness tried and could not.
    pub installed: bool,
}

/// A leader of a partition, as the harness observed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Leader {
    /// The partition.
    pub partition: Partition,
    /// The node that was leader.
    pub node: NodeId,
    /// Its Raft term.
    pub term: u64,
    /// When it was observed.
    pub at_ms: u64,
}

/// A window in which produce requests could not succeed, as the harness measured it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unavailable {
    /// When the window opened.
    pub from_ms: u64,
    /// When it closed.
    pub to_ms: u64,
}
