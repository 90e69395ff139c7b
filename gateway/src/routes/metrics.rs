//! `GET /metrics`: the recorder's series ([`crate::governance::metrics`]) followed by gauges computed at
//! scrape time from this server's state: open connections, long-polls, streams, in-flight
//! produce bytes, and per subscription its backlog, in-flight, waiting-retry and oldest
//! unacked age and the partitions at its unacked limit, and per topic its delayed messages.
//!
//! A scrape reports at most [`MAX_SCRAPED_SUBSCRIPTIONS`] subscriptions (whole topics at a
//! time, in name order); how many it left out is itself a gauge.
//!
//! In a cluster a partition's subscription tables and delay schedule are live only on its
//! leader, so each node exports the per-subscription and per-topic gauges of the partitions it
//! leads and nothing for those it follows or does not hold: a `sum by (topic,
//! subscription)` over every node is the cluster's figure, the same a describe answers (a
//! `max` for the oldest unacked age). A single node leads all its partitions.

use std::fmt::Write;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use broker_core::broker::{FiguresOf, SubscriptionInfo, SubscriptionStats, TopicFigures};

use crate::app::AppState;

/// Most subscriptions whose stats one scrape computes. A subscription's stats walk its lease
/// table per partition and may read one record per partition for the oldest unacked age; 1000
/// keeps a scrape within tens of milliseconds on a node with many consumer groups, far inside
/// Prometheus' usual 10 s scrape timeout. Topics past the cap are left out whole and counted
/// in `wharf_metrics_subscriptions_omitted`.
pub(crate) const MAX_SCRAPED_SUBSCRIPTIONS: usize = 1_000;

/// What the per-partition gauges' help adds: in a cluster, whose figures a node exports and
/// how to add them up over nodes. A macro so that `concat!` can put it in each help text.
macro_rules! led_only {
    () => {
        " In a cluster each node counts only the partitions it leads: sum over nodes (max for an age)."
    };
}

/// The exposition's content type: the Prometheus text format, version 0.0.4.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Metrics in the Prometheus text format.
///
/// Request counts and latencies per route template and status; produced, delivered,
/// redelivered, settled and dead-lettered messages and bytes per topic and subscription;
/// backlog, in-flight, oldest unacked age and partitions at the unacked limit per
/// subscription and delayed messages per topic (at most 1000 subscriptions per scrape);
/// writer queue depth, group-commit sizes and fsync latency; open connections, long-polls and
/// streams. Needs a token unless `metrics_public`.
#[utoipa::path(get, path = "/metrics", tag = "metrics",
    responses((status = 200, description = "The Prometheus text exposition (version 0.0.4)",
        content_type = "text/plain; version=0.0.4", body = String)))]
pub(crate) async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let mut text = crate::governance::metrics::handle().render();
    for family in scrape_families(&state).await {
        family.write(&mut text);
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text)
}

/// One gauge family: its name, help and series.
struct Family {
    name: &'static str,
    help: &'static str,
    series: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            series: Vec::new(),
        }
    }

    fn single(name: &'static str, help: &'static str, value: usize) -> Family {
        let mut family = Family::new(name, help);
        family.push(Vec::new(), value as f64);
        family
    }

    fn push(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        self.series.push((labels, value));
    }

    /// Writes `# HELP`, `# TYPE` and one line per series.
    fn write(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
        for (labels, value) in &self.series {
            out.push_str(self.name);
            if !labels.is_empty() {
                let pairs: Vec<String> = labels
                    .iter()
                    .map(|(key, value)| format!("{key}=\"{}\"", escape_label(value)))
                    .collect();
                let _ = write!(out, "{{{}}}", pairs.join(","));
            }
            let _ = writeln!(out, " {value}");
        }
    }
}

/// A label value as the text format wants it: backslash, double quote and newline escaped.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The scrape-time gauges of `state`'s server.
async fn scrape_families(state: &AppState) -> Vec<Family> {
    let edge = &state.edge;
    let mut families = vec![
        Family::single(
            "wharf_open_connections",
            "Open client connections.",
            edge.connections.open(),
        ),
        Family::single(
            "wharf_long_polls",
            "Pending long-polls.",
            edge.long_polls.held(),
        ),
        Family::single("wharf_streams", "Open SSE streams.", edge.streams.held()),
        Family::single(
            "wharf_memory_bytes",
            "Bytes charged to the memory budget: request bodies being read, parsed and stored, and answers not yet written.",
            edge.memory.used(),
        ),
        Family::single(
            "wharf_memory_limit_bytes",
            "The memory budget (max_memory_bytes).",
            edge.memory.capacity(),
        ),
    ];
    families.extend(subscription_families(state).await);
    families
}

/// Per-subscription and per-topic gauges, within [`MAX_SCRAPED_SUBSCRIPTIONS`].
async fn subscription_families(state: &AppState) -> Vec<Family> {
    let mut backlog = Family::new(
        "wharf_subscription_backlog_messages",
        concat!(
            "Messages not yet acked: undelivered, in flight or waiting for a retry.",
            led_only!()
        ),
    );
    let mut in_flight = Family::new(
        "wharf_subscription_in_flight_messages",
        concat!("Messages leased to a consumer.", led_only!()),
    );
    let mut waiting = Family::new(
        "wharf_subscription_waiting_retry_messages",
        concat!("Messages waiting out a retry backoff.", led_only!()),
    );
    let mut oldest = Family::new(
        "wharf_subscription_oldest_unacked_age_seconds",
        concat!("Age of the oldest unacked message.", led_only!()),
    );
    let mut at_limit = Family::new(
        "wharf_subscription_unacked_limit_reached_partitions",
        concat!(
            "Partitions on which the subscription holds its limit of unacked messages, so receives get no new ones there.",
            led_only!()
        ),
    );
    let mut delayed = Family::new(
        "wharf_topic_delayed_messages",
        concat!("Delayed messages not yet due.", led_only!()),
    );
    let (delays, reported, omitted) = if state.cluster.is_some() {
        led_subscriptions(state).await
    } else {
        let delays = state
            .broker
            .list_topics()
            .into_iter()
            .map(|topic| (topic.config.name, topic.delayed))
            .collect();
        let (reported, omitted) = scraped_subscriptions(state).await;
        (delays, reported, omitted)
    };
    for (topic, count) in delays {
        delayed.push(vec![("topic", topic)], count as f64);
    }
    for (topic, subscriptions) in reported {
        for info in subscriptions {
            let labels = vec![("topic", topic.clone()), ("subscription", info.config.name)];
            let stats = info.stats;
            backlog.push(labels.clone(), stats.backlog as f64);
            in_flight.push(labels.clone(), stats.in_flight as f64);
            waiting.push(labels.clone(), stats.waiting_retry as f64);
            at_limit.push(
                labels.clone(),
                stats.unacked_limit_reached_partitions as f64,
            );
            if let Some(age_ms) = stats.oldest_unacked_age_ms {
                oldest.push(labels, age_ms as f64 / 1000.0);
            }
        }
    }
    let omitted = Family::single(
        "wharf_metrics_subscriptions_omitted",
        "Subscriptions left out of this scrape by its cap of 1000.",
        omitted,
    );
    vec![
        backlog, in_flight, waiting, oldest, at_limit, delayed, omitted,
    ]
}

/// Each topic's delayed messages, and its subscriptions' stats as [`scraped_subscriptions`]
/// picks them, counting only the partitions this node of a cluster leads (see the module
/// docs). A topic removed meanwhile is left out.
async fn led_subscriptions(state: &AppState) -> (Vec<(String, u64)>, Reported, usize) {
    let mut topics = state.broker.list_topics();
    topics.sort_by(|a, b| a.config.name.cmp(&b.config.name));
    let mut budget = MAX_SCRAPED_SUBSCRIPTIONS;
    let mut omitted = 0;
    let (mut delays, mut reported) = (Vec::new(), Vec::new());
    for topic in topics {
        let of = if topic.subscriptions == 0 {
            FiguresOf::Topic
        } else if topic.subscriptions > budget {
            omitted += topic.subscriptions;
            FiguresOf::Topic
        } else {
            FiguresOf::All
        };
        let name = topic.config.name;
        let Ok(figures) = state.broker.subscription_figures(&name, of).await else {
            continue;
        };
        let (delayed, subscriptions) = led_sums(figures);
        delays.push((name.clone(), delayed));
        if of == FiguresOf::All {
            budget = budget.saturating_sub(subscriptions.len());
            reported.push((name, subscriptions));
        }
    }
    (delays, reported, omitted)
}

/// The delayed messages and each subscription's stats of the partitions `figures` says this
/// node serves (leads), added up.
fn led_sums(figures: TopicFigures) -> (u64, Vec<SubscriptionInfo>) {
    let served = |p: usize| figures.served.get(p).copied().unwrap_or(false);
    let delayed = (0..)
        .zip(&figures.delayed)
        .filter(|(p, _)| served(*p))
        .map(|(_, n)| n)
        .sum();
    let subscriptions = figures
        .subscriptions
        .iter()
        .map(|s| {
            let mut stats = SubscriptionStats {
                delayed,
                ..SubscriptionStats::default()
            };
            for (_, partition) in (0..).zip(&s.partitions).filter(|(p, _)| served(*p)) {
                stats.add(partition);
            }
            SubscriptionInfo {
                config: s.config.clone(),
                stats,
            }
        })
        .collect();
    (delayed, subscriptions)
}

/// Topics with their subscriptions' stats, in topic name order.
type Reported = Vec<(String, Vec<SubscriptionInfo>)>;

/// Each topic's subscriptions with stats, in topic name order, while the total stays within
/// [`MAX_SCRAPED_SUBSCRIPTIONS`]; and how many subscriptions were left out.
async fn scraped_subscriptions(state: &AppState) -> (Reported, usize) {
    let mut topics = state.broker.list_topics();
    topics.sort_by(|a, b| a.config.name.cmp(&b.config.name));
    let mut budget = MAX_SCRAPED_SUBSCRIPTIONS;
    let mut omitted = 0;
    let mut reported = Vec::new();
    for topic in topics.into_iter().filter(|topic| topic.subscriptions > 0) {
        if topic.subscriptions > budget {
            omitted += topic.subscriptions;
            continue;
        }
        let name = topic.config.name;
        let Ok(subscriptions) = state.broker.list_subscriptions(&name).await else {
            continue;
        };
        budget = budget.saturating_sub(subscriptions.len());
        reported.push((name, subscriptions));
    }
    (reported, omitted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_and_series_follow_their_type_line() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let mut family = Family::new("wharf_x", "An x.");
        family.push(vec![("topic", "t\"1".to_owned())], 2.0);
        family.push(Vec::new(), 0.5);
        let mut out = String::new();
        family.write(&mut out);
        assert_eq!(
            out,
            "# HELP wharf_x An x.\n# TYPE wharf_x gauge\nwharf_x{topic=\"t\\\"1\"} 2\nwharf_x 0.5\n"
        );
    }
}
