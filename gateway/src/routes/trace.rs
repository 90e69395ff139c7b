//! Looking a message up (API.md "Looking a message up"): by id with its trace, and by key.
//!
//! A trace answers the message as an offset read shows it, who produced it, and for each
//! subscription of the topic its state and its events, oldest first. A dead letter
//! redriven comes back to the topic as a copy with the same id: its `redriven` event and the
//! copy's own deliveries are in the same subscription's events, and the state is the
//! copy's. Who produced and who consumed (principals and client addresses) are shown to a
//! token with `admin` on the topic (or with auth off); to a `consume`-only token they are
//! `null`, as consumers never see who produced a message.
//!
//! In a cluster whose replication factor is below the node count, a node asks the holders
//! of the partitions it lacks ([`crate::fanout::trace_gather`]) and answers as if it held them all.

use axum::Extension;
use axum::Json;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use broker_core::broker::{MessageState, MessageTrace, REDRIVE_HEADER, TracedEvent};
use broker_core::subscription::events::SubscriptionEvent;
use broker_core::{BrokerError, Origin, StoredRecord};
use serde::Serialize;

use crate::api::TopicPath;
use crate::api::delays::MessagePath;
use crate::api::partitions::LogMessage;
use crate::api::trace::{
    Actor, KeyAnswer, KeyQuery, KeyedMessage, MessageCopy, MessageTraceAnswer, Produced,
    SubscriptionTraceView, TraceEvent,
};
use crate::app::AppState;
use crate::auth::Principal;
use crate::auth::scope::Action;
use crate::fanout::trace_gather::{
    ListedMessage, ask_holders, found_or_not, key_answer, lacked_partitions, merge_by_key,
};
use crate::http::extract::{PathParams, QueryParams};
use crate::http::problem::{ApiError, Problem};

/// Messages a key lookup answers when `limit` is not given.
pub(crate) const DEFAULT_KEY_LIMIT: usize = 20;

/// Look a message up by id, with its trace.
///
/// The message, who produced it, and for each subscription its state and every step:
/// deliveries (attempt, consumer, lease end), nacks with their error, acks, dead-lettering
/// and redrive, oldest first. Needs `consume` on the topic; principals and client addresses
/// are shown to `admin` on the topic only. The trace index follows the log within a second,
/// and a lookup brings it up to date first.
///
/// Any node of a cluster answers: one that does not hold every partition of the topic
/// looks in those it holds, then asks a node holding each of the others (its leader
/// first), with the caller's credentials. When a holder cannot be asked and no other node
/// has the message, the answer is 503 `not_leader` (retry), not 404. A redriven copy
/// that went to another partition is listed only if the node that found the message
/// holds that partition too.
///
/// ```text
/// curl localhost:8080/v1/topics/orders/messages/order-42
/// ```
#[utoipa::path(get, path = "/v1/topics/{topic}/messages/{id}", tag = "messages",
    params(MessagePath),
    responses(
        (status = 200, description = "The message and its trace", body = MessageTraceAnswer),
        (status = 400, description = "The id is not 1 to 200 printable ASCII characters without spaces or `/` (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic (`topic_not_found`), or no message of that id is stored (`message_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "The server runs with `trace_index = false` (`trace_disabled`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "A budget is spent (`overloaded`) or the server is shutting down; see `Retry-After`. In a cluster also: a node holding a partition this node lacks could not be asked, and no other had the message (`not_leader`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn trace_message(
    State(state): State<AppState>,
    principal: Option<Extension<Principal>>,
    headers: HeaderMap,
    OriginalUri(uri): OriginalUri,
    PathParams(path): PathParams<MessagePath>,
) -> Result<Response, ApiError> {
    if !state.broker.trace_index() {
        return Err(ApiError::TraceDisabled);
    }
    let lacked = lacked_partitions(&state, &headers, &path.topic)?;
    let mut traces = state.broker.trace_message(&path.topic, &path.id).await?;
    if lacked.is_some() {
        traces.retain(|t| state.broker.holds_partition(&path.topic, t.partition));
    }
    let sees_actors = may_see_actors(principal.as_deref(), &path.topic);
    if let Some((first, copies)) = traces.split_first() {
        return Ok(Json(answer(path.topic, first, copies, sees_actors)).into_response());
    }
    let Some(lacked) = lacked else {
        return Err(not_found(path));
    };
    let asked = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    let gathered = ask_holders(&state, &headers, &path.topic, &lacked, asked, found_or_not).await;
    let found = gathered.answers.iter().find(|a| a.status == StatusCode::OK);
    if let Some(found) = found {
        return Ok(json_response(found.body.clone()));
    }
    if !gathered.unanswered.is_empty() {
        return Err(gathered.unavailable(&path.topic).into());
    }
    Err(not_found(path))
}

fn not_found(path: MessagePath) -> ApiError {
    BrokerError::MessageNotFound {
        topic: path.topic,
        id: path.id,
    }
    .into()
}

/// A JSON answer of another node, sent on as it came.
fn json_response(body: axum::body::Bytes) -> Response {
    let json = [(header::CONTENT_TYPE, "application/json")];
    (StatusCode::OK, json, body).into_response()
}

/// List the newest messages with a key.
///
/// Newest first, across partitions, at most `limit`. Needs `consume` on the topic.
///
/// Any node of a cluster answers: one that does not hold every partition of the topic asks
/// a node holding each of the others (its leader first) and merges their messages with its
/// own. When a holder cannot be asked, the answer is 503 `not_leader` (retry), not a
/// shorter list.
///
/// ```text
/// curl 'localhost:8080/v1/topics/orders/messages?key=customer-7&limit=10'
/// ```
#[utoipa::path(get, path = "/v1/topics/{topic}/messages", tag = "messages",
    params(TopicPath, KeyQuery),
    responses(
        (status = 200, description = "The messages, newest first", body = KeyAnswer),
        (status = 400, description = "No key, or a bad parameter (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic (`topic_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "The server runs with `trace_index = false` (`trace_disabled`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "A budget is spent (`overloaded`) or the server is shutting down; see `Retry-After`. In a cluster also: a node holding a partition this node lacks could not be asked (`not_leader`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn messages_by_key(
    State(state): State<AppState>,
    headers: HeaderMap,
    OriginalUri(uri): OriginalUri,
    PathParams(path): PathParams<TopicPath>,
    QueryParams(query): QueryParams<KeyQuery>,
) -> Result<Response, ApiError> {
    if !state.broker.trace_index() {
        return Err(ApiError::TraceDisabled);
    }
    let key = query.key;
    if key.is_empty() {
        return Err(ApiError::invalid("key: must not be empty"));
    }
    if key.len() > broker_core::limits::MAX_KEY_BYTES {
        return Err(ApiError::invalid(format!(
            "key: at most {} bytes, got {}",
            broker_core::limits::MAX_KEY_BYTES,
            key.len()
        )));
    }
    let limit = query.limit.unwrap_or(DEFAULT_KEY_LIMIT);
    if !(1..=broker_core::broker::MAX_KEY_LOOKUP).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "limit: must be 1 to {}, got {limit}",
            broker_core::broker::MAX_KEY_LOOKUP
        )));
    }
    let lacked = lacked_partitions(&state, &headers, &path.topic)?;
    let found = state
        .broker
        .messages_by_key(&path.topic, &key, limit)
        .await?;
    let here = found.into_iter().map(|(partition, stored)| KeyedMessage {
        partition,
        message: LogMessage::from(stored),
    });
    let Some(lacked) = lacked else {
        let messages = here.collect();
        return Ok(Json(KeyAnswer {
            topic: path.topic,
            key,
            messages,
        })
        .into_response());
    };
    let asked = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    let gathered = ask_holders(&state, &headers, &path.topic, &lacked, asked, key_answer).await;
    if !gathered.unanswered.is_empty() {
        return Err(gathered.unavailable(&path.topic).into());
    }
    let held: Vec<KeyedMessage> = here
        .filter(|m| state.broker.holds_partition(&path.topic, m.partition))
        .collect();
    Ok(Json(GatheredKeyAnswer {
        topic: path.topic,
        key,
        messages: merge_by_key(held, &gathered, limit),
    })
    .into_response())
}

/// [`KeyAnswer`] with messages from several nodes.
#[derive(Serialize)]
struct GatheredKeyAnswer {
    topic: String,
    key: String,
    messages: Vec<ListedMessage>,
}

/// Whether `principal` sees who produced and consumed: `admin` on the topic, or auth off.
fn may_see_actors(principal: Option<&Principal>, topic: &str) -> bool {
    principal.is_none_or(|p| p.anonymous || p.grants.allows(Action::Admin, topic))
}

fn answer(
    topic: String,
    first: &MessageTrace,
    copies: &[MessageTrace],
    sees_actors: bool,
) -> MessageTraceAnswer {
    let actor = |origin: Option<&Origin>| -> Option<Actor> {
        origin.map(|o| Actor {
            principal: o.principal.clone().filter(|_| sees_actors),
            client_addr: o.address.map(|a| a.to_string()).filter(|_| sees_actors),
            node: o.node,
        })
    };
    let record = &first.stored.record;
    let produced_by = actor(record.origin.as_deref());
    let produced = Produced {
        time_ms: record.timestamp_ms,
        principal: produced_by.as_ref().and_then(|a| a.principal.clone()),
        client_addr: produced_by.as_ref().and_then(|a| a.client_addr.clone()),
        node: produced_by.as_ref().and_then(|a| a.node),
        partition: first.partition,
        offset: first.stored.offset,
    };
    let subscriptions = first
        .subscriptions
        .iter()
        .map(|sub| {
            let mut events = events_of(&first.stored, &sub.events, &actor);
            let mut state = sub.state;
            for copy in copies {
                if redriven_to(&copy.stored) != Some(sub.name.as_str()) {
                    continue;
                }
                events.push(TraceEvent {
                    time_ms: copy.stored.record.timestamp_ms,
                    kind: "redriven".into(),
                    attempt: None,
                    consumer: None,
                    error: None,
                    until_ms: None,
                    offset: copy.stored.offset,
                });
                if let Some(mine) = copy.subscriptions.iter().find(|s| s.name == sub.name) {
                    events.extend(events_of(&copy.stored, &mine.events, &actor));
                    state = mine.state;
                }
            }
            let (state, state_until_ms) = state_view(state);
            SubscriptionTraceView {
                name: sub.name.clone(),
                state: state.into(),
                state_until_ms,
                events,
            }
        })
        .collect();
    MessageTraceAnswer {
        topic,
        message: LogMessage::from(first.stored.clone()),
        produced,
        subscriptions,
        copies: copies
            .iter()
            .map(|copy| MessageCopy {
                partition: copy.partition,
                offset: copy.stored.offset,
                time_ms: copy.stored.record.timestamp_ms,
                redriven_to: redriven_to(&copy.stored).map(str::to_owned),
            })
            .collect(),
    }
}

fn redriven_to(stored: &StoredRecord) -> Option<&str> {
    stored
        .record
        .headers
        .iter()
        .find(|(name, _)| name == REDRIVE_HEADER)
        .map(|(_, value)| value.as_str())
}

/// The events of one copy as the answer shows them: deliveries numbered, a lease that ended
/// unanswered shown where the next delivery noticed it, and an extend told from a delivery.
fn events_of(
    stored: &StoredRecord,
    events: &[TracedEvent],
    actor: &impl Fn(Option<&Origin>) -> Option<Actor>,
) -> Vec<TraceEvent> {
    let mut out = Vec::with_capacity(events.len());
    // The attempt of the last delivery, and whether it was answered (acked or nacked).
    let mut last: Option<(u32, bool)> = None;
    for traced in events {
        let view = |kind: &str, attempt: Option<u32>| TraceEvent {
            time_ms: traced.time_ms,
            kind: kind.into(),
            attempt,
            consumer: actor(traced.event.consumer()),
            error: None,
            until_ms: None,
            offset: stored.offset,
        };
        match &traced.event {
            SubscriptionEvent::Redelivered { attempts, .. }
            | SubscriptionEvent::Delivered { attempts, .. } => {
                if matches!(last, Some((_, false))) {
                    out.push(view("lease_expired", last.map(|(a, _)| a)));
                }
                out.push(view("delivered", Some(*attempts)));
                last = Some((*attempts, false));
            }
            SubscriptionEvent::Leased {
                attempts,
                deadline_ms,
                ..
            } => {
                let extend = last == Some((*attempts, false));
                if !extend && matches!(last, Some((_, false))) {
                    out.push(view("lease_expired", last.map(|(a, _)| a)));
                }
                let mut event = view(
                    if extend {
                        "lease_extended"
                    } else {
                        "delivered"
                    },
                    Some(*attempts),
                );
                event.until_ms = Some(*deadline_ms);
                out.push(event);
                last = Some((*attempts, false));
            }
            SubscriptionEvent::Nacked {
                attempts,
                due_ms,
                error,
                ..
            } => {
                let mut event = view("nacked", Some(*attempts));
                event.error = error.clone();
                event.until_ms = Some(*due_ms);
                out.push(event);
                last = Some((*attempts, true));
            }
            SubscriptionEvent::Acked { .. } => {
                out.push(view("acked", last.map(|(a, _)| a)));
                last = last.map(|(a, _)| (a, true));
            }
            SubscriptionEvent::DeadLettered { .. } => {
                out.push(view("dead_lettered", last.map(|(a, _)| a)));
            }
            SubscriptionEvent::Sought { .. } | SubscriptionEvent::Redriven { .. } => {}
        }
    }
    out
}

fn state_view(state: MessageState) -> (&'static str, Option<u64>) {
    match state {
        MessageState::Pending => ("pending", None),
        MessageState::Delayed { due_ms } => ("delayed", Some(due_ms)),
        MessageState::InFlight { deadline_ms } => ("in_flight", Some(deadline_ms)),
        MessageState::Acked => ("acked", None),
        MessageState::Filtered => ("filtered", None),
        MessageState::DeadLettered => ("dead_lettered", None),
        MessageState::Skipped => ("skipped", None),
    }
}
