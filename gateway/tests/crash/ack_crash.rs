//! `kill -9` of a real `wharf` process in the middle of an ack burst: acks are records in the
//! partition log, so after a restart no message whose ack was answered comes back (with the
//! default `--fsync always` an answered ack is durable), and no message is lost: every one
//! not acked before the crash is delivered after it (an ack request the kill cut off may or
//! may not have been committed, so its messages may come back or not).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::child::{Server, post_ok};

const MESSAGES: usize = 3_000;

/// The ids a consumer acked: those whose ack was answered, and those of the ack request the
/// kill cut off (it may or may not have been committed before the crash).
#[derive(Debug, Default)]
struct Acked {
    answered: BTreeSet<String>,
    cut_off: BTreeSet<String>,
}

/// Receives and acks until the server goes away.
async fn consume_until_killed(base: String, acked: Arc<Mutex<Acked>>) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    loop {
        let Ok(response) = client
            .post(format!("{base}/v1/topics/acks/subscriptions/s/receive"))
            .json(&json!({"max_messages": 50, "wait_ms": 1000}))
            .send()
            .await
        else {
            return;
        };
        let Ok(reply) = response.json::<Value>().await else {
            return;
        };
        let messages = reply["messages"].as_array().cloned().unwrap_or_default();
        if messages.is_empty() {
            continue;
        }
        let receipts: Vec<&str> = messages
            .iter()
            .map(|m| m["receipt"].as_str().expect("receipt"))
            .collect();
        let ids = || {
            messages
                .iter()
                .map(|m| m["id"].as_str().expect("id").to_owned())
        };
        let response = client
            .post(format!("{base}/v1/topics/acks/subscriptions/s/ack"))
            .json(&json!({ "receipts": receipts }))
            .send()
            .await;
        let outcome = match response {
            Ok(response) if response.status().is_success() => response.json::<Value>().await,
            _ => {
                acked.lock().expect("lock").cut_off.extend(ids());
                return;
            }
        };
        let Ok(outcome) = outcome else {
            acked.lock().expect("lock").cut_off.extend(ids());
            return;
        };
        let failed: BTreeSet<&str> = outcome["failed"]
            .as_array()
            .map(|f| f.iter().filter_map(|r| r["receipt"].as_str()).collect())
            .unwrap_or_default();
        let mut acked = acked.lock().expect("lock");
        for message in &messages {
            if !failed.contains(message["receipt"].as_str().expect("receipt")) {
                acked
                    .answered
                    .insert(message["id"].as_str().expect("id").to_owned());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answered_ack_is_undone_and_no_message_is_lost_by_a_kill_9_mid_ack_burst() {
    let data = tempfile::tempdir().expect("temp dir");
    let client = reqwest::Client::new();
    let server = Server::start(data.path()).await;
    let base = server.base.clone();
    post_ok(
        &client,
        &format!("{base}/v1/topics"),
        json!({"name": "acks", "partitions": 2}),
    )
    .await;
    post_ok(
        &client,
        &format!("{base}/v1/topics/acks/subscriptions"),
        json!({"name": "s", "start": "earliest", "ack_timeout_ms": 2000}),
    )
    .await;
    let mut produced = BTreeSet::new();
    for batch in 0..MESSAGES / 100 {
        let messages: Vec<Value> = (0..100)
            .map(|i| json!({"value": format!("m-{batch}-{i}")}))
            .collect();
        let reply = post_ok(
            &client,
            &format!("{base}/v1/topics/acks/messages"),
            json!({ "messages": messages }),
        )
        .await;
        for message in reply["messages"].as_array().expect("messages") {
            produced.insert(message["id"].as_str().expect("id").to_owned());
        }
    }

    let acked = Arc::new(Mutex::new(Acked::default()));
    let consumers: Vec<_> = (0..2)
        .map(|_| tokio::spawn(consume_until_killed(base.clone(), acked.clone())))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().expect("lock").answered.len() < MESSAGES / 3 {
        assert!(Instant::now() < deadline, "the consumers made no progress");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill_9();
    for consumer in consumers {
        consumer.await.expect("consumer task");
    }
    let Acked { answered, cut_off } = std::mem::take(&mut *acked.lock().expect("lock"));
    assert!(
        answered.len() >= MESSAGES / 3 && answered.len() < MESSAGES,
        "{}",
        answered.len()
    );

    let server = Server::start(data.path()).await;
    let base = server.base.clone();
    let mut delivered = BTreeSet::new();
    let mut empty_in_a_row = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while empty_in_a_row < 2 {
        assert!(
            Instant::now() < deadline,
            "the restarted consumer did not finish"
        );
        let reply = post_ok(
            &client,
            &format!("{base}/v1/topics/acks/subscriptions/s/receive"),
            json!({"max_messages": 1000, "wait_ms": 3000}),
        )
        .await;
        let messages = reply["messages"].as_array().expect("messages").clone();
        if messages.is_empty() {
            empty_in_a_row += 1;
            continue;
        }
        empty_in_a_row = 0;
        for message in &messages {
            let id = message["id"].as_str().expect("id").to_owned();
            assert!(
                !answered.contains(&id),
                "message {id} was acked (and the ack answered) before the crash yet came back"
            );
            delivered.insert(id);
        }
        let receipts: Vec<&str> = messages
            .iter()
            .map(|m| m["receipt"].as_str().expect("receipt"))
            .collect();
        post_ok(
            &client,
            &format!("{base}/v1/topics/acks/subscriptions/s/ack"),
            json!({ "receipts": receipts }),
        )
        .await;
    }
    let lost: Vec<&String> = produced
        .iter()
        .filter(|id| !answered.contains(*id) && !delivered.contains(*id))
        // An ack the kill cut off may have been committed: its messages count as acked.
        .filter(|id| !cut_off.contains(*id))
        .collect();
    assert!(
        lost.is_empty(),
        "{} messages lost, e.g. {:?}",
        lost.len(),
        lost.first()
    );
    let stats: Value = client
        .get(format!("{base}/v1/topics/acks/subscriptions/s"))
        .send()
        .await
        .expect("describe")
        .json()
        .await
        .expect("json");
    assert_eq!(stats["stats"]["backlog"].as_u64(), Some(0), "{stats}");
}
