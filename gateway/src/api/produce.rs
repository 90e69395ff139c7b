//! Producing's wire types: the query of a raw produce and its headers, a JSON batch, a raw
//! body, and the reply with its `Wharf-Durability` header.

use std::collections::BTreeMap;

use broker_core::broker::AckMode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::json::payload::WireStr;

/// Prefix of request headers that become message headers on a raw produce.
pub const HEADER_PREFIX: &str = "x-wharf-header-";
/// The reply header saying what the ack proves.
pub const DURABILITY_HEADER: &str = "wharf-durability";
/// The request header carrying a raw produce's client-chosen message id.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";
/// The W3C Trace Context header of a raw produce (and of a raw delivery's reply).
pub const TRACEPARENT_HEADER: &str = "traceparent";
/// The W3C Trace Context vendor state header that goes with [`TRACEPARENT_HEADER`].
pub const TRACESTATE_HEADER: &str = "tracestate";

/// When the reply is sent.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AckParam {
    /// At once, before the write (202).
    None,
    /// Once written to the leader's log and flushed per the fsync policy (the default).
    #[default]
    Leader,
    /// Once the leader and enough in-sync followers have it (on a single node, as `leader`).
    All,
}

impl From<AckParam> for AckMode {
    fn from(ack: AckParam) -> Self {
        match ack {
            AckParam::None => AckMode::None,
            AckParam::Leader => AckMode::Leader,
            AckParam::All => AckMode::All,
        }
    }
}

/// Query parameters of a produce.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ProduceQuery {
    /// When the reply is sent: `none` (202), `leader` (default) or `all`.
    #[param(inline)]
    pub ack: Option<AckParam>,
    /// Raw bodies only: the message's partitioning key, 1 to 4096 bytes.
    #[param(min_length = 1, max_length = 4096)]
    pub key: Option<String>,
    /// Raw bodies only: comma-separated tags, e.g. `a,b`.
    pub tags: Option<String>,
    /// Raw bodies only: deliver this many milliseconds from now (up to one year).
    #[param(minimum = 0, maximum = 31536000000_u64)]
    pub delay_ms: Option<u64>,
    /// Raw bodies only: deliver at this Unix epoch millisecond (now or past: at once).
    pub deliver_at_ms: Option<u64>,
}

/// A batch of messages to produce.
// Parsing borrows the values from the request body (no copy of a value's text is made unless
// it has JSON escapes), so a batch costs the body and its decoded values, nothing more.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProduceRequest<'a> {
    /// 1 to 1000 messages.
    #[serde(borrow)]
    #[schema(min_items = 1, max_items = 1000)]
    pub messages: Vec<ProduceMessage<'a>>,
}

/// One message to produce: exactly one of `value` and `value_base64`, and at most one of
/// `delay_ms` and `deliver_at_ms`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProduceMessage<'a> {
    /// A text payload.
    #[serde(borrow)]
    #[schema(value_type = Option<String>)]
    pub value: Option<WireStr<'a>>,
    /// A binary payload, standard base64.
    #[serde(borrow)]
    #[schema(value_type = Option<String>)]
    pub value_base64: Option<WireStr<'a>>,
    /// Partitioning key, 1 to 4096 bytes: messages with the same key go to the same partition.
    #[schema(min_length = 1, max_length = 4096)]
    pub key: Option<String>,
    /// Application headers: at most 64, with at most 16384 bytes of names and values in all;
    /// names not empty.
    pub headers: Option<BTreeMap<String, String>>,
    /// Tags, for subscription filters: at most 32, each 1 to 200 characters of
    /// `A-Z a-z 0-9 . _ - : /`.
    #[schema(max_items = 32, value_type = Option<Vec<crate::api::Tag>>, inline)]
    pub tags: Option<Vec<String>>,
    /// Client-chosen idempotency id, 1 to 200 printable ASCII characters without spaces or
    /// `/`: a repeat within the topic's `dedup_window_ms` is not stored again, and its reply
    /// entry repeats the first one with `duplicate: true`. Becomes the message id.
    #[schema(min_length = 1, max_length = 200, pattern = r"^[!-.0-~]+$")]
    pub id: Option<String>,
    /// Deliver this many milliseconds from now (up to one year).
    #[schema(minimum = 0, maximum = 31536000000_u64)]
    pub delay_ms: Option<u64>,
    /// Deliver at this Unix epoch millisecond (up to one year ahead; now or past: at once).
    pub deliver_at_ms: Option<u64>,
    /// W3C Trace Context `traceparent` of the producer's span (level 1: version `00`, or a
    /// later version whose first 55 characters parse as `00`'s; not `ff`; ids not all
    /// zeros). Stored with the message and handed back on every delivery.
    #[schema(
        max_length = 255,
        pattern = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[!-~]*)?$",
        example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    )]
    pub traceparent: Option<String>,
    /// W3C Trace Context `tracestate`: at most 512 printable ASCII characters, at most 32
    /// comma-separated `key=value` members; only with a `traceparent`.
    #[schema(max_length = 512, example = "rojo=00f067aa0ba902b7")]
    pub tracestate: Option<String>,
}

/// A raw message body: any bytes. Documented as `application/octet-stream`; every Content-Type
/// other than JSON is accepted the same way (`text/*` stored as text).
#[derive(Debug, ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct RawMessage(pub Vec<u8>);

/// Where one produced message went.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProducedMessage {
    /// The message id: the client's `id` (or `Idempotency-Key`), else server-assigned and
    /// opaque. A delayed message is cancelled by this id.
    pub id: String,
    /// The partition it went (or, delayed, will go) to.
    pub partition: u32,
    /// Its offset in the partition; absent with `ack=none` and for a delayed message (it has
    /// none until it is due).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// When a delayed message becomes deliverable, Unix epoch milliseconds; `null` when it
    /// was not delayed.
    pub deliver_at_ms: Option<u64>,
    /// `true` when the `id` was produced before within the dedup window: nothing was stored
    /// now, and this entry repeats the first result.
    pub duplicate: bool,
}

/// The reply to a produce, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProduceResponse {
    /// One entry per message, in request order.
    pub messages: Vec<ProducedMessage>,
}
