//! Moving a partition's leadership in a three-broker cluster over the in-memory transport:
//! the leadership goes to each follower in turn, quickly, and every committed message stays.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::Broker;
use broker_core::broker::AckMode;
use broker_core::raft::{GroupId, NodeInfo, TRANSFER_WAIT_MS, TransferCoordinator};

use crate::support::{
    Net, agreed_leader, one_partition_topic, open_broker, read_own_replica, text_message,
};

/// Three brokers over one in-memory network, each with the one-partition topic `orders`
/// replicated on all three.
async fn orders_on_three_brokers(root: &Path) -> Vec<Arc<Broker>> {
    let net = Arc::new(Net::default());
    let mut brokers = Vec::new();
    for id in 1..=3 {
        brokers.push(open_broker(id, root, &net).await);
    }
    let members: BTreeMap<u64, NodeInfo> = (1..=3).map(|i| (i, NodeInfo::default())).collect();
    for broker in &brokers {
        broker
            .materialize_topic(one_partition_topic("orders", 7), members.clone())
            .await
            .expect("materializes");
    }
    brokers
}

/// Every value `broker`'s replica serves, read a page at a time (a producer that keeps
/// writing may commit more than one read's worth).
async fn values(broker: &Broker) -> Vec<String> {
    let (mut values, mut next) = (Vec::new(), 0);
    loop {
        let read = read_own_replica(broker, "orders", 0, next, 1000).await;
        let Some(last) = read.messages.last() else {
            return values;
        };
        next = last.offset + 1;
        values.extend(
            read.messages
                .iter()
                .map(|m| String::from_utf8_lossy(&m.record.value).into_owned()),
        );
    }
}

/// Every broker's values once all show `expected`.
async fn converged(brokers: &[Arc<Broker>], expected: &[String]) {
    for _ in 0..100 {
        let mut all = true;
        for broker in brokers {
            all &= values(broker).await == expected;
        }
        if all {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the brokers did not all come to hold the {} committed messages",
        expected.len()
    );
}

async fn produce_at(broker: &Broker, from: usize, count: usize, committed: &mut Vec<String>) {
    let batch: Vec<String> = (from..from + count).map(|i| format!("m{i}")).collect();
    broker
        .produce(
            "orders",
            batch.iter().cloned().map(text_message).collect(),
            AckMode::All,
        )
        .await
        .expect("the leader commits");
    committed.extend(batch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leadership_moves_to_each_follower_in_turn_and_no_committed_message_is_lost() {
    let root = tempfile::tempdir().expect("dir");
    let brokers = orders_on_three_brokers(root.path()).await;
    let group = GroupId::Partition {
        topic: "orders".into(),
        partition: 0,
    };
    let first = agreed_leader(&brokers, "orders").await;
    let mut committed = Vec::new();
    produce_at(&brokers[(first - 1) as usize], 0, 20, &mut committed).await;
    let followers: Vec<u64> = (1..=3).filter(|id| *id != first).collect();
    // The move runs on a node that leads nothing it moves (as the controller leader may).
    let (runner_id, runner) = (1u64, &brokers[0]);
    let replication = runner.replication_settings().expect("replicates");
    let coordinator = TransferCoordinator {
        me: runner_id,
        local: replication.groups.as_ref(),
        transport: replication.transport.as_ref(),
    };
    for (round, target) in followers.into_iter().enumerate() {
        let started = Instant::now();
        let moved = coordinator
            .move_leader(&group, &[1, 2, 3], target)
            .await
            .expect("the follower comes to lead");
        let took = started.elapsed();
        eprintln!(
            "leadership moved to node {target} in {} ms",
            took.as_millis()
        );
        assert_eq!(moved.leader, target);
        assert!(took < Duration::from_millis(TRANSFER_WAIT_MS), "{took:?}");
        assert_eq!(agreed_leader(&brokers, "orders").await, target);
        let new_leader = &brokers[(target - 1) as usize];
        produce_at(new_leader, 20 * (round + 1), 20, &mut committed).await;
        converged(&brokers, &committed).await;
    }
    // Every hold was released: the leader keeps its followers' leases, so none of them
    // calls an election for longer than a hold would last.
    let term = runner.partition_status("orders", 0).expect("status").term;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        runner.partition_status("orders", 0).expect("status").term,
        term
    );
    for broker in brokers {
        broker.shutdown().await;
    }
}

/// Produces one message at a time to whichever broker takes it, until `stop`; the values
/// committed, in order.
async fn keep_producing(
    brokers: Vec<Arc<Broker>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Vec<String> {
    let mut committed = Vec::new();
    let mut next = 0usize;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let value = format!("w{next}");
        let mut taken = false;
        for broker in &brokers {
            let r = broker
                .produce("orders", vec![text_message(value.clone())], AckMode::All)
                .await;
            if r.is_ok() {
                taken = true;
                break;
            }
        }
        if taken {
            committed.push(value);
            next += 1;
        } else {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    committed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leadership_moves_while_a_producer_keeps_writing() {
    let root = tempfile::tempdir().expect("dir");
    let brokers = orders_on_three_brokers(root.path()).await;
    let group = GroupId::Partition {
        topic: "orders".into(),
        partition: 0,
    };
    let mut leader = agreed_leader(&brokers, "orders").await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let producer = tokio::spawn(keep_producing(brokers.clone(), Arc::clone(&stop)));
    let replication = brokers[0].replication_settings().expect("replicates");
    let coordinator = TransferCoordinator {
        me: 1,
        local: replication.groups.as_ref(),
        transport: replication.transport.as_ref(),
    };
    // Every entry the leader replicates renews its followers' leases as a heartbeat would:
    // unless the held leader stops taking writes, the target never wins a vote.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let target = leader % 3 + 1;
        let moved = coordinator
            .move_leader(&group, &[1, 2, 3], target)
            .await
            .expect("the leadership moves under writes");
        assert_eq!(moved.leader, target);
        leader = target;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let committed = producer.await.expect("the producer ends");
    assert!(committed.len() > 10, "only {} writes", committed.len());
    converged(&brokers, &committed).await;
    for broker in brokers {
        broker.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_single_produces_share_entries_and_each_hears_its_own_offset() {
    let root = tempfile::tempdir().expect("dir");
    let brokers = orders_on_three_brokers(root.path()).await;
    let leader = brokers[(agreed_leader(&brokers, "orders").await - 1) as usize].clone();
    let before = leader
        .partition_status("orders", 0)
        .and_then(|s| s.last_index)
        .unwrap_or(0);
    const PRODUCES: usize = 300;
    let mut produces = tokio::task::JoinSet::new();
    for n in 0..PRODUCES {
        let leader = Arc::clone(&leader);
        produces.spawn(async move {
            let outcome = leader
                .produce("orders", vec![text_message(format!("c{n}"))], AckMode::All)
                .await
                .expect("committed");
            (n, outcome.messages[0].offset.expect("an offset"))
        });
    }
    let mut placed = BTreeMap::new();
    while let Some(joined) = produces.join_next().await {
        let (n, offset) = joined.expect("joins");
        assert!(
            placed.insert(offset, n).is_none(),
            "offset {offset} given twice"
        );
    }
    let offsets: Vec<u64> = placed.keys().copied().collect();
    assert_eq!(offsets, (0..PRODUCES as u64).collect::<Vec<_>>());
    // Each message is where its producer heard it went.
    let read = leader
        .read_partition("orders", 0, 0, PRODUCES, 0, None)
        .await
        .expect("reads");
    for message in read.messages {
        let value = String::from_utf8_lossy(&message.record.value).into_owned();
        assert_eq!(value, format!("c{}", placed[&message.offset]));
    }
    let entries = leader
        .partition_status("orders", 0)
        .and_then(|s| s.last_index)
        .expect("a last index")
        - before;
    eprintln!("{PRODUCES} produces took {entries} Raft entries");
    assert!(
        entries < PRODUCES as u64,
        "{entries} entries for {PRODUCES} produces: none were joined"
    );
    for broker in brokers {
        broker.shutdown().await;
    }
}
