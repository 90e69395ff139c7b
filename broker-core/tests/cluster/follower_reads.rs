//! Follower reads in one process (three brokers over the in-memory transport, one partition):
//! an in-sync follower serves offset reads with exactly the leader's committed records, wakes
//! a long-poll as it applies, never shows entries it holds that are not committed, and a
//! follower that lost its leader sends reads to the leader (`NotLeader`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use broker_core::broker::{AckMode, PartitionRead};
use broker_core::raft::{FOLLOWER_READ_MAX_LAG_MS, NodeInfo};
use broker_core::{Broker, BrokerError};
use bytes::Bytes;

use crate::support::{Net, agreed_leader, one_partition_topic, open_broker, text_message};

const TOPIC: &str = "orders";
/// Messages committed before the followers are tested.
const COMMITTED: u64 = 10;
/// Messages the leader appends while it cannot commit.
const UNCOMMITTED: usize = 5;

async fn read(broker: &Broker, offset: u64, wait_ms: u64) -> Result<PartitionRead, BrokerError> {
    broker
        .read_partition(TOPIC, 0, offset, 1000, wait_ms, None)
        .await
}

/// What a read shows: each record's offset, id and value.
fn shown(read: &PartitionRead) -> Vec<(u64, String, Bytes)> {
    read.messages
        .iter()
        .map(|m| (m.offset, m.record.id.clone(), m.record.value.clone()))
        .collect()
}

/// Waits until `follower` serves the same records as `leader`, `count` of them.
async fn same_as_leader(follower: &Broker, leader: &Broker, count: usize) -> PartitionRead {
    let expected = read(leader, 0, 0).await.expect("the leader reads");
    assert_eq!(expected.messages.len(), count);
    let mut last = None;
    for _ in 0..100 {
        match read(follower, 0, 0).await {
            Ok(got) if shown(&got) == shown(&expected) => return got,
            other => last = Some(other),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the follower never served the leader's {count} records: {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_sync_follower_serves_only_committed_records_the_same_as_the_leader() {
    let root = tempfile::tempdir().expect("dir");
    let net = Arc::new(Net::default());
    let mut brokers = Vec::new();
    for id in 1..=3 {
        brokers.push(open_broker(id, root.path(), &net).await);
    }
    let members: BTreeMap<u64, NodeInfo> = (1..=3).map(|id| (id, NodeInfo::default())).collect();
    for broker in &brokers {
        broker
            .materialize_topic(one_partition_topic(TOPIC, 42), members.clone())
            .await
            .expect("materialized");
    }
    let led_by = agreed_leader(&brokers, TOPIC).await;
    let by_id = |id: u64| Arc::clone(&brokers[(id - 1) as usize]);
    let lead = by_id(led_by);
    let followers: Vec<u64> = (1..=3).filter(|id| *id != led_by).collect();
    for i in 0..COMMITTED {
        lead.produce(TOPIC, vec![text_message(format!("m{i}"))], AckMode::All)
            .await
            .expect("produced");
    }

    // In sync: each follower serves exactly the leader's records, its end the same.
    for follower in &followers {
        let got = same_as_leader(&by_id(*follower), &lead, COMMITTED as usize).await;
        assert_eq!(got.end_offset, COMMITTED, "follower {follower}");
        assert_eq!(got.next_offset, COMMITTED, "follower {follower}");
    }

    // A long-poll at a follower's end wakes when the follower applies the next record.
    let poller = by_id(followers[0]);
    let poll = tokio::spawn(async move { read(&poller, COMMITTED, 10_000).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    lead.produce(TOPIC, vec![text_message("late".into())], AckMode::All)
        .await
        .expect("produced");
    let woken = poll
        .await
        .expect("joined")
        .expect("the follower's long-poll");
    assert_eq!(woken.messages.len(), 1);
    assert_eq!(woken.messages[0].offset, COMMITTED);
    assert_eq!(&woken.messages[0].record.value[..], b"late");
    let committed = COMMITTED + 1;

    // One follower takes the leader's appends but its answers are lost, the other is cut
    // off: the leader cannot commit what it appends now, though the first follower has it.
    let (holder, lost) = (followers[0], followers[1]);
    net.mute.lock().expect("lock").insert(holder);
    net.cut.lock().expect("lock").insert(lost);
    let writer = Arc::clone(&lead);
    let pending = tokio::spawn(async move {
        let batch = (0..UNCOMMITTED)
            .map(|i| text_message(format!("u{i}")))
            .collect();
        writer.produce(TOPIC, batch, AckMode::All).await
    });
    let holding = by_id(holder);
    let mut uncommitted = false;
    for _ in 0..100 {
        let status = holding.partition_status(TOPIC, 0).expect("a replica");
        if status.last_index > status.applied {
            uncommitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(uncommitted, "the follower never held an uncommitted entry");
    let served = read(&holding, 0, 0)
        .await
        .expect("the follower still hears its leader, so it serves");
    assert_eq!(served.messages.len() as u64, committed, "{served:?}");
    assert_eq!(served.end_offset, committed);
    assert!(
        served
            .messages
            .iter()
            .all(|m| !m.record.value.starts_with(b"u")),
        "an uncommitted record was shown"
    );
    match read(&holding, committed + 1, 0).await {
        Err(BrokerError::NotLeader { leader, .. }) => assert_eq!(leader, Some(led_by)),
        other => panic!("an offset past the follower's end was read there: {other:?}"),
    }

    // The follower cut off stops hearing its leader: its reads go to the leader.
    tokio::time::sleep(Duration::from_millis(3 * FOLLOWER_READ_MAX_LAG_MS)).await;
    match read(&by_id(lost), 0, 0).await {
        Err(BrokerError::NotLeader { .. }) => {}
        other => panic!("a follower out of sync served a read: {other:?}"),
    }

    // Healed: every replica converges on the same committed records again.
    net.mute.lock().expect("lock").clear();
    net.cut.lock().expect("lock").clear();
    // The pending produce's outcome is either; what counts is that all replicas agree.
    drop(pending.await.expect("joined"));
    let led_by = agreed_leader(&brokers, TOPIC).await;
    let lead = by_id(led_by);
    let count = read(&lead, 0, 0)
        .await
        .expect("the leader reads")
        .messages
        .len();
    for follower in (1..=3).filter(|id| *id != led_by) {
        same_as_leader(&by_id(follower), &lead, count).await;
    }
    for broker in &brokers {
        broker.shutdown().await;
    }
}
