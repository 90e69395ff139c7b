//! Per-minute history in a real three-process cluster (the `wharf` binary): a topic whose
//! three partitions are led by more than one node, produced to through one node. Each node
//! samples only what it leads, so only the sum over the nodes holds every message; every
//! node's `GET /v1/stats/history` answers that sum, for the topic's produced messages and for
//! its subscription's backlog (partitions' backlogs added up).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

use crate::api_calls::{create_topic, post_when_ready_within};
use crate::serial::CLUSTERS;

const TOPIC: &str = "curves";
const MESSAGES: u64 = 30;
/// The sampler samples every 10 s: a figure shows within two samples and the nodes' answers.
const SHOW_WITHIN: Duration = Duration::from_secs(90);

/// POSTs `body`, retrying 503 answers for up to 30 s.
async fn post_when_ready(http: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    post_when_ready_within(http, url, body, Duration::from_secs(30)).await
}

async fn leaders(http: &reqwest::Client, url: &str) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view: Value = http
            .get(format!("{url}/v1/cluster"))
            .send()
            .await
            .expect("cluster view")
            .json()
            .await
            .expect("json");
        let mut seen: Vec<(u64, u64)> = view["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["topic"] == TOPIC)
            .filter_map(|p| Some((p["partition"].as_u64()?, p["leader"].as_u64()?)))
            .collect();
        seen.sort_unstable();
        if seen.len() == 3 {
            return seen.into_iter().map(|(_, leader)| leader).collect();
        }
        assert!(
            Instant::now() < deadline,
            "partitions without a leader: {view}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn sum(answer: &Value, field: &str) -> u64 {
    answer["points"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p[field].as_u64())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_answers_the_history_summed_over_the_nodes() {
    let _beside = CLUSTERS.read().await;
    let cluster: Cluster = tokio::task::block_in_place(|| {
        Cluster::start(ClusterSpec::new(wharf_binary(), 3)).expect("three nodes start")
    });
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let urls: Vec<String> = cluster.endpoints().iter().map(|e| e.url.clone()).collect();
    create_topic(
        &http,
        &urls[0],
        json!({"name": TOPIC, "partitions": 3}),
        &urls[0],
        &[json!({"name": "all", "start": "earliest"})],
        Duration::from_secs(30),
    )
    .await;
    let led = leaders(&http, &urls[0]).await;
    if led.iter().all(|l| *l == led[0]) {
        let other = if led[0] == 1 { 2 } else { 1 };
        let (status, body) = post_when_ready(
            &http,
            format!("{}/v1/cluster/partitions/{TOPIC}/1/leader", urls[0]),
            json!({ "node": other }),
        )
        .await;
        assert_eq!(status, 200, "move partition 1's leader: {body}");
    }
    let batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({ "key": format!("k{i}"), "value": "v" }))
        .collect();
    let (status, body) = post_when_ready(
        &http,
        format!("{}/v1/topics/{TOPIC}/messages", urls[1]),
        json!({ "messages": batch }),
    )
    .await;
    assert_eq!(status, 200, "produce: {body}");

    for url in &urls {
        let deadline = Instant::now() + SHOW_WITHIN;
        loop {
            let topic: Value = http
                .get(format!("{url}/v1/stats/history?topic={TOPIC}&minutes=10"))
                .send()
                .await
                .expect("history")
                .json()
                .await
                .expect("json");
            let path = format!("{url}/v1/stats/history?topic={TOPIC}&subscription=all");
            let sub: Value = http
                .get(path)
                .send()
                .await
                .expect("history")
                .json()
                .await
                .expect("json");
            let produced = sum(&topic, "produced_messages");
            let backlog = sub["points"]
                .as_array()
                .and_then(|p| p.last())
                .and_then(|p| p["backlog"].as_u64());
            assert!(produced <= MESSAGES, "counted twice at {url}: {topic}");
            if produced == MESSAGES && backlog == Some(MESSAGES) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{url} never summed the nodes: {topic} {sub}"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    drop(cluster);
}
