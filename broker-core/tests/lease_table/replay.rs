//! Replayed events and restores: events recorded after the last checkpoint may name offsets
//! the checkpoint never looked at, carry no lease, and must never undo a settled offset.

use broker_core::subscription::config::RetryPolicy;
use broker_core::subscription::lease_table::{
    Candidate, Cursor, Entry, EntryState, LeaseTable, TablePolicy,
};

use crate::support::plain;

/// Grants up to 10 offsets at `now_ms` from a log of `end` messages; their offsets and
/// attempts.
fn receive(table: &mut LeaseTable, now_ms: u64, end: u64) -> Vec<(u64, u32)> {
    let next = table.next_offset();
    table
        .grant(
            now_ms,
            10,
            0,
            &plain(next..end),
            1_000,
            &RetryPolicy::default(),
            rand::random,
        )
        .into_iter()
        .map(|g| (g.offset, g.attempt))
        .collect()
}

#[test]
fn an_ack_replayed_past_the_cursor_is_passed_over_without_a_delivery() {
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    table.replay_ack(2);
    assert_eq!(table.cursor().acked, 1);
    let offsets: Vec<u64> = receive(&mut table, 0, 5).iter().map(|g| g.0).collect();
    assert_eq!(offsets, vec![0, 1, 3, 4]);
    assert_eq!(table.cursor().filtered, 0, "passed over, not filtered");
    assert_eq!(table.counts(0, 5).undelivered, 0);
}

#[test]
fn a_long_stretch_of_acks_replayed_past_the_cursor_is_passed_over_in_one_receive() {
    // A new leader's table: the cursor of the last checkpoint (the subscription's start),
    // and 4,660 acks replayed since; 37 messages at the end are still to deliver. Peeking at
    // the cursor read 80 settled records a receive, so the 37 waited some 58 receives.
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    for offset in (0..4_660).filter(|o| o % 7 != 3) {
        table.replay_ack(offset);
    }
    for offset in (0..4_660).filter(|o| o % 7 == 3) {
        table.replay_ack(offset);
    }
    assert_eq!(table.next_offset(), 0, "no replayed event moves the cursor");
    assert_eq!(table.peek_offset(), 4_660);
    let granted = table.grant(
        0,
        10,
        0,
        &plain(table.peek_offset()..4_697),
        1_000,
        &RetryPolicy::default(),
        rand::random,
    );
    let offsets: Vec<u64> = granted.iter().map(|g| g.offset).collect();
    assert_eq!(offsets, (4_660..4_670).collect::<Vec<_>>());
    assert_eq!(table.next_offset(), 4_670);
    assert_eq!(table.counts(0, 4_697).undelivered, 27);
}

#[test]
fn a_delivery_replayed_without_its_lease_is_redelivered_at_once_with_the_next_attempt() {
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    table.replay_attempt(1, 1, None);
    assert_eq!(table.cursor().delivered, 1);
    assert_eq!(table.counts(0, 3).undelivered, 2);
    assert_eq!(receive(&mut table, 0, 3), vec![(1, 2), (0, 1), (2, 1)]);
}

#[test]
fn a_replayed_nack_waits_until_its_due_time() {
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    table.replay_nack(0, 1, 5_000, None);
    assert_eq!(receive(&mut table, 4_999, 1), vec![]);
    assert_eq!(receive(&mut table, 5_000, 1), vec![(0, 2)]);
}

#[test]
fn a_replayed_last_delivery_becomes_a_dead_letter_not_a_redelivery() {
    let policy = TablePolicy {
        ordered_by_key: false,
        max_deliveries: 2,
    };
    let mut table = LeaseTable::starting_at(0, policy);
    table.replay_attempt(3, 2, None);
    assert_eq!(table.dead_letters(), vec![(3, 2)]);
    let offsets: Vec<u64> = receive(&mut table, 0, 5).iter().map(|g| g.0).collect();
    assert_eq!(offsets, vec![0, 1, 2, 4]);
    table.replay_dead_lettered(3);
    assert_eq!(table.cursor().dead_lettered, 1);
    assert!(table.dead_letters().is_empty());
}

#[test]
fn replayed_events_never_undo_a_settled_offset() {
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let grant = table.grant(0, 1, 0, &plain(0..1), 1_000, &RetryPolicy::default(), || 9)[0];
    table.ack(grant.offset, grant.lease, 1).expect("ack");
    table.replay_ack(4);
    let cursor = table.cursor();
    for offset in [0, 4] {
        table.replay_ack(offset);
        table.replay_nack(offset, 3, 0, None);
        table.replay_attempt(offset, 3, None);
        table.replay_dead_lettered(offset);
    }
    assert_eq!(table.cursor(), cursor);
    assert_eq!(table.unacked(), 0);
}

#[test]
fn a_replayed_ack_gives_the_next_message_of_its_key_its_turn() {
    let policy = TablePolicy {
        ordered_by_key: true,
        max_deliveries: 5,
    };
    let mut table = LeaseTable::starting_at(0, policy);
    let keyed: Vec<Candidate> = (0..2)
        .map(|offset| Candidate {
            offset,
            key_hash: Some(7),
            wanted: true,
            not_before_ms: 0,
        })
        .collect();
    let retry = RetryPolicy::default();
    let first = table.grant(0, 2, 0, &keyed, 1_000, &retry, || 1);
    assert_eq!(first.len(), 1, "offset 1 waits for offset 0");
    table.replay_ack(0);
    let second = table.grant(1, 2, 0, &[], 1_000, &retry, || 2);
    assert_eq!(second.iter().map(|g| g.offset).collect::<Vec<_>>(), vec![1]);
}

#[test]
fn a_restore_redelivers_at_once_an_offset_of_the_window_it_lost() {
    let cursor = Cursor {
        ack_floor: 10,
        next_offset: 16,
        ..Cursor::default()
    };
    let leased = Entry {
        attempts: 1,
        key_hash: None,
        state: EntryState::InFlight {
            deadline_ms: 1_000,
            lease: 1,
        },
    };
    let mut table = LeaseTable::restore(
        cursor,
        vec![(12, leased)],
        &[(10, 12), (13, 14)],
        TablePolicy::default(),
    );
    assert_eq!(table.unacked(), 3, "12 in flight, 14 and 15 lost");
    assert_eq!(receive(&mut table, 0, 16), vec![(14, 1), (15, 1)]);
    assert_eq!(
        table.cursor().ack_floor,
        12,
        "the floor passed the settled 10 and 11"
    );
}

#[test]
fn changes_report_settled_ranges_so_a_store_can_follow() {
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    let retry = RetryPolicy::default();
    let grants = table.grant(0, 3, 0, &plain(0..3), 1_000, &retry, rand::random);
    table.take_changes();
    table
        .ack(grants[1].offset, grants[1].lease, 1)
        .expect("ack");
    table
        .ack(grants[2].offset, grants[2].lease, 1)
        .expect("ack");
    let changes = table.take_changes();
    assert_eq!(changes.settled, vec![(1, Some(3))], "2 grew the range of 1");
    assert_eq!(changes.entries, vec![(1, None), (2, None)]);
    table
        .ack(grants[0].offset, grants[0].lease, 1)
        .expect("ack");
    let changes = table.take_changes();
    assert_eq!(changes.settled, vec![(1, None)], "the floor stepped over 0");
    assert_eq!(changes.cursor.map(|c| c.ack_floor), Some(3));
}

#[test]
fn a_replayed_lease_holds_its_message_until_the_deadline_and_its_receipt_still_acks() {
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    table.replay_lease(1, 1, 77, 5_000, None);
    assert_eq!(table.cursor().delivered, 1);
    // The others flow; offset 1 waits out the lease another leader granted.
    assert_eq!(receive(&mut table, 4_000, 3), vec![(0, 1), (2, 1)]);
    assert!(table.is_leased(1, 77, 4_999));
    assert_eq!(table.ack(1, 77, 4_999), Ok(()));
    assert_eq!(table.cursor().acked, 1);
    assert_eq!(receive(&mut table, 700_000, 3), vec![(0, 2), (2, 2)]);
}

#[test]
fn a_replayed_lease_that_ends_is_redelivered_with_the_next_attempt_not_before() {
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    table.replay_lease(0, 3, 9, 5_000, None);
    assert_eq!(receive(&mut table, 4_999, 1), vec![]);
    let mut redelivered = Vec::new();
    for now in (5_000..=700_000).step_by(1_000) {
        redelivered = receive(&mut table, now, 1);
        if !redelivered.is_empty() {
            break;
        }
    }
    assert_eq!(redelivered, vec![(0, 4)]);
}

#[test]
fn a_replayed_lease_never_undoes_an_ack_or_lowers_the_attempts() {
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    table.replay_ack(0);
    table.replay_lease(0, 1, 5, 5_000, None);
    table.replay_attempt(1, 4, None);
    table.replay_lease(1, 2, 6, 5_000, None);
    assert_eq!(table.cursor().acked, 1);
    assert_eq!(table.entry(1).map(|e| e.attempts), Some(4));
    assert_eq!(receive(&mut table, 0, 2), vec![]);
}
