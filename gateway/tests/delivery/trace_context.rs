//! W3C trace context over real HTTP: a `traceparent` and `tracestate` given at produce (per
//! message in a JSON batch, as headers on a raw produce) come back on every delivery: receive,
//! the SSE stream, the offset read, the dead letter and its redriven copy. A bad one is
//! refused with 400 and nothing is stored.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::common::{Harness, expect_problem, json_of, receipts};

const TOPIC: &str = "orders";
const SUB: &str = "billing";
const WATCH: &str = "watch";
const DLQ: &str = "orders.billing.dlq";
const JSON_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const JSON_STATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
const RAW_PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
const RAW_STATE: &str = "vendor=opaque";

/// The trace context a message should carry, by its value.
fn expected(value: &str) -> (&'static str, &'static str) {
    match value {
        "from json" => (JSON_PARENT, JSON_STATE),
        "from raw" => (RAW_PARENT, RAW_STATE),
        other => panic!("an unexpected message {other}"),
    }
}

fn assert_traced(message: &Value, where_: &str) {
    let value = message["value"].as_str().expect("a text value");
    let (parent, state) = expected(value);
    assert_eq!(message["traceparent"], parent, "{where_}: {message}");
    assert_eq!(message["tracestate"], state, "{where_}: {message}");
}

async fn produce_both(node: &Harness) {
    node.produce(
        TOPIC,
        vec![json!({ "value": "from json", "traceparent": JSON_PARENT, "tracestate": JSON_STATE })],
    )
    .await;
    let raw = node
        .client
        .post(node.url(&format!("/v1/topics/{TOPIC}/messages")))
        .header("content-type", "text/plain")
        .header("traceparent", RAW_PARENT)
        .header("tracestate", RAW_STATE)
        .body("from raw")
        .send()
        .await
        .expect("request");
    json_of(raw, 200).await;
}

/// Receives until `count` messages came, within 10 s.
async fn receive_all(node: &Harness, sub: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < count {
        assert!(Instant::now() < deadline, "only {got:?} within 10 s");
        let body = json!({ "max_messages": 10, "wait_ms": 2000 });
        got.extend(node.receive(TOPIC, sub, body).await);
    }
    assert_eq!(got.len(), count, "{got:?}");
    got
}

async fn read_all(node: &Harness, topic: &str) -> Vec<Value> {
    let page = json_of(
        node.get(&format!(
            "/v1/topics/{topic}/partitions/0/messages?offset=0"
        ))
        .await,
        200,
    )
    .await;
    page["messages"].as_array().expect("messages").clone()
}

/// The first `count` messages of a subscription's SSE stream.
async fn stream(node: &Harness, sub: &str, count: usize) -> Vec<Value> {
    let path = format!("/v1/topics/{TOPIC}/subscriptions/{sub}/stream");
    let mut response = node
        .client
        .get(node.url(&path))
        .send()
        .await
        .expect("stream");
    assert_eq!(response.status(), 200);
    let mut text = String::new();
    let mut messages = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while messages.len() < count {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .expect("stream messages within 10 s")
            .expect("a chunk")
            .expect("an open stream");
        text.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            let data: String = frame
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            if !data.is_empty() {
                messages.push(serde_json::from_str(&data).expect("message JSON"));
            }
        }
    }
    messages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_context_given_at_produce_comes_back_on_every_delivery_path() {
    let node = Harness::start().await;
    node.create_topic(json!({ "name": TOPIC })).await;
    node.create_subscription(
        TOPIC,
        json!({ "name": SUB, "max_deliveries": 2, "retry": { "initial_backoff_ms": 10 } }),
    )
    .await;
    node.create_subscription(TOPIC, json!({ "name": WATCH }))
        .await;
    produce_both(&node).await;

    for message in read_all(&node, TOPIC).await {
        assert_traced(&message, "offset read");
    }
    for message in stream(&node, WATCH, 2).await {
        assert_traced(&message, "stream");
    }
    for attempt in 1..=2 {
        let got = receive_all(&node, SUB, 2).await;
        for message in &got {
            assert_traced(message, &format!("receive, attempt {attempt}"));
        }
        let nack = json!({ "receipts": receipts(&got), "delay_ms": 0 });
        let path = format!("/v1/topics/{TOPIC}/subscriptions/{SUB}/nack");
        node.post_ok(&path, &nack, 200).await;
    }

    let deadline = Instant::now() + Duration::from_secs(10);
    let dead = loop {
        let dead = match node.get(&format!("/v1/topics/{DLQ}")).await.status() {
            reqwest::StatusCode::OK => read_all(&node, DLQ).await,
            _ => Vec::new(),
        };
        if dead.len() == 2 || Instant::now() > deadline {
            break dead;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(dead.len(), 2, "{dead:?}");
    for message in &dead {
        assert_traced(message, "dead letter");
    }

    let path = format!("/v1/topics/{TOPIC}/subscriptions/{SUB}/redrive");
    let reply = node.post_ok(&path, &json!({}), 200).await;
    assert_eq!(reply, json!({ "redriven": 2 }));
    for message in receive_all(&node, SUB, 2).await {
        assert_traced(&message, "redriven copy");
        assert_eq!(message["delivery_attempt"], 1, "{message}");
    }
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_without_trace_context_has_no_trace_fields() {
    let node = Harness::start().await;
    node.create_topic(json!({ "name": TOPIC })).await;
    node.produce(TOPIC, vec![json!({ "value": "plain" })]).await;
    let read = read_all(&node, TOPIC).await;
    assert_eq!(read.len(), 1);
    assert!(read[0].get("traceparent").is_none(), "{}", read[0]);
    assert!(read[0].get("tracestate").is_none(), "{}", read[0]);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_trace_context_is_refused_with_400_and_nothing_is_stored() {
    let node = Harness::start().await;
    node.create_topic(json!({ "name": TOPIC })).await;
    let path = format!("/v1/topics/{TOPIC}/messages");
    let bad_parents = [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
    ];
    for parent in bad_parents {
        let batch = json!({ "messages": [
            { "value": "good", "traceparent": JSON_PARENT },
            { "value": "bad", "traceparent": parent },
        ] });
        let problem =
            expect_problem(node.post_json(&path, &batch).await, 400, "invalid_request").await;
        assert!(
            problem["detail"]
                .as_str()
                .is_some_and(|d| d.contains("messages[1]")),
            "{problem}"
        );
        let raw = node
            .client
            .post(node.url(&path))
            .header("traceparent", parent)
            .body("bad")
            .send()
            .await
            .expect("request");
        expect_problem(raw, 400, "invalid_request").await;
    }
    let too_many_members = (0..33).map(|i| format!("k{i}=v")).collect::<Vec<_>>();
    let bad_states = [
        json!({ "value": "bad", "tracestate": "a=b" }),
        json!({ "value": "bad", "traceparent": JSON_PARENT, "tracestate": too_many_members.join(",") }),
        json!({ "value": "bad", "traceparent": JSON_PARENT, "tracestate": format!("k={}", "v".repeat(511)) }),
    ];
    for message in bad_states {
        let batch = json!({ "messages": [message] });
        expect_problem(node.post_json(&path, &batch).await, 400, "invalid_request").await;
    }
    let longest_state = format!("k={}", "v".repeat(510));
    let batch = json!({ "messages": [
        { "value": "kept", "traceparent": JSON_PARENT, "tracestate": longest_state },
    ] });
    json_of(node.post_json(&path, &batch).await, 200).await;
    let read = read_all(&node, TOPIC).await;
    assert_eq!(read.len(), 1, "only the good produce is stored: {read:?}");
    assert_eq!(read[0]["value"], "kept");
    assert_eq!(read[0]["tracestate"], longest_state);
    node.stop().await;
}
