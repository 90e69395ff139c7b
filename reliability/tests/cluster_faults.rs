//! Faults against a real three-process cluster (the `wharf` binary, cluster preview), with
//! producers (`ack=all`, unique values) running throughout and the checker judging the
//! history after every node is drained: acknowledged messages lost, divergent replicas,
//! holes, per-node loss. Each test prints the checker's report line.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use wharf_reliability::event::{NodeId, Phase, Run};
use wharf_reliability::harness::{Cluster, ClusterSpec};
use wharf_reliability::reader::read_file;
use wharf_reliability::workload::{Recorder, Workload, WorkloadSpec};
use wharf_reliability::{Report, Verdict, check};

const TOPIC: &str = "faults";
const PARTITIONS: u32 = 3;

fn wharf_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WHARF_BIN") {
        return PathBuf::from(path);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    target.join("debug/wharf")
}

fn three_nodes() -> Cluster {
    let mut spec = ClusterSpec::new(wharf_binary(), 3);
    spec.zones = vec!["a".into(), "b".into(), "c".into()];
    Cluster::start(spec).expect("three nodes start")
}

fn producers_only(seconds: u64) -> WorkloadSpec {
    let mut spec = WorkloadSpec::new(150, Duration::from_secs(seconds));
    spec.topic = TOPIC.into();
    spec.partitions = PARTITIONS;
    spec.consumers = 0;
    spec.seed = 11;
    spec
}

/// The leader of `partition` as a live node reports it.
async fn leader_of(cluster: &Cluster, partition: u32, alive: &[NodeId]) -> Option<NodeId> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .ok()?;
    for id in alive {
        let url = format!("{}/v1/topics/{TOPIC}", cluster.url(*id).ok()?);
        let Ok(reply) = http.get(url).send().await else {
            continue;
        };
        let Ok(body) = reply.json::<serde_json::Value>().await else {
            continue;
        };
        let leader = body["partition_stats"][partition as usize]["leader"].as_str();
        if let Some(leader) = leader.and_then(|l| l.parse().ok()) {
            return Some(leader);
        }
    }
    None
}

/// Waits until a live node names a leader of `partition` other than `not`.
async fn new_leader(cluster: &Cluster, partition: u32, not: NodeId) -> Option<NodeId> {
    let alive: Vec<NodeId> = cluster
        .node_ids()
        .into_iter()
        .filter(|n| *n != not)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(leader) = leader_of(cluster, partition, &alive).await
            && leader != not
        {
            return Some(leader);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

async fn drain_and_check(workload: &Workload) -> Report {
    workload.drain().await.expect("drain");
    let path = workload.recorder().finish().expect("history written");
    let report = check(&read_file(&path).expect("history reads back"));
    eprintln!("{}", report.line());
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_five_times_in_a_row_loses_no_acknowledged_message() {
    let mut cluster = three_nodes();
    let spec = producers_only(12);
    let run = Run {
        id: "R1".into(),
        name: "kill-leader-x5".into(),
        seed: spec.seed,
        faults: vec!["kill_leader".into()],
        require_leader_change: true,
        partitions: PARTITIONS,
        nodes: cluster.node_ids(),
    };
    let recorder = Recorder::create(&cluster.root().join("history.jsonl"), run).expect("history");
    let workload = Workload::new(spec, cluster.endpoints(), recorder.clone()).expect("workload");
    workload.setup().await.expect("topic");
    let running = workload.start();
    running.wait_acked(100, Duration::from_secs(10)).await;
    let mut term = 0;
    let mut outages = Vec::new();
    // Each round chases the leader of the next partition, so every partition changes leader.
    for round in 0..5u32 {
        let partition = round % PARTITIONS;
        let alive = cluster.node_ids();
        let leader = leader_of(&cluster, partition, &alive)
            .await
            .expect("the partition has a leader");
        term += 1;
        recorder.record_leader(partition, leader, term);
        let killed = tokio::task::block_in_place(|| cluster.kill9(leader));
        recorder.record_fault("kill_leader", Some(leader), Phase::Start, killed.is_ok());
        let since = Instant::now();
        let next = new_leader(&cluster, partition, leader)
            .await
            .expect("a new leader");
        outages.push(since.elapsed());
        term += 1;
        recorder.record_leader(partition, next, term);
        tokio::task::block_in_place(|| cluster.restart(leader)).expect("restarts");
        recorder.record_fault("kill_leader", Some(leader), Phase::End, true);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let stats = running.finish().await.expect("workload ran");
    let report = drain_and_check(&workload).await;
    eprintln!("{stats:?}; new leader seen after {outages:?}");
    assert_eq!(report.findings.queue.lost.count, 0, "{:?}", report.reasons);
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    assert!(stats.acked >= 500, "too few writes to judge: {stats:?}");
}
