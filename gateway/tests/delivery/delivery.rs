//! End-to-end delivery over real HTTP: produce, long-poll receive, ack, redelivery.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::support::common::{self, Harness, receipts};

const TOPIC: &str = "orders";
const SUB: &str = "workers";

async fn topic_and_subscription(harness: &Harness, partitions: u32) {
    harness
        .create_topic(json!({ "name": TOPIC, "partitions": partitions }))
        .await;
    harness
        .create_subscription(
            TOPIC,
            json!({ "name": SUB, "ack_timeout_ms": 1000, "retry": { "initial_backoff_ms": 100 } }),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acceptance_round_trip() {
    let harness = Harness::start().await;
    topic_and_subscription(&harness, 3).await;

    let mut partition_of_id = HashMap::new();
    let mut partition_of_key: HashMap<String, u64> = HashMap::new();
    let mut expected = HashSet::new();
    for batch in 0..5 {
        let messages: Vec<Value> = (0..100)
            .map(|i| {
                let n = batch * 100 + i;
                json!({ "key": format!("customer-{}", n % 37), "value": format!("message-{n}") })
            })
            .collect();
        let produced = harness.produce(TOPIC, messages).await;
        assert_eq!(produced.len(), 100);
        for (i, reply) in produced.iter().enumerate() {
            let n = batch * 100 + i;
            let partition = reply["partition"].as_u64().expect("partition");
            assert!(reply["offset"].is_u64(), "{reply}");
            let key = format!("customer-{}", n % 37);
            let first = *partition_of_key.entry(key.clone()).or_insert(partition);
            assert_eq!(first, partition, "key {key} landed on two partitions");
            partition_of_id.insert(reply["id"].as_str().expect("id").to_owned(), partition);
            expected.insert(format!("message-{n}"));
        }
    }
    let raw = harness
        .client
        .post(harness.url(&format!("/v1/topics/{TOPIC}/messages")))
        .header("content-type", "text/plain")
        .body("a raw text message")
        .send()
        .await
        .expect("raw produce");
    assert_eq!(raw.status(), 200);
    assert!(raw.headers().contains_key("wharf-durability"));
    expected.insert("a raw text message".to_owned());

    let mut seen_values = HashSet::new();
    let mut seen_ids = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen_values.len() < expected.len() {
        assert!(
            Instant::now() < deadline,
            "received {} of {} messages within 60 s",
            seen_values.len(),
            expected.len()
        );
        let messages = harness
            .receive(TOPIC, SUB, json!({ "max_messages": 100, "wait_ms": 2000 }))
            .await;
        if messages.is_empty() {
            continue;
        }
        let acked = harness.ack(TOPIC, SUB, &receipts(&messages)).await;
        assert_eq!(acked["acked"], messages.len(), "{acked}");
        assert_eq!(acked["failed"], json!([]));
        for message in &messages {
            let value = message["value"].as_str().expect("text value").to_owned();
            let id = message["id"].as_str().expect("id").to_owned();
            assert_eq!(message["delivery_attempt"], 1, "{message}");
            assert!(seen_ids.insert(id.clone()), "message {id} delivered twice");
            assert!(
                seen_values.insert(value.clone()),
                "value {value} delivered twice"
            );
            if let Some(partition) = partition_of_id.get(&id) {
                assert_eq!(message["partition"], *partition, "{message}");
            }
        }
    }
    assert_eq!(seen_values, expected, "missing or unexpected messages");

    tokio::time::sleep(Duration::from_millis(1000 + 100 + 400)).await;
    let late = harness
        .receive(TOPIC, SUB, json!({ "max_messages": 100, "wait_ms": 1500 }))
        .await;
    assert!(late.is_empty(), "acked messages were redelivered: {late:?}");

    let stats = common::json_of(
        harness
            .get(&format!("/v1/topics/{TOPIC}/subscriptions/{SUB}"))
            .await,
        200,
    )
    .await["stats"]
        .clone();
    assert_eq!(stats["acked"], 501, "{stats}");
    assert_eq!(stats["in_flight"], 0, "{stats}");
    assert_eq!(stats["backlog"], 0, "{stats}");
    assert_eq!(stats["unacked_limit_reached_partitions"], 0, "{stats}");
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_wakes_on_produce() {
    let harness = std::sync::Arc::new(Harness::start().await);
    topic_and_subscription(&harness, 1).await;
    let poller = harness.clone();
    let receive = tokio::spawn(async move {
        let messages = poller
            .receive(TOPIC, SUB, json!({ "max_messages": 10, "wait_ms": 20000 }))
            .await;
        (messages, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !receive.is_finished(),
        "the receive returned before anything was produced"
    );
    let produced_at = Instant::now();
    harness
        .produce(TOPIC, vec![json!({ "value": "wake up" })])
        .await;
    let (messages, returned_at) = receive.await.expect("receive task");
    let latency = returned_at.saturating_duration_since(produced_at);
    eprintln!("long-poll wake latency after produce: {latency:?}");
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["value"], "wake up");
    assert!(
        latency < Duration::from_secs(5),
        "the receive waited {latency:?} after the produce; it should wake on produce"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacked_message_is_redelivered_and_old_receipt_is_invalid() {
    let harness = Harness::start().await;
    topic_and_subscription(&harness, 1).await;
    harness
        .produce(TOPIC, vec![json!({ "value": "retry me" })])
        .await;

    let first = harness
        .receive(TOPIC, SUB, json!({ "max_messages": 1, "wait_ms": 5000 }))
        .await;
    let leased_at = Instant::now();
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0]["delivery_attempt"], 1);

    let deadline = Instant::now() + Duration::from_secs(15);
    let second = loop {
        let messages = harness
            .receive(TOPIC, SUB, json!({ "max_messages": 1, "wait_ms": 5000 }))
            .await;
        if !messages.is_empty() {
            break messages;
        }
        assert!(Instant::now() < deadline, "not redelivered within 15 s");
    };
    // The lease is 1,000 ms from when the server answered, which is before `leased_at`.
    let early = u64::from(leased_at.elapsed() < Duration::from_millis(1000));
    assert_eq!(second[0]["id"], first[0]["id"]);
    assert_eq!(second[0]["value"], "retry me");
    assert_eq!(second[0]["delivery_attempt"], 2);
    assert_ne!(second[0]["receipt"], first[0]["receipt"]);

    let stale = harness.ack(TOPIC, SUB, &receipts(&first)).await;
    CaseLine::new("S1", "lease-expiry")
        .must_be_zero("early redeliveries", early, 1)
        .must_be_zero(
            "stale acks applied",
            stale["acked"].as_u64().unwrap_or(1),
            1,
        )
        .record();
    assert_eq!(stale["acked"], 0, "{stale}");
    assert_eq!(
        stale["failed"],
        json!([{ "receipt": first[0]["receipt"], "code": "receipt_invalid" }])
    );
    let fresh = harness.ack(TOPIC, SUB, &receipts(&second)).await;
    assert_eq!(fresh["acked"], 1, "{fresh}");
    assert_eq!(fresh["failed"], json!([]));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_and_text_values_come_back_as_they_were_sent() {
    let harness = Harness::start().await;
    topic_and_subscription(&harness, 1).await;
    harness
        .produce(
            TOPIC,
            vec![
                json!({ "value_base64": "AAEC/w==", "headers": { "h": "v" }, "tags": ["t1"] }),
                json!({ "value": "plain", "key": "k" }),
            ],
        )
        .await;
    let raw = harness
        .client
        .post(harness.url(&format!(
            "/v1/topics/{TOPIC}/messages?key=rk&tags=a,b&ack=none"
        )))
        .header("x-wharf-header-trace", "abc")
        .header("content-type", "application/octet-stream")
        .body(vec![0_u8, 159, 146, 150])
        .send()
        .await
        .expect("raw produce");
    assert_eq!(raw.status(), 202);
    assert_eq!(raw.headers()["wharf-durability"], "none");
    let reply = common::json_of(raw, 202).await;
    assert!(reply["messages"][0].get("offset").is_none(), "{reply}");

    let deadline = Instant::now() + Duration::from_secs(15);
    let mut messages = Vec::new();
    while messages.len() < 3 {
        assert!(Instant::now() < deadline, "got {messages:?}");
        messages.extend(
            harness
                .receive(TOPIC, SUB, json!({ "max_messages": 10, "wait_ms": 1000 }))
                .await,
        );
    }
    messages.sort_by_key(|m| m["offset"].as_u64());
    assert_eq!(messages[0]["value_base64"], "AAEC/w==");
    assert!(messages[0].get("value").is_none());
    assert_eq!(messages[0]["headers"], json!({ "h": "v" }));
    assert_eq!(messages[0]["tags"], json!(["t1"]));
    assert_eq!(messages[1]["value"], "plain");
    assert_eq!(messages[1]["key"], "k");
    assert_eq!(messages[2]["value_base64"], "AJ+Slg==");
    assert_eq!(messages[2]["key"], "rk");
    assert_eq!(messages[2]["tags"], json!(["a", "b"]));
    assert_eq!(messages[2]["headers"], json!({ "trace": "abc" }));

    let page = common::json_of(
        harness
            .get(&format!(
                "/v1/topics/{TOPIC}/partitions/0/messages?offset=1&max=1"
            ))
            .await,
        200,
    )
    .await;
    assert_eq!(page["messages"][0]["value"], "plain", "{page}");
    assert_eq!(page["next_offset"], 2);
    assert_eq!(page["end_offset"], 3);
    harness.stop().await;
}
