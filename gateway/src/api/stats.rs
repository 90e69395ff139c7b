//! Stats' wire types: the query and answer of a history (per-minute points of a topic or a
//! subscription) and of a ranking.

use broker_core::history::{
    MS_PER_MINUTE, SubscriptionCounter, SubscriptionGauge, SubscriptionMinute, TopicCounter,
    TopicGauge, TopicMinute,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Query parameters of a history.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// The topic.
    pub topic: String,
    /// A subscription of the topic: its history instead of the topic's.
    pub subscription: Option<String>,
    /// Minutes up to and including the current one, 1 to 1440 (default 60).
    #[param(minimum = 1, maximum = 1440)]
    pub minutes: Option<u64>,
}

/// A history: one point per minute that has a record, oldest first; the last is the current
/// minute, still being filled.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryAnswer {
    /// The topic.
    pub topic: String,
    /// The subscription, or `null` for the topic's history.
    pub subscription: Option<String>,
    /// The minutes.
    pub points: Vec<HistoryPoint>,
}

/// One minute of a topic or of a subscription.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum HistoryPoint {
    /// A topic's minute.
    Topic(TopicPoint),
    /// A subscription's minute.
    Subscription(SubscriptionPoint),
}

/// One minute of a topic.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TopicPoint {
    /// The minute's start, epoch ms.
    pub time_ms: u64,
    /// Messages produced in the minute.
    pub produced_messages: u64,
    /// Value bytes produced.
    pub produced_bytes: u64,
    /// Messages delivered, over all the topic's subscriptions.
    pub consumed_messages: u64,
    /// Value bytes delivered.
    pub consumed_bytes: u64,
    /// Produce requests answered with an error (4xx or 5xx).
    pub produce_errors: u64,
    /// The 99th percentile of the latency of the requests on the topic in the minute, ms
    /// (bucket bounds 1 ms to 30 s; long-polls, streams and offset reads are left out).
    pub latency_p99_ms: u64,
}

/// One minute of a subscription.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionPoint {
    /// The minute's start, epoch ms.
    pub time_ms: u64,
    /// Deliveries made (first ones and redeliveries).
    pub delivered_messages: u64,
    /// Messages acked.
    pub acks: u64,
    /// Messages nacked.
    pub nacks: u64,
    /// Messages moved to the dead-letter topic.
    pub dead_letters: u64,
    /// The backlog at the minute's last sample.
    pub backlog: u64,
    /// The largest backlog sampled in the minute.
    pub backlog_max: u64,
    /// The oldest unacked message's age at the minute's last sample, ms (0: none).
    pub oldest_unacked_age_ms: u64,
    /// The largest oldest unacked age sampled in the minute, ms.
    pub oldest_unacked_age_ms_max: u64,
}

impl From<&TopicMinute> for TopicPoint {
    fn from(record: &TopicMinute) -> Self {
        TopicPoint {
            time_ms: record.minute.saturating_mul(MS_PER_MINUTE),
            produced_messages: record.counter(TopicCounter::ProducedMessages),
            produced_bytes: record.counter(TopicCounter::ProducedBytes),
            consumed_messages: record.counter(TopicCounter::ConsumedMessages),
            consumed_bytes: record.counter(TopicCounter::ConsumedBytes),
            produce_errors: record.counter(TopicCounter::ProduceErrors),
            latency_p99_ms: record.gauge(TopicGauge::LatencyP99Ms).last,
        }
    }
}

impl From<&SubscriptionMinute> for SubscriptionPoint {
    fn from(record: &SubscriptionMinute) -> Self {
        let backlog = record.gauge(SubscriptionGauge::Backlog);
        let age = record.gauge(SubscriptionGauge::OldestUnackedAgeMs);
        SubscriptionPoint {
            time_ms: record.minute.saturating_mul(MS_PER_MINUTE),
            delivered_messages: record.counter(SubscriptionCounter::DeliveredMessages),
            acks: record.counter(SubscriptionCounter::Acks),
            nacks: record.counter(SubscriptionCounter::Nacks),
            dead_letters: record.counter(SubscriptionCounter::DeadLetters),
            backlog: backlog.last,
            backlog_max: backlog.max,
            oldest_unacked_age_ms: age.last,
            oldest_unacked_age_ms_max: age.max,
        }
    }
}

/// Query parameters of a ranking.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TopQuery {
    /// What to rank by: `backlog` (subscriptions, latest backlog), `produced` (topics,
    /// messages produced over the window) or `consumed` (subscriptions, messages delivered
    /// over the window).
    pub by: TopBy,
    /// Series returned, 1 to 100 (default 10).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// Minutes of the window up to and including the current one, 1 to 1440 (default 5).
    #[param(minimum = 1, maximum = 1440)]
    pub minutes: Option<u64>,
}

/// What a ranking ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TopBy {
    /// Subscriptions by their latest backlog.
    Backlog,
    /// Topics by messages produced in the window.
    Produced,
    /// Subscriptions by messages delivered in the window.
    Consumed,
}

/// A ranking.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TopAnswer {
    /// What it ranks by.
    pub by: TopBy,
    /// The window, minutes.
    pub minutes: u64,
    /// Highest value first, equal values by topic then subscription name.
    pub items: Vec<TopItem>,
}

/// One ranked series.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TopItem {
    /// The topic.
    pub topic: String,
    /// The subscription, or `null` when topics are ranked.
    pub subscription: Option<String>,
    /// Its value: messages, or the backlog.
    pub value: u64,
}
