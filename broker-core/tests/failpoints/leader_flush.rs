//! A partition's leader sends its new entries to the followers while it fsyncs them
//! (`async_leader_flush`, vendor/README.md change 4). Three cluster nodes in one process, a
//! one-partition topic on all three under `fsync always`; the `segment::sync` failpoint holds
//! every fsync of the partition's writers for [`FSYNC_MS`] and counts how many are under way
//! at once. One produce after the cluster settled: the leader's fsync and both followers'
//! overlap, three at once. In openraft's order the followers got the entry only once the
//! leader's fsync had ended, so at most their two were ever under way together (this test
//! saw 2 before the change) and a produce waited for two fsyncs in turn.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use broker_core::broker::AckMode;
use broker_core::cluster_node::ClusterNode;
use broker_core::topic::TopicSpec;
use fail::FailScenario;

use crate::support::{
    Net, all_registered, controller_leader, node_record, start_cluster_node, text_message, until,
};

const NODES: u64 = 3;
const TOPIC: &str = "flushed";
/// How long each held fsync takes: far longer than an append's trip to a follower in one
/// process, so the followers' fsyncs start while the leader's is still under way.
const FSYNC_MS: u64 = 500;

async fn start_nodes(root: &std::path::Path, net: &Arc<Net>) -> Vec<Arc<ClusterNode>> {
    let peers: Vec<u64> = (1..=NODES).collect();
    let mut nodes = Vec::new();
    for id in 1..=NODES {
        let me = node_record(id, format!("zone-{id}"), 7400);
        nodes.push(start_cluster_node(me, root, net, &peers, false, |_| {}).await);
    }
    until("every node registered and ready", async || {
        all_registered(&nodes)
    })
    .await;
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_fsyncs_an_entry_while_its_followers_do() {
    let scenario = FailScenario::setup();
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = start_nodes(root.path(), &net).await;
    let controller = controller_leader(&nodes);
    let spec = TopicSpec {
        name: TOPIC.into(),
        partitions: Some(1),
        replication_factor: Some(3),
        ..TopicSpec::default()
    };
    controller.create_topic(spec).await.expect("created");
    until("every replica knows the partition's leader", async || {
        nodes
            .iter()
            .all(|n| n.broker().partition_leader(TOPIC, 0).is_some())
    })
    .await;
    let leader_id = nodes[0]
        .broker()
        .partition_leader(TOPIC, 0)
        .expect("leader");
    let leader = Arc::clone(&nodes[(leader_id - 1) as usize]);
    // Settled: the leader's first entries are flushed and replicated before fsyncs are held.
    leader
        .broker()
        .produce(TOPIC, vec![text_message("first".into())], AckMode::All)
        .await
        .expect("the first produce");

    // The partition's writer threads share one name on every node; the controller's differ.
    let dir = leader.broker().partition_dir(TOPIC, 0).expect("dir");
    let writer = format!(
        "wharf-writer-{}",
        dir.file_name().expect("a name").to_string_lossy()
    );
    let (under_way, most) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (counting, peak) = (Arc::clone(&under_way), Arc::clone(&most));
    fail::cfg_callback("segment::sync", move || {
        if std::thread::current().name() != Some(writer.as_str()) {
            return;
        }
        let now = counting.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(FSYNC_MS));
        counting.fetch_sub(1, Ordering::SeqCst);
    })
    .expect("failpoint");

    let produced = leader
        .broker()
        .produce(TOPIC, vec![text_message("second".into())], AckMode::All)
        .await;
    fail::remove("segment::sync");
    produced.expect("the produce under held fsyncs");
    assert_eq!(
        most.load(Ordering::SeqCst),
        NODES,
        "the leader's fsync and its followers' were not under way together"
    );
    for node in &nodes {
        node.shutdown().await;
    }
    drop(scenario);
}
