//! Topics: create, list, describe, change and delete.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use broker_core::broker::FiguresOf;
use broker_core::topic::{TopicInfo, TopicPatch, TopicSpec};

use crate::api::TopicPath;
use crate::api::topics::{CreateTopicRequest, PatchTopicRequest, Topic, TopicList};
use crate::app::AppState;
use crate::auth::Principal;
use crate::fanout::subscription_figures;
use crate::http::extract::{JsonBody, PathParams};
use crate::http::problem::{ApiError, Problem};

/// Create a topic.
///
/// `dedup_window_ms` is how long a client message `id` (or `Idempotency-Key`) is remembered:
/// a repeat within it is answered `duplicate: true` and not stored again.
///
/// ```text
/// curl -H 'content-type: application/json' localhost:8080/v1/topics \
///   -d '{"name": "orders", "partitions": 3, "dedup_window_ms": 3600000}'
/// ```
#[utoipa::path(post, path = "/v1/topics", tag = "topics",
    request_body = CreateTopicRequest,
    responses(
        (status = 201, description = "Created", body = Topic),
        (status = 400, description = "Malformed request or a value out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A topic of that name exists (`topic_exists`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over `max_body_bytes` (`message_too_large`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn create_topic(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<CreateTopicRequest>,
) -> Result<(StatusCode, Json<Topic>), ApiError> {
    let spec = TopicSpec {
        name: request.name,
        partitions: request.partitions,
        retention_ms: request.retention_ms,
        retention_bytes: request.retention_bytes,
        max_message_bytes: request.max_message_bytes,
        replication_factor: request.replication_factor,
        rate_limit: request.rate_limit.map(Into::into),
        dedup_window_ms: request.dedup_window_ms,
        internal: false,
    };
    let info = match &state.cluster {
        Some(cluster) => cluster.create_topic(spec).await?,
        None => state.broker.create_topic(spec).await?,
    };
    Ok((StatusCode::CREATED, Json(info.into())))
}

/// List topics.
///
/// Only the topics the caller's token grants something on.
#[utoipa::path(get, path = "/v1/topics", tag = "topics",
    responses((status = 200, description = "The topics the caller has a grant on", body = TopicList)))]
pub(crate) async fn list_topics(
    State(state): State<AppState>,
    principal: Option<Extension<Principal>>,
) -> Json<TopicList> {
    let visible = |info: &TopicInfo| {
        principal
            .as_ref()
            .is_none_or(|Extension(principal)| principal.grants.allows_any(&info.config.name))
    };
    let topics = state
        .broker
        .list_topics()
        .into_iter()
        .filter(visible)
        .map(Into::into)
        .collect();
    Json(TopicList { topics })
}

/// Describe a topic.
///
/// Its settings and, per partition, the start and end offsets, bytes on disk and leader.
#[utoipa::path(get, path = "/v1/topics/{topic}", tag = "topics", params(TopicPath),
    responses(
        (status = 200, description = "The topic", body = Topic),
        (status = 404, description = "No such topic (`topic_not_found`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn describe_topic(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathParams(path): PathParams<TopicPath>,
) -> Result<Response, ApiError> {
    let of = FiguresOf::Topic;
    if let Some(figures) =
        subscription_figures::led_asked(&state, &headers, &path.topic, of).await?
    {
        return Ok(Json(figures).into_response());
    }
    let mut topic: Topic = state.broker.describe_topic(&path.topic)?.into();
    crate::fanout::topic_stats::fill_from_leaders(&state, &headers, &mut topic).await;
    if state.cluster.is_some() {
        topic.delayed = subscription_figures::delayed(&state, &headers, &path.topic).await?;
    }
    Ok(Json(topic).into_response())
}

/// Change a topic's retention, limits or dedup window.
///
/// ```text
/// curl -X PATCH -H 'content-type: application/json' localhost:8080/v1/topics/orders \
///   -d '{"dedup_window_ms": 86400000}'
/// ```
#[utoipa::path(patch, path = "/v1/topics/{topic}", tag = "topics", params(TopicPath),
    request_body = PatchTopicRequest,
    responses(
        (status = 200, description = "The changed topic", body = Topic),
        (status = 400, description = "Malformed request or a value out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic (`topic_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn update_topic(
    State(state): State<AppState>,
    PathParams(path): PathParams<TopicPath>,
    JsonBody(request): JsonBody<PatchTopicRequest>,
) -> Result<Json<Topic>, ApiError> {
    let patch = TopicPatch {
        retention_ms: request.retention_ms,
        retention_bytes: request.retention_bytes,
        max_message_bytes: request.max_message_bytes,
        rate_limit: request.rate_limit.map(Into::into),
        dedup_window_ms: request.dedup_window_ms,
    };
    Ok(Json(
        state.broker.update_topic(&path.topic, patch).await?.into(),
    ))
}

/// Delete a topic with its messages and subscriptions.
#[utoipa::path(delete, path = "/v1/topics/{topic}", tag = "topics", params(TopicPath),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such topic (`topic_not_found`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn delete_topic(
    State(state): State<AppState>,
    PathParams(path): PathParams<TopicPath>,
) -> Result<StatusCode, ApiError> {
    match &state.cluster {
        Some(cluster) => cluster.delete_topic(&path.topic).await?,
        None => state.broker.delete_topic(&path.topic).await?,
    }
    Ok(StatusCode::NO_CONTENT)
}
