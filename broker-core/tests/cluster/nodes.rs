//! Three cluster nodes in one process (brokers, controller replicas, reconcilers) over the
//! in-memory transport: nodes register, a topic created at the controller leader is served
//! by every node, a node that does not lead the controller refuses admin naming the leader,
//! and a deleted topic is gone everywhere.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::broker::{AckMode, Delivery, NewMessage, ReceiveRequest};
use broker_core::cluster_node::ClusterNode;
use broker_core::subscription::SubscriptionSpec;
use broker_core::topic::TopicSpec;
use bytes::Bytes;

use crate::support::{
    Net, jobs_on_three_nodes, node_record, read_own_replica, receive, start_cluster_node,
    start_node, until, work,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_created_at_the_controller_leader_is_served_by_every_node() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(start_node(id, root.path(), &net).await);
    }
    until("every node registered and ready", || {
        nodes.iter().all(|n| n.ready())
    })
    .await;
    until("every node sees all three", || {
        nodes.iter().all(|n| n.state().nodes().len() == 3)
    })
    .await;
    let leader_id = nodes[0].controller_leader().expect("a controller leader");
    let leader = &nodes[(leader_id - 1) as usize];
    let follower = nodes
        .iter()
        .find(|n| n.node_id() != leader_id)
        .expect("follower");
    let spec = || TopicSpec {
        name: "orders".into(),
        partitions: Some(3),
        ..TopicSpec::default()
    };
    match follower.create_topic(spec()).await {
        Err(BrokerError::NotLeader { leader, .. }) => assert_eq!(leader, Some(leader_id)),
        other => panic!("a follower created a topic: {other:?}"),
    }
    let info = leader.create_topic(spec()).await.expect("created");
    assert_eq!(info.config.replication_factor, 3);
    match leader.create_topic(spec()).await {
        Err(BrokerError::TopicExists { .. }) => {}
        other => panic!("a second topic of the same name: {other:?}"),
    }
    // More copies than nodes (a replication factor below the node count is fine).
    let too_many = TopicSpec {
        name: "many".into(),
        replication_factor: Some(4),
        ..TopicSpec::default()
    };
    assert!(matches!(
        leader.create_topic(too_many).await,
        Err(BrokerError::InvalidArgument { .. })
    ));
    until("every node serves the topic", || {
        nodes.iter().all(|n| n.state().topic("orders").is_some())
    })
    .await;
    // A produce on a partition leader is committed; every node reads it.
    let broker_of = |id: u64| nodes[(id - 1) as usize].clone();
    let mut writer = None;
    for _ in 0..100 {
        if let Some(l) = broker_of(1).broker_leader("orders", 0) {
            writer = Some(l);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let writer = broker_of(writer.expect("partition 0 has a leader"));
    let message = NewMessage {
        key: None,
        value: Bytes::from_static(b"hello"),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
        trace: None,
    };
    let produced = writer
        .broker()
        .produce("orders", vec![message], AckMode::All)
        .await
        .expect("produced");
    let partition = produced.messages[0].partition;
    for node in &nodes {
        let mut seen = 0;
        for _ in 0..100 {
            let read = read_own_replica(node.broker(), "orders", partition, 0, 10).await;
            seen = read.messages.len();
            if seen == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(seen, 1, "node {} did not get the message", node.node_id());
    }
    leader.delete_topic("orders").await.expect("deleted");
    until("every node dropped the topic", || {
        nodes
            .iter()
            .all(|n| n.broker().topic_uid("orders").is_none())
    })
    .await;
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

/// After a failover slower than the lease: b is acked by its old receipt unless it came
/// back already; b (then) and c come back with their attempts raised, a (acked) never does;
/// all are acked here.
async fn redelivered_after_a_slow_failover(
    new_leader: &ClusterNode,
    b_receipt: &str,
    first: Vec<Delivery>,
) {
    let deadline = std::time::Instant::now() + Duration::from_millis(LEASE_MS + 10_000);
    let b_acked = new_leader
        .broker()
        .ack("jobs", "work", &[b_receipt.to_owned()])
        .await
        .expect("acked")
        .succeeded
        == 1;
    let mut seen = BTreeSet::new();
    let done = |seen: &BTreeSet<Vec<u8>>| {
        seen.contains(&b"c"[..]) && (b_acked || seen.contains(&b"b"[..]))
    };
    let mut first = Some(first);
    while !done(&seen) && std::time::Instant::now() < deadline {
        let got = match first.take() {
            Some(first) => first,
            None => new_leader
                .broker()
                .receive("jobs", "work", receive(10, 2_000))
                .await
                .expect("received"),
        };
        for delivery in &got {
            let value = delivery.message.record.value.to_vec();
            assert_ne!(value, b"a".to_vec(), "the acked message came back");
            assert!(
                delivery.delivery_attempt >= 2,
                "attempt not raised: {delivery:?}"
            );
            seen.insert(value);
        }
        let receipts: Vec<String> = got.iter().map(|d| d.receipt.clone()).collect();
        if !receipts.is_empty() {
            new_leader
                .broker()
                .ack("jobs", "work", &receipts)
                .await
                .expect("acked");
        }
    }
    assert!(done(&seen), "b or c never came back: {seen:?}");
}

/// The lease of the failover test's subscription.
const LEASE_MS: u64 = 4_000;

/// A receive on `node`, asked again while it answers not_leader: a new partition leader
/// serves subscriptions only once it has applied its term's first entry, which may come a
/// moment after every node agrees it leads.
async fn receive_once_serving(node: &ClusterNode, request: ReceiveRequest) -> Vec<Delivery> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match node.broker().receive("jobs", "work", request.clone()).await {
            Err(BrokerError::NotLeader { .. }) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other.expect("received"),
        }
    }
}

/// The node leading partition 0 of `topic`, as every live node agrees.
async fn partition_leader(nodes: &[Arc<ClusterNode>], topic: &str) -> u64 {
    let mut seen = Vec::new();
    for _ in 0..150 {
        seen = nodes.iter().map(|n| n.broker_leader(topic, 0)).collect();
        if let Some(Some(leader)) = seen.first()
            && seen.iter().all(|s| *s == Some(*leader))
            && nodes.iter().any(|n| n.node_id() == *leader)
        {
            return *leader;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ids: Vec<u64> = nodes.iter().map(|n| n.node_id()).collect();
    panic!("partition 0 of {topic} has no leader nodes {ids:?} agree on: they see {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_keeps_its_acks_and_leases_when_its_partition_leader_dies() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = jobs_on_three_nodes(root.path(), &net, Some(LEASE_MS)).await;
    let controller = nodes[0].controller_leader().expect("a controller leader");
    let other = nodes
        .iter()
        .find(|n| n.node_id() != controller)
        .expect("another node");
    match other.create_subscription("jobs", work(None)).await {
        Err(BrokerError::NotLeader { leader, .. }) => assert_eq!(leader, Some(controller)),
        other => panic!("a follower created a subscription: {other:?}"),
    }

    let leader_id = partition_leader(&nodes, "jobs").await;
    let leader = nodes[(leader_id - 1) as usize].clone();
    let message = |text: &'static str| NewMessage {
        key: None,
        value: Bytes::from_static(text.as_bytes()),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
        trace: None,
    };
    leader
        .broker()
        .produce(
            "jobs",
            vec![message("a"), message("b"), message("c")],
            AckMode::All,
        )
        .await
        .expect("produced");
    let follower = nodes
        .iter()
        .find(|n| n.node_id() != leader_id)
        .expect("follower");
    match follower
        .broker()
        .receive("jobs", "work", receive(10, 0))
        .await
    {
        Err(BrokerError::NotLeader { leader, .. }) => assert_eq!(leader, Some(leader_id)),
        other => panic!("a follower served a receive: {other:?}"),
    }
    let granted_at = std::time::Instant::now();
    let got = leader
        .broker()
        .receive("jobs", "work", receive(10, 1_000))
        .await
        .expect("received");
    let values: Vec<&[u8]> = got.iter().map(|d| &d.message.record.value[..]).collect();
    assert_eq!(values, [b"a", b"b", b"c"]);
    let acked = leader
        .broker()
        .ack("jobs", "work", &[got[0].receipt.clone()])
        .await
        .expect("acked");
    assert_eq!(acked.succeeded, 1);
    // The leases of b and c are recorded without waiting; give them a moment to commit.
    tokio::time::sleep(Duration::from_millis(300)).await;

    leader.shutdown().await;
    leader.broker().shutdown().await;
    net.nodes.lock().expect("lock").remove(&leader_id);
    let survivors: Vec<Arc<ClusterNode>> = nodes
        .iter()
        .filter(|n| n.node_id() != leader_id)
        .cloned()
        .collect();
    let new_id = partition_leader(&survivors, "jobs").await;
    let new_leader = nodes[(new_id - 1) as usize].clone();

    // The new leader serves the subscription once it has proved its leadership (applied its
    // term's first entry); until then a receive answers not_leader: ask again until it serves.
    let (early, served_at) = loop {
        let asked_at = granted_at.elapsed();
        match new_leader
            .broker()
            .receive("jobs", "work", receive(10, 0))
            .await
        {
            Err(BrokerError::NotLeader { .. })
                if asked_at < Duration::from_millis(LEASE_MS + 10_000) =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => break (other.expect("received"), asked_at),
        }
    };
    // A failover slower than most of the lease (a loaded machine) leaves too little of it
    // to check the lease's timing: then b and c may already be delivered again.
    let fast = served_at < Duration::from_millis(LEASE_MS - 500);
    eprintln!("failover done {served_at:?} after the grant");
    if !fast {
        redelivered_after_a_slow_failover(&new_leader, &got[1].receipt, early).await;
    } else {
        // b and c are in flight until their leases end: nothing to deliver before then.
        assert!(early.is_empty(), "delivered during the lease: {early:?}");
        // b's receipt from the dead leader acks it on the new one.
        let acked = new_leader
            .broker()
            .ack("jobs", "work", &[got[1].receipt.clone()])
            .await
            .expect("acked");
        assert_eq!(acked.succeeded, 1, "the old receipt: {acked:?}");
        // c comes back once its lease has ended, as its second delivery; a is never
        // redelivered.
        let mut again = Vec::new();
        while again.is_empty() && granted_at.elapsed() < Duration::from_millis(LEASE_MS + 10_000) {
            again = new_leader
                .broker()
                .receive("jobs", "work", receive(10, 2_000))
                .await
                .expect("received");
        }
        assert!(granted_at.elapsed() >= Duration::from_millis(LEASE_MS - 100));
        let redelivered: Vec<(&[u8], u32)> = again
            .iter()
            .map(|d| (&d.message.record.value[..], d.delivery_attempt))
            .collect();
        assert_eq!(redelivered, [(&b"c"[..], 2)]);
        new_leader
            .broker()
            .ack("jobs", "work", &[again[0].receipt.clone()])
            .await
            .expect("acked");
    }
    // A new message goes to the new leader and is delivered once.
    new_leader
        .broker()
        .produce("jobs", vec![message("d")], AckMode::All)
        .await
        .expect("produced");
    let fresh = new_leader
        .broker()
        .receive("jobs", "work", receive(10, 2_000))
        .await
        .expect("received");
    let fresh: Vec<(&[u8], u32)> = fresh
        .iter()
        .map(|d| (&d.message.record.value[..], d.delivery_attempt))
        .collect();
    assert_eq!(fresh, [(&b"d"[..], 1)]);
    for node in &survivors {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

/// A partition leader cut off from the others is replaced by them, yet believes it leads until
/// it hears of the newer term. Meanwhile it must hand out nothing from its table, which the new
/// leader has moved past: here the new leader delivered a and b and had them acked, and the old
/// one would deliver them again as first deliveries (the pause-leader fault test saw a leader
/// resumed after SIGSTOP do exactly that to nine acked messages).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_leader_cut_off_from_the_others_hands_out_no_message() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = jobs_on_three_nodes(root.path(), &net, None).await;
    let old_id = partition_leader(&nodes, "jobs").await;
    let old = nodes[(old_id - 1) as usize].clone();
    let nothing_yet = receive_once_serving(&old, receive(10, 0)).await;
    assert!(nothing_yet.is_empty(), "{nothing_yet:?}");
    let message = |text: &'static str| NewMessage {
        key: None,
        value: Bytes::from_static(text.as_bytes()),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
        trace: None,
    };
    old.broker()
        .produce("jobs", vec![message("a"), message("b")], AckMode::All)
        .await
        .expect("produced");

    net.cut.lock().expect("lock").insert(old_id);
    let survivors: Vec<Arc<ClusterNode>> = nodes
        .iter()
        .filter(|n| n.node_id() != old_id)
        .cloned()
        .collect();
    let new_id = partition_leader(&survivors, "jobs").await;
    let new_leader = nodes[(new_id - 1) as usize].clone();
    let mut got = Vec::new();
    while got.len() < 2 {
        let more = receive_once_serving(&new_leader, receive(10, 2_000)).await;
        assert!(!more.is_empty(), "the new leader delivers a and b");
        got.extend(more);
    }
    let receipts: Vec<String> = got.iter().map(|d| d.receipt.clone()).collect();
    let acked = new_leader
        .broker()
        .ack("jobs", "work", &receipts)
        .await
        .expect("acked");
    assert_eq!(acked.succeeded, 2);

    match old.broker().receive("jobs", "work", receive(10, 0)).await {
        Ok(delivered) if delivered.is_empty() => {}
        // Its leases cannot commit without the others: refused, or timed out, never handed out.
        Err(BrokerError::NotLeader { .. } | BrokerError::ReplicationTimeout { .. }) => {}
        other => panic!("the cut-off leader handed out messages: {other:?}"),
    }
    net.cut.lock().expect("lock").remove(&old_id);
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

/// A new partition leader's table continues from the cursor of its last checkpoint, with the
/// acks since replayed as settled ahead of it: its first receive after the failover must hand
/// out the message still to deliver, not read the settled stretch again a few records a
/// receive (2,000 acked messages kept one produced after a cut waiting 25 receives; in a
/// cluster whose producers had stopped, 37 messages waited 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_delivers_the_first_unacked_message_at_once_after_many_acked() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = jobs_on_three_nodes(root.path(), &net, None).await;
    let old_id = partition_leader(&nodes, "jobs").await;
    let old = nodes[(old_id - 1) as usize].clone();
    let message = |value: String| NewMessage {
        value: Bytes::from(value),
        ..NewMessage::default()
    };
    for round in 0..20 {
        let batch = (0..100).map(|i| message(format!("m{round}-{i}"))).collect();
        old.broker()
            .produce("jobs", batch, AckMode::All)
            .await
            .expect("produced");
    }
    let mut acked = 0;
    while acked < 2_000 {
        let got = receive_once_serving(&old, receive(100, 1_000)).await;
        assert!(
            !got.is_empty(),
            "the leader delivers all 2,000 ({acked} so far)"
        );
        let receipts: Vec<String> = got.iter().map(|d| d.receipt.clone()).collect();
        let outcome = old
            .broker()
            .ack("jobs", "work", &receipts)
            .await
            .expect("acked");
        acked += outcome.succeeded;
    }
    net.cut.lock().expect("lock").insert(old_id);
    let survivors: Vec<Arc<ClusterNode>> = nodes
        .iter()
        .filter(|n| n.node_id() != old_id)
        .cloned()
        .collect();
    let new_id = partition_leader(&survivors, "jobs").await;
    let new_leader = nodes[(new_id - 1) as usize].clone();
    let mut produced = false;
    for _ in 0..100 {
        match new_leader
            .broker()
            .produce("jobs", vec![message("after".into())], AckMode::All)
            .await
        {
            Ok(_) => {
                produced = true;
                break;
            }
            Err(BrokerError::NotLeader { .. }) => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(other) => panic!("produce at the new leader: {other:?}"),
        }
    }
    assert!(produced, "the new leader took a produce");
    let first = receive_once_serving(&new_leader, receive(10, 0)).await;
    let values: Vec<&[u8]> = first
        .iter()
        .map(|d| d.message.record.value.as_ref())
        .collect();
    assert_eq!(
        values,
        vec![b"after".as_slice()],
        "one receive hands it out"
    );
    net.cut.lock().expect("lock").remove(&old_id);
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

/// A node restarted after a subscription was created, and cut off so that its copy of the
/// metadata cannot catch up, answers `not_leader` (503, retried) for a subscription it does
/// not know yet rather than "no such subscription" (404, final); once it has caught up it
/// serves the subscription, and one that does not exist is not found again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_behind_on_the_metadata_calls_no_subscription_missing() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut nodes = jobs_on_three_nodes(root.path(), &net, None).await;
    // A follower of the partition stops (its leader stays, so the subscription's start is
    // written at once).
    let leader = partition_leader(&nodes, "jobs").await;
    let gone = (1..=3).find(|id| *id != leader).expect("a follower");
    let stopped = nodes.remove((gone - 1) as usize);
    stopped.shutdown().await;
    stopped.broker().shutdown().await;
    net.nodes.lock().expect("lock").remove(&gone);
    drop(stopped);
    until("a controller leader the other two agree on", || {
        nodes[0]
            .controller_leader()
            .is_some_and(|id| id != gone && nodes[1].controller_leader() == Some(id))
    })
    .await;
    let controller = nodes[0].controller_leader().expect("found above");
    let admin = nodes
        .iter()
        .find(|n| n.node_id() == controller)
        .expect("among them");
    let late = SubscriptionSpec {
        name: "late".into(),
        ..work(None)
    };
    admin
        .create_subscription("jobs", late)
        .await
        .expect("subscription");

    // Back, as `wharf serve` starts a node (registering anew), but cut off.
    net.cut.lock().expect("lock").insert(gone);
    let mut me = node_record(gone, format!("zone-{gone}"), 7000);
    me.joined_ms = broker_core::clock::now_ms();
    let back = start_cluster_node(me, root.path(), &net, &[1, 2, 3], false, |_| {}).await;
    assert!(!back.ready(), "ready before its metadata caught up");
    for name in ["late", "nope"] {
        match back.broker().receive("jobs", name, receive(1, 0)).await {
            Err(BrokerError::NotLeader { .. }) => {}
            other => panic!("{name} at a node behind on the metadata: {other:?}"),
        }
    }

    net.cut.lock().expect("lock").remove(&gone);
    until("the restarted node caught up with the metadata", || {
        back.ready() && back.broker().subscription_uid("jobs", "late").is_some()
    })
    .await;
    let mut answer = None;
    for _ in 0..100 {
        match back.broker().receive("jobs", "nope", receive(1, 0)).await {
            Err(BrokerError::NotLeader { .. }) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => {
                answer = Some(other);
                break;
            }
        }
    }
    assert!(
        matches!(answer, Some(Err(BrokerError::SubscriptionNotFound { .. }))),
        "a missing subscription once caught up: {answer:?}"
    );
    back.shutdown().await;
    back.broker().shutdown().await;
    for node in &nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}
