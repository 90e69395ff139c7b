//! Failures injected with the `fail` crate into the broker's own code (`fail::fail_point!`):
//! what callers see when a part of the broker breaks. Each test holds a [`FailScenario`],
//! which clears every failpoint before and after it and makes the tests of this binary run
//! one at a time (the failpoints are global to the process).
//!
//! Failpoints in the code:
//! - `writer::commit_group`: a partition writer thread about to take a group commit.
//! - `delays::claimed`: a topic's delay mover has read and claimed the due messages, before
//!   it appends them.
//! - `metadata::flush`: the metadata store (sled) is about to be flushed.
//! - `cluster_release::derived_state_dropped`: a node dropping a replica moved away has reset
//!   the partition's derived state, before it deletes the replica's files (tested in
//!   `cluster_replica_release.rs`).
//!
//! The storage failpoints (`segment::sync`, `segment::append`, `partition_log::before_index`,
//! `index::apply`) are tested in `storage.rs` and `slow_disk.rs` of this binary.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use broker_core::broker::{AckMode, Delay, NewMessage};
use broker_core::{Broker, BrokerConfig, BrokerError};
use fail::FailScenario;

use crate::support::{broker_with_topic, create_topic, text};

/// Removes the test's failpoints and shuts `broker` down while the test still holds the
/// scenario, and only then lets the next test set up its own: a shutdown after the teardown
/// raced the next test's failpoints (a `metadata::flush` panic set by one test fired in
/// another's shutdown).
async fn finish(scenario: FailScenario<'_>, broker: &Broker) {
    for (name, _) in fail::list() {
        fail::remove(name);
    }
    broker.shutdown().await;
    scenario.teardown();
}

fn with_id(id: &str) -> NewMessage {
    NewMessage {
        id: Some(id.into()),
        ..text("v")
    }
}

#[tokio::test]
async fn a_produce_whose_partition_writer_panics_is_an_internal_failure_not_a_shutdown() {
    let scenario = FailScenario::setup();
    let (_dir, broker) = broker_with_topic(1).await;
    fail::cfg("writer::commit_group", "panic").expect("failpoint");

    let error = broker
        .produce("t", vec![text("a")], AckMode::Leader)
        .await
        .expect_err("the writer panicked");
    assert!(
        matches!(error, BrokerError::Panicked { .. }),
        "expected Panicked, got {error:?}"
    );
    let later = broker
        .produce("t", vec![text("b")], AckMode::Leader)
        .await
        .expect_err("the writer is gone");
    assert!(
        matches!(later, BrokerError::Panicked { .. }),
        "a produce to a dead writer is no shutdown either: {later:?}"
    );

    finish(scenario, &broker).await;
    let after_shutdown = broker
        .produce("t", vec![text("c")], AckMode::Leader)
        .await
        .expect_err("shut down");
    assert!(matches!(after_shutdown, BrokerError::ShuttingDown));
}

/// How long a test waits for something that takes milliseconds when all is well.
const DEADLINE: Duration = Duration::from_secs(10);

/// Holds whoever reaches failpoint `name` until the returned sender sends or is dropped (or
/// [`DEADLINE`] passes); the receiver hears of each arrival.
fn hold_at(
    name: &str,
) -> (
    std::sync::mpsc::Sender<()>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (arrived, arrivals) = tokio::sync::mpsc::unbounded_channel();
    let released = Mutex::new(released);
    fail::cfg_callback(name, move || {
        let _ = arrived.send(());
        let released = released.lock().unwrap_or_else(|p| p.into_inner());
        let _ = released.recv_timeout(DEADLINE);
    })
    .expect("failpoint");
    (release, arrivals)
}

/// Waits until `condition` holds, failing the test after [`DEADLINE`].
async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_cancel_while_the_mover_moves_the_message_is_not_found_rather_than_a_lie() {
    let scenario = FailScenario::setup();
    let (_dir, broker) = broker_with_topic(1).await;
    let (release, mut arrivals) = hold_at("delays::claimed");
    let delayed = NewMessage {
        id: Some("x".into()),
        delay: Some(Delay::AfterMs(1)),
        ..text("later")
    };
    broker
        .produce("t", vec![delayed], AckMode::Leader)
        .await
        .expect("scheduled");
    tokio::time::timeout(DEADLINE, arrivals.recv())
        .await
        .expect("the mover reads the due message");

    let cancelled = broker.cancel_delayed("t", "x").await;
    drop(release);
    let end_offset = || broker.describe_topic("t").expect("topic").partitions[0].end_offset;
    wait_until("the mover appends the message", || end_offset() == 1).await;

    assert!(
        matches!(cancelled, Err(BrokerError::MessageNotFound { .. })),
        "the message is being delivered, so the cancel must not answer success: {cancelled:?}"
    );
    let delayed = || broker.describe_topic("t").expect("topic").delayed;
    wait_until("the mover counts the message off the schedule", || {
        delayed() == 0
    })
    .await;
    finish(scenario, &broker).await;
}

#[tokio::test]
async fn idempotent_produces_of_distinct_ids_to_one_partition_share_a_group_commit() {
    const PRODUCERS: usize = 8;
    let scenario = FailScenario::setup();
    let (_dir, broker) = broker_with_topic(1).await;
    let groups = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&groups);
    // The first group waits until every producer had its turn to queue its batch (below).
    let (opened, open) = std::sync::mpsc::channel::<()>();
    let open = Mutex::new(open);
    fail::cfg_callback("writer::commit_group", move || {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            let open = open.lock().unwrap_or_else(|p| p.into_inner());
            let _ = open.recv_timeout(DEADLINE);
        }
    })
    .expect("failpoint");

    let produces = (0..PRODUCERS).map(|n| {
        let broker = Arc::clone(&broker);
        async move {
            let id = format!("id-{n}");
            broker
                .produce("t", vec![with_id(&id)], AckMode::Leader)
                .await
        }
    });
    // `join` polls the produces once each, in order, before it opens the first group: every
    // produce that does not wait for another one queues its batch in that first poll.
    let (answers, ()) =
        futures_util::future::join(futures_util::future::join_all(produces), async move {
            drop(opened)
        })
        .await;

    for answer in answers {
        assert!(!answer.expect("stored").messages[0].duplicate);
    }
    let groups = groups.load(Ordering::SeqCst);
    assert!(
        groups < PRODUCERS,
        "{PRODUCERS} idempotent produces took {groups} group commits: they were serialised"
    );
    finish(scenario, &broker).await;
}

#[tokio::test]
async fn a_produce_waiting_for_a_failed_produce_of_its_id_stores_the_message_itself() {
    let scenario = FailScenario::setup();
    let (_dir, broker) = broker_with_topic(1).await;
    // The first group is dropped unanswered, as a writer failing it would.
    fail::cfg("writer::commit_group", "1*return").expect("failpoint");

    let (first, second) = futures_util::future::join(
        broker.produce("t", vec![with_id("a")], AckMode::Leader),
        broker.produce("t", vec![with_id("a")], AckMode::Leader),
    )
    .await;

    assert!(first.is_err(), "the first write failed: {first:?}");
    let second = second.expect("the waiting produce stores it");
    assert!(!second.messages[0].duplicate);
    assert_eq!(second.messages[0].offset, Some(0));
    finish(scenario, &broker).await;
}

#[tokio::test]
async fn a_fire_and_forget_produce_whose_write_fails_leaves_its_id_free_for_the_retry() {
    let scenario = FailScenario::setup();
    let (_dir, broker) = broker_with_topic(1).await;
    // The first group is dropped unanswered, as a writer failing it would.
    fail::cfg("writer::commit_group", "1*return").expect("failpoint");
    let queued = broker
        .produce("t", vec![with_id("a")], AckMode::None)
        .await
        .expect("queued");
    assert_eq!(queued.messages[0].offset, None);

    let retry = broker
        .produce("t", vec![with_id("a")], AckMode::Leader)
        .await
        .expect("stored");

    assert!(
        !retry.messages[0].duplicate,
        "the first write failed, so the retry must store the message"
    );
    assert_eq!(retry.messages[0].offset, Some(0));
    finish(scenario, &broker).await;
}

#[tokio::test]
async fn produces_with_delays_or_ids_and_cancels_never_flush_the_metadata_store() {
    let scenario = FailScenario::setup();
    let dir = tempfile::tempdir().expect("dir");
    let mut config = BrokerConfig::new(dir.path());
    // The policy under which a flush on the request path would be needed, if sled held the
    // truth.
    config.log.fsync = broker_core::FsyncPolicy::Always;
    let broker = Broker::open(config).await.expect("open");
    create_topic(&broker, 1).await;
    fail::cfg("metadata::flush", "panic").expect("failpoint");

    let delayed = |id: &str| NewMessage {
        delay: Some(Delay::AfterMs(60_000)),
        ..with_id(id)
    };
    for ack in [AckMode::Leader, AckMode::None] {
        broker
            .produce(
                "t",
                vec![
                    delayed(&format!("d-{ack:?}")),
                    with_id(&format!("i-{ack:?}")),
                ],
                ack,
            )
            .await
            .expect("produced");
    }
    broker
        .cancel_delayed("t", "d-Leader")
        .await
        .expect("cancelled");
    let again = broker
        .produce("t", vec![with_id("i-Leader")], AckMode::Leader)
        .await
        .expect("answered");
    assert!(again.messages[0].duplicate);

    finish(scenario, &broker).await;
}
