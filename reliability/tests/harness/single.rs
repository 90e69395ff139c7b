//! The cluster runner and the workload against real `wharf` processes.
//!
//! The binary is `$WHARF_BIN`, else `$CARGO_TARGET_DIR/debug/wharf`, else
//! `<workspace>/target/debug/wharf`; build it first with `cargo build -p gateway --bin wharf`.
//! A missing binary fails the tests (it does not skip them).

use std::time::{Duration, Instant};

use wharf_reliability::event::{NodeId, Phase, Run};
use wharf_reliability::harness::{Cluster, ClusterSpec, HarnessError, wharf_binary};
use wharf_reliability::reader::read_file;
use wharf_reliability::workload::{Recorder, Workload, WorkloadSpec};
use wharf_reliability::{Report, Verdict, check};

fn header(id: &str, name: &str, faults: &[&str], partitions: u32, nodes: Vec<NodeId>) -> Run {
    Run {
        id: id.to_owned(),
        name: name.to_owned(),
        seed: 7,
        faults: faults.iter().map(|f| (*f).to_owned()).collect(),
        require_leader_change: false,
        partitions,
        nodes,
        consumed_through: vec![],
        replicas: Default::default(),
        exactly_once_ids: false,
        idle_delivery_bound_ms: None,
    }
}

fn workload_spec() -> WorkloadSpec {
    let mut spec = WorkloadSpec::new(200, Duration::from_secs(3));
    spec.seed = 7;
    spec
}

/// Drains, closes the history and checks it; prints the report line.
async fn drain_and_check(workload: &Workload) -> Report {
    workload.drain().await.expect("drain");
    let path = workload.recorder().finish().expect("history written");
    let report = check(&read_file(&path).expect("history reads back"));
    eprintln!("{}", report.line());
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_node_without_faults_loses_nothing_and_is_valid() {
    let started = Instant::now();
    let cluster =
        Cluster::start(ClusterSpec::new(wharf_binary(), 1)).expect("a single node starts");
    let spec = workload_spec();
    let run = header(
        "H1",
        "single-node-steady",
        &[],
        spec.partitions,
        cluster.node_ids(),
    );
    let recorder = Recorder::create(&cluster.root().join("history.jsonl"), run).expect("history");
    let workload = Workload::new(spec, cluster.endpoints(), recorder).expect("workload");
    workload.setup().await.expect("topic and subscription");
    let stats = workload.start().finish().await.expect("workload ran");
    let report = drain_and_check(&workload).await;
    eprintln!("{stats:?} in {:?}", started.elapsed());
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    // What the server controls, not the rate: a busy machine's client offers fewer than the
    // 600 sends planned (471 were seen), but every one it made must be acknowledged.
    assert!(stats.attempts >= 100, "the workload ran: {stats:?}");
    assert_eq!(
        stats.acked, stats.attempts,
        "every produce acked: {stats:?}"
    );
    assert_eq!(report.findings.queue.acknowledged, stats.acked);
    assert!(
        stats.delivered >= stats.acked,
        "consumers saw every value: {stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_node_killed_and_restarted_with_fsync_always_loses_nothing_acknowledged() {
    let started = Instant::now();
    let mut spec = ClusterSpec::new(wharf_binary(), 1);
    spec.fsync = Some("always".to_owned());
    let mut cluster = Cluster::start(spec).expect("a single node starts");
    let spec = workload_spec();
    let run = header(
        "H2",
        "single-node-kill9",
        &["kill_node"],
        spec.partitions,
        cluster.node_ids(),
    );
    let recorder = Recorder::create(&cluster.root().join("history.jsonl"), run).expect("history");
    let workload = Workload::new(spec, cluster.endpoints(), recorder.clone()).expect("workload");
    workload.setup().await.expect("topic and subscription");
    let running = workload.start();
    assert!(
        running.wait_acked(100, Duration::from_secs(5)).await,
        "{:?}",
        running.stats()
    );
    let killed = tokio::task::block_in_place(|| cluster.kill9(1));
    recorder.record_fault("kill_node", Some(1), Phase::Start, killed.is_ok());
    killed.expect("SIGKILL");
    tokio::task::block_in_place(|| cluster.restart(1)).expect("the node restarts on its data");
    recorder.record_fault("kill_node", Some(1), Phase::End, true);
    let stats = running.finish().await.expect("workload ran");
    let report = drain_and_check(&workload).await;
    eprintln!("{stats:?} in {:?}", started.elapsed());
    let queue = &report.findings.queue;
    assert_eq!(queue.lost.count, 0, "{:?}", queue.lost);
    assert_eq!(queue.per_node_lost.count, 0, "{:?}", queue.per_node_lost);
    assert_eq!(queue.unexpected.count, 0, "{:?}", queue.unexpected);
    assert_eq!(report.findings.coverage.installed, 1);
    assert!(
        stats.failed + stats.unknown > 0,
        "the kill was felt: {stats:?}"
    );
}

#[test]
fn a_paused_node_is_not_ready_until_resumed_and_a_killed_one_is_not_running() {
    let mut cluster =
        Cluster::start(ClusterSpec::new(wharf_binary(), 1)).expect("a single node starts");
    let pid = cluster.pid(1).expect("node 1").expect("running");
    cluster.pause(1).expect("SIGSTOP");
    let paused = cluster.wait_ready(1, Duration::from_millis(600));
    assert!(
        matches!(paused, Err(HarnessError::NotReady { node: 1, .. })),
        "{paused:?}"
    );
    cluster.resume(1).expect("SIGCONT");
    cluster
        .wait_ready(1, Duration::from_secs(5))
        .expect("ready again");
    cluster.kill9(1).expect("SIGKILL");
    assert!(!cluster.is_running(1).expect("node 1"));
    assert!(matches!(
        cluster.kill9(1),
        Err(HarnessError::NotRunning { node: 1 })
    ));
    cluster.restart(1).expect("restart");
    assert_ne!(cluster.pid(1).expect("node 1"), Some(pid));
    assert!(matches!(
        cluster.url(4),
        Err(HarnessError::UnknownNode { node: 4, .. })
    ));
}

/// Three nodes with cluster flags all get ready.
#[test]
fn three_cluster_nodes_all_get_ready() {
    let mut spec = ClusterSpec::new(wharf_binary(), 3);
    spec.zones = vec!["a".into(), "b".into(), "c".into()];
    let mut cluster = Cluster::start(spec).expect("three nodes start");
    for id in cluster.node_ids() {
        cluster
            .wait_ready(id, Duration::from_secs(10))
            .expect("ready");
    }
}

fn process_exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn dropping_a_cluster_kills_its_nodes_and_deletes_its_folder_unless_kept() {
    let cluster = Cluster::start(ClusterSpec::new(wharf_binary(), 1)).expect("starts");
    let (pid, root) = (
        cluster.pid(1).expect("node 1").expect("running"),
        cluster.root().to_owned(),
    );
    let mut cluster = cluster;
    cluster.pause(1).expect("a paused node is killed too");
    drop(cluster);
    assert!(
        !process_exists(pid),
        "node process {pid} outlived its cluster"
    );
    assert!(!root.exists(), "{} left behind", root.display());

    let mut kept = Cluster::start(ClusterSpec::new(wharf_binary(), 1)).expect("starts");
    kept.keep_artifacts();
    let root = kept.root().to_owned();
    drop(kept);
    assert!(root.join("node-1/wharf.log").is_file());
    std::fs::remove_dir_all(&root).expect("remove the kept folder");
}
