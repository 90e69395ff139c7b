//! Tie-breakers of delayed messages: the second half of a schedule key (`due_ms`, `seq`),
//! which must be unique within a topic's schedule, or one message overwrites another in the
//! tree and is never delivered.
//!
//! A seq is a base from the clock and a counter, with the message's partition in its lowest
//! [`PARTITION_BITS`] bits:
//! - messages of different partitions never share a seq, whichever node gave it (in a
//!   cluster, each partition's leader gives its own; two leaders given messages of one topic
//!   in the same millisecond once gave the same seq, and a replica of both partitions kept
//!   one of the two messages);
//! - the base grows within a run, and starts past the last run's from the clock, with no
//!   metadata write (unless a run gave out more than [`BASES_PER_MS`] a millisecond on
//!   average, or the clock went back);
//! - every seq the schedule takes in (from the log, a snapshot, or this node's produces)
//!   raises the base, so a node that becomes a partition's leader continues past its
//!   predecessor's seqs even when its clock is behind.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::limits::MAX_PARTITIONS;

/// Low bits of a seq that hold its partition: enough for [`MAX_PARTITIONS`].
pub const PARTITION_BITS: u32 = 8;
const _: () = assert!(MAX_PARTITIONS <= 1 << PARTITION_BITS);
/// The base's step.
const STEP: u64 = 1 << PARTITION_BITS;
/// How many bases a millisecond of the clock is worth (4,096: a million seqs a millisecond
/// over at most 256 partitions; a node gives out far fewer).
pub const BASES_PER_MS: u64 = 1 << (20 - PARTITION_BITS);

/// The base part of `seq` (its partition bits cleared).
fn base_of(seq: u64) -> u64 {
    seq & !(STEP - 1)
}

/// The base after `last` at clock time `now_ms`.
fn next_base(last: u64, now_ms: u64) -> u64 {
    (base_of(last) + STEP).max(now_ms.saturating_mul(BASES_PER_MS * STEP))
}

/// A topic's tie-breaker counter.
#[derive(Debug, Default)]
pub struct SeqCounter {
    /// The largest base given out or taken in.
    last: AtomicU64,
}

impl SeqCounter {
    /// A fresh seq for a message of `partition` scheduled at clock time `now_ms`.
    pub fn next(&self, now_ms: u64, partition: u32) -> u64 {
        debug_assert!(partition < MAX_PARTITIONS, "partition {partition}");
        let mut base = 0;
        let _always_some = self
            .last
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                base = next_base(last, now_ms);
                Some(base)
            });
        base | u64::from(partition % MAX_PARTITIONS)
    }

    /// Takes in a seq the schedule holds (given by this node or another): later seqs are
    /// past it.
    pub fn observe(&self, seq: u64) {
        self.last.fetch_max(base_of(seq), Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seqs_grow_within_a_run_and_start_past_the_last_run_from_the_clock() {
        let run = SeqCounter::default();
        let first = run.next(1_000, 0);
        assert_eq!(first, 1_000 * BASES_PER_MS * STEP);
        assert_eq!(run.next(1_000, 0), first + STEP);
        assert_eq!(
            run.next(999, 0),
            first + 2 * STEP,
            "the clock went back a little"
        );
        let restarted = SeqCounter::default().next(1_001, 0);
        assert!(restarted > first + (BASES_PER_MS - 1) * STEP);
    }

    #[test]
    fn two_nodes_in_the_same_millisecond_give_different_partitions_different_seqs() {
        let (leader_of_0, leader_of_2) = (SeqCounter::default(), SeqCounter::default());
        let a = leader_of_0.next(5_000, 0);
        let b = leader_of_2.next(5_000, 2);
        assert_ne!(a, b);
        assert_eq!((a & (STEP - 1), b & (STEP - 1)), (0, 2));
        let last = leader_of_0.next(5_000, 255);
        assert_eq!(last & (STEP - 1), 255);
    }

    #[test]
    fn a_new_leader_behind_in_time_continues_past_the_seqs_it_took_in() {
        let old_leader = SeqCounter::default();
        let given: Vec<u64> = (0..3).map(|_| old_leader.next(9_000, 7)).collect();
        let new_leader = SeqCounter::default();
        given.iter().for_each(|s| new_leader.observe(*s));
        // Its clock is 5 ms behind the old leader's.
        let next = new_leader.next(8_995, 7);
        assert!(given.iter().all(|s| next > *s), "{next} after {given:?}");
        assert_eq!(next & (STEP - 1), 7);
    }
}
