//! A receive gathered over a real three-process cluster (the `wharf` binary, cluster preview)
//! while the leader of a partition in the receiving node's zone is paused (SIGSTOP: it keeps
//! its sockets, accepts connections and answers nothing): the near wave's call to it is cut
//! off after its short deadline and the receive answers with the other partitions' messages,
//! instead of waiting for the forward timeout (75 s).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

mod api_calls;
use api_calls::post_when_ready;

const TOPIC: &str = "stalled";
const SUB: &str = "reader";
const MESSAGES: usize = 30;
/// The client's bound on the receive: far below the forward timeout a hung near leader held
/// a receive for, far above the near call's deadline and the receive's own wait.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// The leader of each partition of [`TOPIC`] as node `url` knows it, once all have one.
async fn leaders(http: &reqwest::Client, url: &str) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let reply = http
            .get(format!("{url}/v1/cluster"))
            .send()
            .await
            .expect("an answer");
        let view: Value = reply.json().await.expect("json");
        let mut seen: Vec<(u64, Option<u64>)> = view["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["topic"] == TOPIC)
            .filter_map(|p| Some((p["partition"].as_u64()?, p["leader"].as_u64())))
            .collect();
        seen.sort_unstable();
        if !seen.is_empty() && seen.iter().all(|(_, l)| l.is_some()) {
            return seen.into_iter().filter_map(|(_, l)| l).collect();
        }
        assert!(
            Instant::now() < deadline,
            "partitions without a leader: {view}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Zones a, a, b and a topic of three partitions with one replica each (so a paused leader
/// is not replaced): with node `near` (zone a) paused, a receive on the other zone-a node
/// answers, well before the forward timeout, with the messages of the partition node 3
/// (zone b) leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_goes_on_to_far_leaders_when_a_near_leader_hangs() {
    let mut cluster = tokio::task::block_in_place(|| {
        let mut spec = ClusterSpec::new(wharf_binary(), 3);
        spec.zones = ["a", "a", "b"].map(str::to_owned).to_vec();
        Cluster::start(spec).expect("three nodes start")
    });
    let url_of: Vec<(u64, String)> = cluster
        .endpoints()
        .into_iter()
        .map(|e| (e.node, e.url))
        .collect();
    let url = |node: u64| {
        url_of
            .iter()
            .find(|(n, _)| *n == node)
            .map(|(_, u)| u.clone())
            .expect("a node of the cluster")
    };
    let http = reqwest::Client::builder()
        .timeout(CLIENT_TIMEOUT)
        .build()
        .expect("a client");
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics", url(3)),
        json!({"name": TOPIC, "partitions": 3, "replication_factor": 1}),
    )
    .await;
    assert_eq!(status, 201, "create topic: {body}");
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics/{TOPIC}/subscriptions", url(3)),
        json!({"name": SUB, "start": "earliest", "ack_timeout_ms": 60_000}),
    )
    .await;
    assert_eq!(status, 201, "create subscription: {body}");
    let led = leaders(&http, &url(3)).await;
    assert!(
        led.contains(&3) && (led.contains(&1) || led.contains(&2)),
        "placement left zone a or b without a partition: {led:?}"
    );
    let near = if led.contains(&1) { 1 } else { 2 };
    let caller = 3 - near;
    let far_partitions: BTreeSet<u64> = (0u64..)
        .zip(&led)
        .filter(|(_, l)| **l == 3)
        .map(|(p, _)| p)
        .collect();

    let batch: Vec<Value> = (0..MESSAGES)
        .map(|i| json!({"key": format!("k{i}"), "value": format!("m{i}")}))
        .collect();
    let (status, body) = post_when_ready(
        &http,
        &format!("{}/v1/topics/{TOPIC}/messages", url(3)),
        json!({ "messages": batch }),
    )
    .await;
    assert_eq!(status, 200, "produce: {body}");
    let placed: BTreeSet<u64> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["partition"].as_u64())
        .collect();
    assert!(
        placed.iter().any(|p| far_partitions.contains(p)),
        "no message went to node 3's partitions {far_partitions:?}: {body}"
    );

    tokio::task::block_in_place(|| cluster.pause(near)).expect("pauses the near leader");
    let started = Instant::now();
    let reply = http
        .post(format!(
            "{}/v1/topics/{TOPIC}/subscriptions/{SUB}/receive",
            url(caller)
        ))
        .json(&json!({"max_messages": 100, "wait_ms": 2000}))
        .send()
        .await;
    let took = started.elapsed();
    tokio::task::block_in_place(|| cluster.resume(near)).expect("resumes the near leader");
    let reply = reply.unwrap_or_else(|error| {
        panic!("no answer within {CLIENT_TIMEOUT:?} with node {near} paused: {error}")
    });
    assert_eq!(reply.status().as_u16(), 200, "receive");
    let body: Value = reply.json().await.expect("json");
    let from: BTreeSet<u64> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["partition"].as_u64())
        .collect();
    eprintln!("the receive on node {caller} took {took:?}, partitions {from:?}");
    assert!(
        from.iter().any(|p| far_partitions.contains(p)),
        "node 3's partitions {far_partitions:?} gave nothing: {body}"
    );
    drop(cluster);
}
