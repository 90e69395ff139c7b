//! Retries, dead letters and redrive over real HTTP (with a restart between attempts), and
//! per-key order under concurrent consumers that ack and nack at random.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::restartable::{Node, text};
use crate::support::{XorShift, now_ms};

const TOPIC: &str = "orders";
const SUB: &str = "billing";
const DLQ: &str = "orders.billing.dlq";

/// Receives exactly one message within 10 s; returns it and when it arrived.
async fn receive_one(node: &Node, sub: &str) -> (Value, Instant) {
    let got = node
        .receive(TOPIC, sub, json!({ "max_messages": 10, "wait_ms": 10_000 }))
        .await;
    let arrived = Instant::now();
    assert_eq!(got.len(), 1, "{got:?}");
    (got[0].clone(), arrived)
}

/// Nacks a delivery with an error text; returns when the nack was sent.
async fn nack(node: &Node, message: &Value, error: &str) -> Instant {
    let sent = Instant::now();
    node.nack(TOPIC, SUB, &text(message, "receipt"), error)
        .await;
    sent
}

fn at_least(gap: Duration, ms: u64, what: &str) {
    assert!(
        gap >= Duration::from_millis(ms),
        "{what}: redelivered after {gap:?}, before the {ms} ms backoff"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_nacked_max_deliveries_times_becomes_a_dead_letter_that_redrive_returns_once() {
    let mut node = Node::start().await;
    node.create_topic(json!({ "name": TOPIC, "partitions": 2 }))
        .await;
    let sub = node
        .create_subscription(
            TOPIC,
            json!({
                "name": SUB, "max_deliveries": 3, "ack_timeout_ms": 1000,
                "retry": { "initial_backoff_ms": 100, "multiplier": 2.0 }
            }),
        )
        .await;
    assert_eq!(sub["max_deliveries"], 3, "{sub}");
    assert_eq!(sub["dead_letter_topic"], DLQ, "{sub}");
    assert_eq!(sub["ordering"], "none", "{sub}");
    node.create_subscription(TOPIC, json!({ "name": "bystander" }))
        .await;
    let produced = node
        .produce(
            TOPIC,
            vec![json!({ "value": "charge 5", "key": "c-9", "headers": { "trace": "t-1" } })],
        )
        .await[0]
        .clone();
    let (seen, _) = receive_one(&node, "bystander").await;
    node.ack(TOPIC, "bystander", &[text(&seen, "receipt")])
        .await;

    let (first, _) = receive_one(&node, SUB).await;
    assert_eq!(first["delivery_attempt"], 1, "{first}");
    let nacked = nack(&node, &first, "attempt 1 failed").await;
    node.restart().await;
    let (second, arrived) = receive_one(&node, SUB).await;
    assert_eq!(
        second["delivery_attempt"], 2,
        "the attempt count survives a restart"
    );
    at_least(arrived - nacked, 100, "second delivery");
    let nacked = nack(&node, &second, "attempt 2 failed").await;
    let (third, arrived) = receive_one(&node, SUB).await;
    assert_eq!(third["delivery_attempt"], 3, "{third}");
    at_least(arrived - nacked, 200, "third delivery");
    assert_eq!(third["id"], produced["id"]);
    nack(&node, &third, "card declined").await;

    let nothing = node.receive(TOPIC, SUB, json!({ "wait_ms": 1000 })).await;
    assert!(nothing.is_empty(), "a fourth delivery: {nothing:?}");
    let stats = node.stats(TOPIC, SUB).await;
    assert_eq!(stats["dead_lettered"], 1, "{stats}");
    assert_eq!(stats["backlog"], 0, "{stats}");

    let dead = read_dead_letters(&node).await;
    assert_eq!(dead.len(), 1, "{dead:?}");
    let headers = &dead[0]["headers"];
    assert_eq!(dead[0]["value"], "charge 5");
    assert_eq!(dead[0]["key"], "c-9");
    assert_eq!(headers["trace"], "t-1", "{headers}");
    assert_eq!(headers["wharf-dlq-topic"], TOPIC, "{headers}");
    assert_eq!(
        headers["wharf-dlq-partition"],
        produced["partition"].to_string()
    );
    assert_eq!(headers["wharf-dlq-offset"], produced["offset"].to_string());
    assert_eq!(headers["wharf-dlq-id"], produced["id"], "{headers}");
    assert_eq!(headers["wharf-dlq-attempts"], "3", "{headers}");
    assert_eq!(headers["wharf-dlq-error"], "card declined", "{headers}");

    let path = format!("/v1/topics/{TOPIC}/subscriptions/{SUB}/redrive");
    let reply = node
        .post_ok(&path, &json!({ "max_messages": null }), 200)
        .await;
    assert_eq!(reply, json!({ "redriven": 1 }));
    let (back, _) = receive_one(&node, SUB).await;
    assert_eq!(back["delivery_attempt"], 1, "{back}");
    assert_eq!(back["value"], "charge 5");
    assert_eq!(back["headers"]["wharf-redrive-subscription"], SUB, "{back}");
    assert!(back["headers"].get("wharf-dlq-error").is_none(), "{back}");
    node.ack(TOPIC, SUB, &[text(&back, "receipt")]).await;
    let again = node.receive(TOPIC, SUB, json!({ "wait_ms": 500 })).await;
    assert!(again.is_empty(), "redriven twice: {again:?}");
    let others = node
        .receive(TOPIC, "bystander", json!({ "wait_ms": 300 }))
        .await;
    assert!(
        others.is_empty(),
        "another subscription got the redriven copy: {others:?}"
    );

    let reply = node.post_ok(&path, &json!({}), 200).await;
    assert_eq!(reply, json!({ "redriven": 0 }));
    let wrong_attempts = dead
        .iter()
        .filter(|letter| letter["headers"]["wharf-dlq-attempts"] != "3")
        .count();
    CaseLine::new("S2", "poison-to-dead-letters")
        .figure("max deliveries", 3)
        .figure("restarts between attempts", 1)
        .must_be_zero(
            "wrong attempt counts in DLQ",
            wrong_attempts as u64,
            dead.len() as u64,
        )
        .must_be_zero("redriven more than once", again.len() as u64, 1)
        .record();
    node.stop().await;
}

/// Every message of the dead-letter topic, read by offset.
async fn read_dead_letters(node: &Node) -> Vec<Value> {
    let topic = node.get_ok(&format!("/v1/topics/{DLQ}")).await;
    let partitions = topic["partitions"].as_u64().expect("partitions");
    let mut all = Vec::new();
    for partition in 0..partitions {
        let page = node
            .get_ok(&format!(
                "/v1/topics/{DLQ}/partitions/{partition}/messages?offset=0"
            ))
            .await;
        all.extend(page["messages"].as_array().expect("messages").clone());
    }
    all
}

const KEYS: usize = 5;
const PER_KEY: usize = 8;
const RECEIVERS: u64 = 4;

/// What the consumers have seen, shared between them.
#[derive(Default)]
struct Seen {
    /// Keys with a message delivered and not yet settled by its receiver.
    in_flight: HashMap<String, u64>,
    /// Per key, how many of its messages were acked (the next sequence number due).
    acked: BTreeMap<String, u64>,
    violations: Vec<String>,
    deliveries: usize,
}

fn parse(message: &Value) -> (String, u64) {
    let value = text(message, "value");
    let (key, seq) = value.split_once('#').expect("key#seq");
    (key.to_owned(), seq.parse().expect("sequence number"))
}

async fn consume(node: Arc<Node>, seen: Arc<Mutex<Seen>>, seed: u64) {
    let mut random = XorShift(seed);
    let total = (KEYS * PER_KEY) as u64;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let done = seen.lock().expect("lock").acked.values().sum::<u64>() == total;
        if done || Instant::now() > deadline {
            return;
        }
        let max_messages = 1 + random.below(4);
        let got = node
            .receive(
                TOPIC,
                "ordered",
                json!({ "max_messages": max_messages, "wait_ms": 200 }),
            )
            .await;
        for message in &got {
            let (key, seq) = parse(message);
            let mut state = seen.lock().expect("lock");
            state.deliveries += 1;
            if let Some(other) = state.in_flight.insert(key.clone(), seq) {
                state.violations.push(format!(
                    "{key}#{seq} delivered while {key}#{other} was in flight"
                ));
            }
            let due = state.acked.get(&key).copied().unwrap_or(0);
            if seq != due {
                state.violations.push(format!(
                    "{key}#{seq} delivered before {key}#{due} was acked"
                ));
            }
        }
        for message in &got {
            let (key, seq) = parse(message);
            let receipt = text(message, "receipt");
            let ack = random.below(10) < 6;
            {
                let mut state = seen.lock().expect("lock");
                state.in_flight.remove(&key);
                if ack {
                    *state.acked.entry(key.clone()).or_default() = seq + 1;
                }
            }
            if ack {
                node.ack(TOPIC, "ordered", &[receipt]).await;
            } else {
                node.nack(TOPIC, "ordered", &receipt, "random nack").await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_ordering_delivers_each_key_in_order_one_at_a_time_under_concurrent_consumers() {
    let node = Arc::new(Node::start().await);
    node.create_topic(json!({ "name": TOPIC, "partitions": 2 }))
        .await;
    let sub = node
        .create_subscription(
            TOPIC,
            json!({
                "name": "ordered", "ordering": "key", "max_deliveries": 1000,
                "ack_timeout_ms": 30_000,
                "retry": { "initial_backoff_ms": 5, "max_backoff_ms": 20, "multiplier": 1.5 }
            }),
        )
        .await;
    assert_eq!(sub["ordering"], "key", "{sub}");
    for seq in 0..PER_KEY {
        let round = (0..KEYS)
            .map(|k| json!({ "key": format!("key-{k}"), "value": format!("key-{k}#{seq}") }))
            .collect();
        node.produce(TOPIC, round).await;
    }

    let seen = Arc::new(Mutex::new(Seen::default()));
    let base_seed = now_ms();
    let consumers: Vec<_> = (0..RECEIVERS)
        .map(|i| {
            let seed = (base_seed ^ (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
            tokio::spawn(consume(node.clone(), seen.clone(), seed))
        })
        .collect();
    for consumer in consumers {
        consumer.await.expect("consumer");
    }
    let seen = std::mem::take(&mut *seen.lock().expect("lock"));
    let acked: u64 = seen.acked.values().sum();
    CaseLine::new("S5", "key-ordering")
        .seed(base_seed)
        .must_be_zero(
            "order violations",
            seen.violations.len() as u64,
            seen.deliveries as u64,
        )
        .must_be_zero(
            "acked lost",
            (KEYS * PER_KEY) as u64 - acked,
            (KEYS * PER_KEY) as u64,
        )
        .figure("deliveries", seen.deliveries)
        .record();
    assert!(
        seen.violations.is_empty(),
        "seed base {base_seed}: {:?}",
        seen.violations
    );
    let everything: BTreeMap<String, u64> = (0..KEYS)
        .map(|k| (format!("key-{k}"), PER_KEY as u64))
        .collect();
    assert_eq!(
        seen.acked, everything,
        "seed base {base_seed}: not all acked in 30 s"
    );
    assert!(seen.deliveries > KEYS * PER_KEY, "some nacks happened");
    let stats = node.stats(TOPIC, "ordered").await;
    assert_eq!(stats["backlog"], 0, "{stats}");
    assert_eq!(stats["dead_lettered"], 0, "{stats}");
    Arc::into_inner(node).expect("sole owner").stop().await;
}
