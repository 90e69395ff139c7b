//! Retention in a cluster (three nodes in one process over the in-memory transport, small
//! segments, a short `retention_bytes`): every replica deletes old segments through a
//! snapshot and Raft's purge, reads below the start answer from the start as on a single
//! node, and a follower cut off while the leader purged installs the snapshot, serves the
//! same messages at the same offsets, and keeps the subscription's position when it leads.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::broker::{AckMode, Delay, NewMessage};
use broker_core::cluster_node::ClusterNode;
use broker_core::subscription::SubscriptionSpec;
use broker_core::topic::TopicSpec;
use bytes::Bytes;

use crate::support::{Net, all_registered, node_record, receive, start_cluster_node};

/// Segments roll at the smallest size the log takes, so a few hundred messages fill many.
const SEGMENT_BYTES: u64 = 4 * 1024;
/// Keeps about six segments: more than the lease and ack events of the second test take, so
/// the messages after its acked ones stay.
const RETENTION_BYTES: u64 = 24 * 1024;
/// Retention looks often, so the test waits little for it.
const RETENTION_CHECK_MS: u64 = 200;
/// Value bytes of each message: about 25 messages a segment.
const VALUE_BYTES: usize = 100;

async fn start_node(id: u64, root: &Path, net: &Arc<Net>) -> Arc<ClusterNode> {
    // Each start registers anew, as `wharf serve` does: the node knows its metadata caught
    // up once it holds this registration.
    let mut me = node_record(id, format!("zone-{id}"), 7000);
    me.joined_ms = broker_core::clock::now_ms();
    start_cluster_node(me, root, net, &[1, 2, 3], false, |config| {
        config.log.segment_bytes = SEGMENT_BYTES;
        config.retention_check_ms = RETENTION_CHECK_MS;
    })
    .await
}

async fn until(what: &str, done: impl AsyncFn() -> bool) {
    for _ in 0..200 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 20 s");
}

fn message(n: u64) -> NewMessage {
    let mut value = format!("message {n:06} ").into_bytes();
    value.resize(VALUE_BYTES, b'.');
    NewMessage {
        key: None,
        value: Bytes::from(value),
        binary: false,
        headers: Vec::new(),
        tags: Vec::new(),
        id: None,
        delay: None,
        trace: None,
    }
}

/// Three registered nodes serving the one-partition topic `jobs` (small retention), created
/// at the controller leader.
async fn jobs_on_three_nodes(root: &Path, net: &Arc<Net>) -> Vec<Arc<ClusterNode>> {
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(start_node(id, root, net).await);
    }
    until("every node registered and ready", async || {
        all_registered(&nodes)
    })
    .await;
    let controller = nodes[0].controller_leader().expect("a controller leader");
    let admin = nodes[(controller - 1) as usize].clone();
    let topic = TopicSpec {
        name: "jobs".into(),
        partitions: Some(1),
        retention_bytes: Some(RETENTION_BYTES),
        ..TopicSpec::default()
    };
    admin.create_topic(topic).await.expect("topic");
    until("every node serves the topic", async || {
        nodes.iter().all(|n| n.broker().topic_uid("jobs").is_some())
    })
    .await;
    nodes
}

/// Creates the subscription `work` of `jobs` (leases of `lease_ms`) at the controller leader
/// among `nodes`, and waits until each of them has it.
async fn subscribe(nodes: &[Arc<ClusterNode>], lease_ms: u64) {
    let admin = || {
        nodes[0]
            .controller_leader()
            .and_then(|id| nodes.iter().find(|n| n.node_id() == id).cloned())
    };
    until("a controller leader among the nodes", async || {
        admin().is_some()
    })
    .await;
    let work = SubscriptionSpec {
        name: "work".into(),
        start: None,
        ack_timeout_ms: Some(lease_ms),
        retry: None,
        max_deliveries: None,
        dead_letter_topic: None,
        filter: None,
        ordering: None,
    };
    admin()
        .expect("found above")
        .create_subscription("jobs", work)
        .await
        .expect("subscription");
    until("every node has the subscription", async || {
        nodes
            .iter()
            .all(|n| n.broker().subscription_uid("jobs", "work").is_some())
    })
    .await;
}

/// The node leading partition 0 of `jobs`, as every node in `nodes` agrees.
async fn leader_of(nodes: &[Arc<ClusterNode>]) -> u64 {
    for _ in 0..200 {
        let seen: Vec<Option<u64>> = nodes.iter().map(|n| n.broker_leader("jobs", 0)).collect();
        if let Some(Some(leader)) = seen.first()
            && seen.iter().all(|s| *s == Some(*leader))
        {
            return *leader;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("partition 0 has no leader every node agrees on");
}

/// The leader of partition 0 of `jobs` ([`leader_of`]) and one of its followers.
async fn leader_and_follower(nodes: &[Arc<ClusterNode>]) -> (u64, u64) {
    let leader = leader_of(nodes).await;
    let follower = nodes
        .iter()
        .map(|n| n.node_id())
        .find(|id| *id != leader)
        .expect("a follower");
    (leader, follower)
}

/// Moves the leadership of partition 0 of `jobs` to node `to`, through the controller leader
/// among `nodes`, and waits until every node agrees.
async fn lead_at(nodes: &[Arc<ClusterNode>], to: u64) {
    // A follower cut off or stopped may have led the controller, or started controller
    // elections meanwhile: ask whichever node leads the controller once one does.
    let mut moved = false;
    for _ in 0..100 {
        if let Some(controller) = nodes[0].controller_leader() {
            match nodes[(controller - 1) as usize]
                .move_leader("jobs", 0, to)
                .await
            {
                Ok(_) => {
                    moved = true;
                    break;
                }
                Err(BrokerError::NotLeader { .. }) => {}
                Err(other) => panic!("moved: {other:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(moved, "the leadership never moved to node {to}");
    assert_eq!(leader_of(nodes).await, to);
}

/// Produces messages `from..to` at `leader`, ten a batch.
async fn produce(leader: &ClusterNode, from: u64, to: u64) {
    let mut n = from;
    while n < to {
        let batch: Vec<NewMessage> = (n..(n + 10).min(to)).map(message).collect();
        let count = batch.len() as u64;
        leader
            .broker()
            .produce("jobs", batch, AckMode::All)
            .await
            .expect("produced");
        n += count;
    }
}

/// `(start, end)` offsets of partition 0 on `node`, and the values from `offset`.
async fn read(node: &ClusterNode, offset: u64) -> (u64, u64, Vec<(u64, Bytes)>) {
    try_read(node, offset).await.expect("the node serves reads")
}

/// [`read`], or `None` while `node` is a follower not in sync with its leader (cut off, or
/// catching up after a restart): it sends reads to the leader then.
async fn try_read(node: &ClusterNode, offset: u64) -> Option<(u64, u64, Vec<(u64, Bytes)>)> {
    let read = match node
        .broker()
        .read_partition("jobs", 0, offset, 1_000, 0, None)
        .await
    {
        Ok(read) => read,
        Err(BrokerError::NotLeader { .. }) => return None,
        Err(other) => panic!("reads: {other:?}"),
    };
    let values = read
        .messages
        .iter()
        .map(|m| (m.offset, m.record.value.clone()))
        .collect();
    Some((read.start_offset, read.end_offset, values))
}

async fn shutdown(nodes: &[Arc<ClusterNode>]) {
    for node in nodes {
        node.shutdown().await;
        node.broker().shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_replica_deletes_old_segments_and_produce_and_consume_go_on() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = jobs_on_three_nodes(root.path(), &net).await;
    subscribe(&nodes, 30_000).await;
    let leader_id = leader_of(&nodes).await;
    let leader = nodes[(leader_id - 1) as usize].clone();
    produce(&leader, 0, 400).await;
    until("every replica deleted old segments", async || {
        let mut all = true;
        for node in &nodes {
            let (start, end, _) = read(node, 0).await;
            all &= start > 0 && end == 400;
        }
        all
    })
    .await;
    for node in &nodes {
        // As on a single node: a read below the start answers from the start (which
        // retention may move on meanwhile).
        let (known_start, _, _) = read(node, 0).await;
        let (start, end, values) = read(node, 0).await;
        eprintln!("node {}: offsets {start}..{end}", node.node_id());
        let (first, value) = values.first().cloned().expect("messages");
        assert!(first >= known_start && first > 0, "read from {first}");
        assert_eq!(value, message(first).value);
        assert_eq!(values.last().map(|(o, _)| *o), Some(399));
        assert!(start < 400 - 50, "retention kept too little: {start}");
    }
    // Produce goes on after the purge, and the subscription reads from the log's start.
    // Deliveries and acks are log records too, so in this small log they push retention on
    // while the test reads: a message may be deleted before it is delivered or acked.
    produce(&leader, 400, 410).await;
    let first_start = read(&leader, 0).await.0;
    let mut seen = BTreeSet::new();
    let mut acked = BTreeSet::new();
    loop {
        let start = read(&leader, 0).await.0;
        if (start..410).all(|offset| seen.contains(&offset)) {
            break;
        }
        let got = leader
            .broker()
            .receive("jobs", "work", receive(100, 1_000))
            .await
            .expect("received");
        assert!(!got.is_empty(), "nothing more to receive after {seen:?}");
        let mut receipts = Vec::new();
        for delivery in got {
            let offset = delivery.message.offset;
            assert!(offset >= first_start, "{offset} is below the start");
            assert!(seen.insert(offset), "delivered twice");
            assert_eq!(delivery.message.record.value, message(offset).value);
            receipts.push((delivery.receipt, offset));
        }
        let asked: Vec<String> = receipts.iter().map(|(r, _)| r.clone()).collect();
        let outcome = leader
            .broker()
            .ack("jobs", "work", &asked)
            .await
            .expect("acked");
        // An ack is refused only for a message retention deleted since its delivery.
        let start = read(&leader, 0).await.0;
        for (receipt, offset) in receipts {
            if outcome.failed.iter().any(|(r, _)| *r == receipt) {
                assert!(
                    offset < start,
                    "the ack of {offset} (start {start}) was refused"
                );
            } else {
                acked.insert(offset);
            }
        }
    }
    assert_eq!(seen.last(), Some(&409));
    assert!(
        (400..410).all(|offset| acked.contains(&offset)),
        "acked {acked:?}"
    );
    shutdown(&nodes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_cut_off_behind_the_purge_installs_the_snapshot_and_keeps_the_subscription() {
    follower_behind_the_purge(Behind::CutOff).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_stopped_behind_the_purge_restarts_installs_the_snapshot_and_keeps_the_subscription()
 {
    follower_behind_the_purge(Behind::Stopped).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_stopped_before_the_subscription_existed_gets_its_table_from_the_snapshot() {
    follower_behind_the_purge(Behind::StoppedBeforeSubscription).await;
}

/// A delayed message's due time: far enough that it never comes due while a test runs.
const FAR_DELAY_MS: u64 = 600_000;

/// A follower cut off while the leader purged the segments holding a delayed message's
/// scheduled event and an id's first produce installs the snapshot; once it leads, the
/// delayed message is still on its schedule (its cancel finds it: a follower that lost it
/// would never deliver an acknowledged message) and a retried produce of the id is answered
/// as a duplicate with its first place, not stored again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_installing_the_snapshot_keeps_the_delayed_messages_and_the_dedup_ids() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let nodes = jobs_on_three_nodes(root.path(), &net).await;
    let (leader_id, lagging_id) = leader_and_follower(&nodes).await;
    let leader = nodes[(leader_id - 1) as usize].clone();
    let lagging = nodes[(lagging_id - 1) as usize].clone();
    net.cut.lock().expect("lock").insert(lagging_id);

    let mut later = message(0);
    later.id = Some("later".into());
    later.delay = Some(Delay::AfterMs(FAR_DELAY_MS));
    let mut once = message(0);
    once.id = Some("once".into());
    let first = leader
        .broker()
        .produce("jobs", vec![later, once.clone()], AckMode::All)
        .await
        .expect("produced");
    let once_at = first.messages[1].offset.expect("an offset");
    produce(&leader, 1, 300).await;
    until("the leader purged the first segments", async || {
        read(&leader, 0).await.0 > once_at + 50
    })
    .await;
    net.cut.lock().expect("lock").remove(&lagging_id);
    // A follower not in sync with its leader sends reads there (None): wait until it serves
    // its own log, caught up.
    let start = std::cell::Cell::new(None);
    until("the lagging follower caught up", async || {
        // The node back from its cut-off may call an election: either may send reads on.
        let Some((_, end, _)) = try_read(&leader, 0).await else {
            return false;
        };
        start.set(
            try_read(&lagging, 0)
                .await
                .filter(|(_, lagging_end, _)| *lagging_end == end)
                .map(|(start, _, _)| start),
        );
        start.get().is_some()
    })
    .await;
    let start = start.get().expect("caught up above");
    assert!(start > once_at, "the follower was given the whole log");

    lead_at(&nodes, lagging_id).await;
    let mut again = None;
    for _ in 0..50 {
        match lagging
            .broker()
            .produce("jobs", vec![once.clone()], AckMode::All)
            .await
        {
            Ok(outcome) => {
                again = Some(outcome);
                break;
            }
            // The new leader may still be applying its predecessor's entries.
            Err(error) => eprintln!("produce at the new leader: {error}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = again.expect("the new leader takes produces");
    let cancelled = lagging.broker().cancel_delayed("jobs", "later").await;
    shutdown(&nodes).await;
    let retried = &again.messages[0];
    assert!(
        retried.duplicate && retried.offset == Some(once_at) && cancelled.is_ok(),
        "the retried produce (first at {once_at}): {retried:?}; the delayed message's cancel \
         (an error if the schedule lost it): {cancelled:?}"
    );
}

/// How the follower falls behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behind {
    /// Cut off from the others, running.
    CutOff,
    /// Stopped, then started again from its files.
    Stopped,
    /// Stopped before the subscription was created (so it opens the subscription only when
    /// it is back, with its start in the purged log), then started again.
    StoppedBeforeSubscription,
}

/// A follower falls behind while the leader delivers and acks messages and purges their
/// segments; back, it installs the snapshot, holds the same messages at the same offsets,
/// and once it leads the subscription goes on where it was.
async fn follower_behind_the_purge(behind: Behind) {
    const LEASE_MS: u64 = 1_500;
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut nodes = jobs_on_three_nodes(root.path(), &net).await;
    if behind != Behind::StoppedBeforeSubscription {
        subscribe(&nodes, LEASE_MS).await;
    }
    let (leader_id, lagging_id) = leader_and_follower(&nodes).await;
    let leader = nodes[(leader_id - 1) as usize].clone();
    let lagging_at = (lagging_id - 1) as usize;
    match behind {
        Behind::CutOff => {
            net.cut.lock().expect("lock").insert(lagging_id);
        }
        Behind::Stopped | Behind::StoppedBeforeSubscription => {
            let stopped = nodes.remove(lagging_at);
            shutdown(std::slice::from_ref(&stopped)).await;
            net.nodes.lock().expect("lock").remove(&lagging_id);
        }
    }
    if behind == Behind::StoppedBeforeSubscription {
        subscribe(&nodes, LEASE_MS).await;
    }

    // Everything of 0..300 is delivered as it comes (retention deletes old segments whether
    // their messages were read or not); all but the last three are acked; 300..320 wait.
    let mut delivered = Vec::new();
    for from in (0..300).step_by(10) {
        produce(&leader, from, from + 10).await;
        while delivered.len() < from as usize + 10 {
            let got = leader
                .broker()
                .receive("jobs", "work", receive(100, 1_000))
                .await
                .expect("received");
            assert!(!got.is_empty(), "only {} delivered", delivered.len());
            // Acked at once, well within the lease.
            let receipts: Vec<String> = got
                .iter()
                .filter(|d| d.message.offset < 297)
                .map(|d| d.receipt.clone())
                .collect();
            let acked = leader
                .broker()
                .ack("jobs", "work", &receipts)
                .await
                .expect("acked");
            assert_eq!(acked.succeeded, receipts.len());
            delivered.extend(got);
        }
    }
    let offsets: Vec<u64> = delivered.iter().map(|d| d.message.offset).collect();
    assert_eq!(offsets, (0..300).collect::<Vec<u64>>());
    produce(&leader, 300, 320).await;
    until("the leader purged past the lagging follower", async || {
        read(&leader, 0).await.0 > 0
    })
    .await;
    let lagging = match behind {
        Behind::CutOff => {
            let lagging = nodes[lagging_at].clone();
            // Cut off, it is not in sync: it serves no reads, or (not yet timed out) none of
            // the messages it never got.
            if let Some((_, end, _)) = try_read(&lagging, 0).await {
                assert_eq!(end, 0, "the cut-off follower got messages");
            }
            net.cut.lock().expect("lock").remove(&lagging_id);
            lagging
        }
        Behind::Stopped | Behind::StoppedBeforeSubscription => {
            let lagging = start_node(lagging_id, root.path(), &net).await;
            nodes.insert(lagging_at, Arc::clone(&lagging));
            lagging
        }
    };
    until("the lagging follower caught up", async || {
        try_read(&lagging, 0)
            .await
            .is_some_and(|(_, end, _)| end == 320)
    })
    .await;
    let (start, end, values) = read(&lagging, 0).await;
    eprintln!("the lagging follower holds {start}..{end}");
    assert!(
        start > 0,
        "the follower was given the whole log, not a snapshot"
    );
    // The leader may have purged further meanwhile: compare what both still hold.
    let (_, _, at_leader) = read(&leader, start).await;
    let leader_from = at_leader.first().map_or(end, |(offset, _)| *offset);
    let held: Vec<_> = values
        .iter()
        .filter(|(offset, _)| *offset >= leader_from)
        .cloned()
        .collect();
    assert_eq!(held, at_leader, "the replicas differ");
    for (offset, value) in &values {
        assert_eq!(value, &message(*offset).value);
    }

    // The follower leads: acked messages never come back, the three leased ones do once their
    // leases end, and 300..320 are delivered once each.
    lead_at(&nodes, lagging_id).await;
    // Each delivery is acked at once, so none comes back a second time.
    let mut firsts = BTreeSet::new();
    let mut again = BTreeSet::new();
    let expected_again: BTreeSet<u64> = (start.max(297)..300).collect();
    let deadline = std::time::Instant::now() + Duration::from_millis(LEASE_MS + 8_000);
    while (firsts.len() < 20 || again.len() < expected_again.len())
        && std::time::Instant::now() < deadline
    {
        // Restarted, it may lead before its copy of the metadata has caught up with the
        // subscription: it answers `not_leader` (not "no such subscription") meanwhile.
        let got = match lagging
            .broker()
            .receive("jobs", "work", receive(100, 500))
            .await
        {
            Ok(got) => got,
            Err(BrokerError::NotLeader { .. }) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(other) => panic!("received: {other:?}"),
        };
        for delivery in &got {
            let offset = delivery.message.offset;
            assert!(offset >= 297, "acked message {offset} delivered again");
            let (attempt, fresh) = match offset {
                300.. => (1, firsts.insert(offset)),
                _ => (2, again.insert(offset)),
            };
            assert!(fresh, "{offset} delivered twice");
            assert_eq!(delivery.delivery_attempt, attempt, "attempt of {offset}");
            assert_eq!(delivery.message.record.value, message(offset).value);
        }
        let receipts: Vec<String> = got.iter().map(|d| d.receipt.clone()).collect();
        if !receipts.is_empty() {
            let acked = lagging
                .broker()
                .ack("jobs", "work", &receipts)
                .await
                .expect("acked");
            assert_eq!(acked.succeeded, receipts.len());
        }
    }
    assert!(start <= 300, "retention deleted unread messages: {start}");
    assert_eq!(firsts, (300..320).collect::<BTreeSet<u64>>());
    assert_eq!(again, expected_again);
    let stats = lagging
        .broker()
        .describe_subscription("jobs", "work")
        .await
        .expect("described")
        .stats;
    assert_eq!(
        stats.acked,
        297 + 20 + expected_again.len() as u64,
        "{stats:?}"
    );
    shutdown(&nodes).await;
}
