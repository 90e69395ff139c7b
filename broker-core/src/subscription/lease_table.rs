//! The pure core of delivery bookkeeping for one subscription on one partition: which offsets
//! are done, leased, or waiting out a retry backoff. It takes events and the time and returns
//! decisions; it does no I/O. [`super::store`] persists what it reports as changed.
//!
//! State is bounded by the unacked window, not by history: offsets below `ack_floor` are done
//! and forgotten, offsets at or past `next_offset` were never delivered, and only the window
//! between them has entries, at most [`MAX_UNACKED_PER_PARTITION`] of them.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::limits::MAX_UNACKED_PER_PARTITION;
use crate::subscription::config::RetryPolicy;

/// Where a subscription stands on one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Cursor {
    /// Every offset below this one is done (acked, or lost to retention).
    pub ack_floor: u64,
    /// The next offset never delivered yet.
    pub next_offset: u64,
    /// Deliveries made (first ones and redeliveries).
    pub delivered: u64,
    /// Redeliveries made.
    pub redelivered: u64,
    /// Messages acked.
    pub acked: u64,
}

/// The state of one delivered, unacked offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryState {
    /// Leased to a consumer until `deadline_ms`, under the lease id `lease`.
    InFlight {
        /// When the lease ends.
        deadline_ms: u64,
        /// Random id of this delivery; receipts carry it.
        lease: u64,
    },
    /// Waiting for redelivery at `due_ms`.
    Waiting {
        /// When it may be delivered again.
        due_ms: u64,
    },
    /// Acked, but an older offset is not, so the floor cannot pass it yet.
    Done,
}

/// One delivered, unacked offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Deliveries made so far.
    pub attempts: u32,
    /// Its state.
    pub state: EntryState,
}

impl Entry {
    fn lease_deadline(&self) -> Option<u64> {
        match self.state {
            EntryState::InFlight { deadline_ms, .. } => Some(deadline_ms),
            _ => None,
        }
    }

    fn retry_due(&self) -> Option<u64> {
        match self.state {
            EntryState::Waiting { due_ms } => Some(due_ms),
            _ => None,
        }
    }
}

/// One offset handed out by [`LeaseTable::grant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The offset to deliver.
    pub offset: u64,
    /// Which delivery this is (1 = first).
    pub attempt: u32,
    /// The lease id to put in the receipt.
    pub lease: u64,
}

/// Why a settle (ack, nack, extend) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// The offset is not leased under that lease id, or the lease has ended.
    NotLeased,
}

/// Counts of one table, for subscription stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableCounts {
    /// Leased right now (expired leases not counted).
    pub in_flight: u64,
    /// Waiting for redelivery, including leases that have expired.
    pub waiting_retry: u64,
    /// Never delivered: `end_offset - next_offset`.
    pub undelivered: u64,
    /// Lowest offset not yet done, if any is unacked.
    pub oldest_unacked: Option<u64>,
}

/// Delivery bookkeeping for one subscription on one partition.
#[derive(Debug, Clone, Default)]
pub struct LeaseTable {
    cursor: Cursor,
    entries: BTreeMap<u64, Entry>,
    /// `(deadline, offset)` of every in-flight entry.
    lease_timers: BTreeSet<(u64, u64)>,
    /// `(due time, offset)` of every entry waiting for redelivery.
    retry_timers: BTreeSet<(u64, u64)>,
    dirty_cursor: bool,
    dirty_entries: BTreeSet<u64>,
}

impl LeaseTable {
    /// A table starting at `offset` with nothing delivered.
    pub fn starting_at(offset: u64) -> Self {
        Self::restore(
            Cursor {
                ack_floor: offset,
                next_offset: offset,
                ..Cursor::default()
            },
            Vec::new(),
        )
    }

    /// Rebuilds a table from persisted state.
    pub fn restore(cursor: Cursor, entries: Vec<(u64, Entry)>) -> Self {
        let mut table = LeaseTable {
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
                    attempts: 1,
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

    /// Hands out up to `max` offsets: due redeliveries first (oldest due first), then fresh
    /// offsets from `next_offset` up to the end of `log` (the partition's stored offsets),
    /// leased until `now_ms + lease_ms`. Offsets below `log.start` (deleted by retention) are
    /// skipped as done.
    pub fn grant(
        &mut self,
        now_ms: u64,
        max: usize,
        log: std::ops::Range<u64>,
        lease_ms: u64,
        retry: &RetryPolicy,
        mut new_lease: impl FnMut() -> u64,
    ) -> Vec<Grant> {
        let end_offset = log.end;
        self.skip_to(log.start);
        self.expire(now_ms, retry);
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
                    state: EntryState::InFlight {
                        deadline_ms: now_ms.saturating_add(lease_ms),
                        lease,
                    },
                },
            );
            self.cursor.delivered += 1;
            if attempt > 1 {
                self.cursor.redelivered += 1;
            }
            self.dirty_cursor = true;
            grants.push(Grant {
                offset,
                attempt,
                lease,
            });
        }
        while grants.len() < max
            && self.cursor.next_offset < end_offset
            && self.entries.len() < MAX_UNACKED_PER_PARTITION
        {
            let offset = self.cursor.next_offset;
            let lease = new_lease();
            self.put(
                offset,
                Entry {
                    attempts: 1,
                    state: EntryState::InFlight {
                        deadline_ms: now_ms.saturating_add(lease_ms),
                        lease,
                    },
                },
            );
            self.cursor.next_offset += 1;
            self.cursor.delivered += 1;
            self.dirty_cursor = true;
            grants.push(Grant {
                offset,
                attempt: 1,
                lease,
            });
        }
        self.check_invariants();
        grants
    }

    /// Marks a leased offset done. Refused when the lease id differs or the lease has ended.
    pub fn ack(&mut self, offset: u64, lease: u64, now_ms: u64) -> Result<(), Stale> {
        self.leased(offset, lease, now_ms)?;
        self.put(
            offset,
            Entry {
                attempts: self.entries.get(&offset).map_or(1, |e| e.attempts),
                state: EntryState::Done,
            },
        );
        self.cursor.acked += 1;
        self.dirty_cursor = true;
        self.advance_floor();
        self.check_invariants();
        Ok(())
    }

    /// Marks an offset done without a lease: a message that was not delivered anew because it
    /// no longer exists (retention) or was skipped.
    pub fn forget(&mut self, offset: u64) {
        if let Some(entry) = self.entries.get(&offset).copied() {
            self.put(
                offset,
                Entry {
                    state: EntryState::Done,
                    ..entry
                },
            );
            self.advance_floor();
        }
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
            },
        );
        self.cursor.delivered = self.cursor.delivered.saturating_sub(1);
        if attempts > 0 {
            self.cursor.redelivered = self.cursor.redelivered.saturating_sub(1);
        }
        self.dirty_cursor = true;
    }

    /// Ends a lease early: the offset is redelivered after `delay_ms`, or after the retry
    /// backoff for its attempt count when `delay_ms` is `None`.
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
        self.put(
            offset,
            Entry {
                attempts: entry.attempts,
                state: EntryState::Waiting {
                    due_ms: now_ms.saturating_add(pause),
                },
            },
        );
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
        self.put(
            offset,
            Entry {
                attempts: entry.attempts,
                state: EntryState::InFlight {
                    deadline_ms: now_ms.saturating_add(lease_ms),
                    lease,
                },
            },
        );
        Ok(())
    }

    /// The earliest time something changes on its own (a lease ends or a retry falls due).
    pub fn next_wake(&self) -> Option<u64> {
        let lease = self.lease_timers.first().map(|(time, _)| *time);
        let retry = self.retry_timers.first().map(|(time, _)| *time);
        lease.into_iter().chain(retry).min()
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
                EntryState::InFlight { .. } | EntryState::Waiting { .. } => {
                    counts.waiting_retry += 1
                }
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

    /// Takes the set of changes since the last call: whether the cursor changed, and each
    /// changed offset with its entry (`None`: the entry is gone).
    pub fn take_changes(&mut self) -> (Option<Cursor>, Vec<(u64, Option<Entry>)>) {
        let cursor = std::mem::take(&mut self.dirty_cursor).then_some(self.cursor);
        let entries = std::mem::take(&mut self.dirty_entries)
            .into_iter()
            .map(|offset| (offset, self.entries.get(&offset).copied()))
            .collect();
        (cursor, entries)
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
            if let EntryState::InFlight { deadline_ms, .. } = entry.state {
                let due_ms = deadline_ms.saturating_add(retry.backoff_ms(entry.attempts));
                self.put(
                    offset,
                    Entry {
                        attempts: entry.attempts,
                        state: EntryState::Waiting { due_ms },
                    },
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
        for offset in lost {
            self.remove(offset);
        }
        if self.cursor.ack_floor < start_offset {
            self.cursor.ack_floor = start_offset;
            self.dirty_cursor = true;
        }
        self.advance_floor();
    }

    fn advance_floor(&mut self) {
        loop {
            let floor = self.cursor.ack_floor;
            if floor >= self.cursor.next_offset {
                break;
            }
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
            self.unschedule(offset, &old);
        }
        if let Some(time) = entry.lease_deadline() {
            self.lease_timers.insert((time, offset));
        }
        if let Some(time) = entry.retry_due() {
            self.retry_timers.insert((time, offset));
        }
        self.dirty_entries.insert(offset);
    }

    fn remove(&mut self, offset: u64) {
        if let Some(old) = self.entries.remove(&offset) {
            self.unschedule(offset, &old);
        }
        self.dirty_entries.insert(offset);
    }

    fn unschedule(&mut self, offset: u64, entry: &Entry) {
        if let Some(time) = entry.lease_deadline() {
            self.lease_timers.remove(&(time, offset));
        }
        if let Some(time) = entry.retry_due() {
            self.retry_timers.remove(&(time, offset));
        }
    }

    fn check_invariants(&self) {
        debug_assert!(
            self.cursor.ack_floor <= self.cursor.next_offset,
            "floor passed the cursor"
        );
        debug_assert!(
            self.entries
                .keys()
                .all(|o| *o >= self.cursor.ack_floor && *o < self.cursor.next_offset),
            "an entry lies outside the unacked window"
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
                .filter(|e| e.state != EntryState::Done)
                .count(),
            "timers out of step with entries"
        );
    }
}
