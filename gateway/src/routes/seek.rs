//! Seek: move a subscription to the start, the end, a point in time, or explicit offsets
//! (message reset and replay).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use broker_core::broker::SeekTarget;
use broker_core::limits::{MAX_INT64_SETTING, check_range};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::app::AppState;
use crate::fanout::forward::FORWARDED_HEADER;
use crate::fanout::gather;
use crate::http::extract::{JsonBody, PathParams};
use crate::http::problem::{ApiError, Problem};
use crate::routes::{SubscriptionPath, present};

/// An end of the log to seek to.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SeekEnd {
    /// The oldest stored message of every partition: replay everything.
    Earliest,
    /// The end of every partition: skip the backlog.
    Latest,
}

/// Where to move the subscription: exactly one of `to`, `timestamp_ms` and `offsets` (a
/// second one, even `null`, is refused).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(max_properties = 1)]
pub struct SeekRequest {
    /// `earliest` or `latest`.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = SeekEnd)]
    pub to: Option<Option<SeekEnd>>,
    /// The first message of every partition published at or after this Unix epoch
    /// millisecond.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = u64, maximum = 9223372036854775807_u64)]
    pub timestamp_ms: Option<Option<u64>>,
    /// Offsets by partition number (`{"0": 42}`), for the partitions named only; each
    /// within the partition's stored range (`start_offset..=end_offset`).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = BTreeMap<String, u64>)]
    pub offsets: Option<Option<BTreeMap<String, u64>>>,
}

/// Where the subscription now stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeekResponse {
    /// The next offset to deliver, by partition number, for every partition moved.
    pub positions: BTreeMap<String, u64>,
}

impl SeekRequest {
    /// The one target the request names.
    fn target(self) -> Result<SeekTarget, ApiError> {
        match (self.to, self.timestamp_ms, self.offsets) {
            (Some(Some(SeekEnd::Earliest)), None, None) => Ok(SeekTarget::Earliest),
            (Some(Some(SeekEnd::Latest)), None, None) => Ok(SeekTarget::Latest),
            (None, Some(Some(at)), None) => Ok(SeekTarget::Timestamp(check_range(
                "timestamp_ms",
                at,
                0,
                MAX_INT64_SETTING,
            )?)),
            (None, None, Some(Some(offsets))) => offsets_target(offsets),
            (Some(None), None, None) | (None, Some(None), None) | (None, None, Some(None)) => {
                Err(ApiError::invalid("the seek target may not be null"))
            }
            _ => Err(ApiError::invalid(
                "give exactly one of to, timestamp_ms and offsets",
            )),
        }
    }
}

fn offsets_target(offsets: BTreeMap<String, u64>) -> Result<SeekTarget, ApiError> {
    if offsets.is_empty() {
        return Err(ApiError::invalid("offsets: name at least one partition"));
    }
    offsets
        .into_iter()
        .map(|(partition, offset)| {
            let number = partition.parse::<u32>().map_err(|_| {
                ApiError::invalid(format!("offsets: {partition:?} is not a partition number"))
            })?;
            Ok((number, offset))
        })
        .collect::<Result<_, _>>()
        .map(SeekTarget::Offsets)
}

/// Seek: replay or skip messages.
///
/// Moves the subscription's position: `{"to": "earliest"}` (replay everything stored),
/// `{"to": "latest"}` (skip the backlog), `{"timestamp_ms": t}` (the first message of each
/// partition published at or after `t`), or `{"offsets": {"0": 42}}` (these partitions only).
/// Every message from the new position on is delivered again, acked before or not; the
/// leases of the partitions moved end, so their receipts stop working, and remembered
/// receive `attempt_id`s are forgotten. Bad input changes nothing.
///
/// ```text
/// curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/seek \\
///   -d '{"timestamp_ms": 1735689600000}'
/// curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/seek \\
///   -d '{"offsets": {"0": 42}}'
/// ```
#[utoipa::path(post, path = "/v1/topics/{topic}/subscriptions/{sub}/seek", tag = "consume",
    params(SubscriptionPath), request_body = SeekRequest,
    responses(
        (status = 200, description = "The new positions", body = SeekResponse),
        (status = 400, description = "Not exactly one target, an unknown `to`, a partition key that is not a number, or an offset outside the stored range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic, subscription or partition (`topic_not_found`, `subscription_not_found`, `partition_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn seek(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
    headers: HeaderMap,
    JsonBody(request): JsonBody<SeekRequest>,
) -> Result<Json<SeekResponse>, ApiError> {
    let target = request.target()?;
    let positions = if let Some(leaders) = gather::leaders_to_gather(&state, &headers, &path.topic)?
    {
        gather::scatter_seek(&state, &headers, &path, target, leaders).await?
    } else if state.cluster.is_some() && headers.contains_key(FORWARDED_HEADER) {
        // Sent here by another node: the partitions this node leads.
        state
            .broker
            .seek_led(&path.topic, &path.sub, target)
            .await?
    } else {
        state.broker.seek(&path.topic, &path.sub, target).await?
    };
    let positions = positions
        .into_iter()
        .map(|(partition, offset)| (partition.to_string(), offset))
        .collect();
    Ok(Json(SeekResponse { positions }))
}
