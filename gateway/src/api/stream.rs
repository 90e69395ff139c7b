//! Streaming's wire types: the query of a stream and the events it sends.

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// Query parameters of a stream.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Unacked messages this stream may hold at once, 1 to 1000 (default 10).
    #[param(minimum = 1, maximum = 1000)]
    pub max_in_flight: Option<usize>,
    /// Lease of each message sent, 1000 to 43200000; absent: the subscription's.
    #[param(minimum = 1000, maximum = 43200000)]
    pub ack_timeout_ms: Option<u64>,
    /// Idle time after which a heartbeat comment is sent, 100 to 60000 (default 15000).
    #[param(minimum = 100, maximum = 60000)]
    pub heartbeat_ms: Option<u64>,
}

/// One event of a stream as a Server-Sent Events parser reads it (OpenAPI 3.1 has no
/// `itemSchema`, so this is the per-event `schema` of `text/event-stream`, the way
/// schemathesis reads it). Heartbeats are comment lines: no event.
#[derive(Debug, ToSchema)]
pub struct StreamEvent {
    /// `message` for a message; `error` for the last event of a stream whose subscription or
    /// topic went away.
    pub event: StreamEventKind,
    /// A message's receipt (`id:`); a parser keeps the last one on the `error` event.
    pub id: Option<String>,
    /// JSON text: for `message` the object a receive returns (`ReceivedMessage`); for
    /// `error` a problem (`Problem`: `subscription_not_found`, `topic_not_found`, …).
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

/// The kinds of event a stream sends.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StreamEventKind {
    /// A message, leased to the receipt in `id`.
    Message,
    /// The stream's end: the problem that ended it in `data`.
    Error,
}
