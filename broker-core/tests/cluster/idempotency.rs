//! A client message id is stored at most once per topic in a cluster, whatever happens between
//! its attempts: a retry while the first is still in Raft (its caller gone), at a new leader
//! after a leadership move, at a new leader that holds the first attempt uncommitted after its
//! old leader was cut off, and at a leader that cannot commit the first attempt. Three nodes in
//! one process over the in-memory network ([`Net`]: cut, mute). Each case failed before the
//! decision was made from what the partition's leader's log holds: followers' indexes lacked
//! the ids their logs held, and a failed or abandoned attempt freed its ids for a second copy.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::broker::{AckMode, Delay, NewMessage, ProduceOutcome};
use broker_core::cluster_node::ClusterNode;
use broker_core::partitioner::key_hash;
use broker_core::topic::TopicSpec;

use crate::support::{
    Net, controller_leader, read_own_replica, text_message, three_registered_nodes, until,
};

const TOPIC: &str = "ids";

struct Cluster {
    net: Arc<Net>,
    nodes: Vec<Arc<ClusterNode>>,
    _root: tempfile::TempDir,
}

impl Cluster {
    /// Three nodes and a topic of `partitions` partitions (three replicas each), every
    /// partition's leader agreed by every node.
    async fn start(partitions: u32) -> Cluster {
        let root = tempfile::tempdir().expect("dir");
        let net = Arc::new(Net::default());
        let nodes = three_registered_nodes(root.path(), &net).await;
        let spec = TopicSpec {
            name: TOPIC.into(),
            partitions: Some(partitions),
            ..TopicSpec::default()
        };
        controller_leader(&nodes)
            .create_topic(spec)
            .await
            .expect("created");
        let cluster = Cluster {
            net,
            nodes,
            _root: root,
        };
        for partition in 0..partitions {
            cluster.agreed_leader(partition, None).await;
        }
        cluster
    }

    fn node(&self, id: u64) -> &Arc<ClusterNode> {
        &self.nodes[(id - 1) as usize]
    }

    /// The followers of `leader` take its appends, but their answers are lost: nothing
    /// commits, and nobody starts an election.
    fn mute_followers_of(&self, leader: u64) {
        self.net.mute.lock().expect("lock").extend(others(leader));
    }

    /// A produce of `ids` at node `id` on a task of its own, as a client still waiting.
    fn spawn_produce(
        &self,
        id: u64,
        ids: &[String],
    ) -> tokio::task::JoinHandle<broker_core::error::Result<ProduceOutcome>> {
        let node = Arc::clone(self.node(id));
        let messages = batch(ids);
        tokio::spawn(async move { node.broker().produce(TOPIC, messages, AckMode::All).await })
    }

    /// Partition `partition`'s leader once every node not in `apart` names it (and it is not
    /// in `apart` either).
    async fn agreed_leader(&self, partition: u32, apart: Option<u64>) -> u64 {
        let leader = || {
            let seen: Vec<Option<u64>> = self
                .nodes
                .iter()
                .filter(|n| Some(n.node_id()) != apart)
                .map(|n| n.broker_leader(TOPIC, partition))
                .collect();
            seen[0].filter(|l| Some(*l) != apart && seen.iter().all(|s| *s == Some(*l)))
        };
        until("the nodes agree on a leader", || leader().is_some()).await;
        leader().expect("agreed")
    }

    /// What every replica holds of `partition`: each id's offsets, by node.
    async fn stored(&self, partition: u32) -> BTreeMap<u64, BTreeMap<String, Vec<u64>>> {
        let mut stored = BTreeMap::new();
        for node in &self.nodes {
            let read = read_own_replica(node.broker(), TOPIC, partition, 0, 1_000).await;
            let mut ids: BTreeMap<String, Vec<u64>> = BTreeMap::new();
            for message in read.messages {
                ids.entry(message.record.id)
                    .or_default()
                    .push(message.offset);
            }
            stored.insert(node.node_id(), ids);
        }
        stored
    }

    /// Waits until every replica of `partition` holds `count` records.
    async fn replicas_hold(&self, partition: u32, count: u64) {
        for _ in 0..150 {
            let ends = self.stored(partition).await;
            if ends
                .values()
                .all(|ids| ids.values().map(|o| o.len() as u64).sum::<u64>() == count)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the replicas of partition {partition} never all held {count} records");
    }
}

fn with_id(id: &str) -> NewMessage {
    NewMessage {
        id: Some(id.to_owned()),
        ..text_message(format!("value of {id}"))
    }
}

fn batch(ids: &[String]) -> Vec<NewMessage> {
    ids.iter().map(|id| with_id(id)).collect()
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Produces at `node` until it takes the batch: a new leader answers `not_leader` until it
/// has applied its term's first entry, and `overloaded` while its index catches up; a batch
/// whose earlier write failed is `outcome_pending` until the leader's index has met it (a
/// round of its applier after the commit).
async fn produce_at(node: &ClusterNode, messages: Vec<NewMessage>) -> ProduceOutcome {
    for _ in 0..100 {
        match node
            .broker()
            .produce(TOPIC, messages.clone(), AckMode::All)
            .await
        {
            Ok(outcome) => return outcome,
            Err(
                BrokerError::NotLeader { .. }
                | BrokerError::Overloaded { .. }
                | BrokerError::OutcomePending { .. },
            ) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("produce at node {}: {other:?}", node.node_id()),
        }
    }
    panic!("node {} never took the produce", node.node_id());
}

fn others(leader: u64) -> Vec<u64> {
    (1..=3).filter(|n| *n != leader).collect()
}

/// Asserts every replica holds each id at exactly one offset, the same everywhere.
fn each_id_once(stored: &BTreeMap<u64, BTreeMap<String, Vec<u64>>>, ids: &[String]) {
    let first = stored.values().next().expect("a replica");
    for (node, held) in stored {
        assert_eq!(held, first, "node {node}'s replica differs");
        for id in ids {
            assert_eq!(
                held.get(id).map(Vec::len),
                Some(1),
                "id {id} on node {node}: {:?}",
                held.get(id)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_at_a_new_leader_after_a_move_answers_the_ids_stored_under_the_old_one() {
    let cluster = Cluster::start(1).await;
    let old = cluster.agreed_leader(0, None).await;
    let sent = ids("moved", 20);
    let first = produce_at(cluster.node(old), batch(&sent)).await;
    let new = others(old)[0];
    controller_leader(&cluster.nodes)
        .move_leader(TOPIC, 0, new)
        .await
        .expect("moved");
    assert_eq!(cluster.agreed_leader(0, None).await, new);
    let retry = produce_at(cluster.node(new), batch(&sent)).await;
    for (retried, stored) in retry.messages.iter().zip(&first.messages) {
        assert!(
            retried.duplicate,
            "{} stored again at node {new}",
            retried.id
        );
        assert_eq!(
            retried.offset, stored.offset,
            "{}: not the first result",
            retried.id
        );
    }
    cluster.replicas_hold(0, 20).await;
    each_id_once(&cluster.stored(0).await, &sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_message_retried_at_a_new_leader_is_answered_with_its_first_due_time() {
    let cluster = Cluster::start(1).await;
    let old = cluster.agreed_leader(0, None).await;
    let sent = ids("later", 5);
    let delayed = || -> Vec<NewMessage> {
        batch(&sent)
            .into_iter()
            .map(|m| NewMessage {
                delay: Some(Delay::AfterMs(60_000)),
                ..m
            })
            .collect()
    };
    let first = produce_at(cluster.node(old), delayed()).await;
    let new = others(old)[1];
    controller_leader(&cluster.nodes)
        .move_leader(TOPIC, 0, new)
        .await
        .expect("moved");
    assert_eq!(cluster.agreed_leader(0, None).await, new);
    let retry = produce_at(cluster.node(new), delayed()).await;
    for (retried, stored) in retry.messages.iter().zip(&first.messages) {
        assert!(
            retried.duplicate,
            "{} scheduled again at node {new}",
            retried.id
        );
        assert_eq!(
            retried.deliver_at_ms, stored.deliver_at_ms,
            "{}",
            retried.id
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_while_the_first_attempt_is_in_raft_and_its_caller_gone_is_not_stored_twice() {
    let cluster = Cluster::start(1).await;
    let leader = cluster.agreed_leader(0, None).await;
    let sent = ids("in-flight", 5);
    cluster.mute_followers_of(leader);
    let gone = tokio::time::timeout(
        Duration::from_millis(300),
        cluster
            .node(leader)
            .broker()
            .produce(TOPIC, batch(&sent), AckMode::All),
    )
    .await;
    assert!(gone.is_err(), "the first attempt cannot commit while muted");
    let retry = cluster.spawn_produce(leader, &sent);
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.net.mute.lock().expect("lock").clear();
    let retry = retry.await.expect("joined").expect("the retry is answered");
    for retried in &retry.messages {
        assert!(retried.duplicate, "{} stored a second time", retried.id);
    }
    cluster.replicas_hold(0, 5).await;
    each_id_once(&cluster.stored(0).await, &sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_at_a_new_leader_holding_the_first_attempt_uncommitted_answers_it_as_a_duplicate() {
    let cluster = Cluster::start(1).await;
    let old = cluster.agreed_leader(0, None).await;
    let sent = ids("healed", 5);
    let last = |id: u64| {
        let status = cluster.node(id).broker().partition_status(TOPIC, 0);
        status.and_then(|s| s.last_index)
    };
    let before = last(old);
    cluster.mute_followers_of(old);
    let first = cluster.spawn_produce(old, &sent);
    // The followers hold the entry (appended, their answers lost); then the old leader is cut
    // off, they elect one of them, which commits the entry with its term's first one.
    until("both followers hold the first attempt's entry", || {
        others(old).into_iter().all(|f| last(f) > before)
    })
    .await;
    cluster.net.cut.lock().expect("lock").insert(old);
    cluster.net.mute.lock().expect("lock").clear();
    let new = cluster.agreed_leader(0, Some(old)).await;
    let retry = produce_at(cluster.node(new), batch(&sent)).await;
    for retried in &retry.messages {
        assert!(
            retried.duplicate,
            "{} stored again at the new leader {new}, which held it",
            retried.id
        );
    }
    cluster.net.cut.lock().expect("lock").clear();
    let _first = first.await.expect("joined");
    cluster.replicas_hold(0, 5).await;
    each_id_once(&cluster.stored(0).await, &sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_write_timed_out_is_refused_until_its_outcome_is_known_then_answered() {
    let cluster = Cluster::start(1).await;
    let leader = cluster.agreed_leader(0, None).await;
    let sent = ids("timed-out", 5);
    cluster.mute_followers_of(leader);
    let node = cluster.node(leader);
    let first = node
        .broker()
        .produce(TOPIC, batch(&sent), AckMode::All)
        .await;
    assert!(
        matches!(first, Err(BrokerError::ReplicationTimeout { .. })),
        "{first:?}"
    );
    let retry = node
        .broker()
        .produce(TOPIC, batch(&sent), AckMode::All)
        .await;
    assert!(
        matches!(retry, Err(BrokerError::OutcomePending { .. })),
        "a retry of a write that may still commit: {retry:?}"
    );
    cluster.net.mute.lock().expect("lock").clear();
    cluster.replicas_hold(0, 5).await;
    let answered = produce_at(node, batch(&sent)).await;
    for retried in &answered.messages {
        assert!(retried.duplicate, "{} stored a second time", retried.id);
    }
    each_id_once(&cluster.stored(0).await, &sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unkeyed_message_with_an_id_goes_to_the_partition_its_id_hashes_to() {
    let cluster = Cluster::start(3).await;
    let sent = ids("spread", 12);
    let broker = cluster.node(1).broker();
    for id in &sent {
        let expected = key_hash(id) % 3;
        let placed = broker
            .partition_for_message(TOPIC, None, Some(id))
            .expect("topic");
        assert_eq!(placed, Some(expected), "{id}");
        let leader = cluster.agreed_leader(expected, None).await;
        let outcome = produce_at(cluster.node(leader), vec![with_id(id)]).await;
        assert_eq!(outcome.messages[0].partition, expected, "{id}");
    }
    assert_eq!(
        broker
            .partition_for_message(TOPIC, None, None)
            .expect("topic"),
        None,
        "without key or id a message may go anywhere"
    );
}
