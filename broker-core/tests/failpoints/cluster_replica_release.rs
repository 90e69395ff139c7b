//! A replica moved off a node is dropped there: four cluster nodes in one process, a
//! one-partition topic on three. Draining one of its replicas moves the replica to the fourth
//! node; the drained node then stops its group, no longer holds the partition (its requests
//! are refused naming the leader, which the gateway forwards to) and keeps only the empty log
//! a node that never held the partition keeps. Moving the replica back seats a fresh group,
//! which catches up with the leader's data; the state derived from the old log (the
//! subscription's table) starts afresh when the replica is dropped, also across a restart,
//! so the refilled log is not counted a second time, and a drop stopped half-way (the
//! `cluster_release::derived_state_dropped` failpoint) converges after a restart. Each test
//! holds a `FailScenario`, so they run one at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::broker::{AckMode, Delivery, ReceiveRequest, SubscriptionStats};
use broker_core::cluster_node::ClusterNode;
use broker_core::subscription::SubscriptionSpec;
use broker_core::topic::TopicSpec;
use fail::FailScenario;

use crate::support::{
    Net, all_registered, controller_leader, node_record, read_own_replica, start_cluster_node,
    text_message, until,
};

const NODES: u64 = 4;
const TOPIC: &str = "moving";
const SUBSCRIPTION: &str = "work";
const MESSAGES: usize = 10;
/// The leases of the first deliveries: short enough that the unacked ones are due again by
/// the time the replica is back and leads (the comparison waits up to 15 s for that), long
/// enough that the acks right after the receive make it on a loaded machine.
const LEASE_MS: u64 = 3_000;
/// The leases of the moved-back leader's deliveries, which the test acks after a further
/// empty receive: they must not end before (a 1 s lease did in a CI run).
const HELD_MS: u64 = 60_000;

/// Each file of `dir` (a partition's directory), with whether it holds any data (a byte
/// other than zero: a new segment is zeroed ahead of its writes).
fn listing(dir: &Path) -> BTreeMap<String, bool> {
    std::fs::read_dir(dir)
        .expect("a partition directory")
        .map(|entry| {
            let entry = entry.expect("an entry");
            let bytes = std::fs::read(entry.path()).expect("readable");
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, bytes.iter().any(|b| *b != 0))
        })
        .collect()
}

fn replicas(node: &ClusterNode) -> Vec<u64> {
    node.state().topic(TOPIC).expect("placed").placement[0]
        .replicas
        .clone()
}

/// The values of partition 0 as `node`'s own replica holds them.
async fn values(node: &ClusterNode) -> Vec<Vec<u8>> {
    read_own_replica(node.broker(), TOPIC, 0, 0, 1_000)
        .await
        .messages
        .iter()
        .map(|m| m.record.value.to_vec())
        .collect()
}

/// Node `id` of four, registering anew as `wharf serve` does at each start (a restarted node
/// knows its metadata caught up once it holds this registration).
async fn start_node(id: u64, root: &Path, net: &Arc<Net>) -> Arc<ClusterNode> {
    let mut me = node_record(id, format!("zone-{id}"), 7300);
    me.joined_ms = broker_core::clock::now_ms();
    let peers: Vec<u64> = (1..=NODES).collect();
    start_cluster_node(me, root, net, &peers, false, |_| {}).await
}

/// Four nodes, the one-partition topic placed on three of them.
struct Cluster {
    root: tempfile::TempDir,
    net: Arc<Net>,
    nodes: Vec<Arc<ClusterNode>>,
    /// The node leading the controller.
    controller: Arc<ClusterNode>,
}

impl Cluster {
    async fn start() -> Cluster {
        let root = tempfile::tempdir().expect("dir");
        let net = Arc::new(Net::default());
        let mut nodes = Vec::new();
        for id in 1..=NODES {
            nodes.push(start_node(id, root.path(), &net).await);
        }
        until("every node registered and ready", async || {
            all_registered(&nodes)
        })
        .await;
        let controller = controller_leader(&nodes);
        let spec = TopicSpec {
            name: TOPIC.into(),
            partitions: Some(1),
            ..TopicSpec::default()
        };
        controller.create_topic(spec).await.expect("created");
        let cluster = Cluster {
            root,
            net,
            nodes,
            controller,
        };
        let placed = replicas(&cluster.controller);
        until("the replicas agree on a leader", async || {
            placed.iter().all(|r| {
                cluster
                    .by_id(*r)
                    .broker()
                    .partition_leader(TOPIC, 0)
                    .is_some()
            })
        })
        .await;
        cluster
    }

    fn by_id(&self, id: u64) -> Arc<ClusterNode> {
        Arc::clone(&self.nodes[(id - 1) as usize])
    }

    /// A replica of the partition that does not lead the controller.
    fn replica_to_move(&self) -> Arc<ClusterNode> {
        let id = replicas(&self.controller)
            .into_iter()
            .find(|r| *r != self.controller.node_id())
            .expect("a replica that does not lead the controller");
        self.by_id(id)
    }

    /// The node `node` takes for the partition's leader.
    fn leader_seen_by(&self, node: &ClusterNode) -> Arc<ClusterNode> {
        self.by_id(node.broker().partition_leader(TOPIC, 0).expect("leader"))
    }

    /// Drains `moved`, which moves its replica to the node outside the group, and waits
    /// until `moved` dropped it: its partition directory is as `never_held`.
    async fn move_away(&self, moved: &ClusterNode, never_held: &BTreeMap<String, bool>) {
        let report = self
            .controller
            .drain_node(moved.node_id())
            .await
            .expect("drained");
        assert!(report.leaders.failed.is_empty(), "{report:?}");
        assert_eq!(report.replicas_kept, 0, "{report:?}");
        let after = replicas(&self.controller);
        assert!(!after.contains(&moved.node_id()), "{after:?}");
        let dir = moved.broker().partition_dir(TOPIC, 0).expect("dir");
        until("the moved-off node drops its replica", async || {
            !moved.broker().holds_partition(TOPIC, 0)
                && moved.broker().partition_status(TOPIC, 0).is_none()
                && listing(&dir) == *never_held
        })
        .await;
    }

    /// Makes `moved` Active again and drains another replica (not the controller's leader),
    /// which moves that replica to `moved`, the only Active node outside the group; waits
    /// until `moved` holds the leader's messages.
    async fn move_back(&self, moved: &ClusterNode) {
        self.controller
            .undrain_node(moved.node_id())
            .await
            .expect("active again");
        let leaving = self.replica_to_move().node_id();
        let report = self.controller.drain_node(leaving).await.expect("drained");
        assert!(report.leaders.failed.is_empty(), "{report:?}");
        assert!(replicas(&self.controller).contains(&moved.node_id()));
        until("the node holds the partition again", async || {
            moved.broker().holds_partition(TOPIC, 0)
        })
        .await;
        let expected = values(&self.leader_seen_by(moved)).await;
        let mut caught_up = Vec::new();
        for _ in 0..100 {
            caught_up = values(moved).await;
            if caught_up == expected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(caught_up, expected, "the replica moved back caught up");
    }

    /// Stops node `id` and starts it again on its data; waits until it is ready.
    async fn restart(&mut self, id: u64) {
        let at = (id - 1) as usize;
        let stopped = self.nodes.remove(at);
        stop(&stopped).await;
        self.net.nodes.lock().expect("lock").remove(&id);
        // The caller holds no other handle to the node: its data opens again only once the
        // last one is gone.
        drop(stopped);
        let started = start_node(id, self.root.path(), &self.net).await;
        self.nodes.insert(at, Arc::clone(&started));
        until("the restarted node is ready", async || started.ready()).await;
    }

    async fn shutdown(self) {
        for node in &self.nodes {
            stop(node).await;
        }
    }
}

async fn stop(node: &ClusterNode) {
    node.shutdown().await;
    node.broker().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_moved_away_is_dropped_and_a_move_back_catches_up() {
    let scenario = FailScenario::setup();
    let cluster = Cluster::start().await;
    let before = replicas(&cluster.controller);
    let outsider = cluster.by_id((1..=NODES).find(|p| !before.contains(p)).expect("outsider"));
    let moved = cluster.replica_to_move();
    let leader = cluster.leader_seen_by(&moved);
    for i in 0..MESSAGES {
        leader
            .broker()
            .produce(TOPIC, vec![text_message(format!("m{i}"))], AckMode::All)
            .await
            .expect("produced");
    }
    let never_held = listing(&outsider.broker().partition_dir(TOPIC, 0).expect("dir"));
    let dir = moved.broker().partition_dir(TOPIC, 0).expect("dir");
    assert_ne!(
        listing(&dir),
        never_held,
        "the replica has data before the move"
    );

    cluster.move_away(&moved, &never_held).await;
    let after = replicas(&cluster.controller);
    // Requests through the node are refused naming a leader among the new replicas (the
    // gateway forwards them there), and write nothing here.
    until("the moved-off node knows the leader", async || {
        moved
            .broker()
            .partition_leader(TOPIC, 0)
            .is_some_and(|l| after.contains(&l))
    })
    .await;
    match moved
        .broker()
        .produce(TOPIC, vec![text_message("late".into())], AckMode::All)
        .await
    {
        Err(BrokerError::NotLeader {
            leader: Some(leader),
            ..
        }) => assert!(after.contains(&leader), "{leader} not in {after:?}"),
        other => panic!("a produce on the moved-off node: {other:?}"),
    }
    match moved
        .broker()
        .read_partition(TOPIC, 0, 0, 10, 0, None)
        .await
    {
        Err(BrokerError::NotLeader {
            leader: Some(_), ..
        }) => {}
        other => panic!("a read on the moved-off node: {other:?}"),
    }
    assert_eq!(listing(&dir), never_held, "a refused request wrote nothing");

    cluster.move_back(&moved).await;
    assert_eq!(values(&moved).await.len(), MESSAGES);
    cluster.shutdown().await;
    scenario.teardown();
}

fn receive(max_messages: usize, lease_ms: u64) -> ReceiveRequest {
    ReceiveRequest {
        max_messages,
        wait_ms: 500,
        ack_timeout_ms: Some(lease_ms),
        attempt_id: None,
        memory: None,
    }
}

/// Creates the subscription at the controller leader and waits until every node has it.
async fn subscribe(cluster: &Cluster) {
    let work = SubscriptionSpec {
        name: SUBSCRIPTION.into(),
        start: None,
        ack_timeout_ms: Some(LEASE_MS),
        retry: None,
        max_deliveries: None,
        dead_letter_topic: None,
        filter: None,
        ordering: None,
    };
    cluster
        .controller
        .create_subscription(TOPIC, work)
        .await
        .expect("subscription");
    until("every node has the subscription", async || {
        cluster
            .nodes
            .iter()
            .all(|n| n.broker().subscription_uid(TOPIC, SUBSCRIPTION).is_some())
    })
    .await;
}

/// The subscription's figures as `node`'s own table shows them, leaving out what depends on
/// the time of the call.
async fn figures(node: &ClusterNode) -> SubscriptionStats {
    let stats = node
        .broker()
        .describe_subscription(TOPIC, SUBSCRIPTION)
        .await
        .expect("described")
        .stats;
    SubscriptionStats {
        oldest_unacked_age_ms: None,
        ..stats
    }
}

/// Receives on `node`, each delivery leased for `lease_ms`, until it got `count` deliveries
/// or `ms` passed; a node that does not lead the partition yet is asked again.
async fn receive_on(node: &ClusterNode, count: usize, ms: u64, lease_ms: u64) -> Vec<Delivery> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
    let mut got = Vec::new();
    while got.len() < count && tokio::time::Instant::now() < deadline {
        match node
            .broker()
            .receive(TOPIC, SUBSCRIPTION, receive(count - got.len(), lease_ms))
            .await
        {
            Ok(more) => got.extend(more),
            Err(BrokerError::NotLeader { .. }) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("received: {other:?}"),
        }
    }
    got
}

async fn ack_on(node: &ClusterNode, deliveries: &[&Delivery]) {
    let receipts: Vec<String> = deliveries.iter().map(|d| d.receipt.clone()).collect();
    let acked = node
        .broker()
        .ack(TOPIC, SUBSCRIPTION, &receipts)
        .await
        .expect("acked");
    assert_eq!(acked.succeeded, receipts.len(), "{acked:?}");
}

/// Messages of the partition that stay unacked before the move away.
const UNACKED: [u64; 3] = [3, 7, 9];
/// Messages produced while the replica is away.
const WHILE_AWAY: u64 = 2;

/// The partition directory of a node that never held the partition.
fn never_held(cluster: &Cluster) -> BTreeMap<String, bool> {
    let outsider = (1..=NODES)
        .find(|p| !replicas(&cluster.controller).contains(p))
        .expect("outsider");
    let dir = cluster.by_id(outsider).broker().partition_dir(TOPIC, 0);
    listing(&dir.expect("dir"))
}

/// Produces `MESSAGES` at the leader, delivers each once and acks all but `UNACKED`; waits
/// until node `moved`'s table follows.
async fn deliver_and_ack_some(cluster: &Cluster, moved: u64) {
    let leader = cluster.leader_seen_by(&cluster.by_id(moved));
    for i in 0..MESSAGES {
        leader
            .broker()
            .produce(TOPIC, vec![text_message(format!("m{i}"))], AckMode::All)
            .await
            .expect("produced");
    }
    let delivered = receive_on(&leader, MESSAGES, 10_000, LEASE_MS).await;
    let offsets: BTreeSet<u64> = delivered.iter().map(|d| d.message.offset).collect();
    assert_eq!(
        offsets,
        (0..MESSAGES as u64).collect(),
        "delivered once each"
    );
    let acking: Vec<&Delivery> = delivered
        .iter()
        .filter(|d| !UNACKED.contains(&d.message.offset))
        .collect();
    ack_on(&leader, &acking).await;
    let at_leader = figures(&leader).await;
    assert_eq!(at_leader.acked, (MESSAGES - UNACKED.len()) as u64);
    assert_eq!(at_leader.delivered, MESSAGES as u64);
    until("the replica's table follows the leader's", async || {
        figures(&cluster.by_id(moved)).await.acked == at_leader.acked
    })
    .await;
}

/// Produces `WHILE_AWAY` messages at the partition's leader.
async fn produce_while_away(cluster: &Cluster) {
    let leader = cluster.leader_seen_by(&cluster.replica_to_move());
    for i in 0..WHILE_AWAY {
        leader
            .broker()
            .produce(TOPIC, vec![text_message(format!("away{i}"))], AckMode::All)
            .await
            .expect("produced");
    }
}

/// After [`deliver_and_ack_some`], the move away, [`produce_while_away`] and the move back:
/// following, `moved`'s figures are the leader's, each message counted once; leading, it
/// delivers exactly the unacked messages, each once.
async fn counts_once_and_serves_the_unacked(cluster: &Cluster, moved: &ClusterNode) {
    // Compared once they agree (the leases of `UNACKED` ended on both) and the leader's table
    // holds the acks (a replica that just took the lead may not have replayed its log yet:
    // two fresh tables agree too), or after 15 s.
    let leader = cluster.leader_seen_by(moved);
    let acked = (MESSAGES - UNACKED.len()) as u64;
    let mut pair = (figures(moved).await, figures(&leader).await);
    for _ in 0..150 {
        if pair.0 == pair.1 && pair.1.acked == acked {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        pair = (figures(moved).await, figures(&leader).await);
    }
    assert_eq!(
        pair.0, pair.1,
        "the moved-back replica's figures, then the leader's"
    );
    assert_eq!(pair.0.acked, acked);
    assert_eq!(pair.0.delivered, MESSAGES as u64);

    cluster
        .controller
        .move_leader(TOPIC, 0, moved.node_id())
        .await
        .expect("the moved-back replica leads");
    let unacked: BTreeSet<u64> = UNACKED
        .iter()
        .copied()
        .chain(MESSAGES as u64..MESSAGES as u64 + WHILE_AWAY)
        .collect();
    let mut again = receive_on(moved, unacked.len(), 10_000, HELD_MS).await;
    again.extend(receive_on(moved, 1, 500, HELD_MS).await);
    let offsets: Vec<u64> = again.iter().map(|d| d.message.offset).collect();
    assert_eq!(
        offsets.iter().copied().collect::<BTreeSet<u64>>(),
        unacked,
        "delivered by the moved-back leader: {offsets:?}"
    );
    assert_eq!(offsets.len(), unacked.len(), "each once: {offsets:?}");
    for delivery in &again {
        let first = delivery.message.offset >= MESSAGES as u64;
        assert_eq!(
            delivery.delivery_attempt,
            if first { 1 } else { 2 },
            "attempt of {}",
            delivery.message.offset
        );
    }
    ack_on(moved, &again.iter().collect::<Vec<_>>()).await;
    let done = figures(moved).await;
    assert_eq!(done.acked, MESSAGES as u64 + WHILE_AWAY, "{done:?}");
    assert_eq!(done.backlog, 0, "{done:?}");
    assert_eq!(
        done.delivered,
        MESSAGES as u64 + WHILE_AWAY + UNACKED.len() as u64,
        "{done:?}"
    );
}

/// The opening both drop tests share: failpoints set up, a cluster with the subscription,
/// the replica to move (by id), the listing of a never-held partition directory, and
/// [`deliver_and_ack_some`] done.
async fn delivered_and_partly_acked()
-> (FailScenario<'static>, Cluster, u64, BTreeMap<String, bool>) {
    let scenario = FailScenario::setup();
    let cluster = Cluster::start().await;
    subscribe(&cluster).await;
    let moved = cluster.replica_to_move().node_id();
    let never_held = never_held(&cluster);
    deliver_and_ack_some(&cluster, moved).await;
    (scenario, cluster, moved, never_held)
}

/// A replica dropped, restarted and moved back replays the refilled log into fresh tables:
/// dropped, its subscription's table is fresh (in memory and in its checkpoint); back, its
/// counters and unacked messages are the leader's, not the old log's events counted twice,
/// and once it leads it delivers exactly the unacked messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_moved_back_counts_its_subscription_history_once() {
    let (scenario, mut cluster, moved, never_held) = delivered_and_partly_acked().await;

    cluster.move_away(&cluster.by_id(moved), &never_held).await;
    assert_eq!(
        figures(&cluster.by_id(moved)).await,
        SubscriptionStats::default(),
        "the dropped replica's table"
    );
    cluster.restart(moved).await;
    assert_eq!(
        figures(&cluster.by_id(moved)).await,
        SubscriptionStats::default(),
        "the dropped replica's table after a restart"
    );
    produce_while_away(&cluster).await;
    let moved = cluster.by_id(moved);
    cluster.move_back(&moved).await;
    counts_once_and_serves_the_unacked(&cluster, &moved).await;
    drop(moved);
    cluster.shutdown().await;
    scenario.teardown();
}

/// A node stopped while it drops a replica, after the derived state and before the files
/// (as a crash there would): restarted, it replays the whole log it still holds into the
/// fresh tables, seats the replica again, drops it again, and once moved back counts the
/// history once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drop_stopped_between_the_derived_state_and_the_files_converges_after_a_restart() {
    let (scenario, mut cluster, moved, never_held) = delivered_and_partly_acked().await;

    fail::cfg("cluster_release::derived_state_dropped", "return").expect("failpoint");
    let report = cluster.controller.drain_node(moved).await.expect("drained");
    assert!(report.leaders.failed.is_empty(), "{report:?}");
    let dir = cluster
        .by_id(moved)
        .broker()
        .partition_dir(TOPIC, 0)
        .expect("dir");
    until("the drop stops after the derived state", async || {
        // The log is still there: its messages count as the fresh table's backlog.
        let node = cluster.by_id(moved);
        let stats = figures(&node).await;
        !node.broker().holds_partition(TOPIC, 0) && stats.acked == 0 && stats.delivered == 0
    })
    .await;
    assert_ne!(listing(&dir), never_held, "the files are still there");
    fail::remove("cluster_release::derived_state_dropped");

    cluster.restart(moved).await;
    until("the restarted node drops the replica again", async || {
        let node = cluster.by_id(moved);
        !node.broker().holds_partition(TOPIC, 0)
            && listing(&dir) == never_held
            && figures(&node).await == SubscriptionStats::default()
    })
    .await;
    produce_while_away(&cluster).await;
    let moved = cluster.by_id(moved);
    cluster.move_back(&moved).await;
    counts_once_and_serves_the_unacked(&cluster, &moved).await;
    drop(moved);
    cluster.shutdown().await;
    scenario.teardown();
}
