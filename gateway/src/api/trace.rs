//! Message lookups' wire types: a message's trace, and the query and answer of a lookup by
//! key.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::partitions::LogMessage;

/// Who did something: a producer or a consumer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Actor {
    /// The token's `sub`; `null` with auth off, or when the token asking may not see it.
    pub principal: Option<String>,
    /// The client's address; `null` when unknown (a request forwarded between cluster
    /// nodes), or when the token asking may not see it.
    pub client_addr: Option<String>,
    /// The node that took the request; `null` on a single node.
    pub node: Option<u64>,
}

/// Where and when the message was produced, and by whom.
#[derive(Debug, Serialize, ToSchema)]
pub struct Produced {
    /// Publish time, Unix epoch milliseconds.
    pub time_ms: u64,
    /// The producer's principal (see [`Actor`]).
    pub principal: Option<String>,
    /// The producer's address (see [`Actor`]).
    pub client_addr: Option<String>,
    /// The node that took the produce; `null` on a single node.
    pub node: Option<u64>,
    /// Its partition.
    pub partition: u32,
    /// Its offset.
    pub offset: u64,
}

/// One step of a message's life on a subscription.
#[derive(Debug, Serialize, ToSchema)]
pub struct TraceEvent {
    /// When, Unix epoch milliseconds.
    pub time_ms: u64,
    /// `delivered`, `lease_extended`, `lease_expired` (it was delivered again with no
    /// answer to the delivery before), `nacked`, `acked`, `dead_lettered` or `redriven`.
    pub kind: String,
    /// The delivery attempt it is about (1 for the first delivery).
    pub attempt: Option<u32>,
    /// The consumer, for deliveries, acks and nacks when known.
    pub consumer: Option<Actor>,
    /// A nack's error text.
    pub error: Option<String>,
    /// A nack's retry time, or a delivery's lease end when known, Unix epoch milliseconds.
    pub until_ms: Option<u64>,
    /// The offset of the copy the event is about (a redriven copy's differs from the
    /// message's).
    pub offset: u64,
}

/// The message on one subscription.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionTraceView {
    /// The subscription.
    pub name: String,
    /// `pending`, `delayed`, `in_flight`, `acked`, `filtered`, `dead_lettered` or `skipped`
    /// (settled without an ack: a seek passed it, the subscription began after it, or
    /// retention removed it before it was delivered).
    pub state: String,
    /// Until when it is delayed or leased, Unix epoch milliseconds.
    pub state_until_ms: Option<u64>,
    /// Its events, oldest first.
    pub events: Vec<TraceEvent>,
}

/// A message and its trace.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageTraceAnswer {
    /// The topic.
    pub topic: String,
    /// The message as an offset read shows it (the first copy: the one its producer made).
    pub message: LogMessage,
    /// Where, when and by whom it was produced.
    pub produced: Produced,
    /// For each subscription of the topic, by name.
    pub subscriptions: Vec<SubscriptionTraceView>,
    /// Copies of the message with the same id made later (redriven dead letters), oldest
    /// first: partition, offset and time.
    pub copies: Vec<MessageCopy>,
}

/// A later copy of a message.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageCopy {
    /// Its partition.
    pub partition: u32,
    /// Its offset.
    pub offset: u64,
    /// When it was appended, Unix epoch milliseconds.
    pub time_ms: u64,
    /// The subscription it was redriven to, if it is a redriven dead letter.
    pub redriven_to: Option<String>,
}

/// Query of a key lookup.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct KeyQuery {
    /// The key.
    #[param(min_length = 1, max_length = 4096)]
    pub key: String,
    /// At most this many messages, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

/// A message found by key.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyedMessage {
    /// Its partition.
    pub partition: u32,
    /// The message as an offset read shows it.
    #[serde(flatten)]
    pub message: LogMessage,
}

/// The messages of a key.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyAnswer {
    /// The topic.
    pub topic: String,
    /// The key.
    pub key: String,
    /// The newest messages with the key, newest first.
    pub messages: Vec<KeyedMessage>,
}
