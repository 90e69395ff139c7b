//! Looking messages up by id and by key through the trace index: across segments and runs,
//! with each subscription's events about a message in log order, and after a restart, also
//! when the newest index file's tail was torn.

use std::path::Path;
use std::sync::Arc;

use broker_core::broker::{AckMode, Delivery, MessageState, NewMessage, ReceiveRequest};
use broker_core::subscription::events::SubscriptionEvent;
use broker_core::subscription::{StartPosition, SubscriptionSpec};
use broker_core::topic::TopicSpec;
use broker_core::{Broker, BrokerConfig};

use crate::support::{find_dir, open_with};

/// Messages produced: with a key and an id each, more than one run of the index
/// (`broker_core::trace_index::RUN_ENTRIES` is 16,384 entries) over several segments.
const MESSAGES: usize = 12_000;
const KEYS: usize = 7;

async fn open(dir: &Path) -> Arc<Broker> {
    let mut config = BrokerConfig::new(dir);
    config.log.segment_bytes = 256 * 1024;
    open_with(config).await
}

async fn produce_all(broker: &Broker) {
    for chunk in (0..MESSAGES).collect::<Vec<_>>().chunks(500) {
        let messages = chunk
            .iter()
            .map(|n| NewMessage {
                id: Some(format!("m-{n}")),
                key: Some(format!("k-{}", n % KEYS)),
                value: bytes::Bytes::from(format!("value {n}")),
                ..NewMessage::default()
            })
            .collect();
        broker
            .produce("t", messages, AckMode::Leader)
            .await
            .expect("produce");
    }
}

async fn receive(broker: &Broker) -> Vec<Delivery> {
    let request = ReceiveRequest {
        max_messages: 1,
        wait_ms: 1_000,
        ack_timeout_ms: None,
        attempt_id: None,
        memory: None,
    };
    broker.receive("t", "s", request).await.expect("receive")
}

async fn check_lookups(broker: &Broker) {
    for n in [0, 1, 4_321, MESSAGES - 1] {
        let id = format!("m-{n}");
        let traces = broker.trace_message("t", &id).await.expect("trace");
        assert_eq!(traces.len(), 1, "{id}");
        assert_eq!(traces[0].stored.record.id, id);
        assert_eq!(traces[0].stored.offset, n as u64);
    }
    assert!(
        broker
            .trace_message("t", "m-none")
            .await
            .expect("trace")
            .is_empty()
    );
    let by_key = broker.messages_by_key("t", "k-3", 5).await.expect("by key");
    let offsets: Vec<u64> = by_key.iter().map(|(_, s)| s.offset).collect();
    let expected: Vec<u64> = (0..MESSAGES as u64)
        .rev()
        .filter(|n| n % KEYS as u64 == 3)
        .take(5)
        .collect();
    assert_eq!(offsets, expected, "the newest five of k-3, newest first");
}

fn kinds(events: &[broker_core::broker::TracedEvent]) -> Vec<&'static str> {
    events
        .iter()
        .map(|e| match e.event {
            SubscriptionEvent::Acked { .. } => "acked",
            SubscriptionEvent::Nacked { .. } => "nacked",
            SubscriptionEvent::Delivered { .. } => "delivered",
            SubscriptionEvent::DeadLettered { .. } => "dead-lettered",
            SubscriptionEvent::Leased { .. } => "leased",
            _ => "other",
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_found_by_id_and_key_with_their_events_and_after_a_torn_index_tail() {
    let dir = tempfile::tempdir().expect("dir");
    let broker = open(dir.path()).await;
    broker
        .create_topic(TopicSpec {
            name: "t".into(),
            partitions: Some(1),
            ..TopicSpec::default()
        })
        .await
        .expect("topic");
    produce_all(&broker).await;
    check_lookups(&broker).await;

    broker
        .create_subscription(
            "t",
            SubscriptionSpec {
                name: "s".into(),
                start: Some(StartPosition::Earliest),
                ..SubscriptionSpec::default()
            },
        )
        .await
        .expect("subscription");
    let first = receive(&broker).await;
    assert_eq!(first[0].message.offset, 0);
    broker
        .nack("t", "s", &[first[0].receipt.clone()], Some(0), Some("boom"))
        .await
        .expect("nack");
    let second = receive(&broker).await;
    assert_eq!(
        (second[0].message.offset, second[0].delivery_attempt),
        (0, 2)
    );
    broker
        .ack("t", "s", &[second[0].receipt.clone()])
        .await
        .expect("ack");
    let trace = &broker.trace_message("t", "m-0").await.expect("trace")[0];
    let sub = &trace.subscriptions[0];
    assert_eq!(sub.name, "s");
    assert_eq!(sub.state, MessageState::Acked);
    assert_eq!(
        kinds(&sub.events),
        ["delivered", "nacked", "delivered", "acked"]
    );
    assert!(
        sub.events.windows(2).all(|w| w[0].time_ms <= w[1].time_ms),
        "events in time order"
    );
    let never_delivered = &broker.trace_message("t", "m-5").await.expect("trace")[0];
    assert_eq!(
        never_delivered.subscriptions[0].state,
        MessageState::Pending
    );
    assert!(never_delivered.subscriptions[0].events.is_empty());

    broker.shutdown().await;
    drop(broker);
    let index_dir = dir.path().join("topics").join("t").join("0").join("trace");
    let index_dir = if index_dir.exists() {
        index_dir
    } else {
        find_dir(dir.path(), "trace").expect("an index folder")
    };
    let mut files: Vec<_> = std::fs::read_dir(&index_dir)
        .expect("index folder")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    // One file per segment the follower finished; the last segment's run is in memory.
    assert!(!files.is_empty(), "no index file");
    let newest = files.last().expect("a file");
    let mut torn = std::fs::read(newest).expect("read");
    torn.extend_from_slice(b"WTIR torn");
    std::fs::write(newest, torn).expect("tear");

    let broker = open(dir.path()).await;
    check_lookups(&broker).await;
    let trace = &broker.trace_message("t", "m-0").await.expect("trace")[0];
    assert_eq!(
        kinds(&trace.subscriptions[0].events),
        ["delivered", "nacked", "delivered", "acked"]
    );
    broker.shutdown().await;
}
