//! The lease table's delivery rules, one named case each: backoff after an expired lease,
//! released grants, retention, dead letters and key order.

use broker_core::subscription::lease_table::{Candidate, LeaseTable, TablePolicy};

use crate::support::{plain, retry};

#[test]
fn an_expired_lease_comes_back_after_its_backoff_with_the_next_attempt() {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let first = table.grant(0, 1, 0, &plain(0..1), 1_000, &retry, || 7);
    assert_eq!(first[0].attempt, 1);
    assert!(
        table
            .grant(1_099, 1, 0, &[], 1_000, &retry, || 8)
            .is_empty(),
        "redelivered before lease + backoff"
    );
    let second = table.grant(1_100, 1, 0, &[], 1_000, &retry, || 8);
    assert_eq!((second[0].offset, second[0].attempt), (0, 2));
    assert!(
        table.ack(0, 7, 1_101).is_err(),
        "the first delivery's lease must not ack the second"
    );
    assert!(table.ack(0, 8, 1_101).is_ok());
}

#[test]
fn a_released_grant_is_not_counted_as_an_attempt() {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let grant = table.grant(0, 1, 0, &plain(0..1), 1_000, &retry, || 1)[0];
    table.release(grant.offset, grant.lease, 1);
    let again = table.grant(2, 1, 0, &[], 1_000, &retry, || 2);
    assert_eq!(again[0].attempt, 1);
    assert_eq!(table.cursor().redelivered, 0);
}

#[test]
fn offsets_removed_by_retention_are_skipped() {
    let retry = retry();
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    assert_eq!(
        table
            .grant(0, 5, 0, &plain(0..10), 1_000, &retry, rand::random)
            .len(),
        5
    );
    let later = table.grant(1, 10, 8, &plain(8..10), 1_000, &retry, rand::random);
    let offsets: Vec<u64> = later.iter().map(|g| g.offset).collect();
    assert_eq!(offsets, vec![8, 9]);
    assert_eq!(table.cursor().ack_floor, 8);
}

#[test]
fn the_last_failed_delivery_becomes_a_dead_letter_not_a_retry() {
    let retry = retry();
    let policy = TablePolicy {
        ordered_by_key: false,
        max_deliveries: 2,
    };
    let mut table = LeaseTable::starting_at(0, policy);
    let first = table.grant(0, 1, 0, &plain(0..1), 1_000, &retry, || 1)[0];
    table.nack(0, first.lease, 10, None, &retry).expect("nack");
    assert!(table.dead_letters().is_empty());
    let second = table.grant(110, 1, 0, &[], 1_000, &retry, || 2)[0];
    assert_eq!(second.attempt, 2);
    table
        .nack(0, second.lease, 120, Some(0), &retry)
        .expect("nack");
    assert_eq!(table.dead_letters(), vec![(0, 2)]);
    assert!(
        table
            .grant(100_000, 1, 0, &[], 1_000, &retry, || 3)
            .is_empty(),
        "a dead letter was redelivered"
    );
    table.finish_dead_letter(0, 100_001);
    assert_eq!(table.cursor().dead_lettered, 1);
    assert_eq!(table.cursor().ack_floor, 1);
}

#[test]
fn an_ordered_key_waits_for_its_predecessor_while_other_keys_flow() {
    let retry = retry();
    let policy = TablePolicy {
        ordered_by_key: true,
        max_deliveries: 10,
    };
    let mut table = LeaseTable::starting_at(0, policy);
    let fresh: Vec<Candidate> = [(0, 1), (1, 1), (2, 2)]
        .into_iter()
        .map(|(offset, key)| Candidate {
            offset,
            key_hash: Some(key),
            wanted: true,
            not_before_ms: 0,
        })
        .collect();
    let grants = table.grant(0, 10, 0, &fresh, 1_000, &retry, rand::random);
    let offsets: Vec<u64> = grants.iter().map(|g| g.offset).collect();
    assert_eq!(
        offsets,
        vec![0, 2],
        "offset 1 shares key 1 with offset 0 and must wait"
    );
    table.ack(0, grants[0].lease, 1).expect("ack");
    let next = table.grant(2, 10, 0, &[], 1_000, &retry, rand::random);
    assert_eq!(next.iter().map(|g| g.offset).collect::<Vec<_>>(), vec![1]);
}
