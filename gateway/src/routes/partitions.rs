//! Reading a partition's log directly by offset, without leases (Kafka-style).
//!
//! A page is written by [`message::partition_page`] straight from the records;
//! [`PartitionPage`] and [`LogMessage`] are its OpenAPI schema and the oracle its tests compare
//! it with, not what it is built from. (Their own docs are the schema's descriptions, so this
//! note is here.)

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use broker_core::broker::PartitionRead;
use broker_core::{BrokerError, StoredRecord};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::fanout::forward::NearReplica;
use crate::http::extract::{PathParams, QueryParams};
use crate::http::long_poll::long_poll;
use crate::http::problem::{ApiError, Problem};
use crate::json::message::{self, json_response};
use crate::json::payload::{encode_value, headers_map};
use crate::limits::memory::answer_memory;
use crate::routes::PartitionPath;

/// Default records per offset read: a page that fits comfortably in one reply.
pub const DEFAULT_READ_MAX: usize = 100;

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

/// Read a partition by offset.
///
/// Reads the log without leases; at the end of the log, long-polls up to `wait_ms`.
///
/// In a cluster the read may be served by a follower rather than the partition's leader
/// (as Kafka's follower fetching): by the node asked when it holds an in-sync replica, else
/// by a replica in the asked node's zone, else by the leader. A follower serves only
/// committed records, and only while in sync: it heard the leader within 250 ms and applied
/// what the leader had committed then. So a page is at most 250 ms behind the leader's
/// commit: a record committed within the last 250 ms may be missing yet (read again, or
/// long-poll with `wait_ms`, which a follower wakes as it applies), and `end_offset` is the
/// serving replica's committed end. An offset past a follower's end is read from the leader.
/// The header `Wharf-Served-By` names the node that served the read.
#[utoipa::path(get, path = "/v1/topics/{topic}/partitions/{partition}/messages", tag = "messages",
    params(PartitionPath, ReadQuery),
    responses(
        (status = 200, description = "A page of the log", body = PartitionPage,
            headers(("Wharf-Served-By" = u64, description = "In a cluster: the id of the node that served the read (the leader or a follower)"))),
        (status = 400, description = "A bad parameter (`invalid_request`) or an offset past the end (`offset_out_of_range`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic or partition (`topic_not_found`, `partition_not_found`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn read_partition(
    State(state): State<AppState>,
    PathParams(path): PathParams<PartitionPath>,
    QueryParams(query): QueryParams<ReadQuery>,
) -> Result<Response, ApiError> {
    let offset = query.offset.unwrap_or(0);
    let max = query.max.unwrap_or(DEFAULT_READ_MAX);
    let wait_ms = query.wait_ms.unwrap_or(0);
    let memory = answer_memory(&state.edge.memory);
    let attempt = |wait_ms| {
        state.broker.read_partition(
            &path.topic,
            path.partition,
            offset,
            max,
            wait_ms,
            Some(&memory),
        )
    };
    let has_records = |read: &PartitionRead| !read.messages.is_empty();
    let read = match long_poll(&state, wait_ms, attempt, has_records).await {
        Ok(read) => read,
        Err(error) => {
            let near = match &error {
                BrokerError::NotLeader { .. } => {
                    state.broker.read_replica_near(&path.topic, path.partition)
                }
                _ => None,
            };
            let mut refusal = ApiError::from(error).into_response();
            if let Some(node) = near {
                refusal.extensions_mut().insert(NearReplica(node));
            }
            return Ok(refusal);
        }
    };
    // Serialized here, while `memory` still holds the reservation; the edge then charges the
    // serialized body until it is sent.
    let mut answer = json_response(message::partition_page(&read));
    if let Some(cluster) = &state.cluster {
        answer.headers_mut().insert(
            HeaderName::from_static(SERVED_BY_HEADER),
            HeaderValue::from(cluster.node_id()),
        );
    }
    Ok(answer)
}
