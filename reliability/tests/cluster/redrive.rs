//! Redriving dead letters in a real three-process cluster (the `wharf` binary):
//! messages of a three-partition topic, its partitions and its dead-letter topic's
//! led by different nodes, are nacked until they are dead letters; a redrive sent to a node
//! that leads no dead-letter partition moves each back exactly once (a count split over the
//! leaders holds), the subscription receives each again with its original id, and a second
//! redrive moves nothing, also after the leader of a dead-letter partition is killed.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

use crate::api_calls::{leaders, post_when_ready};
use crate::serial::CLUSTERS;

const TOPIC: &str = "orders";
const SUB: &str = "billing";
/// The dead-letter topic the subscription gets by default.
const DLQ: &str = "orders.billing.dlq";
const MESSAGES: usize = 30;
/// Deliveries before a message is a dead letter: two nacks each, to keep the test short.
const MAX_DELIVERIES: u32 = 2;

async fn get(http: &reqwest::Client, url: &str) -> Value {
    let reply = http.get(url).send().await.expect("an answer");
    reply.json().await.unwrap_or(Value::Null)
}

/// Moves the leadership of `topic`'s partitions so partition `p` is led by `wanted[p]`, and
/// waits until node `url` sees it.
async fn lead(http: &reqwest::Client, url: &str, topic: &str, wanted: &[u64]) {
    let now = leaders(http, url, topic).await;
    for (partition, (node, current)) in wanted.iter().zip(&now).enumerate() {
        if node != current {
            let move_url = format!("{url}/v1/cluster/partitions/{topic}/{partition}/leader");
            let (status, body) = post_when_ready(http, &move_url, json!({ "node": node })).await;
            assert_eq!(status, 200, "move {topic}/{partition} to {node}: {body}");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while leaders(http, url, topic).await != wanted {
        assert!(Instant::now() < deadline, "{topic} never led by {wanted:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Dead letters stored, counting each dead-letter partition at the node that has most of it
/// (its leader).
async fn dead_letters_stored(http: &reqwest::Client, urls: &[String]) -> u64 {
    let mut most = [0u64; 3];
    for url in urls {
        let info = get(http, &format!("{url}/v1/topics/{DLQ}")).await;
        for partition in info["partition_stats"].as_array().into_iter().flatten() {
            let (Some(p), Some(end)) = (
                partition["partition"].as_u64(),
                partition["end_offset"].as_u64(),
            ) else {
                continue;
            };
            if let Some(slot) = most.get_mut(p as usize) {
                *slot = (*slot).max(end);
            }
        }
    }
    most.iter().sum()
}

/// One receive at `url`: each message's id and receipt.
async fn receive(http: &reqwest::Client, url: &str) -> Vec<(String, String)> {
    let receive_url = format!("{url}/v1/topics/{TOPIC}/subscriptions/{SUB}/receive");
    let (status, body) = post_when_ready(
        http,
        &receive_url,
        json!({"max_messages": 100, "wait_ms": 1000}),
    )
    .await;
    assert_eq!(status, 200, "receive: {body}");
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let id = m["id"].as_str().expect("id").to_owned();
            (id, m["receipt"].as_str().expect("receipt").to_owned())
        })
        .collect()
}

async fn settle(http: &reqwest::Client, url: &str, action: &str, receipts: Vec<String>) {
    let settle_url = format!("{url}/v1/topics/{TOPIC}/subscriptions/{SUB}/{action}");
    let body = match action {
        "nack" => json!({"receipts": receipts, "delay_ms": 0, "error": "failed on purpose"}),
        _ => json!({ "receipts": receipts }),
    };
    let (status, answer) = post_when_ready(http, &settle_url, body).await;
    assert_eq!(status, 200, "{action}: {answer}");
}

async fn redrive(http: &reqwest::Client, url: &str, body: Value) -> u64 {
    let redrive_url = format!("{url}/v1/topics/{TOPIC}/subscriptions/{SUB}/redrive");
    let (status, answer) = post_when_ready(http, &redrive_url, body).await;
    assert_eq!(status, 200, "redrive: {answer}");
    answer["redriven"].as_u64().expect("redriven")
}

fn three_nodes() -> (Cluster, reqwest::Client) {
    let cluster = tokio::task::block_in_place(|| {
        Cluster::start(ClusterSpec::new(wharf_binary(), 3)).expect("three nodes start")
    });
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("a client");
    (cluster, http)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redrive_on_a_node_leading_no_dead_letters_moves_each_back_once_even_after_a_kill() {
    let _alone = CLUSTERS.write().await;
    let (mut cluster, http) = three_nodes();
    let urls: Vec<String> = cluster.endpoints().iter().map(|e| e.url.clone()).collect();

    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics", urls[0]),
        json!({"name": TOPIC, "partitions": 3}),
    )
    .await;
    assert_eq!(status, 201, "create topic: {body}");
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics/{TOPIC}/subscriptions", urls[1]),
        json!({"name": SUB, "start": "earliest", "max_deliveries": MAX_DELIVERIES}),
    )
    .await;
    assert_eq!(status, 201, "create subscription: {body}");
    // Each source partition's leader leads the dead-letter partition of the same number, so
    // every node dead-letters its own partition's messages.
    lead(&http, &urls[0], TOPIC, &[1, 2, 3]).await;
    lead(&http, &urls[0], DLQ, &[1, 2, 3]).await;

    let batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({"key": format!("k{i}"), "value": format!("m{i}"), "id": format!("id-{i}")}))
        .collect();
    let produce_url = format!("{}/v1/topics/{TOPIC}/messages", urls[2]);
    let (status, produced) =
        post_when_ready(&http, &produce_url, json!({ "messages": batch })).await;
    assert_eq!(status, 200, "produce: {produced}");
    let ids: BTreeSet<String> = (0..MESSAGES).map(|i| format!("id-{i}")).collect();
    let partitions: BTreeSet<u64> = produced["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["partition"].as_u64())
        .collect();
    assert_eq!(partitions.len(), 3, "the keys spread over every partition");

    // Nack every delivery until every message is a dead letter.
    let deadline = Instant::now() + Duration::from_secs(60);
    while dead_letters_stored(&http, &urls).await < MESSAGES as u64 {
        assert!(Instant::now() < deadline, "not all dead-lettered in time");
        let got = receive(&http, &urls[2]).await;
        if !got.is_empty() {
            settle(
                &http,
                &urls[0],
                "nack",
                got.into_iter().map(|(_, r)| r).collect(),
            )
            .await;
        }
    }
    assert_eq!(dead_letters_stored(&http, &urls).await, MESSAGES as u64);

    // Node 2 leads no dead-letter partition; nodes 1 and 3 lead them.
    lead(&http, &urls[0], DLQ, &[1, 3, 3]).await;
    let first = redrive(&http, &urls[1], json!({"max_messages": 7})).await;
    assert_eq!(first, 7, "max_messages holds over the leaders' parts");
    let rest = redrive(&http, &urls[1], json!({"messages_per_second": 1000})).await;
    assert_eq!(rest, MESSAGES as u64 - 7, "the rest, each once");
    assert_eq!(redrive(&http, &urls[1], json!({})).await, 0, "nothing left");

    // Each comes back once, with its original id.
    let mut again = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while again.len() < MESSAGES {
        assert!(Instant::now() < deadline, "only {} came back", again.len());
        let got = receive(&http, &urls[0]).await;
        if got.is_empty() {
            continue;
        }
        let receipts = got.iter().map(|(_, r)| r.clone()).collect();
        again.extend(got.into_iter().map(|(id, _)| id));
        settle(&http, &urls[2], "ack", receipts).await;
    }
    let unique: BTreeSet<String> = again.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        again.len(),
        "a message came back twice: {again:?}"
    );
    assert_eq!(unique, ids, "the redriven ids are the originals");
    assert_eq!(receive(&http, &urls[0]).await, vec![], "nothing more");

    // The cursors live with the dead letters: the leader of two dead-letter partitions dies,
    // and a redrive on the others still moves nothing.
    tokio::task::block_in_place(|| cluster.kill9(3)).expect("kill node 3");
    let survivors = &urls[..2];
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = leaders(&http, &survivors[0], DLQ).await;
        if !now.contains(&3) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 3 still leads {DLQ}: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(redrive(&http, &survivors[1], json!({})).await, 0);
    assert_eq!(
        receive(&http, &survivors[0]).await,
        vec![],
        "nothing came back"
    );
    drop(cluster);
}
