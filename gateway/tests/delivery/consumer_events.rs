//! Receives, streams, nacks and acks over HTTP with auth on: the partition log's subscription
//! events name the consumer as the message trace shows it (the token's principal and the
//! client's address; no node on a single node).

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use broker_core::control::{self, ControlOwner};
use broker_core::storage::{LogPosition, PartitionHandle};
use broker_core::subscription::events::SubscriptionEvent;
use broker_core::{LogConfig, Origin};
use gateway::config::EdgeRaw;
use serde_json::json;

use crate::support::common::Harness;
use crate::support::edge_common::{token, with_secret};

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The one message a receive as `bearer` gets: its receipt and delivery attempt.
async fn receive_one(harness: &Harness, bearer: &str) -> (String, u64) {
    let path = "/v1/topics/t/subscriptions/s/receive";
    let reply = harness
        .post_as(bearer, path, json!({"max_messages": 1, "wait_ms": 5000}))
        .await;
    let message = &reply["messages"][0];
    let receipt = message["receipt"].as_str().expect("a message").to_owned();
    (
        receipt,
        message["delivery_attempt"].as_u64().expect("attempt"),
    )
}

/// The receipt of the first message a stream as `bearer` sends.
async fn stream_one(harness: &Harness, bearer: &str) -> String {
    let mut response = harness
        .client
        .get(harness.url("/v1/topics/t/subscriptions/s/stream"))
        .bearer_auth(bearer)
        .send()
        .await
        .expect("stream");
    assert_eq!(response.status().as_u16(), 200);
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .expect("a message within 20 s")
            .expect("read")
            .expect("the stream goes on");
        text.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        if let Some(frame) = text.split("\n\n").find(|f| f.contains("event: message")) {
            let id = frame.lines().find_map(|l| l.strip_prefix("id:"));
            return id.expect("an id").trim().to_owned();
        }
    }
}

/// The partition folder of topic `t`'s partition 0 under `data`.
fn partition_dir(data: &Path) -> PathBuf {
    let topics = std::fs::read_dir(data.join("topics")).expect("topics");
    let topic = topics
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("t-"))
        .expect("topic t");
    topic.path().join("0")
}

/// The subscription events of the log in `dir` (its server stopped), in log order.
fn subscription_events(dir: PathBuf) -> Vec<SubscriptionEvent> {
    let index = tempfile::tempdir().expect("dir");
    let db = sled::open(index.path()).expect("sled");
    let log = PartitionHandle::open(
        dir,
        db.open_tree("index").expect("tree"),
        LogConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    )
    .expect("open the log");
    let mut events = Vec::new();
    log.replay_controls(LogPosition::default(), |_, entry| {
        if control::owner(&entry) == Some(ControlOwner::Subscription) {
            events.push(SubscriptionEvent::decode(&entry).expect("an event"));
        }
        Ok(())
    })
    .expect("replay");
    log.shutdown();
    events
}

/// What a test compares of an event: its kind, offset, attempt and consumer.
fn summary(event: &SubscriptionEvent) -> (&'static str, u64, u32, Option<Origin>) {
    let consumer = event.consumer().cloned();
    match event {
        SubscriptionEvent::Delivered {
            offset, attempts, ..
        } => ("delivered", *offset, *attempts, consumer),
        SubscriptionEvent::Nacked {
            offset, attempts, ..
        } => ("nacked", *offset, *attempts, consumer),
        SubscriptionEvent::Acked { offset, .. } => ("acked", *offset, 0, consumer),
        other => panic!("an unexpected event: {other:?}"),
    }
}

fn by(principal: &str) -> Option<Origin> {
    Some(Origin {
        principal: Some(principal.into()),
        address: Some(LOCALHOST),
        node: None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receives_streams_nacks_and_acks_name_the_token_and_the_client_address() {
    let data = tempfile::tempdir().expect("dir");
    let harness = Harness::start_in(data.path(), with_secret(EdgeRaw::default())).await;
    let admin = token("ops", "admin:*");
    harness
        .post_as(&admin, "/v1/topics", json!({"name": "t", "partitions": 1}))
        .await;
    let subscription = json!({"name": "s", "start": "earliest"});
    harness
        .post_as(&admin, "/v1/topics/t/subscriptions", subscription)
        .await;
    let producer = token("producer", "produce:t");
    let messages = json!({"messages": [{"value": "m0"}]});
    harness
        .post_as(&producer, "/v1/topics/t/messages", messages)
        .await;

    let worker = token("worker-1", "consume:t");
    let (receipt, attempt) = receive_one(&harness, &worker).await;
    assert_eq!(attempt, 1);
    let nack = json!({"receipts": [receipt], "delay_ms": 0, "error": "boom"});
    harness
        .post_as(&worker, "/v1/topics/t/subscriptions/s/nack", nack)
        .await;
    let (receipt, attempt) = receive_one(&harness, &worker).await;
    assert_eq!(attempt, 2);
    let ack = json!({"receipts": [receipt]});
    harness
        .post_as(&worker, "/v1/topics/t/subscriptions/s/ack", ack)
        .await;

    let messages = json!({"messages": [{"value": "m1"}]});
    harness
        .post_as(&producer, "/v1/topics/t/messages", messages)
        .await;
    let streamer = token("streamer", "consume:t");
    let receipt = stream_one(&harness, &streamer).await;
    let ack = json!({"receipts": [receipt]});
    let acked = harness
        .post_as(&streamer, "/v1/topics/t/subscriptions/s/ack", ack)
        .await;
    assert_eq!(acked["acked"], 1);
    harness.stop().await;

    let events = subscription_events(partition_dir(data.path()));
    let summaries: Vec<_> = events.iter().map(summary).collect();
    assert_eq!(
        summaries,
        vec![
            ("delivered", 0, 1, by("worker-1")),
            ("nacked", 0, 1, by("worker-1")),
            ("delivered", 0, 2, by("worker-1")),
            ("acked", 0, 0, by("worker-1")),
            ("delivered", 1, 1, by("streamer")),
            ("acked", 1, 0, by("streamer")),
        ]
    );
}
