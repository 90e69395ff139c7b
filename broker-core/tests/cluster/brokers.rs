//! Three brokers in one process form a cluster over the in-memory transport: a topic
//! materialized on each is replicated partition by partition; produce on a leader is
//! committed everywhere, a write to a partition on a node that does not lead it names its
//! leader, and a restarted broker reopens its replicas from its files and catches up.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use broker_core::broker::{AckMode, Durability, NewMessage};
use broker_core::raft::NodeInfo;
use broker_core::topic::{TopicConfig, TopicSpec};
use broker_core::{Broker, BrokerError};
use bytes::Bytes;

use crate::support::{Net, open_broker};

const PARTITIONS: u32 = 3;

fn topic() -> TopicConfig {
    let spec = TopicSpec {
        name: "orders".into(),
        partitions: Some(PARTITIONS),
        ..TopicSpec::default()
    };
    spec.into_config_keeping(1_700_000_000_000, 42, 3)
        .expect("valid")
}

fn members() -> BTreeMap<u64, NodeInfo> {
    (1..=3).map(|id| (id, NodeInfo::default())).collect()
}

/// Every partition's leader, once all three brokers agree on all of them.
async fn leaders(brokers: &[Arc<Broker>]) -> Vec<u64> {
    for _ in 0..100 {
        let seen: Vec<Vec<Option<u64>>> = brokers
            .iter()
            .map(|b| {
                (0..PARTITIONS)
                    .map(|p| b.partition_leader("orders", p))
                    .collect()
            })
            .collect();
        if seen.iter().all(|s| *s == seen[0]) && seen[0].iter().all(Option::is_some) {
            return seen[0].iter().flatten().copied().collect();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the brokers never agreed on the partitions' leaders");
}

fn message(value: &str, key: Option<&str>) -> NewMessage {
    NewMessage {
        key: key.map(str::to_owned),
        value: Bytes::from(value.to_owned()),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
        trace: None,
    }
}

/// The values `broker` serves from `partition`; none while it is a follower not in sync
/// (just restarted, its leader not heard yet), which sends reads to the leader.
async fn values(broker: &Broker, partition: u32) -> Vec<String> {
    let read = match broker
        .read_partition("orders", partition, 0, 1000, 0, None)
        .await
    {
        Ok(read) => read,
        Err(BrokerError::NotLeader { .. }) => return Vec::new(),
        Err(other) => panic!("reads: {other:?}"),
    };
    read.messages
        .into_iter()
        .map(|m| String::from_utf8_lossy(&m.record.value).into_owned())
        .collect()
}

/// Waits until every broker shows the same values in every partition, `total` in all.
async fn converged(brokers: &[Arc<Broker>], total: usize) -> Vec<Vec<String>> {
    for _ in 0..100 {
        let mut views = Vec::new();
        for broker in brokers {
            let mut view = Vec::new();
            for p in 0..PARTITIONS {
                view.push(values(broker, p).await);
            }
            views.push(view);
        }
        let count: usize = views[0].iter().map(Vec::len).sum();
        if count == total && views.iter().all(|v| *v == views[0]) {
            return views.swap_remove(0);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the brokers did not converge on {total} messages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_materialized_on_three_brokers_is_replicated_partition_by_partition() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut brokers = Vec::new();
    for id in 1..=3 {
        brokers.push(open_broker(id, root.path(), &net).await);
    }
    for broker in &brokers {
        broker
            .materialize_topic(topic(), members())
            .await
            .expect("materializes");
    }
    let leaders = leaders(&brokers).await;
    let leader = &brokers[(leaders[0] - 1) as usize];
    let messages = (0..10)
        .map(|i| message(&format!("unkeyed {i}"), None))
        .collect();
    let outcome = leader
        .produce("orders", messages, AckMode::All)
        .await
        .expect("produced");
    assert_eq!(outcome.durability, Durability::ReplicatedFsynced);
    for produced in &outcome.messages {
        assert_eq!(
            leaders[produced.partition as usize], leaders[0],
            "an unkeyed message goes to a partition led where it was produced"
        );
    }
    converged(&brokers, 10).await;
    // A keyed message for a partition another node leads is refused there, naming the leader
    // (partition 0's leader is `leader`; any other broker follows it).
    let follower = brokers
        .iter()
        .find(|b| !Arc::ptr_eq(b, leader))
        .expect("a follower of partition 0");
    let key = (0..1000)
        .map(|i| format!("key-{i}"))
        .find(|k| broker_core::partitioner::key_hash(k).is_multiple_of(PARTITIONS))
        .expect("some key maps to partition 0");
    match follower
        .produce("orders", vec![message("keyed", Some(&key))], AckMode::All)
        .await
    {
        Err(BrokerError::NotLeader {
            leader: Some(l), ..
        }) => assert_eq!(l, leaders[0]),
        other => panic!("a follower took a write for partition 0: {other:?}"),
    }
    // A broker restarts from its files, restarts its groups and catches up.
    let restarted = brokers.remove(2);
    restarted.shutdown().await;
    drop(restarted);
    net.nodes.lock().expect("lock").remove(&3);
    let messages: Vec<NewMessage> = (10..20)
        .map(|i| message(&format!("unkeyed {i}"), None))
        .collect();
    // The two left elect leaders for whatever node 3 led, then take writes.
    let mut written = false;
    for _ in 0..100 {
        for (id, broker) in (1u64..).zip(&brokers) {
            let leads_one =
                (0..PARTITIONS).any(|p| broker.partition_leader("orders", p) == Some(id));
            let all_led = (0..PARTITIONS)
                .all(|p| broker.partition_leader("orders", p).is_some_and(|l| l != 3));
            if leads_one && all_led {
                broker
                    .produce("orders", messages.clone(), AckMode::All)
                    .await
                    .expect("two of three commit");
                written = true;
                break;
            }
        }
        if written {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(written, "no leader among the two left");
    brokers.push(open_broker(3, root.path(), &net).await);
    let all = converged(&brokers, 20).await;
    assert_eq!(all.iter().map(Vec::len).sum::<usize>(), 20);
    for broker in &brokers {
        broker.shutdown().await;
    }
}
