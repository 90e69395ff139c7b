//! Every delivery, ack and nack on a single node is an event in the partition log that names
//! its consumer (principal, address), in the order they happened: what the message trace
//! reads back.

use std::path::Path;
use std::sync::Arc;

use broker_core::broker::{AckMode, Delivery, NewMessage, ReceiveRequest};
use broker_core::config::FsyncPolicy;
use broker_core::control::{self, ControlOwner};
use broker_core::storage::{LogPosition, PartitionHandle};
use broker_core::subscription::RetryPolicy;
use broker_core::subscription::events::SubscriptionEvent;
use broker_core::{Broker, BrokerConfig, LogConfig, Origin};

use crate::support;

fn consumer(principal: &str, address: &str) -> Origin {
    Origin {
        principal: Some(principal.into()),
        address: Some(address.parse().expect("an address")),
        node: None,
    }
}

async fn receive(broker: &Broker, by: &Origin) -> Vec<Delivery> {
    let request = ReceiveRequest {
        max_messages: 10,
        wait_ms: 2_000,
        ..ReceiveRequest::default()
    };
    broker
        .receive_from("t", "s", request, Some(by))
        .await
        .expect("receive")
}

/// A broker with the one-partition topic `t` holding one message, and its subscription `s`
/// redelivering a nacked message at once.
async fn broker_with_a_message(dir: &Path) -> Arc<Broker> {
    broker_with_a_message_traced(dir, true).await
}

/// [`broker_with_a_message`] with the message trace on or off.
async fn broker_with_a_message_traced(dir: &Path, trace_index: bool) -> Arc<Broker> {
    let mut config = BrokerConfig::new(dir);
    config.log.fsync = FsyncPolicy::Always;
    config.trace_index = trace_index;
    let broker = support::open_with(config).await;
    support::create_topic(&broker, 1).await;
    let no_backoff = RetryPolicy {
        initial_backoff_ms: 0,
        max_backoff_ms: 0,
        multiplier: 1.0,
    };
    support::create_subscription(&broker, Some(no_backoff)).await;
    let message = NewMessage {
        value: bytes::Bytes::from_static(b"m"),
        ..NewMessage::default()
    };
    broker
        .produce("t", vec![message], AckMode::Leader)
        .await
        .expect("produce");
    broker
}

/// The subscription events of the partition log in `dir` (its broker shut down), in log
/// order.
fn subscription_events(dir: &Path) -> Vec<SubscriptionEvent> {
    let index = tempfile::tempdir().expect("dir");
    let db = sled::open(index.path()).expect("sled");
    let log = PartitionHandle::open(
        dir.to_path_buf(),
        db.open_tree("index").expect("tree"),
        LogConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    )
    .expect("open the log");
    let mut events = Vec::new();
    log.replay_controls(LogPosition::default(), |_, entry| {
        if control::owner(&entry) == Some(ControlOwner::Subscription) {
            events.push(SubscriptionEvent::decode(&entry).expect("an event"));
        }
        Ok(())
    })
    .expect("replay");
    log.shutdown();
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_nacks_and_acks_are_logged_in_order_naming_their_consumer() {
    let dir = tempfile::tempdir().expect("dir");
    let broker = broker_with_a_message(dir.path()).await;
    let alice = consumer("alice", "192.0.2.7");
    let bob = consumer("bob", "2001:db8::9");

    let first = receive(&broker, &alice).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].delivery_attempt, 1);
    let nacked = broker
        .nack_from(
            "t",
            "s",
            &[first[0].receipt.clone()],
            (Some(0), Some("boom")),
            Some(&alice),
        )
        .await
        .expect("nack");
    assert_eq!(nacked.succeeded, 1);
    let second = receive(&broker, &bob).await;
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].delivery_attempt, 2);
    let acked = broker
        .ack_from("t", "s", &[second[0].receipt.clone()], Some(&bob))
        .await
        .expect("ack");
    assert_eq!(acked.succeeded, 1);
    let partition_dir = broker.partition_dir("t", 0).expect("partition 0");
    broker.shutdown().await;
    drop(broker);

    let events = subscription_events(&partition_dir);
    let uid = events.first().map(SubscriptionEvent::subscription);
    assert!(events.iter().all(|e| Some(e.subscription()) == uid));
    let offset = first[0].message.offset;
    let expected = vec![
        SubscriptionEvent::Delivered {
            subscription: uid.unwrap_or_default(),
            offset,
            attempts: 1,
            key_hash: None,
            consumer: Some(alice.clone()),
        },
        SubscriptionEvent::Nacked {
            subscription: uid.unwrap_or_default(),
            offset,
            attempts: 1,
            due_ms: match &events.get(1) {
                Some(SubscriptionEvent::Nacked { due_ms, .. }) => *due_ms,
                _ => 0,
            },
            key_hash: None,
            error: Some("boom".into()),
            consumer: Some(alice),
        },
        SubscriptionEvent::Delivered {
            subscription: uid.unwrap_or_default(),
            offset,
            attempts: 2,
            key_hash: None,
            consumer: Some(bob.clone()),
        },
        SubscriptionEvent::Acked {
            subscription: uid.unwrap_or_default(),
            offset,
            consumer: Some(bob),
        },
    ];
    assert_eq!(events, expected);

    // The log replays to the same state: the acked message is not delivered again.
    let broker = support::open(dir.path(), FsyncPolicy::Always).await;
    let request = ReceiveRequest {
        max_messages: 10,
        wait_ms: 300,
        ..ReceiveRequest::default()
    };
    let after = broker.receive("t", "s", request).await.expect("receive");
    assert!(after.is_empty(), "{after:?}");
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_the_log_alone_a_second_delivery_counts_after_a_restart_and_a_first_does_not() {
    let dir = tempfile::tempdir().expect("dir");
    let broker = broker_with_a_message(dir.path()).await;
    let message = NewMessage {
        value: bytes::Bytes::from_static(b"m1"),
        ..NewMessage::default()
    };
    broker
        .produce("t", vec![message], AckMode::Leader)
        .await
        .expect("produce");
    let alice = consumer("alice", "192.0.2.7");
    let one = |wait_ms| ReceiveRequest {
        max_messages: 1,
        wait_ms,
        ..ReceiveRequest::default()
    };
    let first = broker
        .receive_from("t", "s", one(2_000), Some(&alice))
        .await
        .expect("receive");
    assert_eq!((first[0].message.offset, first[0].delivery_attempt), (0, 1));
    broker
        .nack_from("t", "s", &[first[0].receipt.clone()], (Some(0), None), None)
        .await
        .expect("nack");
    let mut seen = Vec::new();
    for _ in 0..2 {
        let got = broker
            .receive_from("t", "s", one(2_000), Some(&alice))
            .await
            .expect("receive");
        seen.extend(got.iter().map(|d| (d.message.offset, d.delivery_attempt)));
    }
    seen.sort_unstable();
    assert_eq!(seen, vec![(0, 2), (1, 1)]);
    let uid = broker
        .describe_subscription("t", "s")
        .await
        .expect("describe")
        .config
        .uid;
    broker.shutdown().await;
    drop(broker);
    support::forget_the_checkpoint(dir.path(), uid).await;

    // Only the log's events are left: offset 0's second `delivered` counts, offset 1's first
    // does not (as its lease, it is forgotten).
    let broker = support::open(dir.path(), FsyncPolicy::Always).await;
    let request = ReceiveRequest {
        max_messages: 10,
        wait_ms: 2_000,
        ..ReceiveRequest::default()
    };
    let mut again: Vec<(u64, u32)> = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while again.len() < 2 && std::time::Instant::now() < deadline {
        let got = broker
            .receive("t", "s", request.clone())
            .await
            .expect("receive");
        again.extend(got.iter().map(|d| (d.message.offset, d.delivery_attempt)));
    }
    again.sort_unstable();
    assert_eq!(again, vec![(0, 3), (1, 1)]);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_trace_off_a_first_delivery_is_not_logged_and_a_second_still_is() {
    let dir = tempfile::tempdir().expect("dir");
    let broker = broker_with_a_message_traced(dir.path(), false).await;
    assert!(!broker.trace_index());
    let alice = consumer("alice", "192.0.2.7");
    let first = receive(&broker, &alice).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].delivery_attempt, 1);
    broker
        .nack_from("t", "s", &[first[0].receipt.clone()], (Some(0), None), None)
        .await
        .expect("nack");
    let second = receive(&broker, &alice).await;
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].delivery_attempt, 2);
    let partition_dir = broker.partition_dir("t", 0).expect("partition 0");
    broker.shutdown().await;
    drop(broker);

    let delivered: Vec<(u64, u32)> = subscription_events(&partition_dir)
        .into_iter()
        .filter_map(|event| match event {
            SubscriptionEvent::Delivered {
                offset, attempts, ..
            } => Some((offset, attempts)),
            _ => None,
        })
        .collect();
    assert_eq!(delivered, vec![(first[0].message.offset, 2)]);
}
