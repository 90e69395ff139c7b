//! Dead letters: redrive a subscription's dead letters back into its topic.

use std::collections::BTreeSet;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use broker_core::BrokerError;
use serde::Deserialize;

use crate::api::SubscriptionPath;
use crate::api::dead_letters::{RedriveRequest, RedriveResponse};
use crate::app::AppState;
use crate::fanout::forward::FORWARDED_HEADER;
use crate::fanout::gather;
use crate::http::extract::{OptionalJsonBody, PathParams};
use crate::http::problem::{ApiError, Problem};

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
/// In a cluster each partition of the dead-letter topic is redriven by its leader, one
/// leader after another, each with what is left of `max_messages` at `messages_per_second`;
/// the answer sums them. Each partition's redrive position is replicated with its dead
/// letters, so it survives a failover. A leader that fails part-way answers an error
/// (`not_leader`, `replication_timeout`): what was moved before stays moved and the next
/// redrive continues after it, except that a crash between appending a batch and recording
/// its position redrives that batch again (at least once).
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
        (status = 503, description = "A budget is spent (`overloaded`) or the server is shutting down; see `Retry-After`. In a cluster also: a partition's leader could not be reached or is being elected (`not_leader`), or did not confirm in time (`replication_timeout`); what moved before stays moved",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn redrive(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
    headers: HeaderMap,
    OptionalJsonBody(request): OptionalJsonBody<RedriveRequest>,
) -> Result<Json<RedriveResponse>, ApiError> {
    // The broker moves dead letters batch by batch; a spawned task is never dropped half-way
    // through a batch when the client disconnects or the request times out.
    let redriving =
        tokio::spawn(
            async move { redrive_here_or_on_leaders(&state, &headers, &path, request).await },
        );
    let redriven = redriving.await.map_err(|error| ApiError::Internal {
        detail: format!("the redrive task failed: {error}"),
    })??;
    Ok(Json(RedriveResponse { redriven }))
}

/// Redrives on a single node; in a cluster on every leader of the dead-letter topic's
/// partitions ([`scatter_redrive`]), or, for a request another node sent here, the
/// partitions this node leads.
async fn redrive_here_or_on_leaders(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    request: RedriveRequest,
) -> Result<u64, BrokerError> {
    let broker = &state.broker;
    let (max, rate) = (request.max_messages, request.messages_per_second);
    if state.cluster.is_some() && headers.contains_key(FORWARDED_HEADER) {
        return broker.redrive_led(&path.topic, &path.sub, max, rate).await;
    }
    let dead_letters = broker.dead_letter_info(&path.topic, &path.sub)?;
    if let Some(info) = dead_letters
        && let Some(leaders) = gather::leaders_to_gather(state, headers, &info.config.name)?
    {
        return scatter_redrive(state, headers, path, request, leaders).await;
    }
    broker.redrive(&path.topic, &path.sub, max, rate).await
}

#[derive(Deserialize)]
struct RemoteRedrive {
    redriven: u64,
}

/// Redrives on each leader of the dead-letter topic's partitions in turn (this node's share
/// first), each with what is left of `max_messages` and the same rate, so the count and the
/// rate hold over the whole; sums what they moved. A leader that cannot be asked, or fails,
/// makes the answer an error; what the leaders before it moved stays moved (their cursors
/// moved with it), and a redrive repeated continues from there.
async fn scatter_redrive(
    state: &AppState,
    headers: &HeaderMap,
    path: &SubscriptionPath,
    request: RedriveRequest,
    leaders: Vec<Option<u64>>,
) -> Result<u64, BrokerError> {
    if leaders.contains(&None) {
        return Err(BrokerError::NotLeader {
            what: format!("a dead-letter partition of subscription '{}'", path.sub),
            leader: None,
        });
    }
    let me = state.cluster.as_ref().map(|c| c.node_id());
    let nodes: BTreeSet<u64> = leaders.into_iter().flatten().collect();
    let order = me
        .filter(|m| nodes.contains(m))
        .into_iter()
        .chain(nodes.iter().copied().filter(|n| Some(*n) != me));
    let rate = request.messages_per_second;
    let mut left = request.max_messages;
    let mut moved = 0u64;
    for node in order {
        if left == Some(0) {
            break;
        }
        let part = if Some(node) == me {
            state
                .broker
                .redrive_led(&path.topic, &path.sub, left, rate)
                .await?
        } else {
            let body = serde_json::json!({ "max_messages": left, "messages_per_second": rate });
            let answer: RemoteRedrive =
                gather::ask_leader(state, headers, node, path, "redrive", &body).await?;
            answer.redriven
        };
        moved += part;
        left = left.map(|l| l.saturating_sub(part));
    }
    Ok(moved)
}
