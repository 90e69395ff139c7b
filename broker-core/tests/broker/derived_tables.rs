//! The delay schedule and the dedup index are derived from the partition logs: scheduled and
//! cancelled events, moved messages and records with client ids are in the log, and the sled
//! trees are only its replay. Losing the trees entirely must change nothing a client sees.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use broker_core::broker::{AckMode, Delay, NewMessage, Produced, ReceiveRequest};
use broker_core::config::FsyncPolicy;
use broker_core::{Broker, BrokerConfig, dedup, schedule};

use crate::support;
use crate::support::{create_subscription, create_topic, open_metadata};

async fn open(dir: &Path) -> Arc<Broker> {
    support::open(dir, FsyncPolicy::Always).await
}

/// A broker with a two-partition topic `t` and a subscription `s` from the start.
async fn broker_with_subscription(dir: &Path) -> Arc<Broker> {
    let broker = open(dir).await;
    create_topic(&broker, 2).await;
    create_subscription(&broker, None).await;
    broker
}

/// Shuts `broker` down, clears the topic's schedule and dedup trees (everything derived from
/// the logs, their positions included) and opens the folder again.
async fn restart_without_derived_tables(dir: &Path, broker: Arc<Broker>) -> Arc<Broker> {
    let uid = broker.describe_topic("t").expect("topic").config.uid;
    broker.shutdown().await;
    drop(broker);
    {
        let db = open_metadata(dir).await;
        for name in [schedule::tree_name(uid), dedup::tree_name(uid)] {
            let tree = db.open_tree(name).expect("tree");
            assert!(!tree.is_empty(), "the applier wrote the tree");
            tree.clear().expect("clear");
        }
        db.flush().expect("flush");
    }
    open(dir).await
}

fn message(id: &str, delay: Option<Delay>) -> NewMessage {
    NewMessage {
        id: Some(id.into()),
        key: Some(id.into()),
        value: bytes::Bytes::copy_from_slice(id.as_bytes()),
        delay,
        ..NewMessage::default()
    }
}

/// Every message the subscription delivers from now until it has been quiet for a second
/// after `until_ms`, acked: value → (delivered at, delivery timestamp).
async fn deliveries_until(broker: &Broker, until_ms: u64) -> BTreeMap<String, Vec<u64>> {
    let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    loop {
        let request = ReceiveRequest {
            max_messages: 100,
            wait_ms: 1_000,
            ack_timeout_ms: None,
            attempt_id: None,
            memory: None,
        };
        let deliveries = broker.receive("t", "s", request).await.expect("receive");
        let now = now_ms();
        if deliveries.is_empty() && now > until_ms + 1_000 {
            return seen;
        }
        for delivery in &deliveries {
            let value = String::from_utf8(delivery.message.record.value.to_vec()).expect("utf-8");
            seen.entry(value).or_default().push(now);
        }
        let receipts: Vec<String> = deliveries.iter().map(|d| d.receipt.clone()).collect();
        if !receipts.is_empty() {
            broker.ack("t", "s", &receipts).await.expect("ack");
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
}

#[tokio::test]
async fn the_schedule_is_rebuilt_from_the_log_after_its_sled_tree_is_lost() {
    let dir = tempfile::tempdir().expect("dir");
    let broker = broker_with_subscription(dir.path()).await;
    let due = now_ms() + 3_000;
    let messages = (0..10)
        .map(|n| message(&format!("d{n}"), Some(Delay::AtMs(due))))
        .collect();
    broker
        .produce("t", messages, AckMode::Leader)
        .await
        .expect("scheduled");
    for cancelled in ["d1", "d4", "d7"] {
        broker.cancel_delayed("t", cancelled).await.expect("cancel");
    }
    // Give the applier a turn, so the trees hold something to lose.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let broker = restart_without_derived_tables(dir.path(), broker).await;
    assert_eq!(broker.describe_topic("t").expect("topic").delayed, 7);
    let seen = deliveries_until(&broker, due).await;

    let expected: Vec<String> = [0, 2, 3, 5, 6, 8, 9]
        .iter()
        .map(|n| format!("d{n}"))
        .collect();
    assert_eq!(seen.keys().cloned().collect::<Vec<_>>(), expected);
    for (value, times) in &seen {
        assert_eq!(times.len(), 1, "{value} arrived {} times", times.len());
        assert!(
            times[0] >= due,
            "{value} arrived {} ms early",
            due - times[0]
        );
    }

    // The moved messages are in the log too: a replay from scratch schedules nothing again.
    let broker = restart_without_derived_tables(dir.path(), broker).await;
    assert_eq!(broker.describe_topic("t").expect("topic").delayed, 0);
    let again = deliveries_until(&broker, now_ms()).await;
    assert!(
        again.is_empty(),
        "delivered again after a replay: {again:?}"
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn the_dedup_index_is_rebuilt_from_the_log_after_its_sled_tree_is_lost() {
    let dir = tempfile::tempdir().expect("dir");
    let broker = broker_with_subscription(dir.path()).await;
    let later = Some(Delay::AfterMs(60_000));
    let produce = |broker: Arc<Broker>, id: &'static str, delay, ack| async move {
        let outcome = broker
            .produce("t", vec![message(id, delay)], ack)
            .await
            .expect("produce");
        outcome.messages.into_iter().next().expect("one")
    };
    let stored = produce(broker.clone(), "stored", None, AckMode::Leader).await;
    let delayed = produce(broker.clone(), "delayed", later, AckMode::Leader).await;
    let _queued = produce(broker.clone(), "queued", None, AckMode::None).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let broker = restart_without_derived_tables(dir.path(), broker).await;

    let repeat = |first: &Produced, again: Produced| {
        assert!(again.duplicate, "{} was produced before", first.id);
        assert_eq!(
            (again.partition, again.offset, again.deliver_at_ms),
            (first.partition, first.offset, first.deliver_at_ms),
        );
    };
    repeat(
        &stored,
        produce(broker.clone(), "stored", None, AckMode::Leader).await,
    );
    repeat(
        &delayed,
        produce(broker.clone(), "delayed", later, AckMode::Leader).await,
    );
    let queued = produce(broker.clone(), "queued", None, AckMode::Leader).await;
    assert!(queued.duplicate, "the fire-and-forget write was in the log");
    let ends: u64 = broker
        .describe_topic("t")
        .expect("topic")
        .partitions
        .iter()
        .map(|p| p.end_offset)
        .sum();
    assert_eq!(ends, 2, "no repeat was stored again");
    broker.shutdown().await;
}

#[tokio::test]
async fn under_an_fsync_interval_a_repeat_is_a_duplicate_from_the_first_answer_on() {
    // Under an interval a write is answered before it is visible to the applier: memory must
    // keep the id until the applier has really written it, not merely run.
    let dir = tempfile::tempdir().expect("dir");
    let mut config = BrokerConfig::new(dir.path());
    config.log.fsync = FsyncPolicy::IntervalMs(300);
    let broker = Broker::open(config).await.expect("open");
    create_topic(&broker, 1).await;
    for n in 0..5 {
        let id = format!("i{n}");
        let first = broker
            .produce("t", vec![message(&id, None)], AckMode::Leader)
            .await
            .expect("produce");
        let deadline = std::time::Instant::now() + Duration::from_millis(700);
        while std::time::Instant::now() < deadline {
            let again = broker
                .produce("t", vec![message(&id, None)], AckMode::Leader)
                .await
                .expect("produce");
            assert!(again.messages[0].duplicate, "{id} stored twice");
            assert_eq!(again.messages[0].offset, first.messages[0].offset);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    broker.shutdown().await;
}
