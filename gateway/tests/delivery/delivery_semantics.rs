//! Delivery semantics over real HTTP: tag filters, idempotent produce (across a restart),
//! retry-safe receive, delayed messages and their cancellation, and seek (replay).

use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::restartable::{Node, json_of, text};
use crate::support::common::receipts;
use crate::support::now_ms;

fn values(messages: &[Value]) -> BTreeSet<String> {
    messages.iter().map(|m| text(m, "value")).collect()
}

/// Receives and acks until `count` messages arrived or 10 s passed; returns them.
async fn drain(node: &Node, topic: &str, sub: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut all = Vec::new();
    while all.len() < count {
        assert!(
            Instant::now() < deadline,
            "got {} of {count} messages: {all:?}",
            all.len()
        );
        let got = node
            .receive(topic, sub, json!({ "max_messages": 100, "wait_ms": 1000 }))
            .await;
        if !got.is_empty() {
            node.ack(topic, sub, &receipts(&got)).await;
            all.extend(got);
        }
    }
    all
}

/// Asserts a receive that waits `wait_ms` gets nothing.
async fn assert_nothing_more(node: &Node, topic: &str, sub: &str, wait_ms: u64) {
    let late = node
        .receive(
            topic,
            sub,
            json!({ "max_messages": 100, "wait_ms": wait_ms }),
        )
        .await;
    assert!(late.is_empty(), "unexpected deliveries: {late:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_filter_delivers_only_tagged_messages_and_counts_the_rest_as_filtered() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": "events", "partitions": 2 }))
        .await;
    let sub = node
        .create_subscription(
            "events",
            json!({ "name": "only-a", "filter": { "tags": ["a"] } }),
        )
        .await;
    assert_eq!(sub["filter"], json!({ "tags": ["a"] }), "{sub}");
    node.create_subscription("events", json!({ "name": "all" }))
        .await;
    node.produce(
        "events",
        vec![
            json!({ "value": "a1", "tags": ["a"] }),
            json!({ "value": "b1", "tags": ["b"] }),
            json!({ "value": "none1" }),
            json!({ "value": "ab1", "tags": ["b", "a"] }),
            json!({ "value": "b2", "tags": ["b"] }),
            json!({ "value": "none2", "tags": [] }),
            json!({ "value": "a2", "tags": ["a"] }),
        ],
    )
    .await;

    let got = drain(&node, "events", "only-a", 3).await;
    assert_nothing_more(&node, "events", "only-a", 500).await;
    let expected: BTreeSet<String> = ["a1", "ab1", "a2"].map(String::from).into();
    assert_eq!(values(&got), expected);
    let stats = node.stats("events", "only-a").await;
    assert_eq!(stats["filtered"], 4, "{stats}");
    assert_eq!(stats["acked"], 3, "{stats}");
    assert_eq!(stats["backlog"], 0, "{stats}");

    let everything = drain(&node, "events", "all", 7).await;
    assert_eq!(everything.len(), 7);
    assert_eq!(node.stats("events", "all").await["filtered"], 0);
    node.stop().await;
}

async fn raw_produce(node: &Node, topic: &str, key: &str, body: &str) -> Value {
    let response = node
        .client
        .post(node.url(&format!("/v1/topics/{topic}/messages")))
        .header("content-type", "text/plain")
        .header("idempotency-key", key)
        .body(body.to_owned())
        .send()
        .await
        .expect("raw produce");
    json_of(response, 200).await["messages"][0].clone()
}

fn same_place(first: &Value, repeat: &Value) {
    assert_eq!(repeat["duplicate"], true, "{repeat}");
    assert_eq!(repeat["id"], first["id"], "{repeat} vs {first}");
    assert_eq!(
        repeat["partition"], first["partition"],
        "{repeat} vs {first}"
    );
    assert_eq!(repeat["offset"], first["offset"], "{repeat} vs {first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_id_is_stored_once_even_across_a_restart() {
    let mut node = Node::start().await;
    let topic = node
        .create_topic(json!({ "name": "payments", "partitions": 3 }))
        .await;
    assert_eq!(topic["dedup_window_ms"], 600_000, "{topic}");
    node.create_subscription("payments", json!({ "name": "ledger", "start": "earliest" }))
        .await;

    let first = node
        .produce("payments", vec![json!({ "value": "pay 10", "id": "x" })])
        .await[0]
        .clone();
    assert_eq!(first["id"], "x", "{first}");
    assert_eq!(first["duplicate"], false, "{first}");
    assert!(first["offset"].is_u64(), "{first}");
    assert!(first["deliver_at_ms"].is_null(), "{first}");
    let repeat = node
        .produce(
            "payments",
            vec![json!({ "value": "pay 10 (retry)", "id": "x" })],
        )
        .await[0]
        .clone();
    same_place(&first, &repeat);
    assert_eq!(node.stored("payments").await, 1);

    let raw_first = raw_produce(&node, "payments", "y", "pay 20").await;
    assert_eq!(raw_first["duplicate"], false, "{raw_first}");
    assert_eq!(raw_first["id"], "y", "{raw_first}");
    let raw_repeat = raw_produce(&node, "payments", "y", "pay 20").await;
    same_place(&raw_first, &raw_repeat);
    assert_eq!(node.stored("payments").await, 2);

    node.restart().await;
    let after_restart = node
        .produce("payments", vec![json!({ "value": "pay 10", "id": "x" })])
        .await[0]
        .clone();
    same_place(&first, &after_restart);
    same_place(
        &raw_first,
        &raw_produce(&node, "payments", "y", "pay 20").await,
    );
    assert_eq!(node.stored("payments").await, 2);

    let stored = node.stored("payments").await;
    CaseLine::new("S4", "dedup-across-restart")
        .figure("retries", 4)
        .figure("restarts", 1)
        .must_be_zero("duplicates stored", stored.saturating_sub(2), 4)
        .record();
    let delivered = drain(&node, "payments", "ledger", 2).await;
    assert_nothing_more(&node, "payments", "ledger", 300).await;
    let expected: BTreeSet<String> = ["pay 10", "pay 20"].map(String::from).into();
    assert_eq!(values(&delivered), expected);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_repeated_with_its_attempt_id_gets_the_same_messages_and_receipts() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": "jobs", "partitions": 2 }))
        .await;
    node.create_subscription("jobs", json!({ "name": "w" }))
        .await;
    let batch = (0..6)
        .map(|i| json!({ "value": format!("job-{i}") }))
        .collect();
    node.produce("jobs", batch).await;

    let receive =
        |attempt: &str| json!({ "max_messages": 3, "wait_ms": 2000, "attempt_id": attempt });
    let first = node.receive("jobs", "w", receive("a1")).await;
    assert!(!first.is_empty());
    let again = node.receive("jobs", "w", receive("a1")).await;
    let key = |messages: &[Value]| -> BTreeSet<(String, String)> {
        messages
            .iter()
            .map(|m| (text(m, "id"), text(m, "receipt")))
            .collect()
    };
    assert_eq!(
        key(&again),
        key(&first),
        "a repeat must return the same deliveries"
    );
    assert!(
        again.iter().all(|m| m["delivery_attempt"] == 1),
        "{again:?}"
    );

    let other = node.receive("jobs", "w", receive("a2")).await;
    let first_ids: HashSet<String> = first.iter().map(|m| text(m, "id")).collect();
    assert!(
        other.iter().all(|m| !first_ids.contains(&text(m, "id"))),
        "another attempt id got a message of the first: {other:?}"
    );
    assert!(!other.is_empty(), "six messages, at most three leased");

    node.ack("jobs", "w", &receipts(&first[..1])).await;
    let after_ack = node.receive("jobs", "w", receive("a1")).await;
    assert_eq!(key(&after_ack), key(&first[1..]), "acked ones are left out");
    let stats = node.stats("jobs", "w").await;
    assert_eq!(
        stats["delivered"], 6,
        "repeats are not new deliveries: {stats}"
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_message_arrives_when_due_and_not_before() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": "reminders", "partitions": 2 }))
        .await;
    node.create_subscription("reminders", json!({ "name": "r" }))
        .await;

    let before = now_ms();
    let produced = node
        .produce(
            "reminders",
            vec![json!({ "value": "later", "delay_ms": 300 })],
        )
        .await[0]
        .clone();
    let due = produced["deliver_at_ms"].as_u64().expect("deliver_at_ms");
    assert!(due >= before + 300, "{produced}");
    assert!(produced.get("offset").is_none(), "{produced}");
    assert_eq!(produced["duplicate"], false);
    assert_eq!(node.stats("reminders", "r").await["delayed"], 1);
    assert_nothing_more(&node, "reminders", "r", 0).await;

    let got = node
        .receive("reminders", "r", json!({ "wait_ms": 5000 }))
        .await;
    let arrived = now_ms();
    assert_eq!(values(&got), BTreeSet::from(["later".to_owned()]));
    assert!(arrived >= due, "delivered at {arrived}, due at {due}");
    assert_eq!(got[0]["id"], produced["id"]);
    node.ack("reminders", "r", &receipts(&got)).await;
    assert_eq!(node.stats("reminders", "r").await["delayed"], 0);

    let past = node
        .produce(
            "reminders",
            vec![json!({ "value": "overdue", "deliver_at_ms": now_ms() - 10_000 })],
        )
        .await[0]
        .clone();
    assert!(
        past["offset"].is_u64(),
        "a past deliver_at_ms is not delayed: {past}"
    );
    let started = Instant::now();
    let got = node
        .receive("reminders", "r", json!({ "wait_ms": 5000 }))
        .await;
    assert_eq!(values(&got), BTreeSet::from(["overdue".to_owned()]));
    assert!(started.elapsed() < Duration::from_secs(2));
    node.ack("reminders", "r", &receipts(&got)).await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offset_read_does_not_show_a_delayed_message_before_it_is_due() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": "timers", "partitions": 1 }))
        .await;
    let produced = node
        .produce(
            "timers",
            vec![
                json!({ "value": "first", "delay_ms": 300 }),
                json!({ "value": "second", "delay_ms": 400 }),
            ],
        )
        .await;
    let due: Vec<u64> = produced
        .iter()
        .map(|p| p["deliver_at_ms"].as_u64().expect("deliver_at_ms"))
        .collect();
    // The mover appends each message shortly before it is due; a waiting read wakes on that
    // append and must still hold each message back until its own due time.
    let mut next = 0;
    for (value, due) in ["first", "second"].into_iter().zip(due) {
        let read = node
            .client
            .get(node.url(&format!(
                "/v1/topics/timers/partitions/0/messages?offset={next}&wait_ms=5000"
            )))
            .send()
            .await
            .expect("read");
        let arrived = now_ms();
        let read = json_of(read, 200).await;
        let messages = read["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 1, "{read}");
        assert_eq!(messages[0]["value"], value);
        assert!(arrived >= due, "{value} read at {arrived}, due at {due}");
        next = read["next_offset"].as_u64().expect("next_offset");
    }
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_delayed_message_never_arrives_and_cancelling_twice_is_not_found() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": "reminders" })).await;
    node.create_subscription("reminders", json!({ "name": "r" }))
        .await;
    let produced = node
        .produce(
            "reminders",
            vec![
                json!({ "value": "cancel me", "id": "rem-1", "delay_ms": 500 }),
                json!({ "value": "keep me", "delay_ms": 500 }),
            ],
        )
        .await;
    assert_eq!(produced[0]["id"], "rem-1");
    let cancel = |id: &str| {
        node.client
            .delete(node.url(&format!("/v1/topics/reminders/messages/{id}")))
            .send()
    };
    assert_eq!(cancel("rem-1").await.expect("cancel").status(), 204);
    let again = cancel("rem-1").await.expect("cancel again");
    assert_eq!(again.status(), 404);
    assert_eq!(json_of(again, 404).await["code"], "message_not_found");
    let unknown = cancel("never-produced").await.expect("cancel unknown");
    assert_eq!(json_of(unknown, 404).await["code"], "message_not_found");

    let got = node
        .receive("reminders", "r", json!({ "wait_ms": 3000 }))
        .await;
    assert_eq!(values(&got), BTreeSet::from(["keep me".to_owned()]));
    node.ack("reminders", "r", &receipts(&got)).await;
    assert_nothing_more(&node, "reminders", "r", 800).await;
    assert_eq!(node.stored("reminders").await, 1);
    let delivered_id = got[0]["id"].clone();
    let cancel_after_due = cancel(delivered_id.as_str().expect("id"))
        .await
        .expect("cancel a due message");
    assert_eq!(
        json_of(cancel_after_due, 404).await["code"],
        "message_not_found"
    );
    node.stop().await;
}

async fn seek(node: &Node, body: Value) -> reqwest::Response {
    node.post_json("/v1/topics/audit/subscriptions/s/seek", &body)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_replays_from_a_timestamp_the_start_or_offsets_and_bad_seeks_change_nothing() {
    let node = Node::start().await;
    node.create_topic(json!({ "name": "audit", "partitions": 2 }))
        .await;
    node.create_subscription("audit", json!({ "name": "s" }))
        .await;
    let batch = |name: &str| -> Vec<Value> {
        (0..6)
            .map(|i| json!({ "value": format!("{name}{i}"), "key": format!("k{i}") }))
            .collect()
    };
    node.produce("audit", batch("A")).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let t = now_ms();
    tokio::time::sleep(Duration::from_millis(20)).await;
    node.produce("audit", batch("B")).await;
    assert_eq!(drain(&node, "audit", "s", 12).await.len(), 12);

    let reply = json_of(seek(&node, json!({ "timestamp_ms": t })).await, 200).await;
    assert_eq!(reply["positions"].as_object().expect("positions").len(), 2);
    let replayed = drain(&node, "audit", "s", 6).await;
    assert_nothing_more(&node, "audit", "s", 300).await;
    let off_range = values(&replayed)
        .symmetric_difference(&values(&batch("B")))
        .count();
    CaseLine::new("S7", "seek-to-timestamp")
        .must_be_zero("replayed outside the expected range", off_range as u64, 6)
        .record();
    assert_eq!(values(&replayed), values(&batch("B")));

    json_of(seek(&node, json!({ "to": "earliest" })).await, 200).await;
    assert_eq!(drain(&node, "audit", "s", 12).await.len(), 12);
    assert_nothing_more(&node, "audit", "s", 300).await;

    let topic = node.get_ok("/v1/topics/audit").await;
    let end0 = topic["partition_stats"][0]["end_offset"]
        .as_u64()
        .expect("end offset");
    assert!(end0 >= 1, "{topic}");
    let reply = json_of(
        seek(&node, json!({ "offsets": { "0": end0 - 1 } })).await,
        200,
    )
    .await;
    assert_eq!(reply["positions"], json!({ "0": end0 - 1 }));
    let last = drain(&node, "audit", "s", 1).await;
    assert_eq!(last[0]["partition"], 0);
    assert_eq!(last[0]["offset"], end0 - 1);

    let bad = [
        (json!({ "to": "middle" }), 400, "invalid_request"),
        (
            json!({ "to": "earliest", "timestamp_ms": 1 }),
            400,
            "invalid_request",
        ),
        (json!({}), 400, "invalid_request"),
        (json!({ "timestamp_ms": -1 }), 400, "invalid_request"),
        (json!({ "offsets": { "0": -1 } }), 400, "invalid_request"),
        (
            json!({ "offsets": { "0": end0 + 1 } }),
            400,
            "invalid_request",
        ),
        (
            json!({ "offsets": { "0": 0, "7": 0 } }),
            404,
            "partition_not_found",
        ),
        (json!({ "offsets": { "zero": 0 } }), 400, "invalid_request"),
        (json!({ "offsets": {} }), 400, "invalid_request"),
        (
            json!({ "to": "earliest", "extra": 1 }),
            400,
            "invalid_request",
        ),
    ];
    for (body, status, code) in bad {
        let problem = json_of(seek(&node, body.clone()).await, status).await;
        assert_eq!(problem["code"], code, "{body}: {problem}");
    }
    assert_nothing_more(&node, "audit", "s", 500).await;
    let missing = node
        .post_json(
            "/v1/topics/audit/subscriptions/nope/seek",
            &json!({ "to": "latest" }),
        )
        .await;
    assert_eq!(
        json_of(missing, 404).await["code"],
        "subscription_not_found"
    );
    node.stop().await;
}
