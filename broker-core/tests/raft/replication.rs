//! Three replicas of one partition in one process, talking through an in-memory transport
//! that encodes every RPC as the cluster port does and can cut a node off: replication,
//! failover after a leader dies, and a deposed leader that acknowledges nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::message::Record;
use broker_core::raft::{GroupId, NodeInfo, PartitionReplica, RaftGroups, raft_config};
use broker_core::storage::EntryBody;
use bytes::Bytes;

use crate::support::{Net, node_transport, replica_spec};

struct Node {
    id: u64,
    db: sled::Db,
    replica: PartitionReplica,
}

fn group() -> GroupId {
    GroupId::Partition {
        topic: "orders".into(),
        partition: 0,
    }
}

async fn open_node(id: u64, root: &std::path::Path, net: &Arc<Net>, db: Option<sled::Db>) -> Node {
    let dir = root.join(format!("node-{id}"));
    let db = db.unwrap_or_else(|| {
        sled::Config::new()
            .path(dir.join("meta"))
            .open()
            .expect("sled")
    });
    let spec = replica_spec(
        id,
        group(),
        dir.join("p0"),
        db.open_tree("p0").expect("tree"),
    );
    let transport = node_transport(id, net);
    let replica = PartitionReplica::open(spec, transport, raft_config().expect("config"))
        .await
        .expect("opens");
    let groups = Arc::new(RaftGroups::default());
    groups.insert(group(), replica.raft.clone());
    net.nodes.lock().expect("lock").insert(id, groups);
    Node { id, db, replica }
}

async fn three_nodes(root: &std::path::Path, net: &Arc<Net>) -> Vec<Node> {
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(open_node(id, root, net, None).await);
    }
    let members: BTreeMap<u64, NodeInfo> = (1..=3).map(|id| (id, NodeInfo::default())).collect();
    nodes[0]
        .replica
        .raft
        .initialize(members)
        .await
        .expect("initializes");
    nodes
}

/// The leader all of `nodes` agree on, once they do.
async fn leader(nodes: &[Node]) -> u64 {
    for _ in 0..100 {
        let mut seen = BTreeSet::new();
        for node in nodes {
            seen.insert(node.replica.raft.metrics().borrow().current_leader);
        }
        if let [Some(leader)] = seen.into_iter().collect::<Vec<_>>()[..]
            && nodes.iter().any(|n| n.id == leader)
        {
            return leader;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no agreed leader within 10 s");
}

fn node(nodes: &[Node], id: u64) -> &Node {
    nodes.iter().find(|n| n.id == id).expect("node")
}

fn record(n: u64) -> Record {
    Record {
        id: format!("m-{n}"),
        timestamp_ms: 1_000 + n,
        key: None,
        value: Bytes::from(format!("value {n}")),
        binary: false,
        scheduled: false,
        client_id: false,
        headers: Vec::new(),
        tags: Vec::new(),
        trace: None,
        origin: None,
    }
}

fn batch(first: u64, count: u64) -> EntryBody {
    let records: Vec<Record> = (first..first + count).map(record).collect();
    EntryBody::messages(&records).expect("body")
}

/// The ids of every visible record of a node's partition, in offset order.
fn visible_ids(node: &Node) -> Vec<String> {
    let log = &node.replica.log;
    log.read(0, 10_000, usize::MAX)
        .expect("reads")
        .into_iter()
        .map(|r| r.record.id)
        .collect()
}

/// Waits until every node shows `expected` (ids, in offset order).
async fn converged(nodes: &[Node], expected: &[String]) {
    for _ in 0..100 {
        if nodes.iter().all(|n| visible_ids(n) == expected) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for n in nodes {
        eprintln!("node {}: {} visible", n.id, visible_ids(n).len());
    }
    panic!("replicas did not converge on {} records", expected.len());
}

fn ids(range: std::ops::Range<u64>) -> Vec<String> {
    range.map(|n| format!("m-{n}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_hold_the_same_messages_at_the_same_offsets() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = three_nodes(root.path(), &net).await;
    let leader = node(&nodes, leader(&nodes).await);
    for i in 0..20 {
        let written = leader
            .replica
            .raft
            .client_write(batch(i * 5, 5))
            .await
            .expect("committed");
        assert_eq!((written.data.base_offset, written.data.count), (i * 5, 5));
    }
    converged(&nodes, &ids(0..100)).await;
    // The broker writes through the log handle, which proposes to the Raft.
    let records = vec![record(100)];
    let through_handle = leader
        .replica
        .log
        .append(records.clone())
        .await
        .expect("committed");
    assert_eq!(
        (through_handle.base_offset, through_handle.replicated),
        (100, true)
    );
    let follower = nodes.iter().find(|n| n.id != leader.id).expect("follower");
    match follower.replica.log.append(records).await {
        Err(BrokerError::NotLeader {
            leader: Some(l), ..
        }) => assert_eq!(l, leader.id),
        other => panic!("a follower took a write: {other:?}"),
    }
    converged(&nodes, &ids(0..101)).await;
    for n in &nodes {
        n.replica.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_leader_is_replaced_and_no_acknowledged_message_is_lost() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut nodes = three_nodes(root.path(), &net).await;
    let first = leader(&nodes).await;
    for i in 0..10 {
        node(&nodes, first)
            .replica
            .raft
            .client_write(batch(i * 3, 3))
            .await
            .expect("committed");
    }
    // The leader dies: its process is gone, its files stay.
    let dead = nodes.remove(nodes.iter().position(|n| n.id == first).expect("leader"));
    net.nodes.lock().expect("lock").remove(&dead.id);
    dead.replica.shutdown().await;
    let second = leader(&nodes).await;
    assert_ne!(second, first);
    for i in 10..20 {
        let written = node(&nodes, second)
            .replica
            .raft
            .client_write(batch(i * 3, 3))
            .await
            .expect("committed by the two survivors");
        assert_eq!(
            written.data.base_offset,
            i * 3,
            "offsets continue without a gap"
        );
    }
    converged(&nodes, &ids(0..60)).await;
    // It comes back from its files and catches up.
    let Node { id, db, .. } = dead;
    nodes.push(open_node(id, root.path(), &net, Some(db)).await);
    converged(&nodes, &ids(0..60)).await;
    for n in &nodes {
        n.replica.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_acknowledges_nothing_and_its_tail_gives_way() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = three_nodes(root.path(), &net).await;
    let first = leader(&nodes).await;
    for i in 0..5 {
        node(&nodes, first)
            .replica
            .raft
            .client_write(batch(i * 2, 2))
            .await
            .expect("committed");
    }
    net.cut.lock().expect("lock").insert(first);
    let deposed = node(&nodes, first).replica.raft.clone();
    let stranded = tokio::spawn(async move {
        tokio::time::timeout(
            Duration::from_secs(3),
            deposed.client_write(batch(1_000, 1)),
        )
        .await
    });
    let rest: Vec<&Node> = nodes.iter().filter(|n| n.id != first).collect();
    let mut second = None;
    for _ in 0..100 {
        let seen = rest[0].replica.raft.metrics().borrow().current_leader;
        if seen.is_some_and(|l| l != first) {
            second = seen;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let second = second.expect("the majority elects a new leader");
    for i in 5..10 {
        node(&nodes, second)
            .replica
            .raft
            .client_write(batch(i * 2, 2))
            .await
            .expect("committed");
    }
    let stranded = stranded.await.expect("task");
    assert!(
        !matches!(stranded, Ok(Ok(_))),
        "the cut-off leader acknowledged a write: {stranded:?}"
    );
    // It did write the entry to its own log, where nobody else has it.
    let deposed_log = &node(&nodes, first).replica.log;
    let tail = deposed_log.last_entry().expect("an entry");
    net.cut.lock().expect("lock").clear();
    converged(&nodes, &ids(0..20)).await;
    let replaced = deposed_log
        .locate_entry(tail.index)
        .expect("reads")
        .expect("entry");
    assert!(
        replaced.term > tail.term,
        "the stranded entry was replaced by the new leader's"
    );
    for n in &nodes {
        n.replica.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_holds_each_records_trace_context_and_origin() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = three_nodes(root.path(), &net).await;
    let leader = node(&nodes, leader(&nodes).await);
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let traced = |n: u64, principal: &str| Record {
        trace: broker_core::TraceContext::parse(traceparent, Some("k=v")).ok(),
        origin: Some(Arc::new(broker_core::Origin {
            principal: Some(principal.to_owned()),
            address: "192.0.2.1".parse().ok(),
            node: Some(leader.id),
        })),
        ..record(n)
    };
    let records: Vec<Record> = [traced(0, "a"), traced(1, "a"), traced(2, "b"), record(3)].into();
    leader
        .replica
        .log
        .append(records.clone())
        .await
        .expect("committed");
    converged(&nodes, &ids(0..4)).await;
    for n in &nodes {
        let read: Vec<Record> = n
            .replica
            .log
            .read(0, 10, usize::MAX)
            .expect("reads")
            .into_iter()
            .map(|r| r.record)
            .collect();
        assert_eq!(read, records, "node {}", n.id);
    }
    for n in &nodes {
        n.replica.shutdown().await;
    }
}
