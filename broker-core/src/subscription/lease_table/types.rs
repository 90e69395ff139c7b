//! The lease table's vocabulary: cursors, entries, grants and counts.

use serde::{Deserialize, Serialize};

/// Where a subscription stands on one partition, with its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Cursor {
    /// Every offset below this one is settled (acked, skipped, dead-lettered, or lost to
    /// retention).
    pub ack_floor: u64,
    /// The next offset never looked at yet.
    pub next_offset: u64,
    /// Deliveries made (first ones and redeliveries).
    pub delivered: u64,
    /// Redeliveries made.
    pub redelivered: u64,
    /// Messages acked.
    pub acked: u64,
    /// Messages skipped by the subscription's filter (they count as acked).
    pub filtered: u64,
    /// Messages moved to the dead-letter topic.
    pub dead_lettered: u64,
}

/// The state of one unsettled offset (settled ones have no entry: see
/// [`super::OffsetRanges`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryState {
    /// Leased to a consumer until `deadline_ms`, under the lease id `lease`.
    InFlight {
        /// When the lease ends.
        deadline_ms: u64,
        /// Random id of this delivery; receipts carry it.
        lease: u64,
    },
    /// Waiting for (re)delivery at `due_ms`.
    Waiting {
        /// When it may be delivered.
        due_ms: u64,
    },
    /// Ordered subscriptions: held back until the earlier message of its key is settled, and
    /// then still until `not_before_ms` (a delayed message appended ahead of its due time).
    Blocked {
        /// Earliest delivery time (0: none).
        not_before_ms: u64,
    },
    /// Out of deliveries: to be appended to the dead-letter topic, then settled.
    DeadLettering,
}

/// One unsettled offset: an unacked message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Deliveries made so far.
    pub attempts: u32,
    /// Hash of the message key, for ordered subscriptions.
    pub key_hash: Option<u64>,
    /// Its state.
    pub state: EntryState,
}

impl Entry {
    pub(super) fn lease_deadline(&self) -> Option<u64> {
        match self.state {
            EntryState::InFlight { deadline_ms, .. } => Some(deadline_ms),
            _ => None,
        }
    }

    pub(super) fn retry_due(&self) -> Option<u64> {
        match self.state {
            EntryState::Waiting { due_ms } => Some(due_ms),
            _ => None,
        }
    }
}

/// A record at the head of the log that the table may hand out, as the caller peeked it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Its offset.
    pub offset: u64,
    /// Hash of its key, if it has one.
    pub key_hash: Option<u64>,
    /// Whether the subscription's filter lets it through.
    pub wanted: bool,
    /// Earliest delivery time: the due time of a delayed message appended ahead of it
    /// ([`crate::message::Record::scheduled`]), 0 for any other.
    pub not_before_ms: u64,
}

/// The subscription settings the table acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TablePolicy {
    /// Messages of one key are delivered one at a time, in offset order.
    pub ordered_by_key: bool,
    /// Deliveries before a message is dead-lettered.
    pub max_deliveries: u32,
}

impl Default for TablePolicy {
    fn default() -> Self {
        TablePolicy {
            ordered_by_key: false,
            max_deliveries: u32::MAX,
        }
    }
}

/// One offset handed out by [`super::LeaseTable::grant`].
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
    /// Waiting for redelivery, including leases that have expired and messages held back
    /// behind an earlier one of their key (but not delayed messages before they are due).
    pub waiting_retry: u64,
    /// Never looked at: `end_offset - next_offset`.
    pub undelivered: u64,
    /// Being moved to the dead-letter topic.
    pub dead_lettering: u64,
    /// Delayed messages in the log ahead of their due time, not yet delivered.
    pub not_yet_due: u64,
    /// Lowest offset not yet settled, if any.
    pub oldest_unacked: Option<u64>,
    /// The table holds [`crate::limits::MAX_UNACKED_PER_PARTITION`] unacked messages, so
    /// receives get no new messages of this partition until some are settled.
    pub unacked_limit_reached: bool,
}

/// What changed in a table since the last [`super::LeaseTable::take_changes`]: what a store
/// must write to hold the same state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableChanges {
    /// The cursor, if it changed.
    pub cursor: Option<Cursor>,
    /// Each changed offset with its entry (`None`: the offset has no entry any more).
    pub entries: Vec<(u64, Option<Entry>)>,
    /// Each changed range of settled offsets, by start, with its end (`None`: no range
    /// starts there any more).
    pub settled: Vec<(u64, Option<u64>)>,
}

impl TableChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.cursor.is_none() && self.entries.is_empty() && self.settled.is_empty()
    }
}

/// A whole table as a snapshot of its partition's log carries it: what a checkpoint stores.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableImage {
    /// The cursor.
    pub cursor: Cursor,
    /// Every unsettled offset's entry.
    pub entries: Vec<(u64, Entry)>,
    /// Every range of settled offsets at or above the floor, `(start, end)`.
    pub settled: Vec<(u64, u64)>,
}
