//! R8 of `RELIABILITY.md` (the NATS#7567 shape): one node loses its power while another is
//! paused, then they come back in the worst orders. Three brokers in one process, one
//! partition replicated on all three under `fsync always`; producers keep writing to the
//! leader with `ack=all`.
//!
//! Per seed: node A (power loss) and node B (pause) are chosen at random, C is the third.
//! Half of the seeds first cut C off for a while, so that messages are committed by A and B
//! alone and C lags. Then B is paused: every RPC to or from it is held and delivered only
//! when it resumes (as the kernel holds a SIGSTOPped process's connections; its own timers
//! still run in-process, so it comes back with the higher terms of the elections it tried
//! meanwhile: harsher than a SIGSTOP, whose timers fire only on resume). Without a lagging C,
//! A and C go on committing; the power of A goes at a random change to its segment files
//! (unsynced writes dropped, the next maybe torn or garbled: `crash_sim`). With a lagging C,
//! C stays cut off until A's power is gone (A alone cannot commit), so the last messages A and
//! B committed are on A and B only: the NATS#7567 shape. A is cut off the moment its power
//! goes; its folder is rewritten as the loss left it; A reopens and loses its power again
//! during recovery (at one of its first changes); the folder is rewritten again. Then the two
//! worst orders, by seed: A restarts while B is still paused, so A (with its damaged log) and
//! C must form the majority and commit, and B resumes after; or B resumes first, then A
//! restarts. After both are back and a few more messages are committed, each node's own
//! replica is read: every acknowledged message at its offset on every node, the three
//! replicas the same at every offset, and never two nodes leading the same term.
//!
//! `WHARF_POWERPAUSE_SEEDS` sets the number of seeds (8 by default, ~15 s; `reliability/run
//! --full`: 40; not `WHARF_POWERLOSS_SEEDS`, whose full 1000 would take hours here). Sled and
//! the Raft state file are not simulated: both keep what they wrote (the state file is fsynced
//! and renamed before the vote is answered).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use broker_core::storage::crash_sim::Tearing;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wharf_reliability::CaseLine;

use crate::power_pause_support::{
    Cluster, NODES, disagreements, lost_on, observe_leaders, produce, settled_replicas,
    split_terms, watch_power,
};

/// Seeds of the short run in `cargo test`.
const SHORT_SEEDS: u64 = 8;
/// Producers at once.
const PRODUCERS: u64 = 2;
/// Messages acknowledged before anything goes wrong.
const WARMUP: usize = 20;
/// Messages acknowledged by A and B while C is cut off (lagging).
const WHILE_LAGGING: usize = 15;
/// The power of A goes at a random change to its files among the next this many…
const MAX_CRASH_OP: u64 = 80;
/// … or right after a random write among the next this many (a loss that finds one unsynced).
const MAX_CRASH_WRITE: u64 = 30;
/// With C cut off and B paused, A cannot commit: only the appends in flight reach its disk,
/// so its power goes at one of its next this many changes…
const MAX_CRASH_OP_ALONE: u64 = 4;
/// … or right after one of its next this many writes…
const MAX_CRASH_WRITE_ALONE: u64 = 2;
/// … or, when it makes fewer, after this long.
const ALONE_RUN: Duration = Duration::from_millis(300);
/// The second loss comes at one of the first this many changes of A's recovery.
const MAX_RECOVERY_CRASH_OP: u64 = 12;
/// Messages that must be acknowledged after each step that needs a majority.
const AFTER_STEP: usize = 10;
/// Bound of each wait for progress: elections take up to 0.5 s, a loaded CI machine longer.
const STEP_WAIT: Duration = Duration::from_secs(15);
/// How long A may run on its disk after reopening before the second loss is forced.
const RECOVERY_RUN: Duration = Duration::from_millis(500);
/// How long the replicas may take to agree at the end.
const SETTLE_WAIT: Duration = Duration::from_secs(20);

/// The order in which A and B come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// A restarts while B is still paused; then B resumes.
    RestartThenResume,
    /// B resumes; then A restarts.
    ResumeThenRestart,
}

/// What one seed counted.
#[derive(Debug, Default, Clone)]
struct Figures {
    acked: u64,
    /// Acknowledged messages missing or different, per role: [A, B, C].
    lost: [u64; 3],
    /// … on the partition's leader at the end.
    lost_on_leader: u64,
    disagreeing_offsets: u64,
    offsets_compared: u64,
    split_terms: u64,
    terms_led: u64,
    power_losses: u64,
    /// Power losses that came at the chosen change (the others were forced after a while).
    at_a_change: u64,
    recovery_losses: u64,
    inside_recovery: u64,
    torn: u64,
    unsynced_changes: u64,
    /// Acks while B was paused after A restarted (A and C formed the majority).
    acked_by_a_and_c: u64,
    lagging_runs: u64,
    restart_first: u64,
    /// Seeds with both: a lagging C and A restarted while B is paused (NATS#7567's shape).
    both: u64,
    /// Waits for progress that ran out (a liveness failure, also a failure of the seed).
    stalls: Vec<String>,
}

impl Figures {
    fn add(&mut self, o: &Figures) {
        self.acked += o.acked;
        for (l, r) in self.lost.iter_mut().zip(o.lost) {
            *l += r;
        }
        self.lost_on_leader += o.lost_on_leader;
        self.disagreeing_offsets += o.disagreeing_offsets;
        self.offsets_compared += o.offsets_compared;
        self.split_terms += o.split_terms;
        self.terms_led += o.terms_led;
        self.power_losses += o.power_losses;
        self.at_a_change += o.at_a_change;
        self.recovery_losses += o.recovery_losses;
        self.inside_recovery += o.inside_recovery;
        self.torn += o.torn;
        self.unsynced_changes += o.unsynced_changes;
        self.acked_by_a_and_c += o.acked_by_a_and_c;
        self.lagging_runs += o.lagging_runs;
        self.restart_first += o.restart_first;
        self.both += o.both;
        self.stalls.extend(o.stalls.iter().cloned());
    }
}

/// Waits for `more` acks; a wait that runs out is noted as a stall named `step`.
async fn progress(cluster: &Cluster, more: usize, step: &str, f: &mut Figures) -> u64 {
    let from = cluster.acked_count();
    if !cluster.until_acked(from, more, STEP_WAIT).await {
        f.stalls.push(step.to_string());
    }
    (cluster.acked_count() - from) as u64
}

/// Waits until A's power went (or forces it after `within`), then takes A down and rewrites
/// its folder as the loss left it: the loss's torn writes and unsynced changes.
async fn lose_power(cluster: &Cluster, rng: &mut StdRng, within: Duration) -> (bool, u64, u64) {
    let deadline = tokio::time::Instant::now() + within;
    while !cluster.disk.is_crashed() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let by_itself = cluster.disk.is_crashed();
    cluster.disk.power_loss_now(rng.r#gen(), Tearing::default());
    lock_cut(cluster);
    let loss = cluster.disk.power_loss().expect("the power is cut");
    cluster.stop_node(cluster.lossy).await;
    loss.apply()
        .expect("write the files as the power loss left them");
    (
        by_itself,
        loss.torn.len() as u64,
        loss.unsynced_changes as u64,
    )
}

/// Cuts A off now (the watcher would within a millisecond).
fn lock_cut(cluster: &Cluster) {
    cluster.net.cut.lock().expect("lock").insert(cluster.lossy);
}

async fn run_seed(seed: u64) -> Figures {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut f = Figures::default();
    let a = rng.gen_range(1..=NODES);
    let others: Vec<u64> = (1..=NODES).filter(|id| *id != a).collect();
    let b = others[rng.gen_range(0..2)];
    let c = *others.iter().find(|id| **id != b).expect("a third node");
    let order = match rng.gen_bool(0.5) {
        true => Order::RestartThenResume,
        false => Order::ResumeThenRestart,
    };
    let cluster = Cluster::start(a).await;
    let mut tasks = vec![
        tokio::spawn(watch_power(Arc::clone(&cluster))),
        tokio::spawn(observe_leaders(Arc::clone(&cluster))),
    ];
    for p in 0..PRODUCERS {
        let name = format!("s{seed}-p{p}");
        tasks.push(tokio::spawn(produce(
            Arc::clone(&cluster),
            name,
            rng.r#gen(),
        )));
    }
    progress(&cluster, WARMUP, "warm-up", &mut f).await;

    // Half of the seeds: C lags (cut off) while A and B commit, and stays cut off until A's
    // power is gone, so the messages A and B committed last are on A and B only; A then
    // loses its unsynced writes and must come back with them to form a majority with C.
    let lagging = rng.gen_bool(0.5);
    if lagging {
        f.lagging_runs += 1;
        cluster.net.cut.lock().expect("lock").insert(c);
        progress(&cluster, WHILE_LAGGING, "A and B while C lags", &mut f).await;
    }
    // B pauses; A goes on (committing with C when C is there) until its power goes at a
    // random change, or, alone, after a short while.
    cluster.pause(b);
    let (max_op, max_write, within) = match lagging {
        true => (MAX_CRASH_OP_ALONE, MAX_CRASH_WRITE_ALONE, ALONE_RUN),
        false => (MAX_CRASH_OP, MAX_CRASH_WRITE, STEP_WAIT),
    };
    match rng.gen_bool(0.5) {
        true => {
            cluster
                .disk
                .crash_at_op(rng.gen_range(1..=max_op), rng.r#gen(), Tearing::default())
        }
        false => cluster.disk.crash_after_write(
            rng.gen_range(1..=max_write),
            rng.r#gen(),
            Tearing::default(),
        ),
    }
    let (at_a_change, torn, unsynced) = lose_power(&cluster, &mut rng, within).await;
    f.power_losses += 1;
    f.at_a_change += u64::from(at_a_change);
    f.torn += torn;
    f.unsynced_changes += unsynced;
    if lagging {
        cluster.net.cut.lock().expect("lock").remove(&c);
    }

    if order == Order::ResumeThenRestart {
        cluster.resume(b);
    }
    // A reopens and loses its power again during recovery.
    cluster.revive_lossy();
    cluster.disk.crash_at_op(
        rng.gen_range(1..=MAX_RECOVERY_CRASH_OP),
        rng.r#gen(),
        Tearing::default(),
    );
    let opened = cluster.restart(a).await;
    f.inside_recovery += u64::from(!opened || cluster.disk.is_crashed());
    let (_, torn, unsynced) = lose_power(&cluster, &mut rng, RECOVERY_RUN).await;
    f.recovery_losses += 1;
    f.torn += torn;
    f.unsynced_changes += unsynced;

    // A restarts from its twice-damaged folder.
    cluster.revive_lossy();
    assert!(cluster.restart(a).await, "seed {seed}: A does not reopen");
    match order {
        Order::RestartThenResume => {
            f.restart_first += 1;
            f.both += u64::from(lagging);
            f.acked_by_a_and_c = progress(&cluster, AFTER_STEP, "A and C, B paused", &mut f).await;
            cluster.resume(b);
        }
        Order::ResumeThenRestart => {}
    }
    progress(&cluster, AFTER_STEP, "all three back", &mut f).await;
    cluster.stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await.expect("task");
    }

    let replicas = settled_replicas(&cluster, SETTLE_WAIT).await;
    let acked = cluster.acked.lock().expect("lock").clone();
    f.acked = acked.len() as u64;
    for (i, id) in [a, b, c].into_iter().enumerate() {
        f.lost[i] = lost_on(&replicas[(id - 1) as usize], &acked);
    }
    let leader = (1..=NODES).find(|id| {
        cluster
            .broker(*id)
            .and_then(|br| br.partition_status(crate::power_pause_support::TOPIC, 0))
            .is_some_and(|s| s.leader == Some(*id))
    });
    f.lost_on_leader = leader.map_or(f.acked, |l| lost_on(&replicas[(l - 1) as usize], &acked));
    f.disagreeing_offsets = disagreements(&replicas);
    f.offsets_compared = replicas.iter().map(|r| r.len() as u64).max().unwrap_or(0);
    let split = split_terms(&cluster);
    if !split.is_empty() {
        eprintln!("seed {seed}: terms led by two nodes: {split:?}");
    }
    f.split_terms = split.len() as u64;
    f.terms_led = cluster.leaders.lock().expect("lock").len() as u64;
    for id in 1..=NODES {
        if let Some(broker) = cluster.broker(id) {
            broker.shutdown().await;
        }
    }
    eprintln!(
        "seed {seed}: A={a} B={b} C={c} {order:?}: acked {} lost {:?} disagreeing {} stalls {:?}",
        f.acked, f.lost, f.disagreeing_offsets, f.stalls
    );
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_power_loss_on_one_node_while_another_is_paused_loses_nothing_and_splits_no_log() {
    let seeds = std::env::var("WHARF_POWERPAUSE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SHORT_SEEDS);
    let mut f = Figures::default();
    for seed in 0..seeds {
        f.add(&run_seed(seed).await);
    }
    let [on_a, on_b, on_c] = f.lost;
    CaseLine::new("R8", "power-loss-and-pause")
        .figure("seeds", seeds)
        .figure(
            "power losses",
            format!("{} ({} at a chosen change)", f.power_losses, f.at_a_change),
        )
        .figure(
            "more while recovering",
            format!(
                "{} ({} inside the open)",
                f.recovery_losses, f.inside_recovery
            ),
        )
        .figure("unsynced changes at the losses", f.unsynced_changes)
        .figure("torn writes", f.torn)
        .figure("restarted while paused", f.restart_first)
        .figure("with a lagging third", f.lagging_runs)
        .figure("both", f.both)
        .figure("acked", f.acked)
        .must_be_zero("lost on the power-lost node", on_a, f.acked)
        .must_be_zero("lost on the paused node", on_b, f.acked)
        .must_be_zero("lost on the third node", on_c, f.acked)
        .must_be_zero("lost on the leader", f.lost_on_leader, f.acked)
        .must_be_zero(
            "offsets where nodes disagree",
            f.disagreeing_offsets,
            f.offsets_compared,
        )
        .must_be_zero("terms with two leaders", f.split_terms, f.terms_led)
        .must_be_zero("stalled steps", f.stalls.len() as u64, seeds * 4)
        .record();
    assert_eq!(
        f.lost,
        [0, 0, 0],
        "acknowledged messages lost, per node [A, B, C]"
    );
    assert_eq!(f.lost_on_leader, 0);
    assert_eq!(f.disagreeing_offsets, 0, "the replicas disagree");
    assert_eq!(f.split_terms, 0, "two nodes led the same term");
    assert!(
        f.stalls.is_empty(),
        "steps that made no progress: {:?}",
        f.stalls
    );
    assert_eq!(f.power_losses, seeds);
    assert_eq!(f.recovery_losses, seeds);
    assert!(f.acked > 0, "coverage: nothing was acknowledged");
    assert!(
        f.restart_first == 0 || f.acked_by_a_and_c > 0,
        "coverage: A and C never committed while B was paused"
    );
}
