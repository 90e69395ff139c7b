//! The bound on unacked messages: it counts messages not yet settled, never the span from the
//! oldest of them, so one held message cannot stop its partition; and both sides of it.

use broker_core::limits::MAX_UNACKED_PER_PARTITION;
use broker_core::subscription::config::RetryPolicy;
use broker_core::subscription::lease_table::{Candidate, LeaseTable, TablePolicy};

use crate::support::plain;

/// A receive's worth of messages.
const ROUND: u64 = 100;
/// A lease held far longer than the test runs, as a stuck consumer's.
const TEN_MINUTES_MS: u64 = 10 * 60 * 1000;
/// The lease of the consumers that ack.
const LEASE_MS: u64 = 30_000;

/// Grants up to `max` fresh offsets at `now_ms`, from a log that never ends.
fn receive(table: &mut LeaseTable, now_ms: u64, max: u64) -> Vec<(u64, u64)> {
    let next = table.next_offset();
    table
        .grant(
            now_ms,
            max as usize,
            0,
            &plain(next..next + max),
            LEASE_MS,
            &RetryPolicy::default(),
            rand::random,
        )
        .into_iter()
        .map(|g| (g.offset, g.lease))
        .collect()
}

/// Issue "one held message stops its partition": one message received and held under a
/// 10-minute lease, and the rest received and acked a receive at a time. Before, the table
/// kept an entry for every offset from the held one on, and after 99,999 acks every receive
/// came back empty.
#[test]
fn one_held_message_does_not_stop_its_partition() {
    const ACKED: u64 = 150_000;
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let held = table.grant(
        0,
        1,
        0,
        &plain(0..1),
        TEN_MINUTES_MS,
        &RetryPolicy::default(),
        || 7,
    );
    assert_eq!(held.len(), 1);
    for round in 0..ACKED / ROUND {
        let now = 1 + round;
        let grants = receive(&mut table, now, ROUND);
        assert_eq!(
            grants.len() as u64,
            ROUND,
            "round {round} (after {} acks) got {} messages",
            round * ROUND,
            grants.len()
        );
        for (offset, lease) in grants {
            table.ack(offset, lease, now).expect("a fresh lease acks");
        }
        assert!(
            table.settled().len() <= 2,
            "{} settled ranges after round {round}",
            table.settled().len()
        );
        assert_eq!(table.unacked(), 1, "only the held message is unacked");
    }
    let counts = table.counts(ACKED, ACKED + 1);
    assert_eq!((counts.in_flight, counts.undelivered), (1, 0));
    assert!(!counts.unacked_limit_reached);
    assert_eq!(
        table.cursor().ack_floor,
        0,
        "the held message keeps the floor"
    );
    table
        .ack(0, 7, ACKED)
        .expect("the held lease is still valid");
    assert_eq!(table.cursor().ack_floor, ACKED + 1);
    assert!(table.settled().is_empty());
}

#[test]
fn fresh_grants_stop_at_the_unacked_limit_and_resume_after_an_ack() {
    let limit = MAX_UNACKED_PER_PARTITION as u64;
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let early = receive(&mut table, 0, 10);
    for &(offset, lease) in early.iter().step_by(2) {
        table.ack(offset, lease, 0).expect("ack");
    }
    let mut held = receive(&mut table, 0, limit - 1 - 5);
    assert_eq!(
        table.unacked() as u64,
        limit - 1,
        "acked messages do not count"
    );
    assert!(table.has_room());
    assert!(!table.counts(0, u64::MAX).unacked_limit_reached);

    held.extend(receive(&mut table, 0, 10));
    assert_eq!(
        table.unacked() as u64,
        limit,
        "one below the limit, one more"
    );
    assert!(!table.has_room());
    assert!(table.counts(0, u64::MAX).unacked_limit_reached);
    assert!(
        receive(&mut table, 0, 10).is_empty(),
        "a fresh message past the limit"
    );

    let (offset, lease) = held[held.len() / 2];
    table.ack(offset, lease, 1).expect("ack");
    assert!(!table.counts(1, u64::MAX).unacked_limit_reached);
    assert_eq!(
        receive(&mut table, 1, 10).len(),
        1,
        "grants resume after an ack"
    );
}

#[test]
fn held_back_and_not_yet_due_messages_count_against_the_limit() {
    let policy = TablePolicy {
        ordered_by_key: true,
        max_deliveries: 5,
    };
    let mut table = LeaseTable::starting_at(0, policy);
    let fresh: Vec<Candidate> = (0..3)
        .map(|offset| Candidate {
            offset,
            key_hash: (offset < 2).then_some(1),
            wanted: true,
            not_before_ms: if offset == 2 { 1_000 } else { 0 },
        })
        .collect();
    let grants = table.grant(0, 3, 0, &fresh, LEASE_MS, &RetryPolicy::default(), || 1);
    assert_eq!(
        grants.len(),
        1,
        "offset 1 waits for its key, offset 2 for its time"
    );
    assert_eq!(table.unacked(), 3);
}
