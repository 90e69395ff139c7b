//! Writing already-built records at a partition's leader on another node (the `write` RPC a
//! redrive uses): three brokers in one process over the in-memory transport. The records
//! keep their ids and marks on every replica and claim no client id; a node that does not
//! lead the partition refuses, naming the leader. A write arriving while the leader holds
//! its writes for a leadership move is refused naming the move's target, as a produce there
//! is, and writes nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use broker_core::broker::{AckMode, NewMessage};
use broker_core::message::Record;
use broker_core::raft::{
    GroupId, NodeInfo, Rpc, RpcCall, TRANSFER_HOLD_MS, TransferStep, write_at_leader,
};
use broker_core::{Broker, BrokerError};
use bytes::Bytes;

use crate::support::{
    Net, agreed_leader, one_partition_topic, open_cluster_broker, read_own_replica,
};

/// Three brokers over `net`, each holding the one-partition topic `orders`, and the id of its
/// leader.
async fn orders_on_three_brokers(root: &Path, net: &Arc<Net>) -> (Vec<Arc<Broker>>, u64) {
    let mut brokers = Vec::new();
    for id in 1..=3 {
        brokers.push(open_cluster_broker(id, root, net, |_| {}).await);
    }
    let members: BTreeMap<u64, NodeInfo> = (1..=3).map(|id| (id, NodeInfo::default())).collect();
    for broker in &brokers {
        broker
            .materialize_topic(one_partition_topic("orders", 42), members.clone())
            .await
            .expect("materializes");
    }
    let leader = agreed_leader(&brokers, "orders").await;
    (brokers, leader)
}

fn redriven(id: &str) -> Record {
    Record {
        id: id.to_owned(),
        timestamp_ms: 1_700_000_000_123,
        key: Some("k".into()),
        value: Bytes::from_static(b"again"),
        binary: false,
        scheduled: false,
        client_id: false,
        headers: vec![("wharf-redrive-subscription".into(), "billing".into())],
        tags: Vec::new(),
        trace: None,
        origin: None,
    }
}

/// The records of partition 0 on `broker`, once it has `count`.
async fn stored(broker: &Broker, count: usize) -> Vec<Record> {
    for _ in 0..100 {
        let read = read_own_replica(broker, "orders", 0, 0, 100).await;
        if read.messages.len() >= count {
            return read.messages.into_iter().map(|m| m.record).collect();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fewer than {count} records arrived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_written_at_the_leader_from_another_node_keep_their_ids_on_every_replica() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let (brokers, leader) = orders_on_three_brokers(root.path(), &net).await;
    let (asker, follower) = {
        let others: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
        (&brokers[(others[0] - 1) as usize], others[1])
    };
    let transport = Arc::clone(&asker.replication_settings().expect("a cluster").transport);
    let group = GroupId::Partition {
        topic: "orders".into(),
        partition: 0,
    };
    let records = vec![redriven("original-1"), redriven("original-2")];
    write_at_leader(&*transport, leader, group.clone(), &records)
        .await
        .expect("the leader writes them");
    for broker in &brokers {
        assert_eq!(
            stored(broker, 2).await,
            records,
            "as built, on every replica"
        );
    }

    // A node that does not lead the partition refuses, naming the leader.
    match write_at_leader(&*transport, follower, group, &records).await {
        Err(BrokerError::NotLeader { leader: named, .. }) => assert_eq!(named, Some(leader)),
        other => panic!("a follower took the write: {other:?}"),
    }

    // The ids were no client's produce: a produce with one of them is not a duplicate.
    let message = NewMessage {
        key: Some("k".into()),
        value: Bytes::from_static(b"new"),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: Some("original-1".into()),
        delay: None,
        trace: None,
    };
    let outcome = brokers[(leader - 1) as usize]
        .produce("orders", vec![message], AckMode::All)
        .await
        .expect("produced");
    assert_eq!(outcome.messages.len(), 1);
    assert!(!outcome.messages[0].duplicate, "{:?}", outcome.messages[0]);
    assert_eq!(outcome.messages[0].offset, Some(2));
    for broker in &brokers {
        broker.shutdown().await;
    }
}

/// Sends transfer step `step` for partition 0 to node `to`, answered.
async fn transfer_step(transport: &dyn broker_core::raft::Transport, to: u64, step: &TransferStep) {
    let call = RpcCall {
        group: GroupId::Partition {
            topic: "orders".into(),
            partition: 0,
        },
        rpc: Rpc::Transfer,
        body: Bytes::from(serde_json::to_vec(step).expect("encodes")),
        timeout: Duration::from_secs(10),
    };
    transport.call(to, call).await.expect("the step answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_during_a_held_leader_move_is_refused_naming_the_target() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let (brokers, leader) = orders_on_three_brokers(root.path(), &net).await;
    let (asker, target) = {
        let others: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
        (&brokers[(others[0] - 1) as usize], others[1])
    };
    let transport = Arc::clone(&asker.replication_settings().expect("a cluster").transport);
    let group = GroupId::Partition {
        topic: "orders".into(),
        partition: 0,
    };
    let hold = TransferStep::Hold {
        target,
        ms: TRANSFER_HOLD_MS,
    };
    transfer_step(&*transport, leader, &hold).await;
    match write_at_leader(&*transport, leader, group.clone(), &[redriven("held")]).await {
        Err(BrokerError::NotLeader { leader: named, .. }) => assert_eq!(named, Some(target)),
        other => panic!("the leader took a write while holding them: {other:?}"),
    }
    transfer_step(&*transport, leader, &TransferStep::Release).await;

    // Released: the write goes through (at whichever node leads by now), and the refused
    // one was never written.
    let mut written = false;
    for _ in 0..50 {
        let now = agreed_leader(&brokers, "orders").await;
        match write_at_leader(&*transport, now, group.clone(), &[redriven("after")]).await {
            Ok(()) => {
                written = true;
                break;
            }
            Err(BrokerError::NotLeader { .. }) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("the write after the release: {other:?}"),
        }
    }
    assert!(written, "no write went through after the release");
    for broker in &brokers {
        let ids: Vec<String> = stored(broker, 1).await.into_iter().map(|r| r.id).collect();
        assert_eq!(ids, vec!["after".to_owned()]);
    }
    for broker in &brokers {
        broker.shutdown().await;
    }
}
