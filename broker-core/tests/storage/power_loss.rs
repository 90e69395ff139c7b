//! Simulated power loss (`RELIABILITY.md` D3, D4). A SIGKILL keeps the page cache, so it
//! cannot show that what was acknowledged was fsynced; here the segment files are rewritten as
//! a power loss would leave them (`broker_core::storage::crash_sim`): only what an fsync
//! covered survives, plus a random part of the unsynced writes, the first one lost possibly
//! torn or garbled. The power goes at a random change to the files while producers append
//! random batches; sled, whose flushes are not simulated, keeps its index, loses it, or loses
//! its newest entries. Each seed has two power losses; after each the log is reopened and
//! checked: every acknowledged record at its offset with its bytes, offsets from 0 without a
//! gap, nothing served that was not sent (no torn or garbled frame), every torn write cut by
//! recovery, and an append and read after recovery.
//!
//! `WHARF_POWERLOSS_SEEDS` sets the number of seeds (100 by default, ~15 s for both cases on
//! 2 cores; the full run: 1000). A failing seed is printed; the producers' interleaving is not
//! seeded, so a seed repeats the crash point and the damage but not always the same log.

use broker_core::config::FsyncPolicy;
use wharf_reliability::CaseLine;

use crate::power_loss_support::broker::Replies;
use crate::power_loss_support::{CYCLES, Figures, broker, run_seed, seeds};

/// Seeds of the short run in `cargo test`.
const SHORT_SEEDS: u64 = 100;
/// Seeds of D4's broker runs, which check the produce replies' durability (a broker takes
/// longer to open than a partition).
const BROKER_SEEDS: u64 = 10;
/// The fsync interval of D4.
const INTERVAL_MS: u64 = 20;
/// How late the writer may fsync after its interval: it runs its groups and its timer on one
/// thread, which a loaded 2-core CI machine may deschedule for a while.
const GROUP_COMMIT_SLACK_MS: u64 = 1_000;

/// What both fsync policies must show after every power loss: nothing served that was not
/// sent, no frame reads fail on, offsets without a gap, appends working, every torn write cut.
fn assert_recovered_cleanly(f: &Figures) {
    assert_eq!(f.corrupt_served, 0, "records served that were not sent");
    assert_eq!(f.read_errors, 0, "recovery left a frame reads fail on");
    assert_eq!(f.offset_gaps, 0);
    assert_eq!(f.append_failures, 0);
    assert_eq!(
        f.torn_truncated + f.torn_whole,
        f.torn,
        "a torn write recovery neither cut nor found whole"
    );
}

/// "cut of torn", with the torn writes that came out whole when there are any.
fn torn_figure(f: &Figures) -> String {
    match f.torn_whole {
        0 => format!("{} of {}", f.torn_truncated, f.torn),
        whole => format!(
            "{} of {} ({whole} came out whole)",
            f.torn_truncated, f.torn
        ),
    }
}

/// Runs every seed under `fsync`: the sum of their figures and the failures, by seed.
async fn run_all(fsync: FsyncPolicy) -> (u64, Figures, Vec<String>) {
    let count = seeds(SHORT_SEEDS);
    let mut total = Figures::default();
    let mut failures = Vec::new();
    for seed in 0..count {
        match run_seed(seed, fsync).await {
            Ok(figures) => total.add(&figures),
            Err(e) => {
                eprintln!("power loss seed {seed} failed: {e}");
                failures.push(format!("seed {seed}: {e}"));
            }
        }
    }
    (count, total, failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_fsync_always_a_power_loss_loses_no_acknowledged_record_and_serves_no_torn_one() {
    let (seeds, f, failures) = run_all(FsyncPolicy::Always).await;
    CaseLine::new("D3", "power-loss-always")
        .figure("seeds", seeds)
        .figure("power losses", f.power_losses)
        .figure(
            "more while reopening",
            format!(
                "{} ({} inside recovery)",
                f.recovery_losses, f.inside_recovery
            ),
        )
        .must_be_zero("acked lost", f.lost, f.acked)
        .figure("torn tails truncated", torn_figure(&f))
        .must_be_zero("corrupt records served", f.corrupt_served, f.served)
        .must_be_zero("read errors", f.read_errors, f.power_losses)
        .must_be_zero("offset gaps", f.offset_gaps, f.power_losses)
        .must_be_zero("recoveries refusing to open", failures.len() as u64, seeds)
        .must_be_zero(
            "appends failing after recovery",
            f.append_failures,
            f.power_losses,
        )
        .figure("unsynced changes at the losses", f.unsynced_changes)
        .record();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(f.power_losses, seeds * CYCLES as u64);
    assert_eq!(
        f.acks_unsynced, 0,
        "under `always` every answer says fsynced"
    );
    assert_eq!(f.lost, 0, "acknowledged records lost: {f:?}");
    assert_recovered_cleanly(&f);
    assert!(f.torn > 0, "coverage: no power loss tore a write");
    assert!(
        f.inside_recovery > 0,
        "coverage: no power loss inside recovery"
    );
    assert!(
        f.unsynced_changes > 0,
        "coverage: no power loss dropped a write"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_an_fsync_interval_a_power_loss_loses_only_records_acknowledged_as_unsynced_within_it()
 {
    let (seeds, f, failures) = run_all(FsyncPolicy::IntervalMs(INTERVAL_MS)).await;
    let mut replies = Replies::default();
    for seed in 0..BROKER_SEEDS.min(seeds) {
        replies.add(&broker::run_seed(seed, INTERVAL_MS).await);
    }
    let ages = f.lost_ages_ms.iter().chain(&replies.lost_ages_ms);
    let max_age = ages.copied().max().unwrap_or(0);
    let window = INTERVAL_MS + GROUP_COMMIT_SLACK_MS;
    let within = max_age <= window;
    CaseLine::new("D4", "power-loss-interval")
        .figure("seeds", seeds)
        .figure("interval ms", INTERVAL_MS)
        .figure("acked", f.acked)
        .figure("messages lost", f.lost)
        .must_be_zero("lost acked as fsynced", f.lost_fsynced, f.lost)
        .figure("broker replies", replies.acked)
        .figure("broker messages lost", replies.lost)
        .must_be_zero(
            "lost with a reply other than leader-written",
            replies.lost - replies.lost_leader_written,
            replies.lost,
        )
        .figure("all within window", if within { "yes" } else { "no" })
        .figure("max age of a lost ack ms", max_age)
        .figure("torn tails truncated", torn_figure(&f))
        .must_be_zero(
            "corrupt records served",
            f.corrupt_served + replies.wrong,
            f.served + replies.acked,
        )
        .must_be_zero("recoveries refusing to open", failures.len() as u64, seeds)
        .verdict(match within {
            true => wharf_reliability::Verdict::Valid,
            false => wharf_reliability::Verdict::Invalid,
        })
        .record();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(f.power_losses, seeds * CYCLES as u64);
    assert_eq!(
        f.lost_fsynced, 0,
        "a record whose answer said fsynced was lost"
    );
    assert!(
        within,
        "a lost record was acknowledged {max_age} ms before the power loss, past {window} ms"
    );
    assert_recovered_cleanly(&f);
    assert!(
        f.lost > 0,
        "coverage: no power loss lost an unsynced record"
    );
    assert_eq!(
        replies.lost_leader_written, replies.lost,
        "a message lost had a reply saying more than leader-written"
    );
    assert_eq!(replies.wrong, 0, "a message served other than acknowledged");
}
