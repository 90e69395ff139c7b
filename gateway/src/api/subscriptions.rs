//! Subscriptions' wire types: a subscription to create with its retry, filter and ordering,
//! and a subscription's settings and stats.

use broker_core::broker::{SubscriptionInfo, SubscriptionStats};
use broker_core::subscription::{Filter, Ordering, RetryPolicy, StartPosition};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::json::object;

/// Where a new subscription starts.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    /// Only messages published after creation (the default).
    Latest,
    /// Every message still stored.
    Earliest,
}

impl From<Start> for StartPosition {
    fn from(start: Start) -> Self {
        match start {
            Start::Latest => StartPosition::Latest,
            Start::Earliest => StartPosition::Earliest,
        }
    }
}

impl From<StartPosition> for Start {
    fn from(start: StartPosition) -> Self {
        match start {
            StartPosition::Latest => Start::Latest,
            StartPosition::Earliest => Start::Earliest,
        }
    }
}

/// Backoff between redeliveries; absent fields take their defaults.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryRequest {
    /// Pause after the first failed delivery (default 1000, at most `max_backoff_ms`).
    #[schema(minimum = 0, maximum = 86400000)]
    pub initial_backoff_ms: Option<u64>,
    /// Longest pause (default 600000, at most one day).
    #[schema(minimum = 0, maximum = 86400000)]
    pub max_backoff_ms: Option<u64>,
    /// Growth per failed delivery, 1.0 to 10.0 (default 2.0).
    #[schema(minimum = 1.0, maximum = 10.0)]
    pub multiplier: Option<f64>,
}

/// The order in which a subscription delivers.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OrderingParam {
    /// Any order; as many messages in flight as consumers take (the default).
    None,
    /// Per key, in publish order, one at a time: the next message of a key is delivered only
    /// after the previous one is acked or dead-lettered. Other keys flow meanwhile; messages
    /// without a key are not ordered.
    Key,
}

impl From<OrderingParam> for Ordering {
    fn from(ordering: OrderingParam) -> Self {
        match ordering {
            OrderingParam::None => Ordering::None,
            OrderingParam::Key => Ordering::Key,
        }
    }
}

impl From<Ordering> for OrderingParam {
    fn from(ordering: Ordering) -> Self {
        match ordering {
            Ordering::None => OrderingParam::None,
            Ordering::Key => OrderingParam::Key,
        }
    }
}

/// Which messages a subscription delivers.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FilterBody {
    /// Only messages carrying at least one of these tags (at most 32, each 1 to 200
    /// characters of `A-Z a-z 0-9 . _ - : /`); empty or absent: every message. Messages
    /// that do not pass count as acked (`stats.filtered`).
    #[schema(max_items = 32, value_type = Vec<crate::api::Tag>, inline)]
    #[serde(default)]
    pub tags: Vec<String>,
}

impl From<FilterBody> for Filter {
    fn from(body: FilterBody) -> Self {
        Filter { tags: body.tags }
    }
}

impl From<Filter> for FilterBody {
    fn from(filter: Filter) -> Self {
        FilterBody { tags: filter.tags }
    }
}

/// A subscription to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSubscriptionRequest {
    /// Name: `[A-Za-z0-9._-]{1,200}`, not starting with `__`, and not `.` or `..`.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^([A-Za-z0-9-][A-Za-z0-9._-]*|_([A-Za-z0-9.-][A-Za-z0-9._-]*)?|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)$"
    )]
    pub name: String,
    /// Where it starts (default `latest`).
    pub start: Option<Start>,
    /// Lease of a received message, 1000 to 43200000 (default 30000).
    #[schema(minimum = 1000, maximum = 43200000)]
    pub ack_timeout_ms: Option<u64>,
    /// Backoff between redeliveries.
    #[serde(default, deserialize_with = "object::optional")]
    pub retry: Option<RetryRequest>,
    /// Deliveries of a message before it moves to the dead-letter topic, 1 to 1000
    /// (default 16).
    #[schema(minimum = 1, maximum = 1000)]
    pub max_deliveries: Option<u32>,
    /// The dead-letter topic, an ordinary topic created on first use (default
    /// `<topic>.<name>.dlq`).
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^([A-Za-z0-9-][A-Za-z0-9._-]*|_([A-Za-z0-9.-][A-Za-z0-9._-]*)?|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)$"
    )]
    pub dead_letter_topic: Option<String>,
    /// Which messages to deliver (default: all).
    #[serde(default, deserialize_with = "object::optional")]
    pub filter: Option<FilterBody>,
    /// Delivery order: `none` (default) or `key`.
    pub ordering: Option<OrderingParam>,
}

/// Backoff between redeliveries: `initial × multiplier^(n-1)`, capped at `max`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Retry {
    /// Pause after the first failed delivery.
    pub initial_backoff_ms: u64,
    /// Longest pause.
    pub max_backoff_ms: u64,
    /// Growth per failed delivery.
    pub multiplier: f64,
}

/// A subscription's counters and gauges at the time of the call.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionStatsView {
    /// Messages not yet acked: never delivered, in flight, or waiting for redelivery.
    pub backlog: u64,
    /// Messages leased to a consumer right now.
    pub in_flight: u64,
    /// Messages waiting out a retry backoff.
    pub waiting_retry: u64,
    /// Age of the oldest unacked message; `null` with nothing unacked.
    pub oldest_unacked_age_ms: Option<u64>,
    /// Deliveries made, first ones and redeliveries.
    pub delivered: u64,
    /// Redeliveries made.
    pub redelivered: u64,
    /// Messages acked.
    pub acked: u64,
    /// Messages the tag filter skipped (they count as acked).
    pub filtered: u64,
    /// Messages moved to the dead-letter topic after `max_deliveries` attempts.
    pub dead_lettered: u64,
    /// Delayed messages of the topic not yet due.
    pub delayed: u64,
    /// Partitions on which the subscription holds 100,000 unacked messages (in flight,
    /// waiting for a retry, held back behind an earlier one of their key, delayed and not yet
    /// due, or being dead-lettered): receives get no new messages from them until some are
    /// acked. Acked messages never count, however far behind the oldest unacked one they are.
    pub unacked_limit_reached_partitions: u64,
}

/// A subscription's settings and stats.
#[derive(Debug, Serialize, ToSchema)]
pub struct Subscription {
    /// The topic it reads.
    pub topic: String,
    /// Its name.
    pub name: String,
    /// Where it started.
    pub start: Start,
    /// Default lease, in milliseconds.
    pub ack_timeout_ms: u64,
    /// Backoff between redeliveries.
    pub retry: Retry,
    /// Deliveries of a message before it moves to the dead-letter topic.
    pub max_deliveries: u32,
    /// The dead-letter topic.
    pub dead_letter_topic: String,
    /// Which messages it delivers.
    pub filter: FilterBody,
    /// Delivery order.
    pub ordering: OrderingParam,
    /// Creation time, Unix epoch milliseconds.
    pub created_ms: u64,
    /// Stats at the time of the call.
    pub stats: SubscriptionStatsView,
}

/// A topic's subscriptions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionList {
    /// The subscriptions, by name.
    pub subscriptions: Vec<Subscription>,
}

impl From<SubscriptionStats> for SubscriptionStatsView {
    fn from(stats: SubscriptionStats) -> Self {
        SubscriptionStatsView {
            backlog: stats.backlog,
            in_flight: stats.in_flight,
            waiting_retry: stats.waiting_retry,
            oldest_unacked_age_ms: stats.oldest_unacked_age_ms,
            delivered: stats.delivered,
            redelivered: stats.redelivered,
            acked: stats.acked,
            filtered: stats.filtered,
            dead_lettered: stats.dead_lettered,
            delayed: stats.delayed,
            unacked_limit_reached_partitions: stats.unacked_limit_reached_partitions,
        }
    }
}

impl From<SubscriptionInfo> for Subscription {
    fn from(info: SubscriptionInfo) -> Self {
        let config = info.config;
        Subscription {
            topic: config.topic,
            name: config.name,
            start: config.start.into(),
            ack_timeout_ms: config.ack_timeout_ms,
            retry: Retry {
                initial_backoff_ms: config.retry.initial_backoff_ms,
                max_backoff_ms: config.retry.max_backoff_ms,
                multiplier: config.retry.multiplier,
            },
            max_deliveries: config.max_deliveries,
            dead_letter_topic: config.dead_letter_topic,
            filter: config.filter.into(),
            ordering: config.ordering.into(),
            created_ms: config.created_ms,
            stats: info.stats.into(),
        }
    }
}

impl From<RetryRequest> for RetryPolicy {
    fn from(request: RetryRequest) -> Self {
        let defaults = RetryPolicy::default();
        RetryPolicy {
            initial_backoff_ms: request
                .initial_backoff_ms
                .unwrap_or(defaults.initial_backoff_ms),
            max_backoff_ms: request.max_backoff_ms.unwrap_or(defaults.max_backoff_ms),
            multiplier: request.multiplier.unwrap_or(defaults.multiplier),
        }
    }
}
