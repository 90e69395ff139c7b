//! A subscription table carried by a partition snapshot, installed on a replica whose new log
//! has not caught up yet. The image comes from its leader's checkpoint, which is usually ahead
//! of the snapshot's last entry (it covers the leader's committed log when retention ran), so
//! it knows offsets and settles the new log will only receive later, and the events of that
//! stretch replay again on top of it. Its counters must come out as those of the history
//! itself, whether the subscription was open at the install or opened later (a subscription
//! this replica had not opened yet, or the replica restarted before catching up).

use broker_core::config::FsyncPolicy;
use broker_core::storage::{LogPosition, PartitionHandle};
use broker_core::subscription::events::SubscriptionEvent;
use broker_core::subscription::store::SubscriptionStore;
use broker_core::subscription::{
    Candidate, Filter, LeaseTable, Ordering, RetryPolicy, StartPosition, Subscription,
    SubscriptionConfig, TableImage,
};
use bytes::Bytes;

use crate::support::{TestLog, records, small_segments};

const UID: u64 = 42;
/// Messages the leader's checkpoint has delivered once each.
const DELIVERED: u64 = 10;
/// Of those, `0..ACKED` are acked; the rest are leased.
const ACKED: u64 = 8;
/// The replica's log ends here when the image is installed (the snapshot's next offset).
const LOG_END_AT_INSTALL: u64 = 5;
const LEASE_DEADLINE_MS: u64 = 1_000_000;

fn config() -> SubscriptionConfig {
    SubscriptionConfig {
        topic: "orders".into(),
        name: "work".into(),
        start: StartPosition::Earliest,
        ack_timeout_ms: 30_000,
        retry: RetryPolicy::default(),
        max_deliveries: 16,
        dead_letter_topic: "orders.work.dlq".into(),
        filter: Filter::default(),
        ordering: Ordering::None,
        created_ms: 0,
        uid: UID,
    }
}

fn store(log: &TestLog) -> SubscriptionStore {
    SubscriptionStore::new(log.db.open_tree("subscription").expect("tree"))
}

/// The table the leader's checkpoint holds: `0..DELIVERED` delivered once (lease `offset + 1`),
/// `0..ACKED` acked.
fn leader_image() -> TableImage {
    let mut table = LeaseTable::starting_at(0, config().table_policy());
    let fresh: Vec<Candidate> = (0..DELIVERED)
        .map(|offset| Candidate {
            offset,
            key_hash: None,
            wanted: true,
            not_before_ms: 0,
        })
        .collect();
    let mut lease = 0;
    let grants = table.grant(
        0,
        DELIVERED as usize,
        0,
        &fresh,
        LEASE_DEADLINE_MS,
        &RetryPolicy::default(),
        || {
            lease += 1;
            lease
        },
    );
    assert_eq!(grants.len() as u64, DELIVERED);
    for grant in grants.iter().filter(|g| g.offset < ACKED) {
        table.ack(grant.offset, grant.lease, 1).expect("acked");
    }
    table.image()
}

/// What the replica's log receives after the snapshot, as the leader's log holds it: the
/// messages from `LOG_END_AT_INSTALL` on, then the leases and acks of the offsets from
/// `events_from` (the same events the image already reflects).
async fn rest_of_the_leaders_log(log: &PartitionHandle, events_from: u64) {
    let count = DELIVERED - LOG_END_AT_INSTALL;
    log.append(records(LOG_END_AT_INSTALL, count, 50))
        .await
        .expect("append");
    let mut events: Vec<Bytes> = (events_from..DELIVERED)
        .map(|offset| {
            SubscriptionEvent::Leased {
                subscription: UID,
                offset,
                attempts: 1,
                lease: offset + 1,
                deadline_ms: LEASE_DEADLINE_MS,
                key_hash: None,
                consumer: None,
            }
            .encode()
        })
        .collect();
    events.extend((events_from..ACKED).map(|offset| {
        SubscriptionEvent::Acked {
            subscription: UID,
            offset,
            consumer: None,
        }
        .encode()
    }));
    log.queue_control(events)
        .expect("queued")
        .wait()
        .await
        .expect("committed");
}

/// The replica's log as the install leaves it: holding `0..LOG_END_AT_INSTALL` and no event.
async fn replica_log(log: &TestLog) -> PartitionHandle {
    let handle = log.open();
    handle
        .append(records(0, LOG_END_AT_INSTALL, 50))
        .await
        .expect("append");
    handle
}

fn assert_history_counted_once(subscription: &Subscription) {
    let cursor = subscription.inspect(0, LeaseTable::cursor);
    assert_eq!(
        (cursor.acked, cursor.delivered, cursor.redelivered),
        (ACKED, DELIVERED, 0),
        "counters of {cursor:?}"
    );
    assert_eq!((cursor.ack_floor, cursor.next_offset), (ACKED, DELIVERED));
}

#[tokio::test]
async fn a_table_opened_after_the_install_counts_the_replayed_events_once() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = replica_log(&log).await;
    let store = store(&log);
    // What installing does for a subscription not open here yet: the image as the checkpoint
    // at the new log's start.
    store
        .replace(0, Some(&leader_image()), LogPosition::default())
        .expect("installed");
    let subscription =
        Subscription::open(config(), store, &[0], std::slice::from_ref(&handle), true)
            .expect("opened");
    rest_of_the_leaders_log(&handle, LOG_END_AT_INSTALL).await;
    subscription.follow(0, None, &handle).expect("followed");
    assert_history_counted_once(&subscription);
    handle.shutdown();
}

#[tokio::test]
async fn a_table_open_at_the_install_counts_the_replayed_events_once() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = replica_log(&log).await;
    let subscription = Subscription::open(
        config(),
        store(&log),
        &[0],
        std::slice::from_ref(&handle),
        true,
    )
    .expect("opened");
    subscription
        .install_snapshot_table(0, Some(&leader_image()), &handle)
        .expect("installed");
    rest_of_the_leaders_log(&handle, LOG_END_AT_INSTALL).await;
    subscription.follow(0, None, &handle).expect("followed");
    assert_history_counted_once(&subscription);
    handle.shutdown();
}

#[tokio::test]
async fn a_replica_restarted_before_catching_up_counts_the_replayed_events_once() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = replica_log(&log).await;
    let before = Subscription::open(
        config(),
        store(&log),
        &[0],
        std::slice::from_ref(&handle),
        true,
    )
    .expect("opened");
    before
        .install_snapshot_table(0, Some(&leader_image()), &handle)
        .expect("installed");
    drop(before);
    let after = Subscription::open(
        config(),
        store(&log),
        &[0],
        std::slice::from_ref(&handle),
        true,
    )
    .expect("reopened");
    rest_of_the_leaders_log(&handle, LOG_END_AT_INSTALL).await;
    after.follow(0, None, &handle).expect("followed");
    assert_history_counted_once(&after);
    handle.shutdown();
}

/// The image is also ahead of the subscription's `sought` event when the subscription was
/// created (or sought) after the snapshot's last entry: the new log then replays that event on
/// top of the image, and `LeaseTable::reset` forgets the settles after it but not their
/// counts, which the events after it count again. Still open: an image carries no mark of how
/// far past the snapshot it is, so the replica cannot skip the events it covers.
#[tokio::test]
#[ignore = "open: a sought event after the snapshot's last entry replays over the image"]
async fn a_sought_event_after_the_snapshot_replays_over_the_image_without_counting_twice() {
    let log = TestLog::new(small_segments(FsyncPolicy::Always));
    let handle = replica_log(&log).await;
    let subscription = Subscription::open(
        config(),
        store(&log),
        &[0],
        std::slice::from_ref(&handle),
        true,
    )
    .expect("opened");
    subscription
        .install_snapshot_table(0, Some(&leader_image()), &handle)
        .expect("installed");
    let sought = SubscriptionEvent::Sought {
        subscription: UID,
        offset: 0,
    };
    handle
        .queue_control(vec![sought.encode()])
        .expect("queued")
        .wait()
        .await
        .expect("committed");
    rest_of_the_leaders_log(&handle, 0).await;
    subscription.follow(0, None, &handle).expect("followed");
    assert_history_counted_once(&subscription);
    handle.shutdown();
}
