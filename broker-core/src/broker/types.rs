//! The facade's request and reply types.

use bytes::Bytes;

use crate::message::StoredRecord;
use crate::subscription::SubscriptionConfig;

/// One message as a producer hands it in.
#[derive(Debug, Clone, Default)]
pub struct NewMessage {
    /// Partitioning key: the same key always goes to the same partition.
    pub key: Option<String>,
    /// The payload.
    pub value: Bytes,
    /// The payload was sent as binary (base64 or octet-stream), not text.
    pub binary: bool,
    /// Application headers.
    pub headers: Vec<(String, String)>,
    /// Tags for subscription filters.
    pub tags: Vec<String>,
    /// Client-chosen id: a repeat within the topic's dedup window is not stored again.
    pub id: Option<String>,
    /// Deliver later instead of now.
    pub delay: Option<Delay>,
    /// The producer's W3C trace context (checked by [`crate::TraceContext::parse`]).
    pub trace: Option<crate::TraceContext>,
}

/// When a delayed message becomes deliverable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delay {
    /// This many milliseconds after the produce.
    AfterMs(u64),
    /// At this Unix epoch millisecond (now or in the past: at once).
    AtMs(u64),
}

/// When a produce is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AckMode {
    /// At once, before the write (fire-and-forget).
    None,
    /// Once the leader has written it, flushed per the fsync policy (the default).
    #[default]
    Leader,
    /// Once the leader and enough in-sync followers have it; on a single node, as `Leader`.
    All,
}

/// What an answered produce proves (the `Wharf-Durability` reply header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Nothing yet: the messages were only queued.
    None,
    /// Written to the leader's log (in the OS page cache), not yet fsynced.
    LeaderWritten,
    /// Written and fsynced on the leader.
    LeaderFsynced,
    /// Committed by a majority of the partition's replicas, each written (in its page cache)
    /// per its fsync policy.
    Replicated,
    /// Committed by a majority of the partition's replicas, each fsynced.
    ReplicatedFsynced,
}

impl Durability {
    /// What two answers together prove: the weakest guarantee both give. `Replicated` (a
    /// majority has it, unfsynced) and `LeaderFsynced` (one node fsynced) together prove only
    /// `LeaderWritten`.
    pub fn weakest(self, other: Durability) -> Durability {
        use Durability::{LeaderFsynced, LeaderWritten, None, Replicated, ReplicatedFsynced};
        let fsynced = |d| matches!(d, LeaderFsynced | ReplicatedFsynced);
        let replicated = |d| matches!(d, Replicated | ReplicatedFsynced);
        if self == None || other == None {
            return None;
        }
        match (
            replicated(self) && replicated(other),
            fsynced(self) && fsynced(other),
        ) {
            (true, true) => ReplicatedFsynced,
            (true, false) => Replicated,
            (false, true) => LeaderFsynced,
            (false, false) => LeaderWritten,
        }
    }

    /// The durability a header value names ([`Durability::as_str`]).
    pub fn from_header(value: &str) -> Option<Durability> {
        [
            Durability::None,
            Durability::LeaderWritten,
            Durability::LeaderFsynced,
            Durability::Replicated,
            Durability::ReplicatedFsynced,
        ]
        .into_iter()
        .find(|d| d.as_str() == value)
    }

    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::LeaderWritten => "leader-written",
            Durability::LeaderFsynced => "leader-fsynced",
            Durability::Replicated => "replicated",
            Durability::ReplicatedFsynced => "replicated-fsynced",
        }
    }
}

/// Where one produced message went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Produced {
    /// The message id.
    pub id: String,
    /// Its partition.
    pub partition: u32,
    /// Its offset; `None` when the produce did not wait for the write (`ack=none`) or the
    /// message is delayed.
    pub offset: Option<u64>,
    /// When a delayed message becomes deliverable.
    pub deliver_at_ms: Option<u64>,
    /// The id was produced before within the dedup window: this is the first result, and
    /// nothing was stored now.
    pub duplicate: bool,
}

/// The reply to a produce: one entry per message, in request order.
#[derive(Debug, Clone)]
pub struct ProduceOutcome {
    /// Per message, in request order.
    pub messages: Vec<Produced>,
    /// What the reply proves.
    pub durability: Durability,
}

/// A receive request, already range-checked by [`crate::Broker::receive`].
#[derive(Debug, Clone, Default)]
pub struct ReceiveRequest {
    /// At most this many messages (1..=1000).
    pub max_messages: usize,
    /// Long-poll for at most this many milliseconds (0..=60000).
    pub wait_ms: u64,
    /// Lease for these messages; `None` takes the subscription's `ack_timeout_ms`.
    pub ack_timeout_ms: Option<u64>,
    /// Retry-safe receive: a repeat with the same id while the leases last returns the same
    /// messages with the same receipts.
    pub attempt_id: Option<String>,
    /// Where the answer's memory comes from; `None` reads up to
    /// [`crate::limits::MAX_READ_BYTES`] of values without asking.
    pub memory: Option<crate::memory::AnswerMemory>,
}

/// One leased message handed to a consumer.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Opaque, MAC'd receipt that acks, nacks or extends this delivery.
    pub receipt: String,
    /// The partition it came from.
    pub partition: u32,
    /// 1 for the first delivery, then one more per redelivery.
    pub delivery_attempt: u32,
    /// The message and its offset.
    pub message: StoredRecord,
    /// The lease id inside the receipt (for retry-safe receives).
    pub(crate) lease: u64,
}

/// Why one receipt of an ack, nack or extend failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptFailure {
    /// Not a receipt of this subscription, tampered with, or its lease has ended (the message
    /// may since have been redelivered under a newer receipt).
    Invalid,
}

/// The reply to an ack, nack or extend.
#[derive(Debug, Clone, Default)]
pub struct SettleOutcome {
    /// How many receipts took effect.
    pub succeeded: usize,
    /// The receipts that did not, with why.
    pub failed: Vec<(String, ReceiptFailure)>,
}

/// Counters and gauges of one subscription (or of one of its partitions).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SubscriptionStats {
    /// Messages not yet acked: never delivered, in flight, or waiting for redelivery.
    pub backlog: u64,
    /// Messages leased to a consumer right now.
    pub in_flight: u64,
    /// Messages waiting out a retry backoff before redelivery.
    pub waiting_retry: u64,
    /// Age of the oldest unacked message, in milliseconds (`None` with nothing unacked).
    pub oldest_unacked_age_ms: Option<u64>,
    /// Deliveries made, first ones and redeliveries.
    pub delivered: u64,
    /// Redeliveries made.
    pub redelivered: u64,
    /// Messages acked.
    pub acked: u64,
    /// Messages the filter skipped (counted as acked).
    pub filtered: u64,
    /// Messages moved to the dead-letter topic.
    pub dead_lettered: u64,
    /// Delayed messages of the topic not yet due.
    pub delayed: u64,
    /// Partitions on which the subscription holds
    /// [`crate::limits::MAX_UNACKED_PER_PARTITION`] unacked messages: receives get no new
    /// messages from them until some of those are acked (or nacked into dead letters).
    pub unacked_limit_reached_partitions: u64,
}

impl SubscriptionStats {
    /// Adds another partition's (or node's) figures: counts add up, the oldest unacked age
    /// is the larger one.
    pub fn add(&mut self, other: &SubscriptionStats) {
        self.backlog += other.backlog;
        self.in_flight += other.in_flight;
        self.waiting_retry += other.waiting_retry;
        self.oldest_unacked_age_ms = self.oldest_unacked_age_ms.max(other.oldest_unacked_age_ms);
        self.delivered += other.delivered;
        self.redelivered += other.redelivered;
        self.acked += other.acked;
        self.filtered += other.filtered;
        self.dead_lettered += other.dead_lettered;
        self.delayed += other.delayed;
        self.unacked_limit_reached_partitions += other.unacked_limit_reached_partitions;
    }
}

/// One subscription's figures on each partition of its topic, as this node's tables show
/// them (see [`crate::broker::Broker::subscription_figures`]).
#[derive(Debug, Clone)]
pub struct SubscriptionFigures {
    /// Settings.
    pub config: SubscriptionConfig,
    /// Per partition, in partition order: its figures here. `delayed` counts only the
    /// messages its table holds back (not the topic's schedule, see [`TopicFigures`]).
    pub partitions: Vec<SubscriptionStats>,
}

/// Whose figures [`crate::broker::Broker::subscription_figures`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FiguresOf<'a> {
    /// Every subscription of the topic.
    All,
    /// The subscription of this name.
    One(&'a str),
    /// None: only the topic's delayed messages.
    Topic,
}

/// Per-partition figures of a topic's subscriptions on this node, and which partitions this
/// node serves (whose figures are live here).
#[derive(Debug, Clone)]
pub struct TopicFigures {
    /// Per partition: whether this node serves its subscriptions now (always on a single
    /// node; in a cluster, only on the partition's leader).
    pub served: Vec<bool>,
    /// Per partition: delayed messages not yet due, as this node's schedule holds them.
    pub delayed: Vec<u64>,
    /// The subscriptions asked for, in name order.
    pub subscriptions: Vec<SubscriptionFigures>,
}

/// A subscription's settings and stats.
#[derive(Debug, Clone)]
pub struct SubscriptionInfo {
    /// Settings.
    pub config: SubscriptionConfig,
    /// Stats at the time of the call.
    pub stats: SubscriptionStats,
}

/// The reply to an offset read.
#[derive(Debug, Clone)]
pub struct PartitionRead {
    /// Records from the asked offset (or the start of the log, if it was earlier).
    pub messages: Vec<StoredRecord>,
    /// The offset to read next.
    pub next_offset: u64,
    /// The partition's first stored offset.
    pub start_offset: u64,
    /// The partition's end offset at the time of the read.
    pub end_offset: u64,
}

#[cfg(test)]
mod tests {
    use super::Durability;

    const ALL: [Durability; 5] = [
        Durability::None,
        Durability::LeaderWritten,
        Durability::LeaderFsynced,
        Durability::Replicated,
        Durability::ReplicatedFsynced,
    ];

    #[test]
    fn the_weakest_of_two_durabilities_is_what_both_prove() {
        for d in ALL {
            assert_eq!(d.weakest(d), d);
            assert_eq!(d.weakest(Durability::None), Durability::None);
            assert_eq!(d.weakest(Durability::ReplicatedFsynced), d);
            assert_eq!(Durability::from_header(d.as_str()), Some(d));
        }
        assert_eq!(
            Durability::Replicated.weakest(Durability::LeaderFsynced),
            Durability::LeaderWritten
        );
        assert_eq!(Durability::from_header("durable"), None);
    }
}
