//! Heartbeats of a node's groups go out together: every group's timer of a node falls on the
//! same instants, so a node with many partitions wakes once per tick for all of them instead
//! of once per group (vendor/README.md). Other nodes tick at other instants, which the
//! failover tests (a dead leader replaced) depend on.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::raft::{
    GroupId, HEARTBEAT_MS, NodeInfo, PartitionReplica, RaftGroups, raft_config,
};

use crate::support::{Net, node_transport, replica_spec};

/// Started this long after the first group (openraft ticks every 1.5 heartbeat intervals,
/// 75 ms): half a tick apart, as unaligned as two timers can be.
const SECOND_GROUP_AFTER_MS: u64 = HEARTBEAT_MS * 3 / 4;
/// How long the appends of the two idle groups are watched: a dozen ticks.
const WATCH_MS: u64 = 1_000;
/// How far apart two heartbeats of one tick may be sent: the groups' tasks run one after
/// the other on a busy machine, well within this.
const SAME_TICK_MS: u128 = 10;

fn partition(n: u32) -> GroupId {
    GroupId::Partition {
        topic: "orders".into(),
        partition: n,
    }
}

/// Opens `group`'s replica on each of three nodes (seated in `groups`) and forms the group,
/// led by node 1.
async fn form(group: GroupId, root: &std::path::Path, net: &Arc<Net>, groups: &[Arc<RaftGroups>]) {
    let mut first = None;
    let name = group.to_path().replace(':', "-");
    for (i, node_groups) in groups.iter().enumerate() {
        let id = i as u64 + 1;
        let dir = root.join(format!("node-{id}"));
        let db = sled::Config::new()
            .path(dir.join(format!("meta-{name}")))
            .open()
            .expect("sled");
        let spec = replica_spec(
            id,
            group.clone(),
            dir.join(&name),
            db.open_tree("p").expect("tree"),
        );
        let transport = node_transport(id, net);
        let replica = PartitionReplica::open(spec, transport, raft_config().expect("config"))
            .await
            .expect("opens");
        // Node 1 leads every group: the heartbeats compared are one node's.
        if id != 1 {
            replica.raft.runtime_config().elect(false);
        }
        node_groups.insert(group.clone(), replica.raft.clone());
        first.get_or_insert(replica.raft);
    }
    let members: BTreeMap<u64, NodeInfo> = (1..=3).map(|id| (id, NodeInfo::default())).collect();
    first
        .expect("three replicas")
        .initialize(members)
        .await
        .expect("initializes");
}

/// Waits until every node's replica of `group` names node 1 its leader.
async fn led(group: &GroupId, groups: &[Arc<RaftGroups>]) {
    for _ in 0..100 {
        let leaders: Vec<Option<u64>> = groups
            .iter()
            .map(|g| {
                g.get(group)
                    .and_then(|r| r.metrics().borrow().current_leader)
            })
            .collect();
        if leaders.iter().all(|l| *l == Some(1)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{group} is not led by node 1 on every node within 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heartbeats_of_groups_started_apart_go_out_together() {
    let root = tempfile::tempdir().expect("tempdir");
    let net = Arc::new(Net::default());
    let groups: Vec<Arc<RaftGroups>> = (1..=3).map(|_| Arc::new(RaftGroups::default())).collect();
    for (i, g) in groups.iter().enumerate() {
        net.nodes
            .lock()
            .expect("lock")
            .insert(i as u64 + 1, Arc::clone(g));
    }
    form(partition(0), root.path(), &net, &groups).await;
    tokio::time::sleep(Duration::from_millis(SECOND_GROUP_AFTER_MS)).await;
    form(partition(1), root.path(), &net, &groups).await;
    led(&partition(0), &groups).await;
    led(&partition(1), &groups).await;
    // Past the elections' own appends (each new leader's blank entry): only heartbeats now.
    tokio::time::sleep(Duration::from_millis(HEARTBEAT_MS * 4)).await;

    *net.appends.lock().expect("lock") = Some(Vec::new());
    tokio::time::sleep(Duration::from_millis(WATCH_MS)).await;
    let appends = net.appends.lock().expect("lock").take().expect("recorded");
    let times = |group: GroupId| -> Vec<Instant> {
        appends
            .iter()
            .filter(|(g, _)| *g == group)
            .map(|(_, t)| *t)
            .collect()
    };
    let (first, second) = (times(partition(0)), times(partition(1)));
    assert!(
        first.len() >= 8 && second.len() >= 8,
        "both idle groups send heartbeats: {} and {} appends in {WATCH_MS} ms",
        first.len(),
        second.len()
    );
    // How far each of the second group's appends is from the nearest of the first's.
    let mut apart: Vec<u128> = second
        .iter()
        .map(|t| {
            first
                .iter()
                .map(|f| t.max(f).duration_since(*t.min(f)).as_millis())
                .min()
                .unwrap_or(u128::MAX)
        })
        .collect();
    apart.sort_unstable();
    let median = apart[apart.len() / 2];
    assert!(
        median <= SAME_TICK_MS,
        "the second group's heartbeats go out with the first's (median {median} ms apart, \
         at most {SAME_TICK_MS}; all: {apart:?})"
    );
}
