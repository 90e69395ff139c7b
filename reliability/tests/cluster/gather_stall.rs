//! A receive gathered over a real three-process cluster (the `wharf` binary)
//! while the leader of a partition, in the receiving node's zone or in another, is paused
//! (SIGSTOP: it keeps its sockets, accepts connections and answers nothing): the call to it
//! is cut off after its short deadline and the receive answers with the other partitions'
//! messages, instead of waiting for the forward timeout (75 s).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

use crate::api_calls::{leaders, post_when_ready};
use crate::serial::CLUSTERS;

const TOPIC: &str = "stalled";
const SUB: &str = "reader";
const MESSAGES: usize = 30;
/// The client's bound on the receive: far below the forward timeout a hung near leader held
/// a receive for, far above the near call's deadline and the receive's own wait.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A three-node cluster in `zones` holding [`TOPIC`] (three partitions, one replica each, so
/// a paused leader is not replaced) with [`MESSAGES`] keyed messages and a subscription; the
/// cluster, each node's URL, a client and each partition's leader.
struct Stalled {
    cluster: Cluster,
    urls: Vec<(u64, String)>,
    http: reqwest::Client,
    leaders: Vec<u64>,
}

impl Stalled {
    async fn start(zones: [&str; 3]) -> Stalled {
        let cluster = tokio::task::block_in_place(|| {
            let mut spec = ClusterSpec::new(wharf_binary(), 3);
            spec.zones = zones.map(str::to_owned).to_vec();
            Cluster::start(spec).expect("three nodes start")
        });
        let urls = cluster
            .endpoints()
            .into_iter()
            .map(|e| (e.node, e.url))
            .collect();
        let http = reqwest::Client::builder()
            .timeout(CLIENT_TIMEOUT)
            .build()
            .expect("a client");
        let mut stalled = Stalled {
            cluster,
            urls,
            http,
            leaders: Vec::new(),
        };
        let (status, body) = post_when_ready(
            &stalled.http,
            &format!("{}/v1/topics", stalled.url(3)),
            json!({"name": TOPIC, "partitions": 3, "replication_factor": 1}),
        )
        .await;
        assert_eq!(status, 201, "create topic: {body}");
        let (status, body) = post_when_ready(
            &stalled.http,
            &format!("{}/v1/topics/{TOPIC}/subscriptions", stalled.url(3)),
            json!({"name": SUB, "start": "earliest", "ack_timeout_ms": 60_000}),
        )
        .await;
        assert_eq!(status, 201, "create subscription: {body}");
        stalled.leaders = leaders(&stalled.http, &stalled.url(3), TOPIC).await;
        let batch: Vec<Value> = (0..MESSAGES)
            .map(|i| json!({"key": format!("k{i}"), "value": format!("m{i}")}))
            .collect();
        let (status, body) = post_when_ready(
            &stalled.http,
            &format!("{}/v1/topics/{TOPIC}/messages", stalled.url(3)),
            json!({ "messages": batch }),
        )
        .await;
        assert_eq!(status, 200, "produce: {body}");
        stalled
    }

    fn url(&self, node: u64) -> String {
        self.urls
            .iter()
            .find(|(n, _)| *n == node)
            .map(|(_, u)| u.clone())
            .expect("a node of the cluster")
    }

    /// The partitions `node` leads.
    fn led_by(&self, node: u64) -> BTreeSet<u64> {
        (0u64..)
            .zip(&self.leaders)
            .filter(|(_, l)| **l == node)
            .map(|(p, _)| p)
            .collect()
    }

    /// A receive on `caller` with `paused` stopped: the partitions its messages came from,
    /// within [`CLIENT_TIMEOUT`] (a panic otherwise).
    async fn receive_with_paused(&mut self, caller: u64, paused: u64) -> BTreeSet<u64> {
        tokio::task::block_in_place(|| self.cluster.pause(paused)).expect("pauses a leader");
        let started = Instant::now();
        let reply = self
            .http
            .post(format!(
                "{}/v1/topics/{TOPIC}/subscriptions/{SUB}/receive",
                self.url(caller)
            ))
            .json(&json!({"max_messages": 100, "wait_ms": 2000}))
            .send()
            .await;
        let took = started.elapsed();
        tokio::task::block_in_place(|| self.cluster.resume(paused)).expect("resumes it");
        let reply = reply.unwrap_or_else(|error| {
            panic!("no answer within {CLIENT_TIMEOUT:?} with node {paused} paused: {error}")
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
        from
    }
}

/// Zones a, a, b: with the zone-a node `near` that leads a partition paused, a receive on
/// the other zone-a node answers, well before the forward timeout, with the messages of the
/// partition node 3 (zone b) leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_goes_on_to_far_leaders_when_a_near_leader_hangs() {
    let _beside = CLUSTERS.read().await;
    let mut stalled = Stalled::start(["a", "a", "b"]).await;
    let led = stalled.leaders.clone();
    assert!(
        led.contains(&3) && (led.contains(&1) || led.contains(&2)),
        "placement left zone a or b without a partition: {led:?}"
    );
    let near = if led.contains(&1) { 1 } else { 2 };
    let caller = 3 - near;
    let far_partitions = stalled.led_by(3);
    let from = stalled.receive_with_paused(caller, near).await;
    assert!(
        from.iter().any(|p| far_partitions.contains(p)),
        "node 3's partitions {far_partitions:?} gave nothing: {from:?}"
    );
}

/// Zones a, b, b: with a zone-b leader paused, a receive on node 1 (zone a) answers, well
/// before the forward timeout, with the messages of the partitions node 1 and the other
/// zone-b node lead: the far wave's calls have the same short deadline as the near wave's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_answers_when_a_far_leader_hangs() {
    let _beside = CLUSTERS.read().await;
    let mut stalled = Stalled::start(["a", "b", "b"]).await;
    let led = stalled.leaders.clone();
    assert!(
        led.contains(&2) && led.contains(&3),
        "placement left a zone-b node without a partition: {led:?}"
    );
    let live = stalled.led_by(3);
    let from = stalled.receive_with_paused(1, 2).await;
    assert!(
        from.iter().any(|p| live.contains(p)),
        "node 3's partitions {live:?} gave nothing: {from:?}"
    );
}
