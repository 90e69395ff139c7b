//! Delayed messages of one topic given by two partition leaders at once: every replica's
//! schedule keeps all of them and every one is delivered. Each replica holds the schedule of
//! every partition it has in one tree keyed by due time and tie-breaker; two leaders once gave
//! the same tie-breaker in the same millisecond, and a message due at the same time in the
//! other partition overwrote it (a fresh-clone CI counted one of two delayed messages).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::broker::{AckMode, Delay, FiguresOf, NewMessage, ReceiveRequest};
use broker_core::partitioner::key_hash;
use broker_core::topic::TopicSpec;
use bytes::Bytes;

use crate::support::{Net, controller_leader, default_subscription, three_registered_nodes, until};

const TOPIC: &str = "later";
/// Pairs of delayed messages, one per partition, each pair produced at both leaders at once.
const ROUNDS: usize = 25;
/// How long after the produces the messages are due: long enough for every round.
const DUE_AFTER_MS: u64 = 4_000;

/// A key of `partition` (of two).
fn key_of(partition: u64) -> String {
    (0..1000)
        .map(|i| format!("key-{i}"))
        .find(|k| u64::from(key_hash(k)) % 2 == partition)
        .expect("some key maps to the partition")
}

fn delayed(key: &str, value: String, at_ms: u64) -> NewMessage {
    NewMessage {
        key: Some(key.to_owned()),
        value: Bytes::from(value),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: Some(Delay::AtMs(at_ms)),
        trace: None,
    }
}

fn receive() -> ReceiveRequest {
    ReceiveRequest {
        max_messages: 100,
        wait_ms: 200,
        ack_timeout_ms: None,
        attempt_id: None,
        memory: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_messages_given_by_two_leaders_at_once_are_all_kept_and_delivered() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = three_registered_nodes(root.path(), &net).await;
    let controller = controller_leader(&nodes);
    let spec = TopicSpec {
        name: TOPIC.into(),
        partitions: Some(2),
        ..TopicSpec::default()
    };
    controller.create_topic(spec).await.expect("created");
    controller
        .create_subscription(TOPIC, default_subscription("work"))
        .await
        .expect("subscribed");
    until("both partitions have a leader", || {
        (0..2).all(|p| controller.broker_leader(TOPIC, p).is_some())
    })
    .await;
    let mut leaders = [0, 1].map(|p| controller.broker_leader(TOPIC, p).expect("a leader"));
    if leaders[0] == leaders[1] {
        let other = (1..=3).find(|n| *n != leaders[0]).expect("another node");
        controller
            .move_leader(TOPIC, 1, other)
            .await
            .expect("partition 1 moved");
        leaders[1] = other;
    }
    let node = |id: u64| Arc::clone(&nodes[(id - 1) as usize]);
    until("every node agrees on the two leaders", || {
        nodes.iter().all(|n| {
            (0..2).all(|p| n.broker().partition_leader(TOPIC, p) == Some(leaders[p as usize]))
        })
    })
    .await;

    let keys = [key_of(0), key_of(1)];
    let at_ms = broker_core::clock::now_ms() + DUE_AFTER_MS;
    for round in 0..ROUNDS {
        let produce = |p: usize| {
            let leader = node(leaders[p]);
            let message = delayed(&keys[p], format!("{p}-{round}"), at_ms);
            async move {
                for _ in 0..50 {
                    match leader
                        .broker()
                        .produce(TOPIC, vec![message.clone()], AckMode::All)
                        .await
                    {
                        Ok(_) => return,
                        // A leader that has not yet applied its term's first entry.
                        Err(BrokerError::NotLeader { .. }) => {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        Err(other) => panic!("produce to partition {p}: {other:?}"),
                    }
                }
                panic!("partition {p}'s leader never took the produce");
            }
        };
        tokio::join!(produce(0), produce(1));
    }

    // Every replica of both partitions holds every message on its schedule.
    let expected = vec![ROUNDS as u64; 2];
    let mut schedules = Vec::new();
    for _ in 0..50 {
        schedules.clear();
        for n in &nodes {
            let figures = n
                .broker()
                .subscription_figures(TOPIC, FiguresOf::Topic)
                .await
                .expect("figures");
            schedules.push(figures.delayed);
        }
        if schedules.iter().all(|s| *s == expected) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        schedules.iter().all(|s| *s == expected),
        "scheduled per partition on each node: {schedules:?}, expected {expected:?}"
    );

    // And each partition's leader delivers every one of them once due.
    let mut delivered = BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_millis(DUE_AFTER_MS + 15_000);
    while delivered.len() < 2 * ROUNDS && std::time::Instant::now() < deadline {
        for leader in leaders {
            match node(leader)
                .broker()
                .receive(TOPIC, "work", receive())
                .await
            {
                Ok(got) => delivered.extend(
                    got.iter()
                        .map(|d| String::from_utf8_lossy(&d.message.record.value).into_owned()),
                ),
                Err(BrokerError::NotLeader { .. }) => {}
                Err(other) => panic!("receive at node {leader}: {other:?}"),
            }
        }
    }
    let missing: Vec<String> = (0..2)
        .flat_map(|p| (0..ROUNDS).map(move |r| format!("{p}-{r}")))
        .filter(|v| !delivered.contains(v))
        .collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}");
    for n in &nodes {
        n.shutdown().await;
        n.broker().shutdown().await;
    }
}
