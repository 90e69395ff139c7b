//! R13, idempotent retries across cuts, against a real three-process cluster (the `wharf`
//! binary), each node in its own network namespace on a bridge (`Network::Namespaces`, as
//! `partitions`; needs root: a machine where namespaces cannot be created fails this
//! test, it does not skip it).
//!
//! A topic of three partitions, replication factor 3. Three producers send JSON batches of
//! five messages (`ack=all`; each message's value and client `id` `p{process}-{counter}`, a
//! key drawn from twelve) to a node drawn at random; a batch that times out (6 s), gets a 5xx
//! (503 included) or a connection error is sent again unchanged (same ids, keys and values) to
//! another node drawn at random, until one answer is a 200 (see
//! `wharf_reliability::workload::batch_retry`). Two consumers long-poll random nodes, record
//! each delivery and ack its receipt. Meanwhile a seeded schedule of [`CUTS`] cuts, each aimed
//! at the current leader of partition 0 and drawn from a bag holding each shape once (so four
//! cuts hold all three): the leader isolated, halves with the leader alone in the minority
//! (with three nodes the same links as isolating it, under its own name), or a bridge with the
//! leader at one end. Each holds [`CUT_HOLD`], then heals, then the test waits until writes
//! and acks are confirmed again before the next.
//!
//! After the last heal the producers stop, and the idle phase begins: consumers go on until
//! everything acknowledged was consumed, at most [`IDLE_BOUND`]. The checker (the run header
//! sets `exactly_once_ids` and `idle_delivery_bound_ms`, so `wharf-check` on a kept history
//! says the same) then judges: acknowledged lost, ids stored twice (a value at two positions of
//! any node's log), acknowledged never delivered, acknowledged values not delivered within
//! [`IDLE_DELIVERY_BOUND`] of the idle start (and the longest such wait), deliveries after a
//! confirmed ack, divergent replicas; duplicate replies are reported only.
//!
//! `WHARF_R13_SEED` repeats a run (else a seed is drawn and printed); `WHARF_R13_RUNS` (default
//! 1; `reliability/run --full` uses 50) runs that many with successive seeds, one cluster and
//! one report line each. A failing run keeps its folder (history, node logs, data), printed
//! with its seed, and the test fails after the last run; `WHARF_FAULT_KEEP=1` keeps every run's.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use wharf_reliability::History;
use wharf_reliability::event::{NodeId, Outcome, Phase, Run};
use wharf_reliability::harness::{Cluster, NetSplit, Network};
use wharf_reliability::reader::read_file;
use wharf_reliability::workload::{
    BatchRetry, LeaderWatch, Recorder, RunningWorkload, Workload, WorkloadSpec, WorkloadStats,
};
use wharf_reliability::{Report, Verdict, check};

use crate::cluster::{
    self, SETTLE_TIMEOUT, env_number, leader_and_term, three_nodes_with, topic_view,
};
use crate::serial::serially;

const TOPIC: &str = "idempotent";
const SUBSCRIPTION: &str = "idempotent-sub";
/// Three partitions, their leaders spread over the nodes, so a batch of five usually spans
/// partitions led by different nodes and is split by the node that takes it.
const PARTITIONS: u32 = 3;
/// The replication factor the topic must have: every node holds every partition.
const REPLICATION_FACTOR: u64 = 3;
const WATCHED: (&str, u32) = (TOPIC, PARTITIONS);
/// Producer tasks, each sending batches to random nodes.
const PRODUCERS: u32 = 3;
/// Consumer tasks, each long-polling random nodes.
const CONSUMERS: u32 = 2;
/// Messages per batch.
const BATCH_SIZE: u32 = 5;
/// Distinct keys: enough that a batch of five lands in several partitions.
const KEYS: u32 = 12;
/// The producers' client timeout per attempt: past it the batch is sent again.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(6);
/// Pause before a producer's next batch, in milliseconds, drawn: three producers then send
/// some 40 batches (200 messages) a second in all, which three debug nodes on 2 cores take.
const BATCH_PERIOD_MS: std::ops::RangeInclusive<u64> = 50..=100;
/// Batches one producer keeps under way; a batch being retried keeps its slot.
const BATCHES_IN_FLIGHT: usize = 2;
/// Pause between an attempt without a 200 and the batch's next attempt.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// A batch not stored this long after its first attempt is given up (and the run fails): two
/// full cuts and their recoveries.
const GIVE_UP_AFTER: Duration = Duration::from_secs(60);
/// Cuts per run (the plan asks for at least four).
const CUTS: usize = 4;
/// How long each cut holds: past an election timeout and an attempt timeout, so batches sent
/// into the cut time out and are retried elsewhere.
const CUT_HOLD: Duration = Duration::from_secs(6);
/// Writes acknowledged before the first cut, so the cluster is known to work.
const WARM_UP_ACKS: u64 = 50;
/// Acks confirmed by consumers before the first cut.
const WARM_UP_CONSUMED: u64 = 20;
/// After a heal, messages acknowledged to producers before the next cut: the cluster
/// recovered (five batches).
const RECOVERY_ACKS: u64 = 25;
/// After a heal, acks confirmed to consumers before the next cut.
const RECOVERY_CONSUMED: u64 = 5;
/// Bound on a recovery after a heal: an election, and batches stuck in a 6 s attempt.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long producers go on after the last recovery, so the history shows writes after it.
const TAIL: Duration = Duration::from_secs(2);
/// Bound on the produce phase (the test stops the producers once its cuts are done): the cuts,
/// their recoveries at their bound, and a margin.
const PRODUCE_BOUND: Duration = Duration::from_secs(300);
/// The subscription's lease: short, so a message leased by a receive whose answer was lost
/// in a cut comes back within the idle phase (lease, then the redelivery's backoff).
const ACK_TIMEOUT_MS: u64 = 5_000;
/// Messages per receive.
const RECEIVE_MAX: u32 = 50;
/// How long consumers go on after the producers stopped, until everything acknowledged was
/// consumed.
const IDLE_BOUND: Duration = Duration::from_secs(30);
/// An acknowledged message not yet delivered when the producers stopped must be delivered
/// within this of the idle start: past a lease and its redelivery, with a margin.
const IDLE_DELIVERY_BOUND: Duration = Duration::from_secs(10);
/// Pause between two looks at the cluster or the workload's counters while waiting.
const POLL: Duration = Duration::from_millis(50);
/// Most anomalies of each kind whose history is printed.
const STORIES: usize = 10;

/// The shapes a cut takes, each aimed at the leader of partition 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The leader cut from both others.
    Isolate,
    /// The leader alone on one side, the others on the other.
    Halves,
    /// The leader at one end of a bridge: cut from one node, both reaching the third.
    Bridge,
}

impl Shape {
    /// The fault's name in the history.
    fn fault(self) -> &'static str {
        match self {
            Shape::Isolate => "isolate_leader",
            Shape::Halves => "halves_leader_minority",
            Shape::Bridge => "bridge_leader_end",
        }
    }

    /// The split aimed at `leader`, the other two nodes being `others`.
    fn split(self, leader: NodeId, others: [NodeId; 2]) -> NetSplit {
        match self {
            Shape::Isolate => NetSplit::isolate(leader),
            Shape::Halves => NetSplit::halves(&[leader], &others),
            Shape::Bridge => NetSplit::bridge(leader, others[0], others[1]),
        }
    }
}

/// The seeded schedule: [`CUTS`] shapes drawn from a bag holding each once, refilled when
/// empty.
fn schedule(rng: &mut StdRng) -> Vec<Shape> {
    let mut bag: Vec<Shape> = Vec::new();
    (0..CUTS)
        .map(|_| {
            if bag.is_empty() {
                bag = vec![Shape::Isolate, Shape::Halves, Shape::Bridge];
                bag.shuffle(rng);
            }
            bag.pop().unwrap_or(Shape::Isolate)
        })
        .collect()
}

/// The faults a schedule declares, each once, in schedule order.
fn declared(shapes: &[Shape]) -> Vec<String> {
    let mut faults: Vec<String> = Vec::new();
    for shape in shapes {
        if !faults.iter().any(|f| f == shape.fault()) {
            faults.push(shape.fault().to_owned());
        }
    }
    faults
}

fn run_header(seed: u64, shapes: &[Shape], cluster: &Cluster) -> Run {
    Run {
        id: "R13".into(),
        name: "idempotent-retries".into(),
        seed,
        faults: declared(shapes),
        // Partitions led by a node no cut aims at may keep their leader; the test asserts a
        // leader change of its own.
        require_leader_change: false,
        partitions: PARTITIONS,
        nodes: cluster.node_ids(),
        consumed_through: vec![SUBSCRIPTION.into()],
        replicas: Vec::new(),
        exactly_once_ids: true,
        idle_delivery_bound_ms: Some(IDLE_DELIVERY_BOUND.as_millis() as u64),
    }
}

fn workload_spec(seed: u64) -> WorkloadSpec {
    // The rate names no figure for batch producers; it only has to be valid.
    let mut spec = WorkloadSpec::new(1, PRODUCE_BOUND);
    spec.topic = TOPIC.into();
    spec.subscription = SUBSCRIPTION.into();
    spec.partitions = PARTITIONS;
    spec.producers = PRODUCERS;
    spec.consumers = CONSUMERS;
    spec.keys = KEYS;
    spec.seed = seed;
    spec.receive_max = RECEIVE_MAX;
    spec.ack_timeout_ms = Some(ACK_TIMEOUT_MS);
    spec.consume_grace = IDLE_BOUND;
    spec.random_nodes = true;
    let mut batch = BatchRetry::new(BATCH_SIZE);
    batch.period_ms = BATCH_PERIOD_MS;
    batch.in_flight = BATCHES_IN_FLIGHT;
    batch.timeout = ATTEMPT_TIMEOUT;
    batch.retry_pause = RETRY_PAUSE;
    batch.give_up_after = GIVE_UP_AFTER;
    spec.batch_retry = Some(batch);
    spec
}

/// Waits (at most [`SETTLE_TIMEOUT`]) for a leader of partition 0.
async fn wait_leader(cluster: &Cluster) -> Option<(NodeId, u64)> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while Instant::now() < deadline {
        if let Some(found) = leader_and_term(cluster, TOPIC, &cluster.node_ids()).await {
            return Some(found);
        }
        tokio::time::sleep(POLL).await;
    }
    None
}

/// Waits until producers got `acked` and consumers `consumed` acks confirmed, at most
/// `timeout`; returns how long it took, or `None`.
async fn wait_progress(
    running: &RunningWorkload,
    (acked, consumed): (u64, u64),
    timeout: Duration,
) -> Option<Duration> {
    let since = Instant::now();
    while since.elapsed() < timeout {
        let stats = running.stats();
        if stats.acked >= acked && stats.acks_ok >= consumed {
            return Some(since.elapsed());
        }
        tokio::time::sleep(POLL).await;
    }
    None
}

/// The topic's replication factor as node 1 reports it.
async fn replication_factor(cluster: &Cluster) -> Option<u64> {
    let view = topic_view(cluster, 1, TOPIC).await?;
    view["replication_factor"].as_u64()
}

/// What the cut phase did.
#[derive(Debug, Default)]
struct Cuts {
    /// Each cut: its split, the leader it aimed at and that leader's term.
    done: Vec<String>,
    /// The slowest recovery after a heal.
    slowest_recovery: Duration,
    /// What went wrong (no leader to aim at, no recovery).
    problems: Vec<String>,
}

/// Runs the schedule: for each shape, the current leader of partition 0 cut off that way for
/// [`CUT_HOLD`], healed, and the recovery awaited.
async fn cut(
    cluster: &mut Cluster,
    recorder: &Recorder,
    running: &RunningWorkload,
    shapes: &[Shape],
) -> Cuts {
    let mut cuts = Cuts::default();
    for (n, shape) in shapes.iter().enumerate() {
        let Some((leader, term)) = wait_leader(cluster).await else {
            cuts.problems.push(format!(
                "cut {n}: no leader of partition 0 within {SETTLE_TIMEOUT:?}"
            ));
            break;
        };
        recorder.record_leader(0, leader, term);
        let others: Vec<NodeId> = cluster
            .node_ids()
            .into_iter()
            .filter(|id| *id != leader)
            .collect();
        let split = shape.split(leader, [others[0], others[1]]);
        let installed = tokio::task::block_in_place(|| cluster.split(&split));
        recorder.record_fault(shape.fault(), Some(leader), Phase::Start, installed.is_ok());
        installed.unwrap_or_else(|e| panic!("{split:?} installed: {e}"));
        eprintln!(
            "cut {n}: {split:?} (leader {leader}, term {term}) at {} ms",
            recorder.now_ms()
        );
        tokio::time::sleep(CUT_HOLD).await;
        let before = running.stats();
        let healed = tokio::task::block_in_place(|| cluster.heal());
        recorder.record_fault(shape.fault(), Some(leader), Phase::End, healed.is_ok());
        healed.expect("the cut heals");
        let wanted = (
            before.acked + RECOVERY_ACKS,
            before.acks_ok + RECOVERY_CONSUMED,
        );
        match wait_progress(running, wanted, RECOVERY_TIMEOUT).await {
            Some(took) => {
                cuts.slowest_recovery = cuts.slowest_recovery.max(took);
                eprintln!("cut {n}: recovered {took:.1?} after the heal");
            }
            None => cuts.problems.push(format!(
                "cut {n} ({}): no recovery within {RECOVERY_TIMEOUT:?} of the heal: {:?}",
                shape.fault(),
                running.stats()
            )),
        }
        cuts.done
            .push(format!("{split:?} (leader {leader} t{term})"));
    }
    cuts
}

/// Every attempt of `value` in the history, and the faults around them, in words.
fn attempts_of(history: &History, value: &str) -> String {
    let attempts: Vec<String> = history
        .produces
        .iter()
        .filter(|p| p.value == value)
        .map(|p| {
            let at = match (p.partition, p.offset) {
                (Some(partition), Some(offset)) => format!(" at {partition}/{offset}"),
                (Some(partition), None) => format!(" at {partition}/?"),
                _ => String::new(),
            };
            format!(
                "node {} {}–{} ms {:?} {}{}{}{}",
                p.node,
                p.invoke_ms,
                p.complete_ms,
                p.outcome,
                p.status
                    .map_or_else(|| "no status".to_owned(), |s| s.to_string()),
                p.code
                    .as_deref()
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default(),
                at,
                if p.duplicate { " duplicate" } else { "" },
            )
        })
        .collect();
    attempts.join("; ")
}

/// The faults of the history, `name node start–end ms`.
fn fault_windows(history: &History) -> String {
    let mut windows = Vec::new();
    let mut open: Option<(String, Option<NodeId>, u64)> = None;
    for fault in &history.faults {
        match fault.phase {
            Phase::Start => open = Some((fault.name.clone(), fault.node, fault.at_ms)),
            Phase::End => {
                if let Some((name, node, from)) = open.take() {
                    windows.push(format!("{name} {node:?} {from}–{} ms", fault.at_ms));
                }
            }
        }
    }
    windows.join(", ")
}

/// Values delivered whose every ack was refused (none confirmed, none of unknown outcome: an
/// ack spanning partitions answered with a 5xx is unknown, as a share of it may have been
/// applied) and that were not delivered again after the last refusal: at-least-once says they
/// come back once their lease ends. Reported, not judged: a refused ack's receipt may still
/// have been settled by a share of an earlier attempt. Each in words.
fn unconfirmed_not_redelivered(history: &History) -> Vec<String> {
    let mut found = Vec::new();
    let mut values: Vec<&str> = history
        .deliveries
        .iter()
        .map(|d| d.value.as_str())
        .collect();
    values.sort_unstable();
    values.dedup();
    for value in values {
        let acks: Vec<_> = history.acks.iter().filter(|a| a.value == value).collect();
        if acks.is_empty() || acks.iter().any(|a| a.outcome != Outcome::Fail) {
            continue;
        }
        let last_refusal = acks.iter().map(|a| a.complete_ms).max().unwrap_or(0);
        let deliveries: Vec<_> = history
            .deliveries
            .iter()
            .filter(|d| d.value == value)
            .collect();
        if deliveries.iter().any(|d| d.received_ms > last_refusal) {
            continue;
        }
        let refusals: Vec<String> = acks
            .iter()
            .map(|a| {
                format!(
                    "{}–{} ms {}{}",
                    a.invoke_ms,
                    a.complete_ms,
                    a.status
                        .map_or_else(|| "no status".to_owned(), |s| s.to_string()),
                    a.code
                        .as_deref()
                        .map(|c| format!(" {c}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        let delivered: Vec<String> = deliveries
            .iter()
            .map(|d| {
                format!(
                    "{}/{} attempt {} by node {} at {} ms",
                    d.partition, d.offset, d.attempt, d.node, d.received_ms
                )
            })
            .collect();
        found.push(format!(
            "{value}: delivered {}; acks refused {}",
            delivered.join(", "),
            refusals.join(", ")
        ));
    }
    found
}

/// Prints what the history says about each anomaly of `report`.
fn print_stories(report: &Report, history: &History) {
    let f = &report.findings;
    eprintln!("faults: {}", fault_windows(history));
    for twice in f.idempotence.stored_twice.first.iter().take(STORIES) {
        eprintln!(
            "id stored twice: {} on node {} at {:?}; attempts: {}",
            twice.value,
            twice.node,
            twice.positions,
            attempts_of(history, &twice.value)
        );
    }
    for stalled in f.backlog.stalled.first.iter().take(STORIES) {
        eprintln!(
            "stalled after idle: {stalled:?}; attempts: {}",
            attempts_of(history, &stalled.value)
        );
    }
    for late in f.delivered_after_ack.late.first.iter().take(STORIES) {
        let twice = f
            .idempotence
            .stored_twice
            .first
            .iter()
            .any(|t| t.value == late.value);
        let copy = if twice {
            " (the value is stored twice: this may be its other copy)"
        } else {
            ""
        };
        let deliveries: Vec<String> = history
            .deliveries
            .iter()
            .filter(|d| d.value == late.value)
            .map(|d| {
                format!(
                    "{}/{} attempt {} by node {} at {} ms",
                    d.partition, d.offset, d.attempt, d.node, d.received_ms
                )
            })
            .collect();
        eprintln!(
            "delivered after a confirmed ack{copy}: {late:?}; deliveries: {}",
            deliveries.join("; ")
        );
    }
    for lost in f.queue.lost.first.iter().take(STORIES) {
        eprintln!("lost: {lost:?}");
    }
    for undelivered in f.consumption.undelivered.first.iter().take(STORIES) {
        eprintln!(
            "never delivered: {undelivered:?}; attempts: {}",
            attempts_of(history, &undelivered.value)
        );
    }
    for divergent in f.divergence.first.iter().take(STORIES) {
        eprintln!("divergent: {divergent:?}");
    }
    let stuck = unconfirmed_not_redelivered(history);
    for story in stuck.iter().take(STORIES) {
        eprintln!("ack never confirmed, not delivered again: {story}");
    }
}

/// The report line: the checker's, with the test's own figures before the verdict, which is
/// `invalid` when any of `problems` is an anomaly of the system and the checker said `valid`.
fn report_line(
    (report, history): (&Report, &History),
    stats: &WorkloadStats,
    cuts: &Cuts,
    verdict: Verdict,
) -> String {
    let checker = report.line();
    let head = checker
        .rsplit_once(" | verdict ")
        .map_or(checker.as_str(), |(head, _)| head);
    format!(
        "{head} | unconfirmed not redelivered {} | cuts {} | batches retried {} \
         | batches abandoned {} | slowest recovery {:.1} s | verdict {verdict}",
        unconfirmed_not_redelivered(history).len(),
        cuts.done.len(),
        stats.batch_retries,
        stats.batches_abandoned,
        cuts.slowest_recovery.as_secs_f64(),
    )
}

/// Everything that makes a run fail, in words; empty when it passed.
fn run_problems(report: &Report, stats: &WorkloadStats, cuts: &Cuts) -> Vec<String> {
    let f = &report.findings;
    let mut problems = cuts.problems.clone();
    let counts = [
        (f.queue.lost.count, "acknowledged lost"),
        (
            f.queue.per_node_lost.count,
            "acknowledged missing on a node",
        ),
        (f.idempotence.stored_twice.count, "ids stored twice"),
        (
            f.consumption.undelivered.count,
            "acknowledged never delivered",
        ),
        (
            f.backlog.stalled.count,
            "acknowledged not delivered within the idle bound",
        ),
        (
            f.delivered_after_ack.late.count,
            "redeliveries after a confirmed ack",
        ),
        (f.divergence.count, "divergent offsets between replicas"),
        (stats.batches_abandoned, "batches abandoned"),
    ];
    for (count, what) in counts {
        if count > 0 {
            problems.push(format!("{count} {what}"));
        }
    }
    if report.verdict != Verdict::Valid {
        problems.push(format!("verdict {}: {:?}", report.verdict, report.reasons));
    }
    if f.leadership.total_changes() == 0 {
        problems.push("no leader change observed".to_owned());
    }
    if cuts.done.len() < CUTS {
        problems.push(format!("{} cuts of {CUTS}", cuts.done.len()));
    }
    problems
}

/// One run with `seed`: returns its report line, and the folder kept when it failed.
async fn one_run(seed: u64) -> (String, Option<String>) {
    eprintln!("R13 run with seed {seed} (WHARF_R13_SEED={seed} repeats it)");
    let mut rng = StdRng::seed_from_u64(seed);
    let shapes = schedule(&mut rng);
    let mut cluster = three_nodes_with(|spec| spec.network = Network::Namespaces);
    let run = run_header(seed, &shapes, &cluster);
    let recorder = Recorder::create(&cluster.root().join("history.jsonl"), run).expect("history");
    let workload = Workload::new(workload_spec(seed), cluster.endpoints(), recorder.clone())
        .expect("workload");
    workload.setup().await.expect("topic and subscription");
    let factor = replication_factor(&cluster).await;
    assert_eq!(
        factor,
        Some(REPLICATION_FACTOR),
        "the topic's replication factor"
    );
    let watch =
        LeaderWatch::start(cluster.endpoints(), TOPIC.into(), recorder.clone()).expect("watch");
    let running = workload.start();
    let warmed = wait_progress(&running, (WARM_UP_ACKS, WARM_UP_CONSUMED), SETTLE_TIMEOUT).await;
    assert!(
        warmed.is_some(),
        "not warmed up before the first cut: {:?}",
        running.stats()
    );

    let cuts = cut(&mut cluster, &recorder, &running, &shapes).await;
    tokio::time::sleep(TAIL).await;
    running.stop_producing();
    let stopping = Instant::now();
    let stats = running.finish().await.expect("workload ran");
    eprintln!(
        "producers and consumers done {:.1?} after the stop: {stats:?}",
        stopping.elapsed()
    );
    let watched = watch.stop().await;
    eprintln!("leader observations {watched}; cuts: {:#?}", cuts.done);
    cluster::wait_replicas_agree(&cluster, WATCHED, SETTLE_TIMEOUT).await;
    workload.drain().await.expect("drain");
    let path = recorder.finish().expect("history written");
    let history = read_file(&path).expect("history reads back");
    let report = check(&history);

    let problems = run_problems(&report, &stats, &cuts);
    let verdict = if problems.is_empty() {
        report.verdict
    } else if report.verdict == Verdict::Valid {
        Verdict::Invalid
    } else {
        report.verdict
    };
    let line = report_line((&report, &history), &stats, &cuts, verdict);
    eprintln!("{line}");
    wharf_reliability::case::record_line(&line);
    print_stories(&report, &history);
    let backlog = &report.findings.backlog;
    eprintln!(
        "backlog at idle {} (idle from {} ms), longest wait {} ms; duplicate replies {} \
         (first {:?}); deliveries after ack with the receive in flight {}",
        backlog.at_idle,
        backlog.idle_from_ms,
        backlog.longest_wait_ms,
        report.findings.idempotence.duplicate_replies.count,
        report.findings.idempotence.duplicate_replies.first,
        report.findings.delivered_after_ack.in_flight.count,
    );
    if problems.is_empty() {
        return (line, None);
    }
    cluster.keep_artifacts();
    let kept = cluster.root().display().to_string();
    eprintln!("R13 seed {seed} FAILED: {problems:?}; keeping {kept}");
    (
        line,
        Some(format!("seed {seed}: {problems:?} (kept {kept})")),
    )
}

#[test]
fn retried_batches_are_stored_once_and_everything_acknowledged_is_delivered_across_cuts() {
    serially(async {
        let first = cluster::seed_from_env("WHARF_R13_SEED");
        let runs = env_number("WHARF_R13_RUNS", 1);
        let mut lines = Vec::new();
        let mut failures = Vec::new();
        for n in 0..runs {
            let (line, failure) = one_run(first.wrapping_add(n)).await;
            lines.push(line);
            failures.extend(failure);
        }
        eprintln!("R13: {runs} runs from seed {first}:\n{}", lines.join("\n"));
        assert!(
            failures.is_empty(),
            "{} of {runs} runs failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    });
}
