//! The pure core of delivery bookkeeping for one subscription on one partition: which offsets
//! are done, leased, waiting out a retry backoff, held back behind an earlier message of their
//! key, or on their way to the dead-letter topic. It takes events and the time and returns
//! decisions; it does no I/O. [`super::store`] persists what it reports as changed.
//!
//! State is bounded by the unacked window, not by history: offsets below `ack_floor` are done
//! and forgotten, offsets at or past `next_offset` were never looked at, and only the window
//! between them has entries, at most [`MAX_UNACKED_PER_PARTITION`] of them.

mod types;

use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use types::{Candidate, Cursor, Entry, EntryState, Grant, Stale, TableCounts, TablePolicy};

use crate::limits::MAX_UNACKED_PER_PARTITION;
use crate::subscription::config::RetryPolicy;

/// Delivery bookkeeping for one subscription on one partition.
#[derive(Debug, Clone, Default)]
pub struct LeaseTable {
    policy: TablePolicy,
    cursor: Cursor,
    entries: BTreeMap<u64, Entry>,
    /// `(deadline, offset)` of every in-flight entry.
    lease_timers: BTreeSet<(u64, u64)>,
    /// `(due time, offset)` of every entry waiting for (re)delivery.
    retry_timers: BTreeSet<(u64, u64)>,
    /// Ordered subscriptions: per key hash, the unsettled offsets; the first holds the turn.
    key_queues: HashMap<u64, BTreeSet<u64>>,
    /// Offsets waiting to be appended to the dead-letter topic.
    dead_letters: BTreeSet<u64>,
    dirty_cursor: bool,
    dirty_entries: BTreeSet<u64>,
}

impl LeaseTable {
    /// A table starting at `offset` with nothing delivered.
    pub fn starting_at(offset: u64, policy: TablePolicy) -> Self {
        Self::restore(
            Cursor {
                ack_floor: offset,
                next_offset: offset,
                ..Cursor::default()
            },
            Vec::new(),
            policy,
        )
    }

    /// Rebuilds a table from persisted state.
    pub fn restore(cursor: Cursor, entries: Vec<(u64, Entry)>, policy: TablePolicy) -> Self {
        let mut table = LeaseTable {
            policy,
            cursor,
            ..LeaseTable::default()
        };
        for (offset, entry) in entries {
            if offset >= cursor.ack_floor && offset < cursor.next_offset {
                table.put(offset, entry);
            }
        }
        // Every offset of the window must have an entry; one the store lost is redelivered at
        // once rather than taken as acked (at least once, never at most once).
        for offset in cursor.ack_floor..cursor.next_offset {
            if !table.entries.contains_key(&offset) {
                let entry = Entry {
                    attempts: 0,
                    key_hash: None,
                    state: EntryState::Waiting { due_ms: 0 },
                };
                table.put(offset, entry);
            }
        }
        table.advance_floor();
        table.dirty_cursor = false;
        table.dirty_entries.clear();
        table.check_invariants();
        table
    }

    /// The persisted position and counters.
    pub fn cursor(&self) -> Cursor {
        self.cursor
    }

    /// Hands out up to `max` offsets, leased until `now_ms + lease_ms`: due redeliveries first
    /// (oldest due first), then the `fresh` candidates the caller peeked at the head of the log,
    /// which must start at `next_offset` (earlier ones are ignored, as another receiver took
    /// them). Fresh candidates the filter does not want are skipped as done; on ordered
    /// subscriptions, one whose key has an unsettled earlier message is held back; one not due
    /// yet (`not_before_ms` after `now_ms`) waits for its time like a retry, keeping its key's
    /// turn, while later offsets flow past it. Offsets below `log_start` (deleted by
    /// retention) are dropped as done.
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
            self.put(
                offset,
                Entry {
                    attempts: attempt,
                    state: EntryState::InFlight { deadline_ms, lease },
                    ..entry
                },
            );
            self.count_delivery(attempt);
            grants.push(Grant {
                offset,
                attempt,
                lease,
            });
        }
        let first_new = self.cursor.next_offset;
        for candidate in fresh.iter().skip_while(|c| c.offset < first_new) {
            if grants.len() >= max
                || candidate.offset != self.cursor.next_offset
                || self.entries.len() >= MAX_UNACKED_PER_PARTITION
            {
                break;
            }
            let offset = candidate.offset;
            self.cursor.next_offset += 1;
            self.dirty_cursor = true;
            let key_hash = candidate.key_hash.filter(|_| self.policy.ordered_by_key);
            if !candidate.wanted {
                self.cursor.filtered += 1;
                self.put(
                    offset,
                    Entry {
                        attempts: 0,
                        key_hash: None,
                        state: EntryState::Done,
                    },
                );
                self.advance_floor();
            } else if key_hash
                .is_some_and(|k| self.key_queues.get(&k).is_some_and(|q| !q.is_empty()))
            {
                self.put(
                    offset,
                    Entry {
                        attempts: 0,
                        key_hash,
                        state: EntryState::Blocked {
                            not_before_ms: candidate.not_before_ms,
                        },
                    },
                );
            } else if candidate.not_before_ms > now_ms {
                self.put(
                    offset,
                    Entry {
                        attempts: 0,
                        key_hash,
                        state: EntryState::Waiting {
                            due_ms: candidate.not_before_ms,
                        },
                    },
                );
            } else {
                let lease = new_lease();
                self.put(
                    offset,
                    Entry {
                        attempts: 1,
                        key_hash,
                        state: EntryState::InFlight { deadline_ms, lease },
                    },
                );
                self.count_delivery(1);
                grants.push(Grant {
                    offset,
                    attempt: 1,
                    lease,
                });
            }
        }
        self.check_invariants();
        grants
    }

    /// Marks a leased offset done. Refused when the lease id differs or the lease has ended.
    pub fn ack(&mut self, offset: u64, lease: u64, now_ms: u64) -> Result<(), Stale> {
        let entry = self.leased(offset, lease, now_ms)?;
        self.cursor.acked += 1;
        self.settle(offset, entry, now_ms);
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

    /// Marks a granted offset done without a delivery: its record no longer exists (retention).
    pub fn forget(&mut self, offset: u64, now_ms: u64) {
        if let Some(entry) = self.entries.get(&offset).copied() {
            self.settle(offset, entry, now_ms);
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
        if let Some(entry) = self.entries.get(&offset).copied()
            && entry.state == EntryState::DeadLettering
        {
            self.cursor.dead_lettered += 1;
            self.settle(offset, entry, now_ms);
            self.check_invariants();
        }
    }

    /// Moves the subscription to `offset` (seek): every lease, retry and held-back message of
    /// the partition is dropped, and delivery restarts at `offset`.
    pub fn reset(&mut self, offset: u64) {
        let offsets: Vec<u64> = self.entries.keys().copied().collect();
        for old in offsets {
            self.remove(old);
        }
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

    /// The next offset never looked at: where the caller peeks fresh candidates.
    pub fn next_offset(&self) -> u64 {
        self.cursor.next_offset
    }

    /// Whether the window has room for fresh candidates.
    pub fn has_room(&self) -> bool {
        self.entries.len() < MAX_UNACKED_PER_PARTITION
    }

    /// Counts for stats, as of `now_ms`.
    pub fn counts(&self, now_ms: u64, end_offset: u64) -> TableCounts {
        let mut counts = TableCounts {
            undelivered: end_offset.saturating_sub(self.cursor.next_offset),
            ..TableCounts::default()
        };
        for (offset, entry) in &self.entries {
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
                EntryState::Done => continue,
            }
            counts.oldest_unacked.get_or_insert(*offset);
        }
        if counts.oldest_unacked.is_none() && counts.undelivered > 0 {
            counts.oldest_unacked = Some(self.cursor.next_offset);
        }
        counts
    }

    /// Marks the cursor as changed, so the next save writes it even if nothing moved.
    pub fn mark_cursor_dirty(&mut self) {
        self.dirty_cursor = true;
    }

    /// Takes the set of changes since the last call: the cursor if it changed, and each
    /// changed offset with its entry (`None`: the entry is gone).
    pub fn take_changes(&mut self) -> (Option<Cursor>, Vec<(u64, Option<Entry>)>) {
        let cursor = std::mem::take(&mut self.dirty_cursor).then_some(self.cursor);
        let entries = std::mem::take(&mut self.dirty_entries)
            .into_iter()
            .map(|offset| (offset, self.entries.get(&offset).copied()))
            .collect();
        (cursor, entries)
    }

    fn count_delivery(&mut self, attempt: u32) {
        self.cursor.delivered += 1;
        if attempt > 1 {
            self.cursor.redelivered += 1;
        }
        self.dirty_cursor = true;
    }

    /// A delivery failed (nack or lease expiry): wait until `due_ms`, or dead-letter it.
    fn fail(&mut self, offset: u64, entry: Entry, due_ms: u64) {
        let state = if entry.attempts >= self.policy.max_deliveries {
            EntryState::DeadLettering
        } else {
            EntryState::Waiting { due_ms }
        };
        self.put(offset, Entry { state, ..entry });
    }

    /// An offset is settled (acked, dead-lettered, forgotten): it is done, and on ordered
    /// subscriptions the next message of its key gets its turn.
    fn settle(&mut self, offset: u64, entry: Entry, now_ms: u64) {
        // Settling always changes a counter (acked, dead_lettered) or the floor.
        self.dirty_cursor = true;
        self.put(
            offset,
            Entry {
                state: EntryState::Done,
                ..entry
            },
        );
        if let Some(next) = entry
            .key_hash
            .and_then(|k| self.key_queues.get(&k))
            .and_then(|q| q.first().copied())
            && let Some(held) = self.entries.get(&next).copied()
            && let EntryState::Blocked { not_before_ms } = held.state
        {
            self.put(
                next,
                Entry {
                    state: EntryState::Waiting {
                        due_ms: now_ms.max(not_before_ms),
                    },
                    ..held
                },
            );
        }
        self.advance_floor();
    }

    /// Turns expired leases into waits of their backoff, counted from the lease's end.
    fn expire(&mut self, now_ms: u64, retry: &RetryPolicy) {
        let expired: Vec<(u64, Entry)> = self
            .lease_timers
            .iter()
            .take_while(|(time, _)| *time <= now_ms)
            .filter_map(|(_, offset)| self.entries.get(offset).map(|e| (*offset, *e)))
            .collect();
        for (offset, entry) in expired {
            if let Some(deadline_ms) = entry.lease_deadline() {
                self.fail(
                    offset,
                    entry,
                    deadline_ms.saturating_add(retry.backoff_ms(entry.attempts)),
                );
            }
        }
    }

    fn leased(&self, offset: u64, lease: u64, now_ms: u64) -> Result<Entry, Stale> {
        match self.entries.get(&offset) {
            Some(
                entry @ Entry {
                    state:
                        EntryState::InFlight {
                            deadline_ms,
                            lease: held,
                        },
                    ..
                },
            ) if *held == lease && *deadline_ms > now_ms => Ok(*entry),
            _ => Err(Stale::NotLeased),
        }
    }

    fn skip_to(&mut self, start_offset: u64) {
        if self.cursor.next_offset < start_offset {
            self.cursor.next_offset = start_offset;
            self.dirty_cursor = true;
        }
        let lost: Vec<u64> = self
            .entries
            .range(..start_offset)
            .map(|(o, _)| *o)
            .collect();
        let any_lost = !lost.is_empty();
        for offset in lost {
            self.remove(offset);
        }
        if any_lost {
            self.unblock_heads();
        }
        if self.cursor.ack_floor < start_offset {
            self.cursor.ack_floor = start_offset;
            self.dirty_cursor = true;
        }
        self.advance_floor();
    }

    /// Gives the turn to every held-back message that heads its key's queue (after the
    /// messages ahead of it vanished without being settled).
    fn unblock_heads(&mut self) {
        let heads: Vec<(u64, Entry, u64)> = self
            .key_queues
            .values()
            .filter_map(|queue| queue.first())
            .filter_map(|head| self.entries.get(head).map(|e| (*head, *e)))
            .filter_map(|(offset, entry)| match entry.state {
                EntryState::Blocked { not_before_ms } => Some((offset, entry, not_before_ms)),
                _ => None,
            })
            .collect();
        for (offset, entry, not_before_ms) in heads {
            self.put(
                offset,
                Entry {
                    state: EntryState::Waiting {
                        due_ms: not_before_ms,
                    },
                    ..entry
                },
            );
        }
    }

    fn advance_floor(&mut self) {
        while self.cursor.ack_floor < self.cursor.next_offset {
            let floor = self.cursor.ack_floor;
            match self.entries.get(&floor) {
                Some(Entry {
                    state: EntryState::Done,
                    ..
                }) => self.remove(floor),
                _ => break,
            }
            self.cursor.ack_floor = floor + 1;
            self.dirty_cursor = true;
        }
    }

    fn put(&mut self, offset: u64, entry: Entry) {
        if let Some(old) = self.entries.insert(offset, entry) {
            self.unindex(offset, &old);
        }
        if let Some(time) = entry.lease_deadline() {
            self.lease_timers.insert((time, offset));
        }
        if let Some(time) = entry.retry_due() {
            self.retry_timers.insert((time, offset));
        }
        if let Some(key) = entry.key_hash.filter(|_| entry.holds_key()) {
            self.key_queues.entry(key).or_default().insert(offset);
        }
        if entry.state == EntryState::DeadLettering {
            self.dead_letters.insert(offset);
        }
        self.dirty_entries.insert(offset);
    }

    fn remove(&mut self, offset: u64) {
        if let Some(old) = self.entries.remove(&offset) {
            self.unindex(offset, &old);
        }
        self.dirty_entries.insert(offset);
    }

    fn unindex(&mut self, offset: u64, entry: &Entry) {
        if let Some(time) = entry.lease_deadline() {
            self.lease_timers.remove(&(time, offset));
        }
        if let Some(time) = entry.retry_due() {
            self.retry_timers.remove(&(time, offset));
        }
        if let Some(key) = entry.key_hash
            && let Some(queue) = self.key_queues.get_mut(&key)
        {
            queue.remove(&offset);
            if queue.is_empty() {
                self.key_queues.remove(&key);
            }
        }
        self.dead_letters.remove(&offset);
    }

    fn check_invariants(&self) {
        debug_assert!(
            self.cursor.ack_floor <= self.cursor.next_offset,
            "floor passed the cursor"
        );
        debug_assert_eq!(
            self.entries.len() as u64,
            self.cursor.next_offset - self.cursor.ack_floor,
            "every offset of the unacked window has exactly one entry"
        );
        debug_assert_eq!(
            self.lease_timers.len() + self.retry_timers.len(),
            self.entries
                .values()
                .filter(|e| matches!(
                    e.state,
                    EntryState::InFlight { .. } | EntryState::Waiting { .. }
                ))
                .count(),
            "timers out of step with entries"
        );
        debug_assert!(
            self.key_queues.values().all(|queue| queue
                .first()
                .and_then(|head| self.entries.get(head))
                .is_some_and(|head| !matches!(head.state, EntryState::Blocked { .. }))),
            "a key's turn is held by a blocked message"
        );
    }
}
