//! The cluster admin routes against a real three-process cluster: bad input (unknown topic,
//! partition or node; draining or removing a node the placement needs; a replication factor
//! above the node count) gets its 4xx and changes nothing; a leadership moves to a chosen
//! follower; a rebalance answers with its moves.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};

use crate::serial::CLUSTERS;

const TOPIC: &str = "admin";
/// Bound on waiting for the cluster to settle (every partition led).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(15);

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let reply = request.send().await.expect("the node answers");
    let status = reply.status().as_u16();
    let body = reply.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// What an admin refusal must not change: nodes with their states, and every partition's
/// replicas and leader.
fn essentials(view: &Value) -> Value {
    let nodes: Vec<Value> = view["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| json!([n["id"], n["state"]]))
        .collect();
    let partitions: Vec<Value> = view["partitions"]
        .as_array()
        .expect("partitions")
        .iter()
        .map(|p| {
            // The replicas' nodes, not their lag: an entry in flight changes that at any time.
            let replicas: Vec<Value> = p["replicas"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| r["node"].clone())
                .collect();
            json!([p["topic"], p["partition"], p["leader"], replicas])
        })
        .collect();
    json!({"nodes": nodes, "partitions": partitions})
}

async fn cluster_view(base: &str) -> Value {
    let (status, view) = send(http().get(format!("{base}/v1/cluster"))).await;
    assert_eq!(status, 200, "{view}");
    view
}

/// The cluster view once every partition of [`TOPIC`] has a leader and a term.
async fn settled(base: &str) -> Value {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let view = cluster_view(base).await;
        let partitions = view["partitions"].as_array().cloned().unwrap_or_default();
        if !partitions.is_empty() && partitions.iter().all(|p| p["leader"].is_u64()) {
            return view;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster did not settle: {view}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn expect(answer: &(u16, Value), status: u16, code: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["code"], code, "{}", answer.1);
}

#[test]
fn admin_routes_refuse_bad_input_changing_nothing_and_move_a_leader_on_request() {
    let _beside = CLUSTERS.blocking_read();
    let mut spec = ClusterSpec::new(wharf_binary(), 3);
    spec.zones = vec!["a".into(), "b".into(), "c".into()];
    let cluster = Cluster::start(spec).expect("three nodes start");
    let base = cluster.url(1).expect("url");
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async move {
            // 503 until every node has registered (a topic is placed on all of them).
            let deadline = Instant::now() + Duration::from_secs(15);
            let created = loop {
                let created = send(
                    http()
                        .post(format!("{base}/v1/topics"))
                        .json(&json!({"name": TOPIC, "partitions": 2})),
                )
                .await;
                if created.0 != 503 || Instant::now() >= deadline {
                    break created;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            };
            assert_eq!(created.0, 201, "{}", created.1);
            let before = essentials(&settled(&base).await);
            let client = http();
            let leader_url = |topic: &str, partition: u32| {
                format!("{base}/v1/cluster/partitions/{topic}/{partition}/leader")
            };
            let post = |url: String, body: Value| client.post(url).json(&body);
            let refusals = [
                (
                    post(leader_url("nope", 0), json!({"node": 2})),
                    404,
                    "topic_not_found",
                ),
                (
                    post(leader_url(TOPIC, 9), json!({"node": 2})),
                    404,
                    "partition_not_found",
                ),
                (
                    post(leader_url(TOPIC, 0), json!({"node": 99})),
                    404,
                    "node_not_found",
                ),
                (
                    post(leader_url(TOPIC, 0), json!({"nod": 2})),
                    400,
                    "invalid_request",
                ),
                (
                    client.post(format!("{base}/v1/cluster/nodes/99/drain")),
                    404,
                    "node_not_found",
                ),
                (
                    client.post(format!("{base}/v1/cluster/nodes/2/drain")),
                    409,
                    "too_few_active_nodes",
                ),
                (
                    client.delete(format!("{base}/v1/cluster/nodes/99")),
                    404,
                    "node_not_found",
                ),
                (
                    client.delete(format!("{base}/v1/cluster/nodes/2")),
                    409,
                    "node_holds_replicas",
                ),
                (
                    post(
                        format!("{base}/v1/topics"),
                        json!({"name": "too-many", "replication_factor": 4}),
                    ),
                    400,
                    "invalid_request",
                ),
            ];
            for (request, status, code) in refusals {
                let answer = send(request).await;
                expect(&answer, status, code);
                if code == "node_holds_replicas" {
                    let detail = answer.1["detail"].as_str().unwrap_or_default();
                    assert!(detail.contains("replicas cannot move yet"), "{detail}");
                }
            }
            let missing = send(client.get(format!("{base}/v1/topics/too-many"))).await;
            expect(&missing, 404, "topic_not_found");
            assert_eq!(
                essentials(&cluster_view(&base).await),
                before,
                "a refusal changed the cluster"
            );

            // A leadership moves to each follower of partition 0 in turn.
            let leader = before["partitions"][0][2].as_u64().expect("a leader");
            for target in (1..=3u64).filter(|n| *n != leader) {
                let started = Instant::now();
                let moved = send(post(leader_url(TOPIC, 0), json!({"node": target}))).await;
                assert_eq!(moved.0, 200, "{}", moved.1);
                assert_eq!(moved.1["leader"], target, "{}", moved.1);
                eprintln!(
                    "moved partition 0 to node {target}: took_ms {} (request {} ms)",
                    moved.1["took_ms"],
                    started.elapsed().as_millis()
                );
                let again = send(post(leader_url(TOPIC, 0), json!({"node": target}))).await;
                assert_eq!(again.0, 200, "{}", again.1);
                // Already leading: no election (the same term). `took_ms` is 0 when the answering
                // node already knew; right after a move it may still be learning who leads.
                assert_eq!(again.1["leader"], target, "already leading: {}", again.1);
                assert_eq!(
                    again.1["term"], moved.1["term"],
                    "already leading: {}",
                    again.1
                );
            }
            let rebalanced = send(client.post(format!("{base}/v1/cluster/rebalance"))).await;
            assert_eq!(rebalanced.0, 200, "{}", rebalanced.1);
            assert_eq!(rebalanced.1["failed"], json!([]), "{}", rebalanced.1);
            eprintln!("rebalance: {}", rebalanced.1);
        });
    drop(cluster);
}

/// Each partition of `topic` in `view`: (leader, preferred leader).
fn leaders_and_preferred(view: &Value, topic: &str) -> Vec<(Option<u64>, Option<u64>)> {
    view["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["topic"] == topic)
        .map(|p| (p["leader"].as_u64(), p["replicas"][0]["node"].as_u64()))
        .collect()
}

/// Waits (at most `timeout`) until node `base` sees every partition of `topic` led by its
/// preferred leader; the view then, or the last one seen.
async fn all_led_by_preferred(base: &str, topic: &str, timeout: Duration) -> Result<Value, Value> {
    let deadline = Instant::now() + timeout;
    loop {
        let view = cluster_view(base).await;
        let partitions = leaders_and_preferred(&view, topic);
        if !partitions.is_empty() && partitions.iter().all(|(l, p)| l.is_some() && l == p) {
            return Ok(view);
        }
        if Instant::now() >= deadline {
            return Err(view);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn a_restarted_node_takes_its_preferred_leaderships_back_on_its_own() {
    const BACK: &str = "back";
    let _beside = CLUSTERS.blocking_read();
    // Handed back 1 s after the returned node is live and caught up (10 s by default).
    let after_ms = 1_000;
    let mut spec = ClusterSpec::new(wharf_binary(), 3);
    spec.zones = vec!["a".into(), "b".into(), "c".into()];
    spec.extra_args = vec!["--preferred-leader-after-ms".into(), after_ms.to_string()];
    let mut cluster = Cluster::start(spec).expect("three nodes start");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let base = |cluster: &Cluster, id: u64| cluster.url(id).expect("url");
    let first = base(&cluster, 1);
    let victim = runtime.block_on(async {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let body = json!({"name": BACK, "partitions": 3});
            let created = send(http().post(format!("{first}/v1/topics")).json(&body)).await;
            if created.0 == 201 {
                break;
            }
            assert!(
                created.0 == 503 && Instant::now() < deadline,
                "{}",
                created.1
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let view = all_led_by_preferred(&first, BACK, SETTLE_TIMEOUT)
            .await
            .unwrap_or_else(|view| panic!("a new topic is led by its preferred leaders: {view}"));
        // Placement spreads the preferred leaders: each node prefers one of the three.
        let mut preferred: Vec<u64> = leaders_and_preferred(&view, BACK)
            .iter()
            .filter_map(|(_, p)| *p)
            .collect();
        preferred.sort_unstable();
        assert_eq!(preferred, vec![1, 2, 3], "{view}");
        // The node preferred for partition 0, if not node 1 (which the test asks), else 2.
        leaders_and_preferred(&view, BACK)
            .iter()
            .filter_map(|(_, p)| *p)
            .find(|p| *p != 1)
            .expect("a node other than 1 is preferred")
    });
    cluster.kill9(victim).expect("kill -9");
    let moved = runtime.block_on(async {
        // Its partition is led by a survivor meanwhile.
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let view = cluster_view(&first).await;
            let partitions = leaders_and_preferred(&view, BACK);
            let taken = partitions
                .iter()
                .any(|(l, p)| *p == Some(victim) && l.is_some() && *l != Some(victim));
            if taken {
                break view;
            }
            assert!(Instant::now() < deadline, "no survivor took over: {view}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    eprintln!(
        "while node {victim} is down: {:?}",
        leaders_and_preferred(&moved, BACK)
    );
    let restarted = Instant::now();
    cluster.restart(victim).expect("restarts");
    runtime.block_on(async {
        // Ready, caught up, then a whole wait and a look or two (every 2 s) later.
        match all_led_by_preferred(&first, BACK, SETTLE_TIMEOUT).await {
            Ok(view) => eprintln!(
                "every partition back with its preferred leader {:?} after the restart: {:?}",
                restarted.elapsed(),
                leaders_and_preferred(&view, BACK)
            ),
            Err(view) => panic!(
                "node {victim}'s leaderships did not come back within {SETTLE_TIMEOUT:?}: {view}"
            ),
        }
    });
    drop(cluster);
}
