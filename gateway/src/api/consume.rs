//! Consuming's wire types: a receive and the messages it leases; acks, nacks and extends by
//! receipt, and their per-receipt outcomes.
//!
//! The receive reply is written by
//! [`message::receive_reply`](crate::json::message::receive_reply) straight from the
//! deliveries; [`ReceiveResponse`] and [`ReceivedMessage`] are its OpenAPI schema and the
//! oracle its tests compare it with, not what it is built from. (Their own docs are the
//! schema's descriptions, so this note is here.)

use broker_core::broker::Delivery;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::partitions::LogMessage;

/// A receive; every field is optional and an empty body is fine.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiveBody {
    /// At most this many messages, 1 to 1000 (default 10).
    #[schema(minimum = 1, maximum = 1000)]
    pub max_messages: Option<usize>,
    /// Long-poll for at most this many milliseconds, 0 to 60000 (default 20000).
    #[schema(minimum = 0, maximum = 60000)]
    pub wait_ms: Option<u64>,
    /// Lease for these messages, 1000 to 43200000; `null` takes the subscription's.
    #[schema(minimum = 1000, maximum = 43200000)]
    pub ack_timeout_ms: Option<u64>,
    /// Retry-safe receive, 1 to 128 printable ASCII characters without spaces: a repeat with
    /// the same id while the leases last returns the same messages with the same receipts,
    /// instead of leasing new ones (SQS `ReceiveRequestAttemptId`).
    #[schema(min_length = 1, max_length = 128, pattern = r"^[!-~]+$")]
    pub attempt_id: Option<String>,
}

/// One leased message: the record as an offset read returns it, with its delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReceivedMessage {
    /// Acks, nacks or extends this delivery; valid until its lease ends.
    pub receipt: String,
    /// The partition it came from.
    pub partition: u32,
    /// 1 for the first delivery, one more per redelivery.
    pub delivery_attempt: u32,
    /// The record: offset, id, key, value or value_base64, headers, tags, publish time.
    #[serde(flatten)]
    pub message: LogMessage,
}

/// The messages received; empty when none arrived within `wait_ms`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReceiveResponse {
    /// The leased messages.
    pub messages: Vec<ReceivedMessage>,
}

/// Receipts to ack.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckRequest {
    /// 1 to 1000 receipts.
    #[schema(min_items = 1, max_items = 1000)]
    pub receipts: Vec<String>,
}

/// Receipts to nack: redeliver after `delay_ms`, or after the retry backoff.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NackRequest {
    /// 1 to 1000 receipts.
    #[schema(min_items = 1, max_items = 1000)]
    pub receipts: Vec<String>,
    /// Redeliver after this many milliseconds, 0 to 86400000 (one day); `null` uses the retry
    /// backoff.
    #[schema(minimum = 0, maximum = 86400000)]
    pub delay_ms: Option<u64>,
    /// Why processing failed (kept to its first 1024 characters): should this turn the
    /// message into a dead letter, it carries the text in its `wharf-dlq-error` header.
    pub error: Option<String>,
}

/// Receipts whose leases to extend.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendRequest {
    /// 1 to 1000 receipts.
    #[schema(min_items = 1, max_items = 1000)]
    pub receipts: Vec<String>,
    /// The new lease from now, 1000 to 43200000 milliseconds.
    #[schema(minimum = 1000, maximum = 43200000)]
    pub ack_timeout_ms: u64,
}

/// A receipt that did not take effect.
#[derive(Debug, Serialize, ToSchema)]
pub struct FailedReceipt {
    /// The receipt as sent.
    pub receipt: String,
    /// Why: `receipt_invalid` (unknown, tampered with, or its lease has ended).
    pub code: &'static str,
}

/// The reply to an ack.
#[derive(Debug, Serialize, ToSchema)]
pub struct AckResponse {
    /// Receipts acked.
    pub acked: usize,
    /// Receipts that failed, with why.
    pub failed: Vec<FailedReceipt>,
}

/// The reply to a nack.
#[derive(Debug, Serialize, ToSchema)]
pub struct NackResponse {
    /// Receipts nacked.
    pub nacked: usize,
    /// Receipts that failed, with why.
    pub failed: Vec<FailedReceipt>,
}

/// The reply to an extend.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExtendResponse {
    /// Leases extended.
    pub extended: usize,
    /// Receipts that failed, with why.
    pub failed: Vec<FailedReceipt>,
}

impl From<Delivery> for ReceivedMessage {
    fn from(delivery: Delivery) -> Self {
        ReceivedMessage {
            receipt: delivery.receipt,
            partition: delivery.partition,
            delivery_attempt: delivery.delivery_attempt,
            message: delivery.message.into(),
        }
    }
}
