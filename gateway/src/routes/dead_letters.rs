//! Dead letters: redrive a subscription's dead letters back into its topic.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::app::AppState;
use crate::extract::{OptionalJsonBody, PathParams};
use crate::problem::{ApiError, Problem};
use crate::routes::SubscriptionPath;

/// How much to redrive; an empty body redrives everything at the default pace.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedriveRequest {
    /// At most this many dead letters (at least 1); `null`: all of them.
    #[schema(minimum = 1)]
    pub max_messages: Option<u64>,
    /// At most this many a second (at least 1; default 1000), so consumers that just
    /// recovered are not swamped.
    #[schema(minimum = 1)]
    pub messages_per_second: Option<u32>,
}

/// The reply to a redrive.
#[derive(Debug, Serialize, ToSchema)]
pub struct RedriveResponse {
    /// Dead letters moved back into the topic by this call.
    pub redriven: u64,
}

/// Redrive dead letters back into the topic, for this subscription only.
///
/// Reads the subscription's dead-letter topic from where the last redrive stopped, and
/// appends each dead letter to the source topic again (a new offset, origin `wharf-dlq-*`
/// headers removed), at most `max_messages`, at most `messages_per_second`. Each dead letter
/// is redriven once: a second redrive with nothing new dead-lettered answers
/// `{"redriven": 0}`.
///
/// Unlike producing the messages again, a redriven message carries the header
/// `wharf-redrive-subscription: <sub>` and ONLY this subscription receives it (as
/// `delivery_attempt` 1); the topic's other subscriptions, which had already settled the
/// original, skip it. The redrive runs to completion even if the client goes away; keep
/// large redrives under the request timeout with `max_messages`.
///
/// ```text
/// curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/redrive \\
///   -d '{"max_messages": 1000, "messages_per_second": 100}'
/// ```
#[utoipa::path(post, path = "/v1/topics/{topic}/subscriptions/{sub}/redrive", tag = "consume",
    params(SubscriptionPath), request_body = Option<RedriveRequest>,
    responses(
        (status = 200, description = "How many were moved", body = RedriveResponse),
        (status = 400, description = "Malformed request, or a zero count or rate (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "A non-empty body that is not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn redrive(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
    OptionalJsonBody(request): OptionalJsonBody<RedriveRequest>,
) -> Result<Json<RedriveResponse>, ApiError> {
    let broker = state.broker.clone();
    // The broker moves dead letters batch by batch; a spawned task is never dropped half-way
    // through a batch when the client disconnects or the request times out.
    let redriving = tokio::spawn(async move {
        broker
            .redrive(
                &path.topic,
                &path.sub,
                request.max_messages,
                request.messages_per_second,
            )
            .await
    });
    let redriven = redriving.await.map_err(|error| ApiError::Internal {
        detail: format!("the redrive task failed: {error}"),
    })??;
    Ok(Json(RedriveResponse { redriven }))
}
