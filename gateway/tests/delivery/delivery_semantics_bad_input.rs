//! Bad input for every field of delays, dedup, filters, dead letters, ordering, retry-safe
//! receive, seek, redrive and streams: a 4xx problem+json, never a 5xx, and nothing changed.
//! Both sides of each limit are tried where the limit is a number.

use reqwest::{RequestBuilder, Response};
use serde_json::{Value, json};

use crate::restartable::{self, Node, json_of};
use crate::support::now_ms;

const TOPIC: &str = "t";
const YEAR_MS: u64 = 365 * 24 * 60 * 60 * 1000;
const WEEK_MS: u64 = 7 * 24 * 60 * 60 * 1000;

async fn expect_problem(response: Response, status: u16, code: &str, what: &str) -> Value {
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    let actual = response.status().as_u16();
    let body = response.text().await.expect("body");
    assert_eq!(actual, status, "{what}: {body}");
    assert_eq!(content_type, "application/problem+json", "{what}: {body}");
    let problem: Value = serde_json::from_str(&body).expect("problem JSON");
    assert_eq!(problem["code"], code, "{what}: {problem}");
    assert_eq!(problem["status"], status, "{what}: {problem}");
    problem
}

async fn send(request: RequestBuilder) -> Response {
    request.send().await.expect("request")
}

fn tags(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("t{i}")).collect()
}

/// Everything observable that bad input must not change.
async fn snapshot(node: &Node) -> Value {
    let topic = node.get_ok(&format!("/v1/topics/{TOPIC}")).await;
    let subs = node
        .get_ok(&format!("/v1/topics/{TOPIC}/subscriptions"))
        .await;
    let names: Vec<Value> = subs["subscriptions"]
        .as_array()
        .expect("subscriptions")
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    let stats = node.stats(TOPIC, "s").await;
    json!({
        "end_offsets": restartable::total_end_offset(&topic),
        "dedup_window_ms": topic["dedup_window_ms"],
        "subscriptions": names,
        "delayed": stats["delayed"],
        "delivered": stats["delivered"],
        "backlog": stats["backlog"],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_delays_ids_and_tags_on_produce_are_refused_and_store_nothing() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": TOPIC, "partitions": 2 }))
        .await;
    node.create_subscription(TOPIC, json!({ "name": "s" }))
        .await;
    let before = snapshot(&node).await;
    let long_id = "x".repeat(201);
    let bad_messages = [
        json!({ "value": "v", "delay_ms": -1 }),
        json!({ "value": "v", "delay_ms": YEAR_MS + 60_000 }),
        json!({ "value": "v", "delay_ms": "soon" }),
        json!({ "value": "v", "deliver_at_ms": -5 }),
        json!({ "value": "v", "deliver_at_ms": now_ms() + YEAR_MS + 60_000 }),
        json!({ "value": "v", "delay_ms": 10, "deliver_at_ms": now_ms() + 10 }),
        json!({ "value": "v", "id": "" }),
        json!({ "value": "v", "id": "a/b" }),
        json!({ "value": "v", "id": "a b" }),
        json!({ "value": "v", "id": long_id }),
        json!({ "value": "v", "id": 7 }),
        json!({ "value": "v", "tags": [""] }),
        json!({ "value": "v", "tags": ["bad tag"] }),
        json!({ "value": "v", "tags": ["é"] }),
        json!({ "value": "v", "tags": tags(33) }),
        json!({ "value": "v", "tags": "a" }),
    ];
    let path = node.url(&format!("/v1/topics/{TOPIC}/messages"));
    for message in bad_messages {
        let batch = json!({ "messages": [{ "value": "good", "id": "good-1" }, message] });
        let response = send(node.client.post(&path).json(&batch)).await;
        expect_problem(response, 400, "invalid_request", &message.to_string()).await;
    }
    let raw_queries = [
        "?delay_ms=-1",
        "?delay_ms=abc",
        "?delay_ms=31536060000",
        "?delay_ms=1&deliver_at_ms=2",
        "?deliver_at_ms=-1",
    ];
    for query in raw_queries {
        let response = send(node.client.post(format!("{path}{query}")).body("raw")).await;
        expect_problem(response, 400, "invalid_request", query).await;
    }
    for key in ["", "a b", "a/b", &"k".repeat(201)] {
        let request = node
            .client
            .post(&path)
            .header("idempotency-key", key)
            .body("raw");
        expect_problem(send(request).await, 400, "invalid_request", key).await;
    }
    let json_with_header = node
        .client
        .post(&path)
        .header("idempotency-key", "k1")
        .json(&json!({ "messages": [{ "value": "v" }] }));
    expect_problem(
        send(json_with_header).await,
        400,
        "invalid_request",
        "json + key",
    )
    .await;
    let json_with_query = node
        .client
        .post(format!("{path}?delay_ms=5"))
        .json(&json!({ "messages": [{ "value": "v" }] }));
    expect_problem(
        send(json_with_query).await,
        400,
        "invalid_request",
        "json + query",
    )
    .await;
    assert_eq!(snapshot(&node).await, before);

    let limits = json!({ "messages": [
        { "value": "a", "id": "i".repeat(200), "tags": tags(32) },
        { "value": "b", "delay_ms": YEAR_MS - 60_000 },
        { "value": "c", "deliver_at_ms": now_ms() + YEAR_MS - 60_000 },
    ] });
    let accepted = json_of(send(node.client.post(&path).json(&limits)).await, 200).await;
    assert_eq!(accepted["messages"][0]["duplicate"], false, "{accepted}");
    assert!(
        accepted["messages"][1]["deliver_at_ms"].is_u64(),
        "{accepted}"
    );
    let raw_ok = node
        .client
        .post(format!("{path}?delay_ms=1000"))
        .header("idempotency-key", "r".repeat(200))
        .body("raw");
    json_of(send(raw_ok).await, 200).await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_subscription_settings_are_refused_and_create_nothing() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": TOPIC })).await;
    node.create_subscription(TOPIC, json!({ "name": "s" }))
        .await;
    let before = snapshot(&node).await;
    let bad = [
        json!({ "name": "n", "max_deliveries": 0 }),
        json!({ "name": "n", "max_deliveries": 1001 }),
        json!({ "name": "n", "max_deliveries": -1 }),
        json!({ "name": "n", "ordering": "fifo" }),
        json!({ "name": "n", "ordering": "Key" }),
        json!({ "name": "n", "filter": { "tags": [""] } }),
        json!({ "name": "n", "filter": { "tags": ["bad tag"] } }),
        json!({ "name": "n", "filter": { "tags": tags(33) } }),
        json!({ "name": "n", "filter": { "tags": "a" } }),
        json!({ "name": "n", "filter": { "tag": ["a"] } }),
        json!({ "name": "n", "dead_letter_topic": "bad name!" }),
        json!({ "name": "n", "dead_letter_topic": TOPIC }),
        json!({ "name": "n", "dead_letter_topic": "" }),
    ];
    let path = format!("/v1/topics/{TOPIC}/subscriptions");
    for body in bad {
        let response = node.post_json(&path, &body).await;
        expect_problem(response, 400, "invalid_request", &body.to_string()).await;
    }
    assert_eq!(snapshot(&node).await, before);

    let low = node
        .create_subscription(
            TOPIC,
            json!({ "name": "low", "max_deliveries": 1, "filter": {} }),
        )
        .await;
    assert_eq!(low["max_deliveries"], 1);
    assert_eq!(low["filter"], json!({ "tags": [] }));
    let high = node
        .create_subscription(
            TOPIC,
            json!({ "name": "high", "max_deliveries": 1000, "filter": { "tags": tags(32) } }),
        )
        .await;
    assert_eq!(high["max_deliveries"], 1000);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_attempt_ids_nacks_redrives_streams_and_topic_windows_are_refused() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": TOPIC })).await;
    node.create_subscription(TOPIC, json!({ "name": "s" }))
        .await;
    let sub = format!("/v1/topics/{TOPIC}/subscriptions/s");
    let before = snapshot(&node).await;

    for attempt_id in [json!("a".repeat(129)), json!(""), json!("a b"), json!(5)] {
        let body = json!({ "wait_ms": 0, "attempt_id": attempt_id });
        let response = node.post_json(&format!("{sub}/receive"), &body).await;
        expect_problem(response, 400, "invalid_request", &body.to_string()).await;
    }
    let ok = json!({ "wait_ms": 0, "attempt_id": "a".repeat(128) });
    json_of(node.post_json(&format!("{sub}/receive"), &ok).await, 200).await;

    let nack = json!({ "receipts": ["r"], "error": 5 });
    let response = node.post_json(&format!("{sub}/nack"), &nack).await;
    expect_problem(response, 400, "invalid_request", "nack error").await;

    // A zero is refused naming the field that was zero.
    for field in ["max_messages", "messages_per_second"] {
        let body = json!({ field: 0 });
        let response = node.post_json(&format!("{sub}/redrive"), &body).await;
        let problem = expect_problem(response, 400, "invalid_request", &body.to_string()).await;
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains(&format!("invalid {field}:")),
            "{field}: {problem}"
        );
    }
    for body in [
        json!({ "max_messages": -1 }),
        json!({ "max_messages": 1, "extra": true }),
    ] {
        let response = node.post_json(&format!("{sub}/redrive"), &body).await;
        expect_problem(response, 400, "invalid_request", &body.to_string()).await;
    }
    let missing = node
        .post_json(
            &format!("/v1/topics/{TOPIC}/subscriptions/nope/redrive"),
            &json!({}),
        )
        .await;
    expect_problem(missing, 404, "subscription_not_found", "redrive unknown").await;

    for query in [
        "max_in_flight=0",
        "max_in_flight=1001",
        "max_in_flight=-1",
        "heartbeat_ms=99",
        "heartbeat_ms=60001",
        "ack_timeout_ms=999",
        "ack_timeout_ms=43200001",
        "unknown=1",
    ] {
        let response = send(node.client.get(node.url(&format!("{sub}/stream?{query}")))).await;
        expect_problem(response, 400, "invalid_request", query).await;
    }
    let unknown_stream = send(
        node.client
            .get(node.url(&format!("/v1/topics/{TOPIC}/subscriptions/nope/stream"))),
    )
    .await;
    expect_problem(
        unknown_stream,
        404,
        "subscription_not_found",
        "stream unknown",
    )
    .await;

    let cancel = send(node.client.delete(node.url("/v1/topics/nope/messages/m"))).await;
    expect_problem(cancel, 404, "topic_not_found", "cancel on unknown topic").await;

    for window in [json!(WEEK_MS + 1), json!(-1), json!("1")] {
        let create = json!({ "name": "other", "dedup_window_ms": window });
        let response = node.post_json("/v1/topics", &create).await;
        expect_problem(response, 400, "invalid_request", &create.to_string()).await;
        let patch = json!({ "dedup_window_ms": window });
        let response = send(
            node.client
                .patch(node.url(&format!("/v1/topics/{TOPIC}")))
                .json(&patch),
        )
        .await;
        expect_problem(response, 400, "invalid_request", &patch.to_string()).await;
    }
    assert_eq!(snapshot(&node).await, before);
    let topics = node.get_ok("/v1/topics").await;
    assert_eq!(
        topics["topics"].as_array().expect("topics").len(),
        1,
        "{topics}"
    );

    let created = node
        .create_topic(json!({ "name": "other", "dedup_window_ms": WEEK_MS }))
        .await;
    assert_eq!(created["dedup_window_ms"], WEEK_MS);
    let patched = send(
        node.client
            .patch(node.url(&format!("/v1/topics/{TOPIC}")))
            .json(&json!({ "dedup_window_ms": 0 })),
    )
    .await;
    assert_eq!(json_of(patched, 200).await["dedup_window_ms"], 0);
    node.stop().await;
}
