//! The pure core of delivery bookkeeping for one subscription on one partition: which offsets
//! are settled, leased, waiting out a retry backoff, held back behind an earlier message of
//! their key, or on their way to the dead-letter topic. It takes events and the time and
//! returns decisions; it does no I/O. [`super::store`] persists what it reports as changed.
//!
//! State is bounded by the unacked messages, not by history nor by the span they cover:
//! - every offset below `ack_floor` is settled, and forgotten;
//! - every offset of the window `[ack_floor, next_offset)` is either settled, kept in
//!   [`OffsetRanges`] (a run of settled offsets costs one range), or unsettled, with an
//!   [`Entry`];
//! - at or past `next_offset` offsets are fresh, except that replayed events (see `replay`)
//!   may already have settled some or given some an entry.
//!
//! [`MAX_UNACKED_PER_PARTITION`] bounds the entries (as SQS caps in-flight messages); settled
//! offsets never count against it. Between two settled ranges of the window lies at least one
//! entry, so those ranges are bounded too (ranges past `next_offset` come only from replay, and
//! grants pass over them): a message held for hours costs one entry, and the messages acked
//! past it one range, while the partition keeps flowing.
//!
//! Layout: this file has the delivery path (grant, ack, nack, extend) and the queries;
//! `replay` the lease-free events a restart replays; `bookkeeping` the indexes, the floor and
//! the invariants; `ranges` the settled ranges; `types` the vocabulary.

mod bookkeeping;
mod ranges;
mod replay;
mod types;

use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use ranges::OffsetRanges;
pub use types::{
    Candidate, Cursor, Entry, EntryState, Grant, Stale, TableChanges, TableCounts, TableImage,
    TablePolicy,
};

use crate::limits::MAX_UNACKED_PER_PARTITION;
use crate::subscription::config::RetryPolicy;

/// Delivery bookkeeping for one subscription on one partition.
#[derive(Debug, Clone, Default)]
pub struct LeaseTable {
    policy: TablePolicy,
    cursor: Cursor,
    /// Every unsettled offset, all at or above the floor.
    entries: BTreeMap<u64, Entry>,
    /// Settled offsets at or above the floor.
    settled: OffsetRanges,
    /// `(deadline, offset)` of every in-flight entry.
    lease_timers: BTreeSet<(u64, u64)>,
    /// `(due time, offset)` of every entry waiting for (re)delivery.
    retry_timers: BTreeSet<(u64, u64)>,
    /// Ordered subscriptions: per key hash, the unsettled offsets; the first holds the turn.
    key_queues: HashMap<u64, BTreeSet<u64>>,
    /// Offsets waiting to be appended to the dead-letter topic.
    dead_letters: BTreeSet<u64>,
    dirty_cursor: bool,
    /// Offsets whose entry changed since the last [`LeaseTable::take_changes`], each with
    /// whether the store held an entry for it then. An offset not in here has its entry in the
    /// store exactly when it has one in `entries`.
    dirty_entries: BTreeMap<u64, bool>,
}

impl LeaseTable {
    /// A table starting at `offset` with nothing delivered.
    pub fn starting_at(offset: u64, policy: TablePolicy) -> Self {
        let cursor = Cursor {
            ack_floor: offset,
            next_offset: offset,
            ..Cursor::default()
        };
        Self::restore(cursor, Vec::new(), &[], policy)
    }

    /// Rebuilds a table from persisted state: the cursor, the entries of unsettled offsets and
    /// the `(start, end)` ranges of settled ones. An offset of the window that is neither is
    /// redelivered at once rather than taken as acked (at least once, never at most once); an
    /// offset that is both counts as settled. Whatever the rebuilt table holds differently from
    /// what it was given is reported by the next [`LeaseTable::take_changes`].
    pub fn restore(
        cursor: Cursor,
        entries: Vec<(u64, Entry)>,
        settled: &[(u64, u64)],
        policy: TablePolicy,
    ) -> Self {
        let mut table = LeaseTable {
            policy,
            cursor,
            settled: OffsetRanges::restore(settled, cursor.ack_floor),
            ..LeaseTable::default()
        };
        let mut dropped = Vec::new();
        for (offset, entry) in entries {
            if offset >= cursor.ack_floor && !table.settled.contains(offset) {
                table.put(offset, entry);
            } else {
                dropped.push(offset);
            }
        }
        table.dirty_entries = dropped.into_iter().map(|offset| (offset, true)).collect();
        table.redeliver_lost();
        table.advance_floor();
        table.dirty_cursor = table.cursor != cursor;
        table.check_invariants();
        table
    }

    /// The whole table, as a checkpoint stores it ([`LeaseTable::restore`] takes it back).
    pub fn image(&self) -> TableImage {
        TableImage {
            cursor: self.cursor,
            entries: self.entries.iter().map(|(o, e)| (*o, *e)).collect(),
            settled: self.settled.iter().collect(),
        }
    }

    /// The persisted position and counters.
    pub fn cursor(&self) -> Cursor {
        self.cursor
    }

    /// The entry of an unsettled offset.
    pub fn entry(&self, offset: u64) -> Option<Entry> {
        self.entries.get(&offset).copied()
    }

    /// Hands out up to `max` offsets, leased until `now_ms + lease_ms`: due redeliveries first
    /// (oldest due first), then the `fresh` candidates the caller peeked at the head of the log,
    /// which must start at [`LeaseTable::peek_offset`] (earlier ones are ignored, as another
    /// receiver took them; the settled offsets and entries before it are passed over). Fresh candidates the filter does not want are settled as skipped; on ordered
    /// subscriptions, one whose key has an unsettled earlier message is held back; one not due
    /// yet (`not_before_ms` after `now_ms`) waits for its time like a retry, keeping its key's
    /// turn, while later offsets flow past it. A candidate that replay already settled or gave
    /// an entry is passed over. Offsets below `log_start` (deleted by retention) are dropped as
    /// settled. No fresh candidate is taken while the table holds
    /// [`MAX_UNACKED_PER_PARTITION`] unacked messages.
    #[allow(clippy::too_many_arguments)]
    pub fn grant(
        &mut self,
        now_ms: u64,
        max: usize,
        log_start: u64,
        fresh: &[Candidate],
        lease_ms: u64,
        retry: &RetryPolicy,
        mut new_lease: impl FnMut() -> u64,
    ) -> Vec<Grant> {
        self.skip_to(log_start);
        self.expire(now_ms, retry);
        let deadline_ms = now_ms.saturating_add(lease_ms);
        let mut grants = Vec::new();
        while grants.len() < max {
            let Some(&(due, offset)) = self.retry_timers.first() else {
                break;
            };
            if due > now_ms {
                break;
            }
            let Some(entry) = self.entries.get(&offset).copied() else {
                break;
            };
            let attempt = entry.attempts.saturating_add(1);
            let lease = new_lease();
            let state = EntryState::InFlight { deadline_ms, lease };
            let entry = Entry {
                attempts: attempt,
                state,
                ..entry
            };
            self.put(offset, entry);
            self.count_delivery(attempt);
            grants.push(Grant {
                offset,
                attempt,
                lease,
            });
        }
        let fresh_from = self.first_fresh();
        if fresh_from != self.cursor.next_offset {
            self.cursor.next_offset = fresh_from;
            self.dirty_cursor = true;
        }
        for candidate in fresh.iter().skip_while(|c| c.offset < fresh_from) {
            let offset = candidate.offset;
            if offset != self.cursor.next_offset {
                break;
            }
            if self.settled.contains(offset) || self.entries.contains_key(&offset) {
                self.cursor.next_offset += 1;
                self.dirty_cursor = true;
                continue;
            }
            if grants.len() >= max || !self.has_room() {
                break;
            }
            self.cursor.next_offset += 1;
            self.dirty_cursor = true;
            if let Some(grant) = self.take_fresh(candidate, now_ms, deadline_ms, &mut new_lease) {
                grants.push(grant);
            }
        }
        self.advance_floor();
        self.check_invariants();
        grants
    }

    /// Marks a leased offset acked. Refused when the lease id differs or the lease has ended.
    pub fn ack(&mut self, offset: u64, lease: u64, now_ms: u64) -> Result<(), Stale> {
        self.leased(offset, lease, now_ms)?;
        self.cursor.acked += 1;
        self.settle(offset, now_ms);
        self.check_invariants();
        Ok(())
    }

    /// Ends a lease early: the offset is redelivered after `delay_ms`, or after the retry
    /// backoff for its attempt count when `delay_ms` is `None`; or, out of deliveries, it is
    /// dead-lettered.
    pub fn nack(
        &mut self,
        offset: u64,
        lease: u64,
        now_ms: u64,
        delay_ms: Option<u64>,
        retry: &RetryPolicy,
    ) -> Result<(), Stale> {
        let entry = self.leased(offset, lease, now_ms)?;
        let pause = delay_ms.unwrap_or_else(|| retry.backoff_ms(entry.attempts));
        self.fail(offset, entry, now_ms.saturating_add(pause));
        self.check_invariants();
        Ok(())
    }

    /// Moves a lease's deadline to `now_ms + lease_ms`.
    pub fn extend(
        &mut self,
        offset: u64,
        lease: u64,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<(), Stale> {
        let entry = self.leased(offset, lease, now_ms)?;
        let state = EntryState::InFlight {
            deadline_ms: now_ms.saturating_add(lease_ms),
            lease,
        };
        self.put(offset, Entry { state, ..entry });
        Ok(())
    }

    /// Whether `lease` still holds `offset` at `now_ms`.
    pub fn is_leased(&self, offset: u64, lease: u64, now_ms: u64) -> bool {
        self.leased(offset, lease, now_ms).is_ok()
    }

    /// Takes back a grant that was never handed to a consumer (the reply ran out of room):
    /// the offset is available again at once and the delivery does not count as an attempt.
    pub fn release(&mut self, offset: u64, lease: u64, now_ms: u64) {
        let Ok(entry) = self.leased(offset, lease, now_ms) else {
            return;
        };
        let attempts = entry.attempts.saturating_sub(1);
        self.put(
            offset,
            Entry {
                attempts,
                state: EntryState::Waiting { due_ms: 0 },
                ..entry
            },
        );
        self.cursor.delivered = self.cursor.delivered.saturating_sub(1);
        if attempts > 0 {
            self.cursor.redelivered = self.cursor.redelivered.saturating_sub(1);
        }
        self.dirty_cursor = true;
    }

    /// Settles a granted offset without a delivery: its record no longer exists (retention).
    pub fn forget(&mut self, offset: u64, now_ms: u64) {
        if self.entries.contains_key(&offset) {
            self.settle(offset, now_ms);
            self.check_invariants();
        }
    }

    /// Offsets waiting to be appended to the dead-letter topic, with their attempt counts.
    pub fn dead_letters(&self) -> Vec<(u64, u32)> {
        self.dead_letters
            .iter()
            .filter_map(|offset| self.entries.get(offset).map(|e| (*offset, e.attempts)))
            .collect()
    }

    /// Records that a dead letter was appended to the dead-letter topic.
    pub fn finish_dead_letter(&mut self, offset: u64, now_ms: u64) {
        if self.dead_letters.contains(&offset) {
            self.cursor.dead_lettered += 1;
            self.settle(offset, now_ms);
            self.check_invariants();
        }
    }

    /// Moves the subscription to `offset` (seek): every lease, retry, held-back message and
    /// settled offset of the partition is dropped, and delivery restarts at `offset`.
    pub fn reset(&mut self, offset: u64) {
        let offsets: Vec<u64> = self.entries.keys().copied().collect();
        for old in offsets {
            self.remove(old);
        }
        self.settled.clear();
        self.cursor.ack_floor = offset;
        self.cursor.next_offset = offset;
        self.dirty_cursor = true;
        self.check_invariants();
    }

    /// The earliest time something changes on its own (a lease ends or a retry falls due).
    pub fn next_wake(&self) -> Option<u64> {
        let lease = self.lease_timers.first().map(|(time, _)| *time);
        let retry = self.retry_timers.first().map(|(time, _)| *time);
        lease.into_iter().chain(retry).min()
    }

    /// The next offset never looked at.
    pub fn next_offset(&self) -> u64 {
        self.cursor.next_offset
    }

    /// Where the caller peeks fresh candidates: the first offset at or past
    /// [`LeaseTable::next_offset`] that replay has neither settled nor given an entry, which
    /// [`LeaseTable::grant`] passes over without a look. A new leader's table continues from
    /// the cursor of its last checkpoint (no event moves it) with the acks replayed since
    /// settled ahead of it: peeking at the cursor would read that whole stretch again, a few
    /// records a receive, before reaching the first message still to deliver.
    pub fn peek_offset(&self) -> u64 {
        self.first_fresh()
    }

    /// Whether the table may take fresh candidates: it holds fewer than
    /// [`MAX_UNACKED_PER_PARTITION`] unacked messages.
    pub fn has_room(&self) -> bool {
        self.entries.len() < MAX_UNACKED_PER_PARTITION
    }

    /// Unacked messages held: in flight, waiting for a retry, held back behind their key, not
    /// yet due, or dead-lettering. This is what [`MAX_UNACKED_PER_PARTITION`] bounds.
    pub fn unacked(&self) -> usize {
        self.entries.len()
    }

    /// Settled offsets at or above the floor.
    pub fn settled(&self) -> &OffsetRanges {
        &self.settled
    }

    /// Counts for stats, as of `now_ms`, with the log ending at `end_offset`.
    pub fn counts(&self, now_ms: u64, end_offset: u64) -> TableCounts {
        let next = self.cursor.next_offset;
        let mut counts = TableCounts {
            unacked_limit_reached: !self.has_room(),
            ..TableCounts::default()
        };
        let mut ahead = self.settled.count_within(next, end_offset);
        for (offset, entry) in &self.entries {
            if (next..end_offset).contains(offset) {
                ahead += 1;
            }
            match entry.state {
                EntryState::InFlight { deadline_ms, .. } if deadline_ms > now_ms => {
                    counts.in_flight += 1
                }
                // Never delivered and due later: a delayed message appended ahead of time.
                EntryState::Waiting { due_ms } if entry.attempts == 0 && due_ms > now_ms => {
                    counts.not_yet_due += 1;
                    continue;
                }
                EntryState::InFlight { .. }
                | EntryState::Waiting { .. }
                | EntryState::Blocked { .. } => {
                    counts.waiting_retry += 1;
                }
                EntryState::DeadLettering => counts.dead_lettering += 1,
            }
            counts.oldest_unacked.get_or_insert(*offset);
        }
        counts.undelivered = end_offset.saturating_sub(next).saturating_sub(ahead);
        if counts.undelivered > 0 {
            let fresh = self.first_fresh();
            counts.oldest_unacked = Some(counts.oldest_unacked.map_or(fresh, |o| o.min(fresh)));
        }
        counts
    }

    /// Marks the cursor as changed, so the next save writes it even if nothing moved.
    pub fn mark_cursor_dirty(&mut self) {
        self.dirty_cursor = true;
    }

    /// Takes the changes since the last call: the cursor if it changed, each changed entry and
    /// each changed range of settled offsets.
    pub fn take_changes(&mut self) -> TableChanges {
        let cursor = std::mem::take(&mut self.dirty_cursor).then_some(self.cursor);
        // An entry made and removed between two checkpoints (most leases under a steady
        // consumer) was never stored: removing it would cost the store a write for nothing.
        let entries = std::mem::take(&mut self.dirty_entries)
            .into_iter()
            .filter_map(|(offset, stored)| {
                let now = self.entries.get(&offset).copied();
                (stored || now.is_some()).then_some((offset, now))
            })
            .collect();
        TableChanges {
            cursor,
            entries,
            settled: self.settled.take_changes(),
        }
    }

    /// Takes the fresh candidate at `next_offset`: settles it if the filter skips it, holds
    /// it back behind its key, lets it wait for its due time, or leases it.
    fn take_fresh(
        &mut self,
        candidate: &Candidate,
        now_ms: u64,
        deadline_ms: u64,
        new_lease: &mut impl FnMut() -> u64,
    ) -> Option<Grant> {
        let offset = candidate.offset;
        if !candidate.wanted {
            self.cursor.filtered += 1;
            self.mark_settled(offset);
            return None;
        }
        let key_hash = candidate.key_hash.filter(|_| self.policy.ordered_by_key);
        let not_before_ms = candidate.not_before_ms;
        let held_back =
            key_hash.is_some_and(|k| self.key_queues.get(&k).is_some_and(|q| !q.is_empty()));
        let (state, grant) = if held_back {
            (EntryState::Blocked { not_before_ms }, None)
        } else if not_before_ms > now_ms {
            let due_ms = not_before_ms;
            (EntryState::Waiting { due_ms }, None)
        } else {
            let lease = new_lease();
            let grant = Grant {
                offset,
                attempt: 1,
                lease,
            };
            (EntryState::InFlight { deadline_ms, lease }, Some(grant))
        };
        let attempts = u32::from(grant.is_some());
        self.put(
            offset,
            Entry {
                attempts,
                key_hash,
                state,
            },
        );
        if grant.is_some() {
            self.count_delivery(1);
        }
        grant
    }
}
