//! Seek: move a subscription to the start, the end, a point in time, or explicit offsets
//! (message reset and replay).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;

use crate::api::SubscriptionPath;
use crate::api::seek::{SeekRequest, SeekResponse};
use crate::app::AppState;
use crate::fanout::forward::FORWARDED_HEADER;
use crate::fanout::gather;
use crate::http::extract::{JsonBody, PathParams};
use crate::http::problem::{ApiError, Problem};

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
pub(crate) async fn seek(
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
