//! `/metrics` of a real three-process cluster (the `wharf` binary): every
//! node holds a replica of each partition of a three-partition topic, and each exports the
//! subscription and delay gauges of the partitions it leads only, so a gauge summed over the
//! three nodes is the figure a describe answers, with no partition counted twice (a
//! follower's table follows the log and would count its partitions again).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

use crate::api_calls::{leaders, post, post_when_ready};
use crate::serial::CLUSTERS;

const TOPIC: &str = "gauged";
const SUB: &str = "watched";
const MESSAGES: usize = 30;
const RECEIVED: usize = 10;
const DELAYED: usize = 2;

async fn get_text(http: &reqwest::Client, url: &str) -> String {
    let reply = http.get(url).send().await.expect("an answer");
    assert_eq!(reply.status().as_u16(), 200, "GET {url}");
    reply.text().await.expect("a body")
}

/// The value of `name`'s series labelled with `labels` (in the order written) in a
/// Prometheus text exposition, 0 when there is none.
fn gauge(text: &str, name: &str, labels: &str) -> f64 {
    let prefix = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map_or(0.0, |value| value.trim().parse().expect("a number"))
}

/// One node's figures of [`SUB`]: backlog, in flight, delayed.
fn figures_of(text: &str) -> [f64; 3] {
    let sub = format!("topic=\"{TOPIC}\",subscription=\"{SUB}\"");
    [
        gauge(text, "wharf_subscription_backlog_messages", &sub),
        gauge(text, "wharf_subscription_in_flight_messages", &sub),
        gauge(
            text,
            "wharf_topic_delayed_messages",
            &format!("topic=\"{TOPIC}\""),
        ),
    ]
}

/// Three nodes; a topic of three partitions with a replica on every node, its leaders spread
/// over two nodes at least; messages produced, some received (in flight), two delayed: the
/// backlog, in-flight and delayed gauges summed over the nodes are the describe's figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gauges_summed_over_the_nodes_are_the_clusters_figures() {
    let _beside = CLUSTERS.read().await;
    let cluster = tokio::task::block_in_place(|| {
        let mut spec = ClusterSpec::new(wharf_binary(), 3);
        spec.zones = ["a", "b", "c"].map(str::to_owned).to_vec();
        Cluster::start(spec).expect("three nodes start")
    });
    let urls: Vec<String> = cluster.endpoints().into_iter().map(|e| e.url).collect();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics", urls[0]),
        json!({"name": TOPIC, "partitions": 3, "replication_factor": 3}),
    )
    .await;
    assert_eq!(status, 201, "create topic: {body}");
    // Elections are independent: if one node leads all three, move partition 1 away, so
    // the sum really adds up figures of different nodes.
    let led = leaders(&http, &urls[0], TOPIC).await;
    if led.iter().all(|l| *l == led[0]) {
        let other = if led[0] == 1 { 2 } else { 1 };
        let (status, body) = post_when_ready(
            &http,
            &format!("{}/v1/cluster/partitions/{TOPIC}/1/leader", urls[0]),
            json!({ "node": other }),
        )
        .await;
        assert_eq!(status, 200, "move partition 1's leader: {body}");
    }
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics/{TOPIC}/subscriptions", urls[1]),
        json!({"name": SUB, "start": "earliest", "ack_timeout_ms": 120_000}),
    )
    .await;
    assert_eq!(status, 201, "create subscription: {body}");
    let mut batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({"key": format!("k{i}"), "value": format!("m{i}")}))
        .collect();
    for i in 0..DELAYED {
        batch.push(json!({"key": format!("d{i}"), "value": "later", "delay_ms": 600_000}));
    }
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics/{TOPIC}/messages", urls[0]),
        json!({ "messages": batch }),
    )
    .await;
    assert_eq!(status, 200, "produce: {body}");

    let mut received = 0;
    for _ in 0..20 {
        if received >= RECEIVED {
            break;
        }
        let (status, body) = post(
            &http,
            &format!("{}/v1/topics/{TOPIC}/subscriptions/{SUB}/receive", urls[2]),
            json!({"max_messages": RECEIVED - received, "wait_ms": 1000}),
        )
        .await;
        assert_eq!(status, 200, "receive: {body}");
        received += body["messages"].as_array().map_or(0, Vec::len);
    }
    assert_eq!(received, RECEIVED);

    let expected = [MESSAGES as f64, RECEIVED as f64, DELAYED as f64];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let described = serde_json::from_str::<Value>(
            &get_text(
                &http,
                &format!("{}/v1/topics/{TOPIC}/subscriptions/{SUB}", urls[0]),
            )
            .await,
        )
        .expect("json");
        let stats = &described["stats"];
        let described = [
            stats["backlog"].as_f64().unwrap_or(-1.0),
            stats["in_flight"].as_f64().unwrap_or(-1.0),
            stats["delayed"].as_f64().unwrap_or(-1.0),
        ];
        let mut per_node = Vec::new();
        for url in &urls {
            per_node.push(figures_of(
                &get_text(&http, &format!("{url}/metrics")).await,
            ));
        }
        let summed: Vec<f64> = (0..3)
            .map(|i| per_node.iter().map(|f| f[i]).sum())
            .collect();
        if described == expected && summed == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "backlog, in flight, delayed: described {described:?}, expected {expected:?}, \
             summed over the nodes {summed:?}, per node {per_node:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    drop(cluster);
}

/// The stages of a replicated write on each node, as `/metrics` counts them: `(stage,
/// observations)` in [`broker_core::telemetry::WriteStage::ALL`]'s order.
fn stage_counts(text: &str) -> Vec<(&'static str, f64)> {
    [
        "queue",
        "log_append",
        "replicate",
        "follower_append",
        "apply",
    ]
    .into_iter()
    .map(|stage| {
        let labels = format!("stage=\"{stage}\"");
        (
            stage,
            gauge(text, "wharf_write_stage_seconds_count", &labels),
        )
    })
    .collect()
}

/// A produce to a one-partition topic replicated on three nodes: its leader counts the
/// write's queue, log append, replication to each follower and apply; each follower its own
/// append, log append and apply; each as a histogram with the stage label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicated_produce_is_timed_stage_by_stage_on_the_leader_and_the_followers() {
    let _beside = CLUSTERS.read().await;
    let cluster = tokio::task::block_in_place(|| {
        Cluster::start(ClusterSpec::new(wharf_binary(), 3)).expect("three nodes start")
    });
    let endpoints = cluster.endpoints();
    let urls: Vec<String> = endpoints.iter().map(|e| e.url.clone()).collect();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let topic = "staged";
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics", urls[0]),
        json!({"name": topic, "partitions": 1, "replication_factor": 3}),
    )
    .await;
    assert_eq!(status, 201, "create topic: {body}");
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics/{topic}/messages", urls[0]),
        json!({"messages": [{"value": "timed"}]}),
    )
    .await;
    assert_eq!(status, 200, "produce: {body}");
    let view: Value =
        serde_json::from_str(&get_text(&http, &format!("{}/v1/cluster", urls[0])).await)
            .expect("json");
    let leader = view["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["topic"] == topic)
        .and_then(|p| p["leader"].as_u64())
        .expect("the partition's leader");

    // Followers apply a commit when the leader's next append or heartbeat tells them of it.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut per_node = Vec::new();
        for url in &urls {
            per_node.push(stage_counts(
                &get_text(&http, &format!("{url}/metrics")).await,
            ));
        }
        let seen = |node: usize, stage: &str| {
            per_node[node]
                .iter()
                .any(|(name, count)| *name == stage && *count >= 1.0)
        };
        let complete = (0..3).all(|node| {
            let leads = endpoints[node].node == leader;
            let own: &[&str] = if leads {
                &["queue", "log_append", "replicate", "apply"]
            } else {
                &["follower_append", "log_append", "apply"]
            };
            own.iter().all(|stage| seen(node, stage))
        });
        if complete {
            let text = get_text(&http, &format!("{}/metrics", urls[0])).await;
            assert!(
                text.contains("# TYPE wharf_write_stage_seconds histogram"),
                "the stages are a histogram"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "stages per node (node {leader} leads): {per_node:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(cluster);
}
