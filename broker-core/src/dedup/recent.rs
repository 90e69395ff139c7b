//! Ids the request paths know and sled may not yet have: the pure bookkeeping between a
//! produce and the background applier, which derives the dedup index from the log.
//!
//! A produce reserves its ids before it queues their records ([`RecentIds::reserve`]) and
//! fills in each first result once its write is durable ([`RecentIds::fill`]); a filled entry
//! answers a lookup at once. The applier lets go of an entry once it has written the id from
//! the log to sled ([`RecentIds::applied`]), never by time or guess: under an fsync interval a
//! write is answered before the applier can see it. So while any entry is held, a record with
//! a client id may be in the log and not yet in sled, and the applier must read message
//! records.
//!
//! A lookup is made by a produce holding the id's claim (`in_flight`), so an entry it finds
//! unfilled belongs to a produce that ended without a first result. If that produce queued
//! nothing, or its local write failed (nothing was stored), it lets go of its ids
//! ([`RecentIds::release`]). If its write to a replicated partition failed, the record may
//! still be in the log and be committed (a timeout, a leader cut off or deposed mid-write):
//! the entry stays, with a [`Fence`] saying where the record would be, and answers
//! [`Remembered::Pending`], so a retry is refused rather than stored a second time. It goes when the applier meets the record in the log; once the
//! applier has reached the fence's position without meeting it (everything the log held when
//! the write failed is applied, and a failed write is never written later); or once the
//! partition's Raft term has moved past the fence's (a write bound to a term is never written
//! in another, and a later leadership of this node first brings the index up to everything
//! its log holds, `broker::produce`). An entry never filled nor fenced goes once it is
//! [`STALE_AFTER_MS`] old.

use std::collections::HashMap;

use super::FirstResult;
use crate::storage::LogPosition;

/// Age at which a reserved id neither filled nor fenced is let go even though the applier
/// never met it: its produce ended without saying how. A write is answered or refused within seconds (the
/// writer's enqueue timeout is far shorter), and the applier runs ten times a second, so an id
/// still held after a minute was never written.
pub const STALE_AFTER_MS: u64 = 60_000;

/// Where the record of an id whose replicated write failed would be, if it was written after
/// all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    /// The partition the id's record went to.
    pub partition: u32,
    /// The Raft term its write was bound to.
    pub term: u64,
    /// The index of the last Raft entry this node's log held once the write had failed: the
    /// record is in that entry or before it, if anywhere. Once every entry up to it is
    /// applied, `resolve_at` is set to the visible end then.
    pub last_index: Option<u64>,
    /// The visible end of the partition log once the record would be visible if stored.
    pub resolve_at: Option<LogPosition>,
}

/// What the applier knows of one partition, for [`RecentIds::drop_stale`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionProgress {
    /// Its Raft term here (`None` where this node holds no replica).
    pub term: Option<u64>,
    /// The index of the last Raft entry applied here.
    pub applied_index: Option<u64>,
    /// The visible end of its log.
    pub visible_end: LogPosition,
    /// How far the dedup index reflects its log.
    pub indexed: Option<LogPosition>,
}

/// What memory knows of an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remembered {
    /// Nothing: look in sled.
    Nothing,
    /// Its first result.
    First(FirstResult),
    /// A write of it ended with its outcome unknown, and may still be stored.
    Pending,
}

/// One id: its first result once known, when it was reserved, and its fence once its write
/// failed.
#[derive(Debug, Clone, Copy)]
struct Entry {
    first: Option<FirstResult>,
    reserved_ms: u64,
    fence: Option<Fence>,
}

/// Reserved and filled ids.
#[derive(Debug, Default)]
pub struct RecentIds {
    ids: HashMap<String, Entry>,
}

impl RecentIds {
    /// Reserves ids whose records are about to be queued.
    pub fn reserve<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>, now_ms: u64) {
        for id in ids {
            let entry = Entry {
                first: None,
                reserved_ms: now_ms,
                fence: None,
            };
            self.ids.insert(id.to_owned(), entry);
        }
    }

    /// The write of a reserved id failed: it may still be stored, before `fence`.
    pub fn unresolved(&mut self, id: &str, fence: Fence) {
        if let Some(entry) = self.ids.get_mut(id)
            && entry.first.is_none()
        {
            entry.fence = Some(fence);
        }
    }

    /// The first result of a reserved id, once its write is durable. An id the applier has
    /// already let go of stays gone: sled has it.
    pub fn fill(&mut self, id: &str, first: FirstResult) {
        if let Some(entry) = self.ids.get_mut(id) {
            entry.first = Some(first);
        }
    }

    /// Lets go of a reserved id whose record was never queued, or whose local write failed
    /// (nothing was stored), so a retry stores it. A filled entry stays.
    pub fn release(&mut self, id: &str) {
        if self.ids.get(id).is_some_and(|e| e.first.is_none()) {
            self.ids.remove(id);
        }
    }

    /// The applier wrote `id` to sled, first produced at `produced_ms`: lets go of it, unless
    /// memory holds a later produce of the same id.
    pub fn applied(&mut self, id: &str, produced_ms: u64) {
        let later = self
            .ids
            .get(id)
            .and_then(|e| e.first)
            .map(|f| f.produced_ms);
        if later.is_none_or(|later| later <= produced_ms) {
            self.ids.remove(id);
        }
    }

    /// Lets go of the ids whose time is up. A fenced unfilled one goes once the index has
    /// reached its `resolve_at` without meeting its record, or once its partition's term here
    /// is past the fence's (or this node holds no replica of it); its `resolve_at` is set once
    /// its `last_index` is applied. Any other goes once reserved [`STALE_AFTER_MS`] or more
    /// before `now_ms`. `progress` tells each partition's figures, asked once a call.
    pub fn drop_stale(&mut self, now_ms: u64, progress: impl Fn(u32) -> PartitionProgress) {
        let mut known: HashMap<u32, PartitionProgress> = HashMap::new();
        self.ids.retain(|_, e| match (e.first, &mut e.fence) {
            (None, Some(fence)) => {
                let now = *known
                    .entry(fence.partition)
                    .or_insert_with(|| progress(fence.partition));
                if now.term.is_none_or(|term| term > fence.term) {
                    return false;
                }
                if fence.resolve_at.is_none() && now.applied_index >= fence.last_index {
                    fence.resolve_at = Some(now.visible_end);
                }
                fence.resolve_at.is_none_or(|at| now.indexed < Some(at))
            }
            _ => e.reserved_ms.saturating_add(STALE_AFTER_MS) > now_ms,
        });
    }

    /// Lets go of the unfilled ids fenced to `partition` in a term before `term`: this node
    /// leads the partition in `term` and its index now holds every id its log does.
    pub fn drop_fenced_before(&mut self, partition: u32, term: u64) {
        self.ids.retain(|_, e| match (e.first, e.fence) {
            (None, Some(fence)) => fence.partition != partition || fence.term >= term,
            _ => true,
        });
    }

    /// What memory knows of `id`.
    pub fn get(&self, id: &str) -> Remembered {
        match self.ids.get(id) {
            Some(Entry {
                first: Some(first), ..
            }) => Remembered::First(*first),
            Some(Entry { first: None, .. }) => Remembered::Pending,
            None => Remembered::Nothing,
        }
    }

    /// How many ids are held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(produced_ms: u64) -> FirstResult {
        FirstResult {
            produced_ms,
            partition: 0,
            offset: Some(1),
            deliver_at_ms: None,
        }
    }

    fn at(position: u64) -> LogPosition {
        LogPosition {
            segment_base: 0,
            position,
        }
    }

    const FENCE: Fence = Fence {
        partition: 1,
        term: 4,
        last_index: Some(40),
        resolve_at: None,
    };

    fn progress(
        term: u64,
        applied_index: u64,
        visible_end: u64,
        indexed: u64,
    ) -> PartitionProgress {
        PartitionProgress {
            term: Some(term),
            applied_index: Some(applied_index),
            visible_end: at(visible_end),
            indexed: Some(at(indexed)),
        }
    }

    #[test]
    fn a_reserved_id_answers_once_filled_and_goes_once_applied() {
        let mut recent = RecentIds::default();
        recent.reserve(["a", "b"], 0);
        assert_eq!(recent.get("a"), Remembered::Pending, "not yet durable");
        recent.fill("a", first(5));
        assert_eq!(recent.get("a"), Remembered::First(first(5)));
        recent.applied("a", 5);
        recent.applied("b", 5);
        assert!(recent.is_empty());
        recent.fill("a", first(5));
        assert!(recent.is_empty(), "a late fill does not bring it back");
    }

    #[test]
    fn applying_an_earlier_produce_of_an_id_keeps_the_later_one() {
        let mut recent = RecentIds::default();
        recent.reserve(["a"], 0);
        recent.fill("a", first(9));
        recent.applied("a", 5);
        assert_eq!(recent.get("a"), Remembered::First(first(9)));
    }

    #[test]
    fn an_id_never_filled_nor_fenced_goes_once_stale_and_not_before() {
        let mut recent = RecentIds::default();
        recent.reserve(["a"], 1_000);
        recent.drop_stale(1_000 + STALE_AFTER_MS - 1, |_| PartitionProgress::default());
        assert_eq!(recent.len(), 1);
        recent.drop_stale(1_000 + STALE_AFTER_MS, |_| PartitionProgress::default());
        assert!(recent.is_empty());
    }

    #[test]
    fn a_released_id_is_free_and_a_filled_one_is_kept() {
        let mut recent = RecentIds::default();
        recent.reserve(["a", "b"], 0);
        recent.fill("b", first(3));
        recent.release("a");
        recent.release("b");
        assert_eq!(recent.get("a"), Remembered::Nothing);
        assert_eq!(recent.get("b"), Remembered::First(first(3)));
        assert_eq!(recent.len(), 1);
    }

    #[test]
    fn a_failed_replicated_write_stays_pending_until_its_entry_is_applied_and_indexed() {
        let mut recent = RecentIds::default();
        recent.reserve(["a"], 0);
        recent.unresolved("a", FENCE);
        assert_eq!(recent.get("a"), Remembered::Pending);
        recent.drop_stale(10 * STALE_AFTER_MS, |_| progress(4, 39, 90, 90));
        assert_eq!(
            recent.get("a"),
            Remembered::Pending,
            "time alone never frees it: its entry may still commit"
        );
        recent.drop_stale(0, |p| match p {
            0 => progress(9, 99, 500, 500),
            _ => progress(4, 39, 90, 90),
        });
        assert_eq!(
            recent.len(),
            1,
            "another partition's progress says nothing of it"
        );
        recent.drop_stale(0, |_| progress(4, 40, 120, 100));
        assert_eq!(
            recent.len(),
            1,
            "entry 40 applied; the index is not at 120 yet"
        );
        recent.drop_stale(0, |_| progress(4, 41, 130, 120));
        assert!(
            recent.is_empty(),
            "indexed up to where it would be, and never met"
        );
    }

    #[test]
    fn a_failed_replicated_write_goes_once_its_term_is_past() {
        let mut recent = RecentIds::default();
        recent.reserve(["a", "b"], 0);
        recent.unresolved("a", FENCE);
        recent.unresolved("b", FENCE);
        recent.drop_stale(0, |_| progress(4, 0, 0, 0));
        assert_eq!(recent.len(), 2);
        recent.drop_stale(0, |_| progress(5, 0, 0, 0));
        assert!(
            recent.is_empty(),
            "a later term: its entry is committed or gone"
        );
    }

    #[test]
    fn a_pending_id_goes_once_the_applier_meets_its_record() {
        let mut recent = RecentIds::default();
        recent.reserve(["a"], 0);
        recent.unresolved("a", FENCE);
        recent.applied("a", 0);
        assert_eq!(recent.get("a"), Remembered::Nothing, "sled has it now");
    }

    #[test]
    fn leading_a_later_term_drops_the_partitions_older_pending_ids_only() {
        let mut recent = RecentIds::default();
        let other = Fence {
            partition: 2,
            ..FENCE
        };
        let now = Fence { term: 5, ..FENCE };
        recent.reserve(["old", "other", "now"], 0);
        recent.unresolved("old", FENCE);
        recent.unresolved("other", other);
        recent.unresolved("now", now);
        recent.drop_fenced_before(FENCE.partition, 5);
        assert_eq!(recent.get("old"), Remembered::Nothing);
        assert_eq!(recent.get("other"), Remembered::Pending);
        assert_eq!(recent.get("now"), Remembered::Pending);
    }
}
