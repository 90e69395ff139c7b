//! The events a restart replays on top of the last checkpoint of a table: acks, nacks,
//! redeliveries and dead letters, recorded in the order they happened. They carry no lease
//! (leases are not durable: a delivery whose lease was lost is redelivered at once) and no
//! clock, and they may name offsets at or past `next_offset`, as a message can be delivered
//! and settled after the checkpoint was taken. None of them changes a settled offset.

use super::{Entry, EntryState, LeaseTable};

impl LeaseTable {
    /// `offset` was acked: it is settled, whatever its state, and counted in `acked` once.
    pub fn replay_ack(&mut self, offset: u64) {
        if self.is_settled(offset) {
            return;
        }
        self.cursor.acked += 1;
        self.settle(offset, 0);
        self.check_invariants();
    }

    /// `offset` was nacked after its `attempts`-th delivery: it waits for redelivery at
    /// `due_ms`, or, out of deliveries, is dead-lettered. Its attempt count never goes down.
    /// `key_hash` is its key's, for an offset the table has no entry for yet.
    pub fn replay_nack(&mut self, offset: u64, attempts: u32, due_ms: u64, key_hash: Option<u64>) {
        if self.is_settled(offset) {
            return;
        }
        let entry = self.replayed_entry(offset, attempts, key_hash);
        if entry.state != EntryState::DeadLettering {
            self.fail(offset, entry, due_ms);
        }
        self.check_invariants();
    }

    /// `offset` was delivered for the `attempts`-th time: its attempt count becomes at least
    /// `attempts` (a delivery is counted when it grows). The lease of that delivery is not
    /// durable, so an offset not in flight under a lease the table still knows waits for
    /// redelivery (at once if it had no entry), or, out of deliveries, is dead-lettered, as
    /// an expired lease would be.
    pub fn replay_attempt(&mut self, offset: u64, attempts: u32, key_hash: Option<u64>) {
        if self.is_settled(offset) {
            return;
        }
        let entry = self.replayed_entry(offset, attempts, key_hash);
        let before = self.entries.get(&offset).map_or(0, |e| e.attempts);
        if entry.attempts > before {
            self.count_delivery(entry.attempts);
        }
        let due_ms = match entry.state {
            EntryState::InFlight { .. } | EntryState::DeadLettering => None,
            EntryState::Waiting { due_ms } => Some(due_ms),
            EntryState::Blocked { not_before_ms } => Some(not_before_ms),
        };
        match due_ms {
            Some(due_ms) => self.fail(offset, entry, due_ms),
            None => self.put(offset, entry),
        }
        self.check_invariants();
    }

    /// `offset` was leased for its `attempts`-th delivery under `lease` until `deadline_ms` (a
    /// cluster's leader records this, so its successor holds the message for the rest of the
    /// lease and accepts its receipt). A settled or dead-lettering offset stays as it is; the
    /// lease ends as any other: [`LeaseTable::grant`] finds it expired and redelivers it.
    pub fn replay_lease(
        &mut self,
        offset: u64,
        attempts: u32,
        lease: u64,
        deadline_ms: u64,
        key_hash: Option<u64>,
    ) {
        if self.is_settled(offset) {
            return;
        }
        let entry = self.replayed_entry(offset, attempts, key_hash);
        if entry.state == EntryState::DeadLettering {
            return;
        }
        let before = self.entries.get(&offset).map_or(0, |e| e.attempts);
        if entry.attempts > before {
            self.count_delivery(entry.attempts);
        }
        let state = EntryState::InFlight { deadline_ms, lease };
        self.put(offset, Entry { state, ..entry });
        self.check_invariants();
    }

    /// `offset` was appended to the dead-letter topic: it is settled, and counted in
    /// `dead_lettered` once.
    pub fn replay_dead_lettered(&mut self, offset: u64) {
        if self.is_settled(offset) {
            return;
        }
        self.cursor.dead_lettered += 1;
        self.settle(offset, 0);
        self.check_invariants();
    }

    /// The entry of unsettled `offset` with at least `attempts` attempts: its own, or a new one
    /// waiting for delivery at once.
    fn replayed_entry(&self, offset: u64, attempts: u32, key_hash: Option<u64>) -> Entry {
        let entry = self.entries.get(&offset).copied().unwrap_or(Entry {
            attempts: 0,
            key_hash: key_hash.filter(|_| self.policy.ordered_by_key),
            state: EntryState::Waiting { due_ms: 0 },
        });
        Entry {
            attempts: entry.attempts.max(attempts),
            ..entry
        }
    }

    /// Forgets whatever lies at or past `end`, the end of the log that survived a crash: a
    /// checkpoint written before a power loss under `--fsync never` or an interval can know
    /// offsets the log lost, and new messages will take those offsets again, so the table
    /// must not count them as delivered or settled.
    pub fn clamp_to(&mut self, end: u64) {
        let beyond: Vec<u64> = self.entries.range(end..).map(|(o, _)| *o).collect();
        let any = !beyond.is_empty();
        for offset in beyond {
            self.remove(offset);
        }
        if any {
            self.unblock_heads();
        }
        self.settled.remove_from(end);
        if self.cursor.next_offset > end {
            self.cursor.next_offset = end;
            self.dirty_cursor = true;
        }
        if self.cursor.ack_floor > end {
            self.cursor.ack_floor = end;
            self.dirty_cursor = true;
        }
        self.check_invariants();
    }

    /// Settles the fresh offsets of `from..to` as lost: the log can no longer read them (a
    /// damaged frame), so they are skipped rather than retried forever. Returns how many it
    /// skipped; offsets already delivered, settled or given an entry are left alone.
    pub fn skip_unreadable(&mut self, from: u64, to: u64) -> u64 {
        let mut skipped = 0;
        for offset in from.max(self.cursor.next_offset)..to {
            if !self.is_settled(offset) && !self.entries.contains_key(&offset) {
                if offset >= self.cursor.next_offset {
                    self.cursor.next_offset = offset + 1;
                }
                self.mark_settled(offset);
                skipped += 1;
            }
        }
        if self.cursor.next_offset < to {
            self.cursor.next_offset = to;
        }
        self.dirty_cursor = true;
        self.advance_floor();
        self.check_invariants();
        skipped
    }
}
