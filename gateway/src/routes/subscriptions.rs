//! Subscriptions (consumer groups): create (with retries, dead letters, a tag filter and key
//! order), list, describe with stats, delete.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use broker_core::broker::FiguresOf;
use broker_core::subscription::SubscriptionSpec;

use crate::api::subscriptions::{CreateSubscriptionRequest, Subscription, SubscriptionList};
use crate::api::{SubscriptionPath, TopicPath};
use crate::app::AppState;
use crate::fanout::subscription_figures::{Gathered, gather};
use crate::http::extract::{JsonBody, PathParams};
use crate::http::problem::{ApiError, Problem};

/// Create a subscription.
///
/// A received message not acked within its lease, or nacked, comes back with
/// `delivery_attempt + 1` after the retry backoff; after `max_deliveries` attempts it moves to
/// `dead_letter_topic` with `wharf-dlq-*` headers naming its origin (`topic`,
/// `subscription`, `partition`, `offset`, `id`, `attempts`, `published-ms`, and `error`: the
/// last nack's error text) and counts as `dead_lettered`. `filter.tags` delivers only
/// messages with one of the tags. `ordering: "key"` delivers each key's messages in publish
/// order, one at a time.
///
/// ```text
/// curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions -d '{
///   "name": "billing", "start": "earliest", "ack_timeout_ms": 30000, "max_deliveries": 5,
///   "retry": {"initial_backoff_ms": 1000, "max_backoff_ms": 60000, "multiplier": 2.0},
///   "dead_letter_topic": "orders.billing.dlq", "filter": {"tags": ["eu", "us"]}, "ordering": "key"}'
/// ```
#[utoipa::path(post, path = "/v1/topics/{topic}/subscriptions", tag = "subscriptions",
    params(TopicPath), request_body = CreateSubscriptionRequest,
    responses(
        (status = 201, description = "Created", body = Subscription),
        (status = 400, description = "Malformed request or a value out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic (`topic_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A subscription of that name exists (`subscription_exists`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn create_subscription(
    State(state): State<AppState>,
    PathParams(path): PathParams<TopicPath>,
    JsonBody(request): JsonBody<CreateSubscriptionRequest>,
) -> Result<(StatusCode, Json<Subscription>), ApiError> {
    let spec = SubscriptionSpec {
        name: request.name,
        start: request.start.map(Into::into),
        ack_timeout_ms: request.ack_timeout_ms,
        retry: request.retry.map(Into::into),
        max_deliveries: request.max_deliveries,
        dead_letter_topic: request.dead_letter_topic,
        filter: request.filter.map(Into::into),
        ordering: request.ordering.map(Into::into),
    };
    let info = match &state.cluster {
        Some(cluster) => cluster.create_subscription(&path.topic, spec).await?,
        None => state.broker.create_subscription(&path.topic, spec).await?,
    };
    Ok((StatusCode::CREATED, Json(info.into())))
}

/// List a topic's subscriptions.
#[utoipa::path(get, path = "/v1/topics/{topic}/subscriptions", tag = "subscriptions",
    params(TopicPath),
    responses(
        (status = 200, description = "The topic's subscriptions", body = SubscriptionList),
        (status = 404, description = "No such topic (`topic_not_found`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list_subscriptions(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathParams(path): PathParams<TopicPath>,
) -> Result<Response, ApiError> {
    let subscriptions = match &state.cluster {
        None => state.broker.list_subscriptions(&path.topic).await?,
        Some(_) => match gather(&state, &headers, &path.topic, FiguresOf::All).await? {
            Gathered::Led(figures) => return Ok(Json(figures).into_response()),
            Gathered::Infos(infos) => infos,
        },
    };
    let subscriptions = subscriptions.into_iter().map(Into::into).collect();
    Ok(Json(SubscriptionList { subscriptions }).into_response())
}

/// Describe a subscription: settings and stats.
///
/// In a cluster, any node answers with the same figures: each partition's as its leader has
/// them, summed (the oldest unacked age is the largest partition's).
///
/// Besides `backlog`, `in_flight`, `waiting_retry` and the delivery counters, the stats say
/// how many messages the tag filter skipped (`filtered`), how many became dead letters
/// (`dead_lettered`), how many delayed messages of the topic are not yet due (`delayed`), and
/// on how many partitions the subscription holds as many unacked messages as it may, so that
/// receives get no new ones there until some are acked (`unacked_limit_reached_partitions`).
///
/// ```text
/// curl localhost:8080/v1/topics/orders/subscriptions/billing
/// ```
#[utoipa::path(get, path = "/v1/topics/{topic}/subscriptions/{sub}", tag = "subscriptions",
    params(SubscriptionPath),
    responses(
        (status = 200, description = "The subscription", body = Subscription),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn describe_subscription(
    State(state): State<AppState>,
    headers: HeaderMap,
    PathParams(path): PathParams<SubscriptionPath>,
) -> Result<Response, ApiError> {
    let info = match &state.cluster {
        None => {
            state
                .broker
                .describe_subscription(&path.topic, &path.sub)
                .await?
        }
        Some(_) => match gather(&state, &headers, &path.topic, FiguresOf::One(&path.sub)).await? {
            Gathered::Led(figures) => return Ok(Json(figures).into_response()),
            Gathered::Infos(infos) => infos.into_iter().next().ok_or_else(|| {
                ApiError::from(broker_core::BrokerError::SubscriptionNotFound {
                    topic: path.topic.clone(),
                    subscription: path.sub.clone(),
                })
            })?,
        },
    };
    Ok(Json(Subscription::from(info)).into_response())
}

/// Delete a subscription and its cursors and leases.
#[utoipa::path(delete, path = "/v1/topics/{topic}/subscriptions/{sub}", tag = "subscriptions",
    params(SubscriptionPath),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn delete_subscription(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
) -> Result<StatusCode, ApiError> {
    match &state.cluster {
        Some(cluster) => cluster.delete_subscription(&path.topic, &path.sub).await?,
        None => {
            state
                .broker
                .delete_subscription(&path.topic, &path.sub)
                .await?;
        }
    }
    Ok(StatusCode::NO_CONTENT)
}
