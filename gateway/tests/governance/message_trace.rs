//! The message trace over real HTTP with auth on (API.md "Looking a message up"): a message
//! produced with a `traceparent`, delivered twice with nacks by two consumers, dead-lettered,
//! redriven and acked shows every step in order with who did it; a lease that ran out shows
//! as `lease_expired`; a filtered subscription and an untouched one show their states;
//! lookups by key answer the newest first; bad input is a 400 and unknown ids a 404.

use std::time::{Duration, Instant};

use gateway::config::EdgeRaw;
use serde_json::{Value, json};

use crate::support::common::{Harness, expect_problem, json_of};
use crate::support::edge_common::{token, with_secret};

const TOPIC: &str = "orders";
const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE: &str = "rojo=00f067aa0ba902b7";

async fn get(node: &Harness, bearer: &str, path: &str) -> reqwest::Response {
    node.client
        .get(node.url(path))
        .bearer_auth(bearer)
        .send()
        .await
        .expect("request")
}

/// The one message a receive on `sub` as `bearer` gets within 10 s.
async fn receive_one(node: &Harness, bearer: &str, sub: &str) -> Value {
    let path = format!("/v1/topics/{TOPIC}/subscriptions/{sub}/receive");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(
            Instant::now() < deadline,
            "nothing to receive on {sub} in 10 s"
        );
        let reply = node
            .post_as(bearer, &path, json!({"max_messages": 1, "wait_ms": 2000}))
            .await;
        if let Some(message) = reply["messages"].get(0) {
            return message.clone();
        }
    }
}

async fn nack(node: &Harness, bearer: &str, message: &Value, error: &str) {
    let path = format!("/v1/topics/{TOPIC}/subscriptions/billing/nack");
    let body = json!({"receipts": [message["receipt"]], "delay_ms": 0, "error": error});
    node.post_as(bearer, &path, body).await;
}

/// The trace of `id` as `bearer` once `done` holds of it (delivery events are written
/// without waiting for them), within 10 s.
async fn trace_when(
    node: &Harness,
    bearer: &str,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let path = format!("/v1/topics/{TOPIC}/messages/{id}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let trace = json_of(get(node, bearer, &path).await, 200).await;
        if done(&trace) {
            return trace;
        }
        assert!(
            Instant::now() < deadline,
            "the trace never got there: {trace:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn subscription<'a>(trace: &'a Value, name: &str) -> &'a Value {
    trace["subscriptions"]
        .as_array()
        .expect("subscriptions")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no subscription {name} in {trace:#}"))
}

fn kinds(sub: &Value) -> Vec<String> {
    sub["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["kind"].as_str().expect("a kind").to_owned())
        .collect()
}

/// One event of a trace as the test compares it: kind, attempt, consumer principal, error.
type Step = (String, Option<u64>, Option<String>, Option<String>);

/// Kind, attempt, consumer principal and error of each event.
fn steps(sub: &Value) -> Vec<Step> {
    sub["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().expect("a kind").to_owned(),
                e["attempt"].as_u64(),
                e["consumer"]["principal"].as_str().map(str::to_owned),
                e["error"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn step(kind: &str, attempt: Option<u64>, by: Option<&str>, error: Option<&str>) -> Step {
    (
        kind.to_owned(),
        attempt,
        by.map(str::to_owned),
        error.map(str::to_owned),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_shows_every_step_of_a_message_in_order_with_who_took_it() {
    let node = Harness::start_with(with_secret(EdgeRaw::default())).await;
    let admin = token("ops", "admin:*");
    node.post_as(
        &admin,
        "/v1/topics",
        json!({"name": TOPIC, "partitions": 2}),
    )
    .await;
    let subs = format!("/v1/topics/{TOPIC}/subscriptions");
    let billing = json!({"name": "billing", "start": "earliest", "max_deliveries": 2,
        "retry": {"initial_backoff_ms": 10}});
    node.post_as(&admin, &subs, billing).await;
    node.post_as(&admin, &subs, json!({"name": "audit", "start": "earliest"}))
        .await;
    let only_red = json!({"name": "red", "start": "earliest", "filter": {"tags": ["red"]}});
    node.post_as(&admin, &subs, only_red).await;
    let short = json!({"name": "short", "start": "earliest", "ack_timeout_ms": 1000});
    node.post_as(&admin, &subs, short).await;

    let shop = token("shop", &format!("produce:{TOPIC}"));
    let batch = json!({"messages": [{"id": "order-42", "key": "customer-7", "value": "42",
        "traceparent": PARENT, "tracestate": STATE}]});
    node.post_as(&shop, &format!("/v1/topics/{TOPIC}/messages"), batch)
        .await;

    // billing: two deliveries by two workers, both nacked, so it is dead-lettered.
    let first = token("worker-1", &format!("consume:{TOPIC}"));
    let second = token("worker-2", &format!("consume:{TOPIC}"));
    let got = receive_one(&node, &first, "billing").await;
    assert_eq!(got["traceparent"], PARENT, "{got}");
    nack(&node, &first, &got, "boom").await;
    let got = receive_one(&node, &second, "billing").await;
    assert_eq!(got["delivery_attempt"], 2, "{got}");
    assert_eq!(got["traceparent"], PARENT, "{got}");
    nack(&node, &second, &got, "boom again").await;
    trace_when(&node, &admin, "order-42", |t| {
        subscription(t, "billing")["state"] == "dead_lettered"
    })
    .await;

    // The redriven copy comes back with the trace context; worker-1 acks it.
    let redrive = format!("/v1/topics/{TOPIC}/subscriptions/billing/redrive");
    let reply = node.post_as(&admin, &redrive, json!({})).await;
    assert_eq!(reply["redriven"], 1, "{reply}");
    let copy = receive_one(&node, &first, "billing").await;
    assert_eq!(copy["id"], "order-42", "{copy}");
    assert_eq!(copy["traceparent"], PARENT, "{copy}");
    assert_eq!(copy["tracestate"], STATE, "{copy}");
    let ack = json!({"receipts": [copy["receipt"]]});
    node.post_as(&first, &format!("{subs}/billing/ack"), ack)
        .await;

    // short: delivered, its lease runs out unanswered, delivered again and left in flight.
    receive_one(&node, &first, "short").await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // A long lease this time: it must still hold when the trace is read (a delivery's event
    // may take up to a second to be fsynced and shown).
    let path = format!("/v1/topics/{TOPIC}/subscriptions/short/receive");
    let body = json!({"max_messages": 1, "wait_ms": 5000, "ack_timeout_ms": 60000});
    let again = node.post_as(&second, &path, body).await;
    assert_eq!(again["messages"][0]["delivery_attempt"], 2, "{again}");

    let trace = trace_when(&node, &admin, "order-42", |t| {
        kinds(subscription(t, "billing")).last().map(String::as_str) == Some("acked")
            && kinds(subscription(t, "short")).len() == 3
    })
    .await;

    assert_eq!(trace["topic"], TOPIC);
    assert_eq!(trace["message"]["id"], "order-42");
    assert_eq!(trace["message"]["key"], "customer-7");
    assert_eq!(trace["message"]["traceparent"], PARENT);
    assert_eq!(trace["message"]["tracestate"], STATE);
    let produced = &trace["produced"];
    assert_eq!(produced["principal"], "shop", "{produced}");
    assert_eq!(produced["client_addr"], "127.0.0.1", "{produced}");
    assert_eq!(produced["node"], Value::Null, "a single node: {produced}");
    assert_eq!(produced["offset"], trace["message"]["offset"]);
    assert!(produced["time_ms"].as_u64().is_some_and(|t| t > 0));

    let billing = subscription(&trace, "billing");
    assert_eq!(billing["state"], "acked", "{billing:#}");
    assert_eq!(
        steps(billing),
        vec![
            step("delivered", Some(1), Some("worker-1"), None),
            step("nacked", Some(1), Some("worker-1"), Some("boom")),
            step("delivered", Some(2), Some("worker-2"), None),
            step("nacked", Some(2), Some("worker-2"), Some("boom again")),
            step("dead_lettered", Some(2), None, None),
            step("redriven", None, None, None),
            step("delivered", Some(1), Some("worker-1"), None),
            step("acked", Some(1), Some("worker-1"), None),
        ],
        "{billing:#}"
    );
    let events = billing["events"].as_array().expect("events");
    let times: Vec<u64> = events
        .iter()
        .map(|e| e["time_ms"].as_u64().expect("a time"))
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "oldest first: {times:?}"
    );
    assert!(
        events
            .iter()
            .filter_map(|e| e["consumer"]["client_addr"].as_str())
            .all(|a| a == "127.0.0.1"),
        "{billing:#}"
    );
    // The copy's events are about the copy's offset, the first ones about the message's.
    let copies = trace["copies"].as_array().expect("copies");
    assert_eq!(copies.len(), 1, "{trace:#}");
    assert_eq!(copies[0]["redriven_to"], "billing");
    assert_eq!(events[0]["offset"], trace["message"]["offset"]);
    assert_eq!(events[7]["offset"], copies[0]["offset"]);

    let short = subscription(&trace, "short");
    assert_eq!(
        kinds(short),
        ["delivered", "lease_expired", "delivered"],
        "{short:#}"
    );
    assert_eq!(short["state"], "in_flight", "{short:#}");
    assert!(short["state_until_ms"].as_u64().is_some(), "{short:#}");
    assert_eq!(subscription(&trace, "audit")["state"], "pending");
    assert_eq!(kinds(subscription(&trace, "audit")), Vec::<String>::new());
    assert_eq!(subscription(&trace, "red")["state"], "filtered");

    // A consume-only token sees the steps but not who took them.
    let reader = token("reader", &format!("consume:{TOPIC}"));
    let hidden = json_of(
        get(
            &node,
            &reader,
            &format!("/v1/topics/{TOPIC}/messages/order-42"),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(hidden["produced"]["principal"], Value::Null, "{hidden:#}");
    assert_eq!(hidden["produced"]["client_addr"], Value::Null, "{hidden:#}");
    let hidden_billing = subscription(&hidden, "billing");
    assert_eq!(kinds(hidden_billing), kinds(billing));
    assert!(
        hidden_billing["events"]
            .as_array()
            .expect("events")
            .iter()
            .all(|e| {
                e["consumer"].is_null()
                    || (e["consumer"]["principal"].is_null()
                        && e["consumer"]["client_addr"].is_null())
            }),
        "{hidden_billing:#}"
    );
    // A producer-only token may not look.
    let refused = get(
        &node,
        &shop,
        &format!("/v1/topics/{TOPIC}/messages/order-42"),
    )
    .await;
    expect_problem(refused, 403, "forbidden").await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_by_key_answer_the_newest_first_and_bad_input_is_refused() {
    let node = Harness::start().await;
    node.create_topic(json!({"name": TOPIC, "partitions": 3}))
        .await;
    let messages: Vec<Value> = (0..6)
        .map(|i| {
            let key = if i % 2 == 0 {
                "customer-7"
            } else {
                "customer-8"
            };
            json!({"id": format!("m-{i}"), "key": key, "value": format!("v{i}")})
        })
        .collect();
    node.produce(TOPIC, messages).await;

    let path = format!("/v1/topics/{TOPIC}/messages?key=customer-7");
    let all = json_of(node.get(&path).await, 200).await;
    assert_eq!(all["key"], "customer-7");
    let ids: Vec<&str> = all["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_str().expect("an id"))
        .collect();
    assert_eq!(ids, ["m-4", "m-2", "m-0"], "{all:#}");
    let partition = &all["messages"][0]["partition"];
    assert!(partition.as_u64().is_some_and(|p| p < 3), "{all:#}");
    let two = json_of(node.get(&format!("{path}&limit=2")).await, 200).await;
    assert_eq!(two["messages"].as_array().map(Vec::len), Some(2));
    let none = json_of(
        node.get(&format!("/v1/topics/{TOPIC}/messages?key=nobody"))
            .await,
        200,
    )
    .await;
    assert_eq!(none["messages"], json!([]));

    let base = format!("/v1/topics/{TOPIC}/messages");
    for bad in [
        base.clone(),
        format!("{base}?key="),
        format!("{base}?key=customer-7&limit=0"),
        format!("{base}?key=customer-7&limit=101"),
        format!("{base}?key=customer-7&limit=many"),
        format!("{base}?key=customer-7&colour=red"),
        format!("{base}?key={}", "k".repeat(4097)),
    ] {
        expect_problem(node.get(&bad).await, 400, "invalid_request").await;
    }
    expect_problem(
        node.get(&format!("{base}/no-such-id")).await,
        404,
        "message_not_found",
    )
    .await;
    expect_problem(
        node.get(&format!("{base}/a%20b")).await,
        400,
        "invalid_request",
    )
    .await;
    expect_problem(
        node.get("/v1/topics/nowhere/messages/m-0").await,
        404,
        "topic_not_found",
    )
    .await;
    expect_problem(
        node.get("/v1/topics/nowhere/messages?key=k").await,
        404,
        "topic_not_found",
    )
    .await;
    // Nothing changed: the topic holds what was produced, no more.
    let trace = json_of(node.get(&format!("{base}/m-0")).await, 200).await;
    assert_eq!(trace["message"]["value"], "v0");
    assert_eq!(trace["copies"], json!([]));
    node.stop().await;
}
