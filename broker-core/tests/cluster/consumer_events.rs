//! In a cluster a partition leader records every lease as a `leased` event naming its
//! consumer (the receive's, then the extend's), and every ack names its consumer: what the
//! message trace reads back from the Raft log. A leader cut off from the others, which still
//! believes it leads, hands out nothing its table shows as waiting: the new leader may have
//! delivered it and had it acked meanwhile.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use broker_core::broker::{AckMode, ReceiveRequest};
use broker_core::cluster_node::ClusterNode;
use broker_core::config::FsyncPolicy;
use broker_core::control::{self, ControlOwner};
use broker_core::storage::{LogPosition, PartitionHandle};
use broker_core::subscription::events::SubscriptionEvent;
use broker_core::{LogConfig, Origin};

use crate::support::{Net, jobs_on_three_nodes, text_message, until};

/// The node every node agrees leads partition 0 of `jobs`.
async fn partition_leader(nodes: &[Arc<ClusterNode>]) -> Arc<ClusterNode> {
    for _ in 0..150 {
        let seen: Vec<Option<u64>> = nodes.iter().map(|n| n.broker_leader("jobs", 0)).collect();
        if let Some(Some(leader)) = seen.first()
            && seen.iter().all(|s| *s == Some(*leader))
            && let Some(node) = nodes.iter().find(|n| n.node_id() == *leader)
        {
            return node.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("partition 0 of jobs has no leader every node agrees on");
}

/// The subscription events of the replicated log in `dir` (its node shut down), in log order.
fn subscription_events(dir: PathBuf) -> Vec<SubscriptionEvent> {
    let index = tempfile::tempdir().expect("dir");
    let db = sled::open(index.path()).expect("sled");
    let config = LogConfig {
        fsync: FsyncPolicy::Always,
        ..LogConfig::default()
    };
    let tree = db.open_tree("index").expect("tree");
    let notify = Arc::new(tokio::sync::Notify::new());
    let log = PartitionHandle::open_replicated(dir, tree, config, Arc::clone(&notify), None)
        .expect("open the log");
    // Every entry the log holds is shown: each event here was committed before the call that
    // wrote it answered.
    let last = log.last_entry().expect("entries").index;
    log.publish_applied(last, &notify).expect("shown");
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
async fn leases_extends_and_acks_on_a_partition_leader_name_their_consumer() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = jobs_on_three_nodes(root.path(), &net, None).await;
    let leader = partition_leader(&nodes).await;
    let broker = leader.broker();
    broker
        .produce("jobs", vec![text_message("a".into())], AckMode::All)
        .await
        .expect("produced");
    let alice = Origin {
        principal: Some("alice".into()),
        address: Some("192.0.2.7".parse().expect("an address")),
        node: Some(leader.node_id()),
    };
    // Forwarded from another node: the principal and that node, no address.
    let forwarded = Origin {
        principal: Some("alice".into()),
        address: None,
        node: Some(leader.node_id() % 3 + 1),
    };
    let request = ReceiveRequest {
        max_messages: 1,
        wait_ms: 5_000,
        ..ReceiveRequest::default()
    };
    let got = broker
        .receive_from("jobs", "work", request, Some(&alice))
        .await
        .expect("received");
    assert_eq!(got.len(), 1);
    let receipts = [got[0].receipt.clone()];
    let extended = broker
        .extend_from("jobs", "work", &receipts, 60_000, Some(&forwarded))
        .await
        .expect("extended");
    assert_eq!(extended.succeeded, 1);
    let acked = broker
        .ack_from("jobs", "work", &receipts, Some(&alice))
        .await
        .expect("acked");
    assert_eq!(acked.succeeded, 1);
    let dir = broker.partition_dir("jobs", 0).expect("a partition folder");
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }

    let events = subscription_events(dir);
    let settles: Vec<(&str, u32, Option<&Origin>)> = events
        .iter()
        .filter_map(|event| match event {
            SubscriptionEvent::Leased { attempts, .. } => {
                Some(("leased", *attempts, event.consumer()))
            }
            SubscriptionEvent::Acked { .. } => Some(("acked", 0, event.consumer())),
            SubscriptionEvent::Sought { .. } => None,
            other => panic!("an unexpected event: {other:?}"),
        })
        .collect();
    assert_eq!(
        settles,
        vec![
            ("leased", 1, Some(&alice)),
            ("leased", 1, Some(&forwarded)),
            ("acked", 0, Some(&alice)),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_hands_out_nothing_the_new_leader_may_have_settled() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = jobs_on_three_nodes(root.path(), &net, None).await;
    let old = partition_leader(&nodes).await;
    old.broker()
        .produce("jobs", vec![text_message("a".into())], AckMode::All)
        .await
        .expect("produced");
    let request = |wait_ms| ReceiveRequest {
        max_messages: 1,
        wait_ms,
        ..ReceiveRequest::default()
    };
    net.cut.lock().expect("lock").insert(old.node_id());
    let others: Vec<Arc<ClusterNode>> = nodes
        .iter()
        .filter(|n| n.node_id() != old.node_id())
        .cloned()
        .collect();
    until("the others elect a new leader", || {
        others.iter().all(|n| {
            n.broker_leader("jobs", 0)
                .is_some_and(|l| l != old.node_id())
        })
    })
    .await;
    let new = partition_leader(&others).await;
    // The new leader delivers the message and has it acked.
    let got = new
        .broker()
        .receive("jobs", "work", request(5_000))
        .await
        .expect("received at the new leader");
    assert_eq!(got.len(), 1);
    let acked = new
        .broker()
        .ack("jobs", "work", &[got[0].receipt.clone()])
        .await
        .expect("acked");
    assert_eq!(acked.succeeded, 1);
    // The old leader has heard of no newer term: it still leads in its own eyes, and its
    // table shows the message waiting. It must not hand it out.
    assert_eq!(old.broker_leader("jobs", 0), Some(old.node_id()));
    let stale = tokio::time::timeout(
        Duration::from_secs(3),
        old.broker().receive("jobs", "work", request(0)),
    )
    .await;
    match stale {
        Err(_) | Ok(Err(_)) => {}
        Ok(Ok(got)) => assert!(got.is_empty(), "a deposed leader delivered {got:?}"),
    }
    net.cut.lock().expect("lock").clear();
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

/// A leader whose write a quorum just took hands out at once, even cut off from its
/// followers: they elect no one else within the read lease (`READ_LEASE_MS`), so it
/// needs no heartbeat round of its own (which would fail here, and the leases' commit
/// after it). Each try produces, cuts the leader off at once and receives; a busy machine
/// may let the lease run out before the receive looks, so one of five must hand out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_hands_out_on_a_quorums_recent_answer_without_a_round_of_its_own() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = jobs_on_three_nodes(root.path(), &net, None).await;
    let request = ReceiveRequest {
        max_messages: 1,
        wait_ms: 0,
        ..ReceiveRequest::default()
    };
    // The table goes live (a commit of its own) before any cut.
    let leader = partition_leader(&nodes).await;
    let warm = leader.broker().receive("jobs", "work", request.clone());
    assert!(warm.await.expect("received").is_empty());
    let mut handed_out = 0;
    for try_number in 0..5 {
        let leader = partition_leader(&nodes).await;
        let message = text_message(format!("m{try_number}"));
        leader
            .broker()
            .produce("jobs", vec![message], AckMode::All)
            .await
            .expect("produced");
        net.cut.lock().expect("lock").insert(leader.node_id());
        let got = tokio::time::timeout(
            Duration::from_secs(1),
            leader.broker().receive("jobs", "work", request.clone()),
        )
        .await;
        net.cut.lock().expect("lock").clear();
        if let Ok(Ok(got)) = got {
            handed_out += got.len();
        }
        if handed_out > 0 {
            break;
        }
    }
    assert!(
        handed_out > 0,
        "a leader cut off right after a committed write handed out nothing in five tries"
    );
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}
