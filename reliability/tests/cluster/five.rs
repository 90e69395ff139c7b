//! A replication factor below the node count, against a real five-process cluster (the `wharf`
//! binary): a topic of two partitions with three replicas each, so every
//! partition has two nodes holding nothing of it. Producers (`ack=all`) and consumers (receive
//! and ack) send to the five nodes in turn, so nodes outside a partition's group serve its
//! requests by forwarding to its leader. `GET /v1/cluster` shows each partition on three
//! nodes, and a node outside a partition's group reports its stats and serves its offset
//! reads; a kill -9 of one partition's leader loses no acknowledged message (the checker
//! judges the history, each partition drained from its own replicas).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::event::{NodeId, Partition, Phase, Run};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};
use wharf_reliability::reader::read_file;
use wharf_reliability::workload::{Workload, WorkloadSpec};
use wharf_reliability::{Report, Verdict, check};

use crate::serial::serially;

const TOPIC: &str = "five";
const PARTITIONS: u32 = 2;
/// Replicas of each partition: below the five nodes.
const REPLICATION_FACTOR: u32 = 3;
const SUBSCRIPTION: &str = "five-sub";
/// The subscription's lease: short, so messages the killed leader had leased come back within
/// the run.
const ACK_TIMEOUT_MS: u64 = 5_000;
/// How long producers produce.
const PRODUCE_FOR: Duration = Duration::from_secs(8);
/// Total produce rate, messages/s.
const RATE: u32 = 100;
/// Bound on every wait for the cluster to reach a state.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Bound on one call: above the 10 s an admin call may wait at the server for what it asked
/// (broker-core's `ADMIN_WAIT_MS`: a new topic's leaders). With 5 s, a create on a CI machine
/// running ten nodes on 2 cores timed out though the server was still within its wait.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(CALL_TIMEOUT)
        .build()
        .expect("client")
}

async fn get(url: String) -> Option<Value> {
    let reply = http().get(url).send().await.ok()?;
    if !reply.status().is_success() {
        return None;
    }
    reply.json().await.ok()
}

/// Each partition's replicas and leader as node `id` reports them in `GET /v1/cluster`.
async fn placement(
    cluster: &Cluster,
    id: NodeId,
) -> Option<BTreeMap<Partition, (Vec<NodeId>, Option<NodeId>)>> {
    let view = get(format!("{}/v1/cluster", cluster.url(id).ok()?)).await?;
    let mut out = BTreeMap::new();
    for p in view["partitions"].as_array()? {
        if p["topic"] != TOPIC {
            continue;
        }
        let partition = u32::try_from(p["partition"].as_u64()?).ok()?;
        let replicas = p["replicas"]
            .as_array()?
            .iter()
            .map(|r| r["node"].as_u64())
            .collect::<Option<Vec<_>>>()?;
        out.insert(partition, (replicas, p["leader"].as_u64()));
    }
    Some(out)
}

/// Waits until every node of `alive` reports every partition with a leader, the leader one
/// of its replicas; returns node `alive[0]`'s view.
async fn settled(
    cluster: &Cluster,
    alive: &[NodeId],
    not: Option<NodeId>,
) -> BTreeMap<Partition, (Vec<NodeId>, Option<NodeId>)> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let mut views = Vec::new();
        for id in alive {
            views.push(placement(cluster, *id).await);
        }
        let good = views.iter().all(|v| {
            v.as_ref().is_some_and(|v| {
                v.len() == PARTITIONS as usize
                    && v.values().all(|(replicas, leader)| {
                        leader.is_some_and(|l| replicas.contains(&l) && Some(l) != not)
                    })
            })
        }) && views.windows(2).all(|w| w[0] == w[1]);
        if good {
            return views.swap_remove(0).expect("a view");
        }
        assert!(
            Instant::now() < deadline,
            "the cluster did not settle: {views:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Partition `partition`'s stats as node `id` reports them.
async fn partition_stats(cluster: &Cluster, id: NodeId, partition: Partition) -> Option<Value> {
    let topic = get(format!("{}/v1/topics/{TOPIC}", cluster.url(id).ok()?)).await?;
    Some(topic["partition_stats"][partition as usize].clone())
}

/// Waits until every replica of each partition reports the same end offset for it, so the
/// drain reads followers that applied what their leader committed.
async fn wait_replicas_agree(cluster: &Cluster, replicas: &BTreeMap<Partition, Vec<NodeId>>) {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    for (partition, nodes) in replicas {
        loop {
            let mut ends = Vec::new();
            for id in nodes {
                let stats = partition_stats(cluster, *id, *partition).await;
                ends.push(stats.and_then(|s| s["end_offset"].as_u64()));
            }
            if ends.iter().all(Option::is_some) && ends.windows(2).all(|w| w[0] == w[1]) {
                break;
            }
            if Instant::now() >= deadline {
                eprintln!("partition {partition}: replicas still disagree: {ends:?}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Taken by every test, so only one five-node cluster runs at a time.
fn five_nodes() -> Cluster {
    let mut spec = ClusterSpec::new(wharf_binary(), 5);
    spec.zones = vec!["a".into(), "b".into(), "c".into()];
    let mut cluster = Cluster::start(spec).expect("five nodes start");
    if std::env::var_os("WHARF_FAULT_KEEP").is_some() {
        eprintln!("keeping {}", cluster.root().display());
        cluster.keep_artifacts();
    }
    cluster
}

/// Creates the topic at node `at` (retried while the controller leader has not seen every
/// node register: it answers 503 then), and waits until every node reports its leaders.
async fn create_topic(
    cluster: &Cluster,
    all: &[NodeId],
) -> BTreeMap<Partition, (Vec<NodeId>, Option<NodeId>)> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let create = http()
            .post(format!("{}/v1/topics", cluster.url(all[0]).expect("url")))
            .json(&json!({"name": TOPIC, "partitions": PARTITIONS,
                "replication_factor": REPLICATION_FACTOR}))
            .send()
            .await
            .expect("the create answers");
        let status = create.status().as_u16();
        if status == 201 {
            break;
        }
        let body = create.text().await;
        assert!(
            status == 503 && Instant::now() < deadline,
            "{status} {body:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    settled(cluster, all, None).await
}

fn workload_spec(replicas: &BTreeMap<Partition, Vec<NodeId>>) -> WorkloadSpec {
    let mut work = WorkloadSpec::new(RATE, PRODUCE_FOR);
    work.topic = TOPIC.into();
    work.partitions = PARTITIONS;
    work.subscription = SUBSCRIPTION.into();
    work.consumers = 2;
    work.receive_max = 50;
    work.ack_timeout_ms = Some(ACK_TIMEOUT_MS);
    work.consume_grace = Duration::from_secs(12);
    work.seed = 5;
    work.replicas = Some(replicas.clone());
    work
}

/// Prints the checker's report line and asserts nothing acknowledged was lost anywhere, every
/// acknowledged message was delivered, and the verdict is valid.
fn assert_valid(report: &Report) {
    eprintln!("{}", report.line());
    let findings = &report.findings;
    assert_eq!(findings.queue.lost.count, 0, "{:?}", report.reasons);
    assert_eq!(
        findings.queue.per_node_lost.count, 0,
        "{:?}",
        report.reasons
    );
    assert_eq!(
        findings.consumption.undelivered.count, 0,
        "acknowledged, never delivered: {:?}",
        findings.consumption.undelivered.first
    );
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
}

#[test]
fn five_nodes_with_three_replicas_serve_everything_anywhere_and_survive_a_leader_kill() {
    serially(run());
}

async fn run() {
    let started = Instant::now();
    let mut cluster = five_nodes();
    let all = cluster.node_ids();
    eprintln!("five nodes ready after {:.1?}", started.elapsed());
    let view = create_topic(&cluster, &all).await;
    let replicas: BTreeMap<Partition, Vec<NodeId>> = view
        .iter()
        .map(|(p, (replicas, _))| (*p, replicas.clone()))
        .collect();
    eprintln!("placement and leaders: {view:?}");
    for (partition, nodes) in &replicas {
        assert_eq!(
            nodes.len(),
            REPLICATION_FACTOR as usize,
            "partition {partition}"
        );
    }
    let work = workload_spec(&replicas);
    let run = Run {
        id: "R5".into(),
        name: "five-nodes-rf3-kill-leader".into(),
        seed: 5,
        faults: vec!["kill_leader".into()],
        // Partition 0's leader is killed; partition 1's need not change.
        require_leader_change: false,
        partitions: PARTITIONS,
        nodes: all.clone(),
        consumed_through: vec![SUBSCRIPTION.into()],
        replicas: replicas.values().cloned().collect(),
        exactly_once_ids: false,
        idle_delivery_bound_ms: None,
    };
    let recorder =
        wharf_reliability::workload::Recorder::create(&cluster.root().join("history.jsonl"), run)
            .expect("history");
    let workload = Workload::new(work, cluster.endpoints(), recorder.clone()).expect("workload");
    workload.setup().await.expect("subscription");
    let running = workload.start();
    assert!(
        running.wait_acked(100, SETTLE_TIMEOUT).await,
        "100 writes not acknowledged before the fault: {:?}",
        running.stats()
    );

    // A node outside partition 0's group reports its stats and serves its reads (forwarded).
    let (leader_0, outsider) = {
        let (nodes, leader) = &view[&0];
        let outsider = *all
            .iter()
            .find(|n| !nodes.contains(n))
            .expect("an outsider");
        (leader.expect("a leader"), outsider)
    };
    let stats = partition_stats(&cluster, outsider, 0).await.expect("stats");
    assert!(
        stats["end_offset"].as_u64().is_some_and(|e| e > 0),
        "{stats}"
    );
    assert_eq!(stats["leader"], leader_0.to_string(), "{stats}");
    let read = get(format!(
        "{}/v1/topics/{TOPIC}/partitions/0/messages?offset=0&max=5",
        cluster.url(outsider).expect("url")
    ))
    .await
    .expect("an outsider serves an offset read");
    let records = read["messages"].as_array().map_or(0, Vec::len);
    assert!(records > 0, "{read}");

    // Kill partition 0's leader; a new one among its replicas takes over.
    recorder.record_leader(0, leader_0, 1);
    let killed = tokio::task::block_in_place(|| cluster.kill9(leader_0));
    recorder.record_fault("kill_leader", Some(leader_0), Phase::Start, killed.is_ok());
    killed.expect("kill -9 of partition 0's leader");
    let alive: Vec<NodeId> = all.iter().copied().filter(|n| *n != leader_0).collect();
    let since = Instant::now();
    let after = settled(&cluster, &alive, Some(leader_0)).await;
    let new_leader = after[&0].1.expect("a new leader");
    eprintln!(
        "partition 0: node {new_leader} leads after {:.1?}",
        since.elapsed()
    );
    recorder.record_leader(0, new_leader, 2);
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::block_in_place(|| cluster.restart(leader_0)).expect("restarts");
    recorder.record_fault("kill_leader", Some(leader_0), Phase::End, true);

    let stats = running.finish().await.expect("workload ran");
    wait_replicas_agree(&cluster, &replicas).await;
    workload.drain().await.expect("drain");
    let path = workload.recorder().finish().expect("history written");
    let report = check(&read_file(&path).expect("history reads back"));
    eprintln!("{stats:?}; wall time {:.1?}", started.elapsed());
    assert_valid(&report);
    // 219 of 432 attempts were acknowledged in the first run (elections under the load of
    // five debug processes on two shared cores refuse some before the kill too).
    assert!(stats.acked >= 150, "too few writes to judge: {stats:?}");
}

#[test]
fn a_node_drained_under_produce_hands_its_replicas_over_and_is_removed() {
    serially(drain_and_remove());
}

async fn drain_and_remove() {
    let started = Instant::now();
    let mut cluster = five_nodes();
    let all = cluster.node_ids();
    let view = create_topic(&cluster, &all).await;
    let before: BTreeMap<Partition, Vec<NodeId>> =
        view.iter().map(|(p, (r, _))| (*p, r.clone())).collect();
    let controller = get(format!("{}/v1/cluster", cluster.url(all[0]).expect("url")))
        .await
        .and_then(|v| v["controller"]["leader"].as_u64())
        .expect("a controller leader");
    // A node holding a replica, other than the controller leader (which cannot remove
    // itself): the leader of a partition if one fits.
    let drained = view
        .values()
        .filter_map(|(_, leader)| *leader)
        .chain(before.values().flatten().copied())
        .find(|n| *n != controller)
        .expect("a node to drain");
    eprintln!("placement {view:?}; draining node {drained} (controller {controller})");

    // Each partition is read back (drained) from its replicas after the move, below.
    let work = workload_spec(&before);
    let run = Run {
        id: "R6".into(),
        name: "five-nodes-rf3-drain-remove".into(),
        seed: 5,
        faults: vec!["drain_node".into()],
        require_leader_change: false,
        partitions: PARTITIONS,
        nodes: all.clone(),
        consumed_through: vec![SUBSCRIPTION.into()],
        replicas: Vec::new(),
        exactly_once_ids: false,
        idle_delivery_bound_ms: None,
    };
    let history = cluster.root().join("history.jsonl");
    let recorder =
        wharf_reliability::workload::Recorder::create(&history, run.clone()).expect("history");
    let workload = Workload::new(work, cluster.endpoints(), recorder.clone()).expect("workload");
    workload.setup().await.expect("subscription");
    let running = workload.start();
    assert!(
        running.wait_acked(100, SETTLE_TIMEOUT).await,
        "100 writes not acknowledged before the drain: {:?}",
        running.stats()
    );
    let drain = http()
        .post(format!(
            "{}/v1/cluster/nodes/{drained}/drain",
            cluster.url(controller).expect("url")
        ))
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("the drain answers");
    let status = drain.status().as_u16();
    let body: Value = drain.json().await.unwrap_or(Value::Null);
    recorder.record_fault("drain_node", Some(drained), Phase::Start, status == 200);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["replicas_kept"], 0, "{body}");
    eprintln!("drained after {:.1?}: {body}", started.elapsed());
    // The drained node may have become the controller leader meanwhile: it then hands the
    // leadership over and answers 503, and the retry reaches the new leader.
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let removed = http()
            .delete(format!(
                "{}/v1/cluster/nodes/{drained}",
                cluster.url(controller).expect("url")
            ))
            .send()
            .await
            .expect("the removal answers");
        let status = removed.status().as_u16();
        let text = removed.text().await.unwrap_or_default();
        if status == 204 {
            break;
        }
        assert!(
            status == 503 && Instant::now() < deadline,
            "{status} {text}"
        );
        eprintln!("removal answered {status} {text}; retrying");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    recorder.record_fault("drain_node", Some(drained), Phase::End, true);
    // The removed node serves nothing any more; requests sent there now fail at once.
    tokio::task::block_in_place(|| cluster.kill9(drained)).expect("stops");
    let alive: Vec<NodeId> = all.iter().copied().filter(|n| *n != drained).collect();
    let after = settled(&cluster, &alive, Some(drained)).await;
    for (partition, (replicas, _)) in &after {
        assert!(
            !replicas.contains(&drained),
            "partition {partition}: {replicas:?}"
        );
        assert_eq!(replicas.len(), REPLICATION_FACTOR as usize);
    }
    let replicas: BTreeMap<Partition, Vec<NodeId>> =
        after.iter().map(|(p, (r, _))| (*p, r.clone())).collect();

    let stats = running.finish().await.expect("workload ran");
    wait_replicas_agree(&cluster, &replicas).await;
    // Drained from the replicas after the move (the new replica copied the whole log).
    let mut work = workload_spec(&replicas);
    work.replicas = Some(replicas.clone());
    let endpoints = cluster
        .endpoints()
        .into_iter()
        .filter(|e| e.node != drained)
        .collect();
    let reader = Workload::new(work, endpoints, recorder.clone()).expect("reader");
    reader.drain().await.expect("drain");
    let path = recorder.finish().expect("history written");
    let mut history = read_file(&path).expect("history reads back");
    if let Some(run) = history.run.as_mut() {
        run.replicas = replicas.values().cloned().collect();
    }
    let report = check(&history);
    eprintln!("{stats:?}; wall time {:.1?}", started.elapsed());
    assert_valid(&report);
    assert!(stats.acked >= 150, "too few writes to judge: {stats:?}");
}
