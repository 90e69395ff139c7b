//! Reading a partition's log directly by offset, without leases (Kafka-style).
//!
//! A page is written by [`message::partition_page`] straight from the records;
//! [`PartitionPage`] is its OpenAPI schema.

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use broker_core::BrokerError;
use broker_core::broker::PartitionRead;

use crate::api::PartitionPath;
use crate::api::partitions::{PartitionPage, ReadQuery, SERVED_BY_HEADER};
use crate::app::AppState;
use crate::fanout::forward::NearReplica;
use crate::http::extract::{PathParams, QueryParams};
use crate::http::long_poll::long_poll;
use crate::http::problem::{ApiError, Problem};
use crate::json::message::{self, json_response};
use crate::limits::memory::answer_memory;

/// Default records per offset read: a page that fits comfortably in one reply.
pub(crate) const DEFAULT_READ_MAX: usize = 100;

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
pub(crate) async fn read_partition(
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
