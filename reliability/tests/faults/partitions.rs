//! Network partitions between the nodes of a real three-process cluster (the `wharf` binary),
//! each node in its own network namespace on a bridge (`Network::Namespaces`; needs root: a
//! machine where namespaces cannot be created fails these tests, it does not skip them).
//! Links are cut with blackhole routes inside the namespaces; the test's clients, in the root
//! namespace, keep reaching every node, on both sides of a partition. Producers (`ack=all`,
//! unique values) send to every node in turn throughout, a [`LeaderWatch`] records every
//! partition leader and Raft term the nodes report, and after healing the checker judges the
//! history once every node is drained.
//!
//! - R3: the leader of the one partition is isolated; the isolated node must acknowledge no
//!   write sent to it while it is cut off, and after healing its divergent uncommitted entries
//!   must be gone from every log.
//! - R4: halves, a bridge and a one-way cut, one after another with heals between; no two
//!   leaders of one term, no two acknowledged values at one offset.
//!
//! Both print and record one report line: the checker's, plus the figures counted here. The
//! tests run one at a time (`serial::serially`). `WHARF_FAULT_RATE` (messages/s) and
//! `WHARF_PARTITION_SECONDS` (how long each partition holds) lengthen a run;
//! `WHARF_PARTITION_SEED` fixes R4's random choices; `WHARF_FAULT_KEEP=1` keeps every run's
//! folder (history and node logs), not only a failed one's.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use wharf_reliability::History;
use wharf_reliability::event::{NodeId, Outcome, Phase, Run};
use wharf_reliability::harness::{Cluster, NetSplit, Network};
use wharf_reliability::reader::read_file;
use wharf_reliability::workload::{LeaderWatch, Recorder, RunningWorkload, Workload, WorkloadSpec};
use wharf_reliability::{Report, Verdict, check};

use crate::cluster::{
    SETTLE_TIMEOUT, env_number, leader_and_term, three_nodes_with, wait_replicas_agree,
};
use crate::serial::serially;

const TOPIC: &str = "netsplit";
/// One partition, so the isolated node certainly leads what the producers write to.
const PARTITIONS: u32 = 1;
/// Default total produce rate, messages/s: three nodes on 2 shared cores, with room left for
/// elections during the partitions.
const RATE: u64 = 100;
/// Writes acknowledged before the first partition, so the cluster is known to work.
const WARM_UP_ACKS: u64 = 50;
/// Writes acknowledged after a heal before the next partition: the cluster recovered.
const RECOVERY_ACKS: u64 = 20;
/// How long producers go on after the last recovery, so the history shows writes after it.
const TAIL: Duration = Duration::from_secs(2);
/// Bound on the produce phase beyond the partitions themselves; the test stops the producers
/// once its faults are done and the cluster recovered, which on a loaded machine takes longer
/// than on an idle one (an R4 run alongside a workspace build took 32 s instead of 26).
const PRODUCE_BOUND: Duration = Duration::from_secs(40);

/// How long each partition holds: `WHARF_PARTITION_SECONDS`, else the test's `default`.
fn partition_time(default: u64) -> Duration {
    Duration::from_secs(env_number("WHARF_PARTITION_SECONDS", default))
}

fn three_nodes_in_namespaces() -> Cluster {
    three_nodes_with(|spec| spec.network = Network::Namespaces)
}

fn run_header(id: &str, name: &str, seed: u64, faults: &[&str], cluster: &Cluster) -> Run {
    Run {
        id: id.into(),
        name: name.into(),
        seed,
        faults: faults.iter().map(|f| (*f).to_owned()).collect(),
        // Only R3 certainly moves leadership; its test asserts that itself.
        require_leader_change: id == "R3",
        partitions: PARTITIONS,
        nodes: cluster.node_ids(),
        consumed_through: vec![],
        replicas: Default::default(),
        exactly_once_ids: false,
        idle_delivery_bound_ms: None,
    }
}

/// A run under way: its history, the workload (to drain later), the producers and the watch.
struct Producing {
    recorder: Recorder,
    workload: Workload,
    running: RunningWorkload,
    watch: LeaderWatch,
}

/// Starts producers (`ack=all`, to every node in turn, for `producing`) and the leader watch,
/// and waits until [`WARM_UP_ACKS`] writes are acknowledged.
async fn start_producing(cluster: &Cluster, producing: Duration, run: Run) -> Producing {
    let rate = u32::try_from(env_number("WHARF_FAULT_RATE", RATE)).expect("a rate");
    let mut spec = WorkloadSpec::new(rate, producing);
    spec.topic = TOPIC.into();
    spec.partitions = PARTITIONS;
    spec.consumers = 0;
    spec.seed = run.seed;
    let recorder = Recorder::create(&cluster.root().join("history.jsonl"), run).expect("history");
    let workload = Workload::new(spec, cluster.endpoints(), recorder.clone()).expect("workload");
    workload.setup().await.expect("topic");
    let running = workload.start();
    let watch = LeaderWatch::start(cluster.endpoints(), TOPIC.into(), recorder.clone())
        .expect("leader watch");
    let warmed_up = running.wait_acked(WARM_UP_ACKS, SETTLE_TIMEOUT).await;
    assert!(
        warmed_up,
        "no writes acknowledged before the partition: {:?}",
        running.stats()
    );
    Producing {
        recorder,
        workload,
        running,
        watch,
    }
}

/// Waits (at most [`SETTLE_TIMEOUT`]) until one of `nodes` reports a leader of partition 0
/// that is not `not`, in a term above `above`.
async fn new_leader_among(
    cluster: &Cluster,
    nodes: &[NodeId],
    not: NodeId,
    above: u64,
) -> Option<(NodeId, u64)> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while Instant::now() < deadline {
        if let Some((leader, term)) = leader_and_term(cluster, TOPIC, nodes).await
            && leader != not
            && term > above
        {
            return Some((leader, term));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Lets the producers go on for [`TAIL`], stops them and the watch, waits for the replicas,
/// drains every node and checks the history; returns the report and the history.
async fn drain_and_check(cluster: &Cluster, producing: Producing) -> (Report, History) {
    tokio::time::sleep(TAIL).await;
    producing.running.stop_producing();
    let stats = producing.running.finish().await.expect("workload ran");
    let watched = producing.watch.stop().await;
    eprintln!("{stats:?}; leader observations {watched}");
    wait_replicas_agree(cluster, (TOPIC, PARTITIONS), SETTLE_TIMEOUT).await;
    producing.workload.drain().await.expect("drain");
    let path = producing.recorder.finish().expect("history written");
    let history = read_file(&path).expect("history reads back");
    (check(&history), history)
}

/// A time window (history milliseconds) during which `nodes` could not reach a majority.
#[derive(Debug, Clone)]
struct MinorityWindow {
    nodes: Vec<NodeId>,
    from_ms: u64,
    to_ms: u64,
}

/// Counts the produces sent to a minority node after its partition was installed and answered
/// before the heal began, and, of them, the acknowledged ones: no quorum could have stored
/// them, so every such ack is a bug. Returns (acks, produces, the first acknowledged values).
fn minority_acks(history: &History, windows: &[MinorityWindow]) -> (u64, u64, Vec<String>) {
    let inside = history.produces.iter().filter(|p| {
        windows.iter().any(|w| {
            w.nodes.contains(&p.node) && p.invoke_ms >= w.from_ms && p.complete_ms < w.to_ms
        })
    });
    let (mut acks, mut total, mut first) = (0, 0, Vec::new());
    for produce in inside {
        total += 1;
        if produce.outcome == Outcome::Ok {
            acks += 1;
            if first.len() < 10 {
                first.push(format!("{} at node {}", produce.value, produce.node));
            }
        }
    }
    (acks, total, first)
}

/// Acknowledged values whose (partition, offset) another acknowledged value also claims: two
/// leaders acknowledged writes at one position. Returns (such values, all acknowledged ones).
fn conflicting_acks(history: &History) -> (u64, u64) {
    let mut at: BTreeMap<(u32, u64), Vec<&str>> = BTreeMap::new();
    let mut acked = 0;
    for p in history.produces.iter().filter(|p| p.outcome == Outcome::Ok) {
        acked += 1;
        if let (Some(partition), Some(offset)) = (p.partition, p.offset) {
            at.entry((partition, offset)).or_default().push(&p.value);
        }
    }
    let conflicting = at
        .values()
        .filter(|values| values.iter().any(|v| *v != values[0]))
        .map(|values| values.len() as u64)
        .sum();
    (conflicting, acked)
}

/// Values found at a position where the nodes' logs disagree, or where one node's log
/// contradicts itself or an acknowledgement: what a reader could be served that is not the
/// committed log.
fn divergent_records(report: &Report) -> u64 {
    let findings = &report.findings;
    findings.divergence.count + findings.log.failures() + findings.offset_mismatch.count
}

/// Installs `split`, records its start; returns the history time from which it certainly
/// holds.
fn install(cluster: &mut Cluster, recorder: &Recorder, name: &str, split: &NetSplit) -> u64 {
    let node = match split {
        NetSplit::Isolate(n) => Some(*n),
        NetSplit::Asymmetric { from, .. } => Some(*from),
        _ => None,
    };
    let installed = tokio::task::block_in_place(|| cluster.split(split));
    let from_ms = recorder.now_ms();
    recorder.record_fault(name, node, Phase::Start, installed.is_ok());
    installed.unwrap_or_else(|e| panic!("{split:?} installed: {e}"));
    eprintln!("{split:?} installed at {from_ms} ms");
    from_ms
}

/// Records the end of fault `name`, then heals; returns the history time the heal began.
fn heal(cluster: &mut Cluster, recorder: &Recorder, name: &str, node: Option<NodeId>) -> u64 {
    let to_ms = recorder.now_ms();
    let healed = tokio::task::block_in_place(|| cluster.heal());
    recorder.record_fault(name, node, Phase::End, healed.is_ok());
    healed.expect("the partition heals");
    to_ms
}

fn assert_nothing_acknowledged_lost(report: &Report) {
    let queue = &report.findings.queue;
    assert_eq!(queue.lost.count, 0, "{:?}", report.reasons);
    assert_eq!(queue.per_node_lost.count, 0, "{:?}", report.reasons);
    assert_eq!(divergent_records(report), 0, "{:?}", report.reasons);
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
}

#[test]
fn an_isolated_leader_acknowledges_nothing_and_its_divergent_entries_are_never_served() {
    serially(async {
        let mut cluster = three_nodes_in_namespaces();
        let cut_for = partition_time(10);
        let run = run_header("R3", "leader-isolated", 3, &["isolate_leader"], &cluster);
        let producing = cut_for + PRODUCE_BOUND;
        let p = start_producing(&cluster, producing, run).await;
        let all = cluster.node_ids();
        let (leader, term) = leader_and_term(&cluster, TOPIC, &all)
            .await
            .expect("partition 0 has a leader");
        p.recorder.record_leader(0, leader, term);
        let majority: Vec<NodeId> = all.iter().copied().filter(|n| *n != leader).collect();
        let split = NetSplit::isolate(leader);
        let from_ms = install(&mut cluster, &p.recorder, "isolate_leader", &split);
        let since = Instant::now();
        let elected = new_leader_among(&cluster, &majority, leader, term).await;
        let election = since.elapsed();
        tokio::time::sleep(cut_for.saturating_sub(since.elapsed())).await;
        let acked_before_heal = p.running.stats().acked;
        let to_ms = heal(&mut cluster, &p.recorder, "isolate_leader", Some(leader));
        let (new_leader, new_term) = elected.expect("the majority elects a new leader");
        eprintln!(
            "isolated node {leader} (term {term}); node {new_leader} elected in term {new_term} \
             after {election:?}"
        );
        let recovered = p
            .running
            .wait_acked(acked_before_heal + RECOVERY_ACKS, SETTLE_TIMEOUT)
            .await;
        assert!(
            recovered,
            "no writes acknowledged after healing: {:?}",
            p.running.stats()
        );
        let (report, history) = drain_and_check(&cluster, p).await;
        let window = MinorityWindow {
            nodes: vec![leader],
            from_ms,
            to_ms,
        };
        let (acks, sent, first) = minority_acks(&history, &[window]);
        let changes = report.findings.leadership.total_changes();
        let line = format!(
            "{} | minority acks {acks} of {sent} | divergent records served {} | \
             leader elected after {:.1} s",
            report.line(),
            divergent_records(&report),
            election.as_secs_f64()
        );
        eprintln!("{line}");
        wharf_reliability::case::record_line(&line);
        assert!(
            sent > 0,
            "no write reached the isolated node during the partition"
        );
        assert_eq!(acks, 0, "the isolated node acknowledged writes: {first:?}");
        assert!(
            changes >= 1,
            "no leader change observed: {:?}",
            report.findings.leadership
        );
        assert_nothing_acknowledged_lost(&report);
    });
}

#[test]
fn halves_a_bridge_and_a_one_way_cut_never_give_two_leaders_acknowledging_writes() {
    serially(async {
        let mut cluster = three_nodes_in_namespaces();
        let cut_for = partition_time(4);
        let seed = std::env::var("WHARF_PARTITION_SEED")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| rand::thread_rng().r#gen::<u64>() % 1_000_000);
        let faults = ["split_halves", "split_bridge", "split_asymmetric"];
        let run = run_header("R4", "partition-shapes", seed, &faults, &cluster);
        let producing = 3 * cut_for + PRODUCE_BOUND;
        let p = start_producing(&cluster, producing, run).await;
        let mut rng = StdRng::seed_from_u64(seed);
        let all = cluster.node_ids();
        let mut windows = Vec::new();
        let mut shapes = Vec::new();
        for fault in faults {
            let (leader, term) = leader_and_term(&cluster, TOPIC, &all)
                .await
                .expect("partition 0 has a leader");
            p.recorder.record_leader(0, leader, term);
            let mut others: Vec<NodeId> = all.iter().copied().filter(|n| *n != leader).collect();
            others.shuffle(&mut rng);
            let split = match fault {
                // A random node alone against the other two.
                "split_halves" => {
                    let alone = *all.choose(&mut rng).expect("three nodes");
                    let rest: Vec<NodeId> = all.iter().copied().filter(|n| *n != alone).collect();
                    NetSplit::halves(&[alone], &rest)
                }
                // The leader at one end of the bridge.
                "split_bridge" => NetSplit::bridge(leader, others[0], others[1]),
                // The leader's packets to one follower vanish.
                _ => NetSplit::asymmetric(leader, others[0]),
            };
            let from_ms = install(&mut cluster, &p.recorder, fault, &split);
            tokio::time::sleep(cut_for).await;
            let acked_before_heal = p.running.stats().acked;
            let during = leader_and_term(&cluster, TOPIC, &all).await;
            let to_ms = heal(&mut cluster, &p.recorder, fault, None);
            windows.push(MinorityWindow {
                nodes: split.minority(&all),
                from_ms,
                to_ms,
            });
            shapes.push(format!(
                "{split:?} (leader {leader} t{term}, at the end {during:?})"
            ));
            let recovered = p
                .running
                .wait_acked(acked_before_heal + RECOVERY_ACKS, SETTLE_TIMEOUT)
                .await;
            assert!(recovered, "no writes acknowledged after healing {split:?}");
        }
        eprintln!("shapes: {shapes:#?}");
        let (report, history) = drain_and_check(&cluster, p).await;
        let (acks, sent, first) = minority_acks(&history, &windows);
        let (conflicting, acked) = conflicting_acks(&history);
        let dual_terms = report.findings.leadership.dual_leaders.count;
        let line = format!(
            "{} | dual-leader acks {conflicting} of {acked} | dual-leader terms {dual_terms} | \
             minority acks {acks} of {sent}",
            report.line()
        );
        eprintln!("{line}");
        wharf_reliability::case::record_line(&line);
        assert_eq!(conflicting, 0, "two acknowledged values at one offset");
        assert_eq!(
            dual_terms, 0,
            "two leaders of one term: {:?}",
            report.findings.leadership.dual_leaders.first
        );
        assert_eq!(acks, 0, "a minority node acknowledged writes: {first:?}");
        assert_nothing_acknowledged_lost(&report);
    });
}
