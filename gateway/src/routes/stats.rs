//! `GET /v1/stats/history` and `GET /v1/stats/top`: the per-minute history of a topic or a
//! subscription, and rankings over it (see [`crate::governance::history`]).
//!
//! The topic is a query parameter, so the route table asks only for a valid token and these
//! handlers check the grant: `consume` or `admin` on the topic (`top` lists only such
//! topics). In a cluster, the node asked sums its own figures with every other node's (a
//! `GET` of the same route with the client's credentials and `Wharf-Forwarded`; a node that
//! does not answer in time leaves its part out): counters add up per minute, backlogs add up
//! (each node has the partitions it leads), and the latency p99 and the oldest unacked age
//! take the largest of the nodes'.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use broker_core::history::ring::MAX_QUERY_MINUTES;
use broker_core::history::{
    SubscriptionCounter, SubscriptionGauge, SubscriptionMinute, TopicCounter, TopicMinute,
};
use serde::de::DeserializeOwned;

use crate::api::stats::{
    HistoryAnswer, HistoryPoint, HistoryQuery, TopAnswer, TopBy, TopItem, TopQuery,
};
use crate::app::AppState;
use crate::auth::Principal;
use crate::auth::scope::Action;
use crate::fanout::ask_leader::ask_leader;
use crate::fanout::forward::FORWARDED_HEADER;
use crate::http::extract::QueryParams;
use crate::http::problem::{ApiError, Problem};

/// Minutes a history answers by default: the last hour, the console's first chart.
pub(crate) const DEFAULT_HISTORY_MINUTES: u64 = 60;
/// Minutes a ranking sums by default: the last five, recent enough to show what is busy now.
pub(crate) const DEFAULT_TOP_MINUTES: u64 = 5;
/// Series a ranking returns by default: a short table.
pub(crate) const DEFAULT_TOP_LIMIT: usize = 10;
/// The most series a ranking returns: a table on one screen of the console
/// ([`broker_core::history::ranking::MAX_TOP_N`]).
pub(crate) const MAX_TOP_LIMIT: usize = broker_core::history::ranking::MAX_TOP_N;

impl HistoryPoint {
    fn time_ms(&self) -> u64 {
        match self {
            HistoryPoint::Topic(point) => point.time_ms,
            HistoryPoint::Subscription(point) => point.time_ms,
        }
    }

    /// Another node's figures of the same minute added in (see the module docs).
    fn add(&mut self, other: &HistoryPoint) {
        match (self, other) {
            (HistoryPoint::Topic(a), HistoryPoint::Topic(b)) => {
                a.produced_messages += b.produced_messages;
                a.produced_bytes += b.produced_bytes;
                a.consumed_messages += b.consumed_messages;
                a.consumed_bytes += b.consumed_bytes;
                a.produce_errors += b.produce_errors;
                a.latency_p99_ms = a.latency_p99_ms.max(b.latency_p99_ms);
            }
            (HistoryPoint::Subscription(a), HistoryPoint::Subscription(b)) => {
                a.delivered_messages += b.delivered_messages;
                a.acks += b.acks;
                a.nacks += b.nacks;
                a.dead_letters += b.dead_letters;
                a.backlog += b.backlog;
                a.backlog_max += b.backlog_max;
                a.oldest_unacked_age_ms = a.oldest_unacked_age_ms.max(b.oldest_unacked_age_ms);
                a.oldest_unacked_age_ms_max =
                    a.oldest_unacked_age_ms_max.max(b.oldest_unacked_age_ms_max);
            }
            _ => {}
        }
    }
}

/// Whether `principal` may read `topic`'s figures: `consume` or `admin` on it.
fn may_read(principal: Option<&Principal>, topic: &str) -> bool {
    principal.is_none_or(|principal| {
        principal.grants.allows(Action::Consume, topic)
            || principal.grants.allows(Action::Admin, topic)
    })
}

fn minutes_in_range(name: &str, value: Option<u64>, default: u64) -> Result<u64, ApiError> {
    let minutes = value.unwrap_or(default);
    if !(1..=MAX_QUERY_MINUTES).contains(&minutes) {
        return Err(ApiError::invalid(format!(
            "{name}: must be 1 to {MAX_QUERY_MINUTES}, got {minutes}"
        )));
    }
    Ok(minutes)
}

/// Per-minute history of a topic or a subscription.
///
/// One point per minute with a record over the last `minutes` (the current, unfinished
/// minute last). Needs `consume` or `admin` on the topic.
#[utoipa::path(get, path = "/v1/stats/history", tag = "stats",
    params(HistoryQuery),
    responses(
        (status = 200, description = "The minutes, oldest first", body = HistoryAnswer),
        (status = 400, description = "A parameter missing or out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "No `consume` or `admin` grant on the topic (`forbidden`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "The server runs with `history = false` (`history_disabled`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn history(
    State(state): State<AppState>,
    headers: HeaderMap,
    principal: Option<Extension<Principal>>,
    QueryParams(query): QueryParams<HistoryQuery>,
) -> Result<Json<HistoryAnswer>, ApiError> {
    if !state.history.is_on() {
        return Err(ApiError::HistoryDisabled);
    }
    let minutes = minutes_in_range("minutes", query.minutes, DEFAULT_HISTORY_MINUTES)?;
    let topic = query.topic;
    if !may_read(principal.as_deref(), &topic) {
        return Err(ApiError::Forbidden {
            action: Action::Consume,
            topic,
        });
    }
    state.broker.describe_topic(&topic)?;
    let points: Vec<HistoryPoint> = match &query.subscription {
        None => state
            .history
            .topic_points(&topic, minutes)
            .unwrap_or_default()
            .iter()
            .map(|record| HistoryPoint::Topic(record.into()))
            .collect(),
        Some(subscription) => {
            state
                .broker
                .describe_subscription(&topic, subscription)
                .await?;
            state
                .history
                .subscription_points(&topic, subscription, minutes)
                .unwrap_or_default()
                .iter()
                .map(|record| HistoryPoint::Subscription(record.into()))
                .collect()
        }
    };
    let mut by_minute: BTreeMap<u64, HistoryPoint> =
        points.into_iter().map(|p| (p.time_ms(), p)).collect();
    let mut path = format!("/v1/stats/history?topic={topic}&minutes={minutes}");
    if let Some(subscription) = &query.subscription {
        path.push_str(&format!("&subscription={subscription}"));
    }
    for answer in from_other_nodes::<HistoryAnswer>(&state, &headers, &path).await {
        for point in answer.points {
            match by_minute.get_mut(&point.time_ms()) {
                Some(mine) => mine.add(&point),
                None => {
                    by_minute.insert(point.time_ms(), point);
                }
            }
        }
    }
    Ok(Json(HistoryAnswer {
        topic,
        subscription: query.subscription,
        points: by_minute.into_values().collect(),
    }))
}

/// Topics or subscriptions ranked by backlog, produced or consumed messages.
///
/// Only topics on which the caller has `consume` or `admin` are ranked.
#[utoipa::path(get, path = "/v1/stats/top", tag = "stats",
    params(TopQuery),
    responses(
        (status = 200, description = "The ranking", body = TopAnswer),
        (status = 400, description = "A parameter missing or out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 501, description = "The server runs with `history = false` (`history_disabled`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn top(
    State(state): State<AppState>,
    headers: HeaderMap,
    principal: Option<Extension<Principal>>,
    QueryParams(query): QueryParams<TopQuery>,
) -> Result<Json<TopAnswer>, ApiError> {
    if !state.history.is_on() {
        return Err(ApiError::HistoryDisabled);
    }
    let minutes = minutes_in_range("minutes", query.minutes, DEFAULT_TOP_MINUTES)?;
    let limit = query.limit.unwrap_or(DEFAULT_TOP_LIMIT);
    if !(1..=MAX_TOP_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "limit: must be 1 to {MAX_TOP_LIMIT}, got {limit}"
        )));
    }
    let readable = |topic: &str| may_read(principal.as_deref(), topic);
    let mut values: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
    let sum = |records: &[SubscriptionMinute]| {
        (!records.is_empty()).then(|| {
            records
                .iter()
                .map(|r| r.counter(SubscriptionCounter::DeliveredMessages))
                .fold(0, u64::saturating_add)
        })
    };
    let latest = |records: &[SubscriptionMinute]| {
        records
            .last()
            .map(|r| r.gauge(SubscriptionGauge::Backlog).last)
    };
    match query.by {
        TopBy::Produced => {
            let produced = |records: &[TopicMinute]| {
                (!records.is_empty()).then(|| {
                    records
                        .iter()
                        .map(|r| r.counter(TopicCounter::ProducedMessages))
                        .fold(0, u64::saturating_add)
                })
            };
            for (topic, value) in state.history.rank_topics(minutes, readable, produced) {
                values.insert((topic, None), value);
            }
        }
        TopBy::Consumed | TopBy::Backlog => {
            let ranked = if query.by == TopBy::Backlog {
                state.history.rank_subscriptions(minutes, readable, latest)
            } else {
                state.history.rank_subscriptions(minutes, readable, sum)
            };
            for ((topic, sub), value) in ranked {
                values.insert((topic, Some(sub)), value);
            }
        }
    }
    let by = match query.by {
        TopBy::Backlog => "backlog",
        TopBy::Produced => "produced",
        TopBy::Consumed => "consumed",
    };
    // Another node asks for every series (no limit), so that the sum is ranked, not the
    // nodes' own tops.
    let path = format!("/v1/stats/top?by={by}&minutes={minutes}&limit={MAX_TOP_LIMIT}");
    for answer in from_other_nodes::<TopAnswer>(&state, &headers, &path).await {
        for item in answer.items {
            let value = values.entry((item.topic, item.subscription)).or_default();
            *value = value.saturating_add(item.value);
        }
    }
    let mut items: Vec<TopItem> = values
        .into_iter()
        .map(|((topic, subscription), value)| TopItem {
            topic,
            subscription,
            value,
        })
        .collect();
    // Stable sort over name order: equal values stay by topic, then subscription.
    items.sort_by_key(|item| std::cmp::Reverse(item.value));
    if !headers.contains_key(FORWARDED_HEADER) {
        items.truncate(limit);
    }
    Ok(Json(TopAnswer {
        by: query.by,
        minutes,
        items,
    }))
}

/// Every other node's answer to `GET path` (with the client's credentials and
/// `Wharf-Forwarded`), asked at once; nothing on a single node or for a forwarded request.
async fn from_other_nodes<T: DeserializeOwned>(
    state: &AppState,
    headers: &HeaderMap,
    path: &str,
) -> Vec<T> {
    let Some(cluster) = &state.cluster else {
        return Vec::new();
    };
    if headers.contains_key(FORWARDED_HEADER) {
        return Vec::new();
    }
    let me = cluster.node_id();
    let others: Vec<u64> = cluster
        .state()
        .nodes()
        .keys()
        .copied()
        .filter(|node| *node != me)
        .collect();
    let asks = others
        .into_iter()
        .map(|node| ask_leader::<T>(cluster, headers, None, node, path, "history"));
    futures_util::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}
