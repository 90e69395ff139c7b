//! `GET /metrics`: valid Prometheus text, the listed series after real traffic, bounded route
//! labels, and exposure under auth.
//!
//! Every test server in this process shares one global recorder, so assertions use a topic
//! name unique to the test and check presence (or values of that topic's own series), never
//! process-wide totals.

use std::collections::{HashMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

use gateway::config::EdgeRaw;
use serde_json::json;

use crate::support::common::{Harness, expect_problem, json_of, receipts};
use crate::support::edge_common::{token, with_secret};

/// One sample line: `name{labels} value`.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: HashMap<String, String>,
    value: f64,
}

/// A parsed exposition: each family's type, and the samples in order.
#[derive(Debug, Default)]
struct Exposition {
    types: HashMap<String, String>,
    samples: Vec<Sample>,
}

impl Exposition {
    /// Samples named `name` whose labels include every pair of `labels`.
    fn find(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&Sample> {
        self.samples
            .iter()
            .filter(|sample| sample.name == name)
            .filter(|sample| {
                labels
                    .iter()
                    .all(|(key, value)| sample.labels.get(*key).map(String::as_str) == Some(value))
            })
            .collect()
    }

    /// The value of exactly one matching sample.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found = self.find(name, labels);
        assert_eq!(found.len(), 1, "one {name} {labels:?}, found {found:?}");
        found[0].value
    }
}

fn valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ if text
            .chars()
            .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E') =>
        {
            None
        }
        _ => text.parse().ok(),
    }
}

/// Parses `{a="x",b="y"}` (the braces stripped) strictly: label names, quoting and escapes.
fn parse_labels(mut text: &str, line: &str) -> HashMap<String, String> {
    let mut labels = HashMap::new();
    while !text.is_empty() {
        let (name, rest) = text
            .split_once("=\"")
            .unwrap_or_else(|| panic!("label without =\": {line}"));
        assert!(valid_label_name(name), "bad label name {name:?}: {line}");
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => panic!("bad escape {other:?}: {line}"),
                },
                Some((i, '"')) => break i,
                Some((_, '\n')) | None => panic!("unterminated label value: {line}"),
                Some((_, c)) => value.push(c),
            }
        };
        assert!(
            labels.insert(name.to_owned(), value).is_none(),
            "duplicate label {name}: {line}"
        );
        text = &rest[end + 1..];
        text = text.strip_prefix(',').unwrap_or_else(|| {
            assert!(text.is_empty(), "junk after a label value: {line}");
            text
        });
    }
    labels
}

/// The family a sample belongs to: its own name, or without a histogram/summary suffix.
fn family_of<'a>(name: &'a str, types: &HashMap<String, String>) -> &'a str {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix)
            && let Some(kind) = types.get(base)
            && (kind == "histogram" || (kind == "summary" && suffix != "_bucket"))
        {
            return base;
        }
    }
    name
}

/// A strict parser of the text format: every line a comment or `name{labels} value`, every
/// family typed once before its samples, and its samples contiguous.
fn parse(text: &str) -> Exposition {
    let mut exposition = Exposition::default();
    let mut finished: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let words: Vec<&str> = comment.trim_start().splitn(3, ' ').collect();
            if words.first() == Some(&"TYPE") {
                let [_, name, kind] = words[..] else {
                    panic!("bad TYPE line: {line}")
                };
                assert!(valid_metric_name(name), "bad name in {line}");
                assert!(
                    ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                    "bad type in {line}"
                );
                let previous = exposition.types.insert(name.to_owned(), kind.to_owned());
                assert!(previous.is_none(), "second TYPE for {name}");
            } else if words.first() == Some(&"HELP") {
                assert!(words.len() >= 2 && valid_metric_name(words[1]), "{line}");
            }
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value: {line}"));
        let value = parse_value(value).unwrap_or_else(|| panic!("bad value: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let inner = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("unclosed labels: {line}"));
                (name, parse_labels(inner, line))
            }
            None => (series, HashMap::new()),
        };
        assert!(valid_metric_name(name), "bad metric name {name:?}: {line}");
        let family = family_of(name, &exposition.types).to_owned();
        assert!(
            exposition.types.contains_key(&family),
            "series without a # TYPE: {line}"
        );
        if name.ends_with("_bucket") && exposition.types[&family] == "histogram" {
            assert!(labels.contains_key("le"), "bucket without le: {line}");
        }
        if current.as_ref() != Some(&family) {
            assert!(
                !finished.contains(&family),
                "samples of {family} are not contiguous"
            );
            if let Some(previous) = current.replace(family.clone()) {
                finished.insert(previous);
            }
        }
        exposition.samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    exposition
}

/// A topic name no other test uses.
fn unique_topic(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

async fn scrape(harness: &Harness) -> Exposition {
    let response = harness.get("/metrics").await;
    assert_eq!(response.status(), 200);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    parse(&response.text().await.expect("body"))
}

#[test]
fn the_test_parser_refuses_what_prometheus_would() {
    let ok = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\",y=\"q\\\"\"} 3\n";
    assert_eq!(parse(ok).value("a_total", &[("y", "q\"")]), 3.0);
    for bad in [
        "a_total 1\n",
        "# TYPE a counter\na{x=1} 1\n",
        "# TYPE a counter\na{1x=\"1\"} 1\n",
        "# TYPE a counter\na one\n",
        "# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na 2\n",
        "# TYPE 9a gauge\n",
    ] {
        let result = std::panic::catch_unwind(|| parse(bad));
        assert!(result.is_err(), "accepted {bad:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_produce_receive_ack_and_nack_the_listed_series_are_present() {
    let harness = Harness::start().await;
    let topic = unique_topic("metrics");
    let sub = "workers";
    harness
        .create_topic(json!({ "name": topic, "partitions": 1 }))
        .await;
    harness
        .create_subscription(&topic, json!({ "name": sub }))
        .await;
    harness
        .produce(
            &topic,
            vec![json!({ "value": "a" }), json!({ "value": "b" })],
        )
        .await;
    let messages = harness
        .receive(&topic, sub, json!({ "max_messages": 2, "wait_ms": 5000 }))
        .await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    let receipts = receipts(&messages);
    harness.ack(&topic, sub, &receipts[..1]).await;
    let nack_path = format!("/v1/topics/{topic}/subscriptions/{sub}/nack");
    let body = json!({ "receipts": &receipts[1..], "delay_ms": 60_000 });
    json_of(harness.post_json(&nack_path, &body).await, 200).await;

    let metrics = scrape(&harness).await;
    let t = topic.as_str();
    let produce_route = [
        ("method", "POST"),
        ("route", "/v1/topics/{topic}/messages"),
        ("status", "200"),
    ];
    assert!(metrics.value("wharf_http_requests_total", &produce_route) >= 1.0);
    assert!(
        !metrics
            .find("wharf_http_request_duration_seconds_bucket", &produce_route)
            .is_empty()
    );
    assert_eq!(
        metrics.types["wharf_http_request_duration_seconds"],
        "histogram"
    );
    assert_eq!(
        metrics.value("wharf_produced_messages_total", &[("topic", t)]),
        2.0
    );
    assert_eq!(
        metrics.value("wharf_produced_bytes_total", &[("topic", t)]),
        2.0
    );
    let of_sub = [("topic", t), ("subscription", sub)];
    assert_eq!(
        metrics.value("wharf_delivered_messages_total", &of_sub),
        2.0
    );
    for action in ["ack", "nack"] {
        let labels = [("topic", t), ("subscription", sub), ("action", action)];
        assert_eq!(metrics.value("wharf_settled_messages_total", &labels), 1.0);
    }
    assert_eq!(
        metrics.value("wharf_subscription_backlog_messages", &of_sub),
        1.0
    );
    assert_eq!(
        metrics.value("wharf_subscription_in_flight_messages", &of_sub),
        0.0
    );
    assert_eq!(
        metrics.value("wharf_subscription_waiting_retry_messages", &of_sub),
        1.0
    );
    assert_eq!(
        metrics.value(
            "wharf_subscription_unacked_limit_reached_partitions",
            &of_sub
        ),
        0.0
    );
    assert_eq!(
        metrics.value("wharf_topic_delayed_messages", &[("topic", t)]),
        0.0
    );
    for histogram in [
        "wharf_fsync_seconds",
        "wharf_group_commit_requests",
        "wharf_group_commit_bytes",
        "wharf_writer_queue_depth",
    ] {
        assert_eq!(metrics.types[histogram], "histogram", "{histogram}");
        assert!(metrics.value(&format!("{histogram}_count"), &[]) >= 1.0);
        assert!(!metrics.find(&format!("{histogram}_bucket"), &[]).is_empty());
    }
    assert!(metrics.value("wharf_open_connections", &[]) >= 1.0);
    assert_eq!(metrics.value("wharf_long_polls", &[]), 0.0);
    assert_eq!(
        metrics.value("wharf_metrics_subscriptions_omitted", &[]),
        0.0
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn route_labels_are_templates_never_raw_paths() {
    let harness = Harness::start().await;
    let topic = unique_topic("labels");
    let stray = format!("/{}", unique_topic("nowhere"));
    expect_problem(harness.get(&stray).await, 404, "route_not_found").await;
    expect_problem(
        harness.get(&format!("/v1/topics/{topic}")).await,
        404,
        "topic_not_found",
    )
    .await;
    let metrics = scrape(&harness).await;
    let unmatched = [("route", "unmatched"), ("status", "404")];
    assert!(metrics.value("wharf_http_requests_total", &unmatched) >= 1.0);
    let described = [("route", "/v1/topics/{topic}"), ("status", "404")];
    assert!(metrics.value("wharf_http_requests_total", &described) >= 1.0);
    for sample in &metrics.samples {
        if let Some(route) = sample.labels.get("route") {
            assert!(
                !route.contains(&topic) && !route.contains("nowhere"),
                "raw path in a label: {sample:?}"
            );
        }
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_a_token_when_auth_is_on_unless_metrics_public() {
    let guarded = Harness::start_with(with_secret(EdgeRaw::default())).await;
    expect_problem(guarded.get("/metrics").await, 401, "unauthorized").await;
    let scraped = guarded
        .client
        .get(guarded.url("/metrics"))
        .bearer_auth(token("prometheus", ""))
        .send()
        .await
        .expect("request");
    assert_eq!(scraped.status(), 200, "any valid token may scrape");
    parse(&scraped.text().await.expect("body"));
    guarded.stop().await;

    let open = Harness::start_with(with_secret(EdgeRaw {
        metrics_public: Some("true".into()),
        ..EdgeRaw::default()
    }))
    .await;
    scrape(&open).await;
    expect_problem(open.get("/v1/topics").await, 401, "unauthorized").await;
    open.stop().await;
}
