//! Consuming from a real three-process cluster (the `wharf` binary, cluster preview): a
//! subscription created on one node, messages of a three-partition topic (its partitions led
//! by different nodes) produced on another, received on a third, which gathers from every
//! partition's leader, and acked on the first, which sends each receipt to its partition's
//! leader. Nothing is lost and nothing acked comes back, until a seek on any node moves
//! every partition back at its leader.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

const TOPIC: &str = "spread";
const MESSAGES: usize = 60;

async fn post(http: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let reply = http.post(url).json(&body).send().await.expect("an answer");
    let status = reply.status().as_u16();
    let body = reply.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// [`post`], again while the answer is 503 (the nodes are still registering, or a group is
/// electing), for up to 15 s.
async fn post_when_ready(http: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, answer) = post(http, url.clone(), body.clone()).await;
        if status != 503 || Instant::now() >= deadline {
            return (status, answer);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_on_any_node_gathers_every_partition_and_acks_reach_their_leaders() {
    let cluster = tokio::task::block_in_place(|| {
        let mut spec = ClusterSpec::new(wharf_binary(), 3);
        spec.zones = vec!["a".into(), "b".into(), "c".into()];
        Cluster::start(spec).expect("three nodes start")
    });
    let urls: Vec<String> = cluster.endpoints().into_iter().map(|e| e.url).collect();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");

    let (status, body) = post_when_ready(
        &http,
        format!("{}/v1/topics", urls[0]),
        json!({"name": TOPIC, "partitions": 3}),
    )
    .await;
    assert_eq!(status, 201, "create topic: {body}");
    let (status, body) = post_when_ready(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions", urls[1]),
        json!({"name": "all", "start": "earliest", "ack_timeout_ms": 30000}),
    )
    .await;
    assert_eq!(status, 201, "create subscription: {body}");

    // The gather is what this test is about: once every partition has a leader, if one node
    // leads all three (elections are independent), move partition 1's leadership away.
    let deadline = Instant::now() + Duration::from_secs(15);
    let leaders = loop {
        let view: Value = http
            .get(format!("{}/v1/cluster", urls[2]))
            .send()
            .await
            .expect("cluster view")
            .json()
            .await
            .expect("json");
        let leaders: Vec<u64> = view["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["topic"] == TOPIC)
            .filter_map(|p| p["leader"].as_u64())
            .collect();
        if leaders.len() == 3 {
            break leaders;
        }
        assert!(
            Instant::now() < deadline,
            "partitions without a leader: {view}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    if leaders.iter().all(|l| *l == leaders[0]) {
        let other = if leaders[0] == 1 { 2 } else { 1 };
        let (status, body) = post_when_ready(
            &http,
            format!("{}/v1/cluster/partitions/{TOPIC}/1/leader", urls[0]),
            json!({ "node": other }),
        )
        .await;
        assert_eq!(status, 200, "move partition 1's leader: {body}");
    }

    // One request per message: a batch whose keys span partitions led by different nodes is
    // refused (`not_leader`) until produce scatters too.
    let mut partitions = BTreeSet::new();
    for i in 0..MESSAGES {
        let (status, body) = post_when_ready(
            &http,
            format!("{}/v1/topics/{TOPIC}/messages", urls[i % 3]),
            json!({ "messages": [{"key": format!("k{i}"), "value": format!("m{i}")}] }),
        )
        .await;
        assert_eq!(status, 200, "produce: {body}");
        partitions.insert(
            body["messages"][0]["partition"]
                .as_u64()
                .expect("partition"),
        );
    }
    assert_eq!(partitions.len(), 3, "the keys spread over every partition");

    let mut seen = BTreeSet::new();
    let mut from = BTreeSet::new();
    let mut receipts = Vec::new();
    let mut receives = 0;
    while seen.len() < MESSAGES && receives < 20 {
        receives += 1;
        let (status, body) = post(
            &http,
            format!("{}/v1/topics/{TOPIC}/subscriptions/all/receive", urls[2]),
            json!({"max_messages": 100, "wait_ms": 2000}),
        )
        .await;
        assert_eq!(status, 200, "receive: {body}");
        for message in body["messages"].as_array().expect("messages") {
            let value = message["value"].as_str().expect("value").to_owned();
            eprintln!(
                "receive {receives}: {value} partition {} offset {} attempt {}",
                message["partition"], message["offset"], message["delivery_attempt"]
            );
            assert!(seen.insert(value.clone()), "{value} delivered twice");
            from.insert(message["partition"].as_u64().expect("partition"));
            receipts.push(message["receipt"].as_str().expect("receipt").to_owned());
        }
    }
    assert_eq!(seen.len(), MESSAGES, "after {receives} receives");
    assert_eq!(from.len(), 3, "gathered from every partition");

    let (status, body) = post(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions/all/ack", urls[0]),
        json!({ "receipts": receipts }),
    )
    .await;
    assert_eq!(status, 200, "ack: {body}");
    assert_eq!(body["acked"], MESSAGES, "{body}");
    assert_eq!(body["failed"], json!([]), "{body}");
    // Acking again: every receipt is settled now.
    let (status, body) = post(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions/all/ack", urls[2]),
        json!({ "receipts": receipts }),
    )
    .await;
    assert_eq!(status, 200, "second ack: {body}");
    assert_eq!(body["acked"], 0, "{body}");

    let (status, body) = post(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions/all/receive", urls[1]),
        json!({"max_messages": 100, "wait_ms": 1000}),
    )
    .await;
    assert_eq!(status, 200, "receive: {body}");
    assert_eq!(body["messages"], json!([]), "acked messages came back");

    // A seek on any node moves every partition, each at its leader: everything comes back.
    let (status, body) = post(
        &http,
        format!("{}/v1/topics/{TOPIC}/subscriptions/all/seek", urls[0]),
        json!({"to": "earliest"}),
    )
    .await;
    assert_eq!(status, 200, "seek: {body}");
    assert_eq!(body["positions"], json!({"0": 0, "1": 0, "2": 0}), "{body}");
    let mut again = BTreeSet::new();
    for _ in 0..20 {
        if again.len() == MESSAGES {
            break;
        }
        let (status, body) = post(
            &http,
            format!("{}/v1/topics/{TOPIC}/subscriptions/all/receive", urls[1]),
            json!({"max_messages": 100, "wait_ms": 2000}),
        )
        .await;
        assert_eq!(status, 200, "receive after the seek: {body}");
        for message in body["messages"].as_array().expect("messages") {
            again.insert(message["value"].as_str().expect("value").to_owned());
        }
    }
    assert_eq!(again, seen, "replayed after the seek");
    drop(cluster);
}
