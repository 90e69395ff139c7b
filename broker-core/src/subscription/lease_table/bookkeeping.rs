//! The table's inner workings: settling, failing and expiring entries, moving the floor, and
//! keeping the timers, key queues and dead-letter index in step with the entries.

use super::{Entry, EntryState, LeaseTable, Stale};
use crate::subscription::config::RetryPolicy;

impl LeaseTable {
    pub(super) fn count_delivery(&mut self, attempt: u32) {
        self.cursor.delivered += 1;
        if attempt > 1 {
            self.cursor.redelivered += 1;
        }
        self.dirty_cursor = true;
    }

    /// Whether `offset` is settled: below the floor or in the settled ranges.
    pub(super) fn is_settled(&self, offset: u64) -> bool {
        offset < self.cursor.ack_floor || self.settled.contains(offset)
    }

    /// A delivery failed (nack or lease expiry): wait until `due_ms`, or dead-letter it.
    pub(super) fn fail(&mut self, offset: u64, entry: Entry, due_ms: u64) {
        let state = if entry.attempts >= self.policy.max_deliveries {
            EntryState::DeadLettering
        } else {
            EntryState::Waiting { due_ms }
        };
        self.put(offset, Entry { state, ..entry });
    }

    /// An offset is settled (acked, dead-lettered, forgotten): its entry, if any, goes, and on
    /// ordered subscriptions the next message of its key gets its turn.
    pub(super) fn settle(&mut self, offset: u64, now_ms: u64) {
        // Settling always changes a counter (acked, dead_lettered) or the floor.
        self.dirty_cursor = true;
        let entry = self.entries.get(&offset).copied();
        self.remove(offset);
        self.mark_settled(offset);
        if let Some(next) = entry
            .and_then(|e| e.key_hash)
            .and_then(|k| self.key_queues.get(&k))
            .and_then(|q| q.first().copied())
            && let Some(held) = self.entries.get(&next).copied()
            && let EntryState::Blocked { not_before_ms } = held.state
        {
            let due_ms = now_ms.max(not_before_ms);
            let state = EntryState::Waiting { due_ms };
            self.put(next, Entry { state, ..held });
        }
        self.advance_floor();
    }

    /// Records `offset`, which has no entry, as settled; the caller moves the floor.
    pub(super) fn mark_settled(&mut self, offset: u64) {
        let floor = self.cursor.ack_floor;
        if offset == floor && floor < self.cursor.next_offset {
            // The common in-order settle: the floor steps over it, with no range to write
            // and drop again.
            self.cursor.ack_floor = floor + 1;
            self.dirty_cursor = true;
        } else {
            self.settled.insert(offset);
        }
    }

    /// Turns expired leases into waits of their backoff, counted from the lease's end.
    pub(super) fn expire(&mut self, now_ms: u64, retry: &RetryPolicy) {
        let expired: Vec<(u64, Entry)> = self
            .lease_timers
            .iter()
            .take_while(|(time, _)| *time <= now_ms)
            .filter_map(|(_, offset)| self.entries.get(offset).map(|e| (*offset, *e)))
            .collect();
        for (offset, entry) in expired {
            if let Some(deadline_ms) = entry.lease_deadline() {
                let due_ms = deadline_ms.saturating_add(retry.backoff_ms(entry.attempts));
                self.fail(offset, entry, due_ms);
            }
        }
    }

    pub(super) fn leased(&self, offset: u64, lease: u64, now_ms: u64) -> Result<Entry, Stale> {
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

    /// Drops everything below `start_offset`, which retention deleted.
    pub(super) fn skip_to(&mut self, start_offset: u64) {
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
            self.settled.remove_below(start_offset);
        }
        self.advance_floor();
    }

    /// Gives the turn to every held-back message that heads its key's queue (after the
    /// messages ahead of it vanished without being settled).
    pub(super) fn unblock_heads(&mut self) {
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
            let state = EntryState::Waiting {
                due_ms: not_before_ms,
            };
            self.put(offset, Entry { state, ..entry });
        }
    }

    /// Moves the floor over the settled range it stands on, up to `next_offset`. Ranges are
    /// merged, so one step reaches an unsettled offset (or `next_offset`).
    pub(super) fn advance_floor(&mut self) {
        let floor = self.cursor.ack_floor;
        let Some(end) = self.settled.end_of(floor) else {
            return;
        };
        let new_floor = end.min(self.cursor.next_offset);
        if new_floor > floor {
            self.cursor.ack_floor = new_floor;
            self.dirty_cursor = true;
            self.settled.remove_below(new_floor);
        }
    }

    /// Gives every offset of the window that is neither settled nor unsettled (the store lost
    /// it) an entry that redelivers it at once.
    pub(super) fn redeliver_lost(&mut self) {
        let mut offset = self.cursor.ack_floor;
        while offset < self.cursor.next_offset {
            if let Some(end) = self.settled.end_of(offset) {
                offset = end;
                continue;
            }
            if !self.entries.contains_key(&offset) {
                let entry = Entry {
                    attempts: 0,
                    key_hash: None,
                    state: EntryState::Waiting { due_ms: 0 },
                };
                self.put(offset, entry);
            }
            offset += 1;
        }
    }

    /// The first offset at or past `next_offset` that is neither settled nor has an entry.
    pub(super) fn first_fresh(&self) -> u64 {
        let mut offset = self.cursor.next_offset;
        loop {
            if let Some(end) = self.settled.end_of(offset) {
                offset = end;
            } else if self.entries.contains_key(&offset) {
                offset += 1;
            } else {
                return offset;
            }
        }
    }

    pub(super) fn put(&mut self, offset: u64, entry: Entry) {
        let old = self.entries.insert(offset, entry);
        self.dirty_entries.entry(offset).or_insert(old.is_some());
        if let Some(old) = old {
            self.unindex(offset, &old);
        }
        if let Some(time) = entry.lease_deadline() {
            self.lease_timers.insert((time, offset));
        }
        if let Some(time) = entry.retry_due() {
            self.retry_timers.insert((time, offset));
        }
        if let Some(key) = entry.key_hash {
            self.key_queues.entry(key).or_default().insert(offset);
        }
        if entry.state == EntryState::DeadLettering {
            self.dead_letters.insert(offset);
        }
    }

    pub(super) fn remove(&mut self, offset: u64) {
        let old = self.entries.remove(&offset);
        self.dirty_entries.entry(offset).or_insert(old.is_some());
        if let Some(old) = old {
            self.unindex(offset, &old);
        }
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

    /// Checks the table's invariants in debug builds. Costs a walk of the entries and ranges,
    /// as the checks it replaces did.
    pub(super) fn check_invariants(&self) {
        let (floor, next) = (self.cursor.ack_floor, self.cursor.next_offset);
        debug_assert!(floor <= next, "floor passed the cursor");
        debug_assert!(
            self.entries
                .keys()
                .next()
                .is_none_or(|first| *first >= floor),
            "an entry below the floor"
        );
        debug_assert!(
            self.settled
                .iter()
                .next()
                .is_none_or(|(start, _)| start >= floor),
            "a settled range below the floor"
        );
        debug_assert!(
            floor == next || !self.settled.contains(floor),
            "the floor stopped on a settled offset"
        );
        debug_assert!(
            self.entries
                .keys()
                .all(|offset| !self.settled.contains(*offset)),
            "an offset both settled and unsettled"
        );
        debug_assert_eq!(
            self.entries.range(..next).count() as u64 + self.settled.count_within(floor, next),
            next - floor,
            "an offset of the window neither settled nor unsettled"
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
        debug_assert_eq!(
            self.dead_letters.len(),
            self.entries
                .values()
                .filter(|e| e.state == EntryState::DeadLettering)
                .count(),
            "dead-letter index out of step with entries"
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
