//! The per-minute history stays within its bounds over many more minutes than it keeps, with
//! topics and subscriptions coming and going: its rings take at most a ring's
//! `MinuteRing::memory_bytes` per live series, its files at most
//! `HistoryFiles::max_file_bytes` per live series, the series of deleted topics and
//! subscriptions leave memory and disk, minutes older than the retention are dropped, and a
//! restart loads no more than that.
//!
//! The file layer alone is tested in `history::files` (a fixed set of series); this drives
//! `History` itself, as the sampler does, with a clock the test moves.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use broker_core::broker::TopicHistoryTotals;
use broker_core::history::retention::MIN_RETENTION_MINUTES;
use broker_core::history::{RetentionMinutes, SubscriptionRing, TopicRing};
use broker_core::telemetry::{SubscriptionTotals, TopicTotals};
use gateway::governance::history::files::{HISTORY_DIR, HistoryFiles};
use gateway::governance::history::{
    History, HistoryClock, HistoryHooks, SubscriptionGauges, sampler,
};

/// A minute well inside the epoch.
const START_MINUTE: u64 = 29_000_000;
const MINUTE_MS: u64 = 60_000;
/// The retention: the shortest there is, so the run passes it several times quickly.
const RETENTION: u64 = MIN_RETENTION_MINUTES;
/// Minutes sampled: over three retentions, not a multiple of it.
const MINUTES: u64 = 3 * RETENTION + 17;
/// Samples a minute, as a sampler taking one every 20 seconds would.
const SAMPLES_PER_MINUTE: u64 = 3;
/// Topics live at any minute besides the steady one.
const TOPICS: u64 = 30;
/// Subscriptions of each topic live at any minute.
const SUBSCRIPTIONS: u64 = 4;
/// Every this many minutes the oldest churning topic is deleted and a new one created, and
/// each topic's oldest subscription replaced by a new one.
const CHURN_EVERY: u64 = 7;
/// The topic present all through the run.
const STEADY: &str = "steady";
/// Bytes a topic record and a subscription record take on disk (see `history::files`).
const TOPIC_RECORD_BYTES: u64 = 69;
const SUBSCRIPTION_RECORD_BYTES: u64 = 77;

/// The topics and subscriptions live at `minute`, with totals growing by the minute.
fn totals_at(minute: u64, sample: u64) -> Vec<TopicHistoryTotals> {
    let churned = minute / CHURN_EVERY;
    let count = minute * SAMPLES_PER_MINUTE + sample;
    let names = std::iter::once(STEADY.to_owned())
        .chain((churned..churned + TOPICS).map(|n| format!("topic-{n}")));
    names
        .map(|name| TopicHistoryTotals {
            name,
            totals: TopicTotals {
                produced_messages: count * 10,
                produced_bytes: count * 1_000,
                consumed_messages: count * 9,
                consumed_bytes: count * 900,
            },
            subscriptions: (churned..churned + SUBSCRIPTIONS)
                .map(|n| {
                    let totals = SubscriptionTotals {
                        delivered_messages: count * 3,
                        delivered_bytes: count * 300,
                        acks: count * 2,
                        nacks: count,
                        dead_letters: 0,
                    };
                    (format!("sub-{n}"), totals)
                })
                .collect(),
        })
        .collect()
}

fn series_bound(topics: usize, subscriptions: usize, retention: RetentionMinutes) -> (usize, u64) {
    let memory = topics * TopicRing::memory_bytes(retention)
        + subscriptions * SubscriptionRing::memory_bytes(retention);
    let disk = topics as u64 * HistoryFiles::max_file_bytes::<5, 1>(retention)
        + subscriptions as u64 * HistoryFiles::max_file_bytes::<4, 2>(retention);
    (memory, disk)
}

#[tokio::test]
async fn history_stays_within_retention_times_live_series_as_minutes_and_series_come_and_go() {
    let dir = tempfile::tempdir().expect("dir");
    let retention = RetentionMinutes::new(RETENTION).expect("retention");
    assert_eq!(
        HistoryFiles::max_file_bytes::<5, 1>(retention),
        RETENTION * TOPIC_RECORD_BYTES
    );
    assert_eq!(
        HistoryFiles::max_file_bytes::<4, 2>(retention),
        RETENTION * SUBSCRIPTION_RECORD_BYTES
    );
    let clock = Arc::new(AtomicU64::new(START_MINUTE * MINUTE_MS));
    let read = Arc::clone(&clock);
    let hooks = HistoryHooks {
        clock: HistoryClock::new(move || read.load(Ordering::SeqCst)),
        sample_every: Duration::from_secs(20),
    };
    let history =
        Arc::new(History::open(dir.path(), retention, Some(hooks.clone())).expect("open"));
    let files = history.files().expect("files").clone();

    let mut peak_memory = 0;
    let mut bound = (0, 0);
    for minute in START_MINUTE..START_MINUTE + MINUTES {
        for sample in 0..SAMPLES_PER_MINUTE {
            let now = minute * MINUTE_MS + sample * MINUTE_MS / SAMPLES_PER_MINUTE;
            clock.store(now, Ordering::SeqCst);
            let totals = totals_at(minute - START_MINUTE, sample);
            let finished = history.observe(now, &totals, &SubscriptionGauges::new());
            sampler::write(&history, finished).await;
            let subscriptions = totals.iter().map(|t| t.subscriptions.len()).sum();
            bound = series_bound(totals.len(), subscriptions, retention);
            let memory = history.memory_bytes();
            assert!(
                memory <= bound.0,
                "minute {minute}: the rings take {memory} bytes, over {} for {} topics and \
                 {subscriptions} subscriptions",
                bound.0,
                totals.len()
            );
            peak_memory = peak_memory.max(memory);
        }
        let disk = files.disk_bytes().expect("disk");
        assert!(
            disk <= bound.1,
            "minute {minute}: the files take {disk} bytes, over {}",
            bound.1
        );
    }

    let now_minute = START_MINUTE + MINUTES - 1;
    let points = history
        .topic_points(STEADY, 2 * RETENTION)
        .expect("the steady topic's series");
    let minutes: Vec<u64> = points.iter().map(|p| p.minute).collect();
    assert_eq!(
        minutes,
        (now_minute - RETENTION..=now_minute).collect::<Vec<_>>(),
        "the {RETENTION} finished minutes kept, and the one being filled"
    );
    let gone = format!("topic-{}", (MINUTES - 1) / CHURN_EVERY - 1);
    assert!(history.topic_points(&gone, RETENTION).is_none(), "{gone}");
    assert!(history.topic_points("topic-0", RETENTION).is_none());

    let finished = history.close_all();
    sampler::write(&history, finished).await;
    let disk = files.disk_bytes().expect("disk");
    assert!(
        disk <= bound.1,
        "the files take {disk} bytes, over {}",
        bound.1
    );
    let live_topics = TOPICS as usize + 1;
    assert_eq!(
        series_files(dir.path()),
        (live_topics, live_topics * (1 + SUBSCRIPTIONS as usize)),
        "a folder per live topic, a file per live series, no other"
    );
    let memory = history.memory_bytes();
    assert_eq!(
        memory, bound.0,
        "every live series' ring is allocated, and no other"
    );
    eprintln!(
        "history of {} topics and {} subscriptions live after {MINUTES} minutes of {RETENTION} \
         kept: {memory} bytes of rings (peak {peak_memory}), {disk} bytes of files",
        TOPICS + 1,
        (TOPICS + 1) * SUBSCRIPTIONS
    );
    drop(history);

    let reopened = History::open(dir.path(), retention, Some(hooks)).expect("reopen");
    assert_eq!(
        reopened.memory_bytes(),
        memory,
        "a restart loads the live series only"
    );
    let points = reopened
        .topic_points(STEADY, 2 * RETENTION)
        .expect("the steady topic's series");
    let minutes: Vec<u64> = points.iter().map(|p| p.minute).collect();
    assert_eq!(
        minutes,
        (now_minute + 1 - RETENTION..=now_minute).collect::<Vec<_>>(),
        "a restart loads the kept minutes (the last one closed at the stop) and none older"
    );
}

/// The topic folders and series files under the history folder.
fn series_files(data_dir: &std::path::Path) -> (usize, usize) {
    let mut folders = 0;
    let mut files = 0;
    for topic in std::fs::read_dir(data_dir.join(HISTORY_DIR)).expect("history folder") {
        folders += 1;
        files += std::fs::read_dir(topic.expect("entry").path())
            .expect("topic folder")
            .count();
    }
    (folders, files)
}
