//! The controller group on three nodes in one process: every node applies the same committed
//! commands in the same order, a follower cannot propose, and a restarted node rebuilds its
//! metadata from the controller log.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::raft::{ControllerReplica, GroupId, Metadata, NodeInfo, RaftGroups, raft_config};
use bytes::Bytes;

use crate::support::{Net, node_transport, replica_spec};

/// Metadata that remembers every command; `refuse` is refused (changes nothing).
#[derive(Default)]
struct Journal(Vec<String>);

impl Metadata for Journal {
    fn apply(&mut self, _index: u64, bytes: &[u8]) {
        let command = String::from_utf8_lossy(bytes).into_owned();
        if command != "refuse" {
            self.0.push(command);
        }
    }

    fn snapshot(&self) -> Result<Vec<u8>, BrokerError> {
        Ok(self.0.join("\n").into_bytes())
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), BrokerError> {
        self.0 = String::from_utf8_lossy(bytes)
            .lines()
            .map(str::to_owned)
            .collect();
        Ok(())
    }
}

struct Node {
    id: u64,
    db: sled::Db,
    replica: ControllerReplica<Journal>,
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
        GroupId::Controller,
        dir.join("controller"),
        db.open_tree("controller").expect("tree"),
    );
    let transport = node_transport(id, net);
    let replica = ControllerReplica::open(
        spec,
        transport,
        raft_config().expect("config"),
        Journal::default(),
    )
    .await
    .expect("opens");
    let groups = Arc::new(RaftGroups::default());
    groups.insert(GroupId::Controller, replica.raft.clone());
    net.nodes.lock().expect("lock").insert(id, groups);
    Node { id, db, replica }
}

async fn leader(nodes: &[Node]) -> u64 {
    for _ in 0..100 {
        let leaders: Vec<_> = nodes
            .iter()
            .map(|n| n.replica.raft.metrics().borrow().current_leader)
            .collect();
        if let Some(Some(l)) = leaders.first()
            && leaders.iter().all(|x| *x == Some(*l))
        {
            return *l;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no agreed controller leader within 10 s");
}

async fn journals_equal(nodes: &[Node], expected: &[&str]) {
    for _ in 0..100 {
        if nodes
            .iter()
            .all(|n| n.replica.machine.read(|j| j.0 == expected))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for n in nodes {
        eprintln!(
            "node {}: {:?}",
            n.id,
            n.replica.machine.read(|j| j.0.clone())
        );
    }
    panic!("journals differ from {expected:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_applies_the_same_commands_and_a_restart_rebuilds_them_from_the_log() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(open_node(id, root.path(), &net, None).await);
    }
    let members: BTreeMap<u64, NodeInfo> = (1..=3).map(|id| (id, NodeInfo::default())).collect();
    nodes[0]
        .replica
        .raft
        .initialize(members)
        .await
        .expect("initializes");
    let first = leader(&nodes).await;
    let lead = nodes.iter().find(|n| n.id == first).expect("leader");
    let mut version = lead.replica.machine.version();
    for command in ["create a", "refuse", "create b", "delete a"] {
        lead.replica
            .propose(Bytes::from(command))
            .await
            .expect("committed");
    }
    assert!(version.has_changed().expect("open"), "the version moved");
    version.mark_unchanged();
    let follower = nodes.iter().find(|n| n.id != first).expect("follower");
    match follower.replica.propose(Bytes::from("create c")).await {
        Err(BrokerError::NotLeader { leader, .. }) => assert_eq!(leader, Some(first)),
        other => panic!("a follower proposed: {other:?}"),
    }
    journals_equal(&nodes, &["create a", "create b", "delete a"]).await;
    let restarted = nodes.remove(nodes.iter().position(|n| n.id != first).expect("follower"));
    net.nodes.lock().expect("lock").remove(&restarted.id);
    restarted.replica.shutdown().await;
    let Node { id, db, .. } = restarted;
    nodes.push(open_node(id, root.path(), &net, Some(db)).await);
    journals_equal(&nodes, &["create a", "create b", "delete a"]).await;
    for n in &nodes {
        n.replica.shutdown().await;
    }
}
