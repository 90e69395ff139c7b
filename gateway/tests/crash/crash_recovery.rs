//! `kill -9` of a real `wharf` process in the middle of a produce load: after a restart every
//! message whose produce got a 2xx is served at the offset it was given, byte for byte, and the
//! subscription resumes where it was (acked messages never come back, nothing else is lost).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::support::child::{Server, post_ok};

/// One message a producer saw acknowledged.
#[derive(Debug, Clone)]
struct Acked {
    id: String,
    partition: u64,
    offset: u64,
    value: String,
}

async fn produce_until_killed(base: String, producer: usize, acked: Arc<Mutex<Vec<Acked>>>) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    for round in 0.. {
        let values: Vec<String> = (0..5)
            .map(|i| {
                format!(
                    "p{producer}-r{round}-m{i}-{}",
                    "x".repeat((round * 7 + i * 13) % 300)
                )
            })
            .collect();
        let messages: Vec<Value> = values
            .iter()
            .enumerate()
            .map(|(i, v)| json!({"key": format!("k{}", (round + i) % 11), "value": v}))
            .collect();
        let sent = client
            .post(format!("{base}/v1/topics/crash/messages"))
            .json(&json!({ "messages": messages }))
            .send()
            .await;
        let Ok(response) = sent else { return };
        if !response.status().is_success() {
            return;
        }
        let Ok(body) = response.json::<Value>().await else {
            return;
        };
        let mut acked = acked.lock().expect("lock");
        for (reply, value) in body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .zip(values)
        {
            acked.push(Acked {
                id: reply["id"].as_str().expect("id").to_owned(),
                partition: reply["partition"].as_u64().expect("partition"),
                offset: reply["offset"].as_u64().expect("offset"),
                value,
            });
        }
    }
}

/// Every message of a partition by offset, checking the offsets run without gaps from 0.
async fn read_partition(server: &Server, partition: u32) -> BTreeMap<u64, (String, String)> {
    let mut messages = BTreeMap::new();
    for (expected, message) in (0u64..).zip(server.read_partition("crash", partition).await) {
        let at = message["offset"].as_u64().expect("offset");
        assert_eq!(
            at, expected,
            "partition {partition} has a gap or reorder at {expected}"
        );
        let id = message["id"].as_str().expect("id").to_owned();
        let value = message["value"].as_str().expect("text value").to_owned();
        messages.insert(at, (id, value));
    }
    messages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_kill_9_and_the_subscription_resumes() {
    survives_kill_9(&[], "D1", "kill-9-fsync-always").await;
}

/// With `--fsync` at an interval an ack does not wait for the fsync, but a killed process's
/// writes are in the page cache, which survives it: nothing acknowledged may be lost either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_messages_survive_kill_9_with_interval_fsync() {
    survives_kill_9(&["--fsync", "200"], "D2", "kill-9-fsync-200ms").await;
}

/// The load, the kill and the checks, with `flags` for `wharf serve`; `id` and `name` make the
/// report line.
async fn survives_kill_9(flags: &[&str], id: &str, name: &str) {
    let data = tempfile::tempdir().expect("temp dir");
    let client = reqwest::Client::new();
    let server = Server::start_with(data.path(), flags).await;
    let base = server.base.clone();
    post_ok(
        &client,
        &format!("{base}/v1/topics"),
        json!({"name": "crash", "partitions": 3}),
    )
    .await;
    post_ok(
        &client,
        &format!("{base}/v1/topics/crash/subscriptions"),
        json!({"name": "s", "start": "earliest", "ack_timeout_ms": 1000,
               "retry": {"initial_backoff_ms": 0, "max_backoff_ms": 0, "multiplier": 1.0}}),
    )
    .await;

    // Before the load: 30 messages, 20 of them received and acked, 10 received and left leased.
    let first: Vec<Value> = (0..30)
        .map(|i| json!({"value": format!("early-{i}")}))
        .collect();
    post_ok(
        &client,
        &format!("{base}/v1/topics/crash/messages"),
        json!({ "messages": first }),
    )
    .await;
    let mut received = Vec::new();
    while received.len() < 30 {
        let reply = post_ok(
            &client,
            &format!("{base}/v1/topics/crash/subscriptions/s/receive"),
            json!({"max_messages": 30 - received.len(), "wait_ms": 2000}),
        )
        .await;
        received.extend(
            reply["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .cloned(),
        );
    }
    let (to_ack, _leased) = received.split_at(20);
    let receipts: Vec<&str> = to_ack
        .iter()
        .map(|m| m["receipt"].as_str().expect("receipt"))
        .collect();
    let reply = post_ok(
        &client,
        &format!("{base}/v1/topics/crash/subscriptions/s/ack"),
        json!({ "receipts": receipts }),
    )
    .await;
    assert_eq!(reply["acked"], 20);
    let acked_ids: BTreeSet<String> = to_ack
        .iter()
        .map(|m| m["id"].as_str().expect("id").to_owned())
        .collect();

    // The load, and a kill -9 in its middle.
    let produced = Arc::new(Mutex::new(Vec::new()));
    let producers: Vec<_> = (0..4)
        .map(|p| tokio::spawn(produce_until_killed(base.clone(), p, produced.clone())))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while produced.lock().expect("lock").len() < 400 {
        assert!(Instant::now() < deadline, "the load made no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill_9();
    for producer in producers {
        producer.await.expect("producer task");
    }
    let produced = produced.lock().expect("lock").clone();
    assert!(produced.len() >= 400);

    // After a restart: every acknowledged produce is there, at its offset, byte for byte.
    let restarted = Instant::now();
    let server = Server::start_with(data.path(), flags).await;
    let restart_s = restarted.elapsed().as_secs_f64();
    let base = server.base.clone();
    let mut log = BTreeMap::new();
    for partition in 0..3 {
        for (offset, message) in read_partition(&server, partition).await {
            log.insert((u64::from(partition), offset), message);
        }
    }
    let lost = produced
        .iter()
        .filter(|a| log.get(&(a.partition, a.offset)) != Some(&(a.id.clone(), a.value.clone())))
        .count();
    CaseLine::new(id, name)
        .must_be_zero("acked lost", lost as u64, produced.len() as u64)
        .figure("kills", 1)
        .figure("restart to ready s", format!("{restart_s:.2}"))
        .record();
    for acked in &produced {
        let stored = log.get(&(acked.partition, acked.offset));
        assert_eq!(
            stored,
            Some(&(acked.id.clone(), acked.value.clone())),
            "message {} acknowledged at {}:{} is not served as sent",
            acked.id,
            acked.partition,
            acked.offset
        );
    }

    // The subscription resumes: everything but the acked 20 is delivered, each at least once,
    // and the acked ones never again.
    let expected: BTreeSet<String> = log
        .values()
        .map(|(id, _)| id.clone())
        .filter(|id| !acked_ids.contains(id))
        .collect();
    let mut delivered = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while delivered.len() < expected.len() {
        assert!(
            Instant::now() < deadline,
            "only {} of {} delivered",
            delivered.len(),
            expected.len()
        );
        let reply = post_ok(
            &client,
            &format!("{base}/v1/topics/crash/subscriptions/s/receive"),
            json!({"max_messages": 1000, "wait_ms": 3000}),
        )
        .await;
        let messages = reply["messages"].as_array().expect("messages");
        let receipts: Vec<&str> = messages
            .iter()
            .map(|m| m["receipt"].as_str().expect("receipt"))
            .collect();
        for message in messages {
            let id = message["id"].as_str().expect("id").to_owned();
            assert!(
                !acked_ids.contains(&id),
                "message {id} was acked before the crash yet came back"
            );
            delivered.insert(id);
        }
        if !receipts.is_empty() {
            post_ok(
                &client,
                &format!("{base}/v1/topics/crash/subscriptions/s/ack"),
                json!({ "receipts": receipts }),
            )
            .await;
        }
    }
    assert_eq!(delivered, expected);
    let stats: Value = client
        .get(format!("{base}/v1/topics/crash/subscriptions/s"))
        .send()
        .await
        .expect("describe")
        .json()
        .await
        .expect("json");
    assert_eq!(
        stats["stats"]["backlog"]
            .as_u64()
            .or(stats["backlog"].as_u64()),
        Some(0),
        "{stats}"
    );
}
