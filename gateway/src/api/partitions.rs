//! Offset reads' wire types: the query, a page of the log and its records, and the header
//! naming the node that served the read.
//!
//! A page is written by [`message::partition_page`](crate::json::message::partition_page)
//! straight from the records; [`PartitionPage`] and [`LogMessage`] are its OpenAPI schema and
//! the oracle its tests compare it with, not what it is built from. (Their own docs are the
//! schema's descriptions, so this note is here.)

use std::collections::BTreeMap;

use broker_core::StoredRecord;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::json::payload::{encode_value, headers_map};

/// Query parameters of an offset read.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReadQuery {
    /// First offset to read (default 0: the start of the log).
    pub offset: Option<u64>,
    /// At most this many records, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub max: Option<usize>,
    /// At the end of the log, wait up to this many milliseconds for a record, 0 to 60000
    /// (default 0).
    #[param(minimum = 0, maximum = 60000)]
    pub wait_ms: Option<u64>,
}

/// One record read by offset.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogMessage {
    /// Its offset.
    pub offset: u64,
    /// The message id.
    pub id: String,
    /// Its key; `null` without one.
    pub key: Option<String>,
    /// A text payload (present when produced as text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A binary payload, standard base64 (present when produced as binary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_base64: Option<String>,
    /// Application headers.
    pub headers: BTreeMap<String, String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Publish time, Unix epoch milliseconds.
    pub publish_time_ms: u64,
    /// The producer's W3C `traceparent`, as given (absent when none was).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]
    pub traceparent: Option<String>,
    /// The producer's W3C `tracestate`, as given (absent when none was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// A page of a partition's log.
#[derive(Debug, Serialize, ToSchema)]
pub struct PartitionPage {
    /// Records from the asked offset (or the start of the log, if that was earlier).
    pub messages: Vec<LogMessage>,
    /// The offset to read next.
    pub next_offset: u64,
    /// The partition's first stored offset.
    pub start_offset: u64,
    /// The partition's end offset at the time of the read.
    pub end_offset: u64,
}

impl From<StoredRecord> for LogMessage {
    fn from(stored: StoredRecord) -> Self {
        let (value, value_base64) = encode_value(&stored.record);
        let record = stored.record;
        LogMessage {
            offset: stored.offset,
            id: record.id,
            key: record.key,
            value,
            value_base64,
            headers: headers_map(&record.headers),
            tags: record.tags,
            publish_time_ms: record.timestamp_ms,
            traceparent: record.trace.as_ref().map(|t| t.traceparent().to_owned()),
            tracestate: record
                .trace
                .as_ref()
                .and_then(|t| t.tracestate())
                .map(str::to_owned),
        }
    }
}

/// The header of an offset read's answer naming the node that served it (in a cluster).
pub const SERVED_BY_HEADER: &str = "wharf-served-by";
