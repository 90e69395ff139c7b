//! Ids the request paths know and sled may not yet have: the pure bookkeeping between a
//! produce and the background applier, which derives the dedup index from the log.
//!
//! A produce reserves its ids before it queues their records ([`RecentIds::reserve`]) and
//! fills in each first result once its write is durable ([`RecentIds::fill`]); only a filled
//! entry answers a lookup (while the produce runs, its claim keeps other produces of the id
//! waiting anyway). The applier lets go of an entry once it has written the id from the log to
//! sled ([`RecentIds::applied`]), never by time or guess: under an fsync interval a write is
//! answered before the applier can see it. So while any entry is held, a record with a client
//! id may be in the log and not yet in sled, and the applier must read message records. An
//! entry whose write never happened (it failed, or its produce was dropped) goes once it is
//! [`STALE_AFTER_MS`] old.

use std::collections::HashMap;

use super::FirstResult;

/// Age at which a reserved id is let go even though the applier never met it: its write
/// failed or was never queued. A write is answered or refused within seconds (the writer's
/// enqueue timeout is far shorter), and the applier runs ten times a second, so an id still
/// held after a minute was never written.
pub const STALE_AFTER_MS: u64 = 60_000;

/// One id: its first result once known, and when it was reserved.
#[derive(Debug, Clone, Copy)]
struct Entry {
    first: Option<FirstResult>,
    reserved_ms: u64,
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
            };
            self.ids.insert(id.to_owned(), entry);
        }
    }

    /// The first result of a reserved id, once its write is durable. An id the applier has
    /// already let go of stays gone: sled has it.
    pub fn fill(&mut self, id: &str, first: FirstResult) {
        if let Some(entry) = self.ids.get_mut(id) {
            entry.first = Some(first);
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

    /// Lets go of the ids reserved [`STALE_AFTER_MS`] or more before `now_ms`.
    pub fn drop_stale(&mut self, now_ms: u64) {
        self.ids
            .retain(|_, e| e.reserved_ms.saturating_add(STALE_AFTER_MS) > now_ms);
    }

    /// The first result of `id`, if filled.
    pub fn get(&self, id: &str) -> Option<FirstResult> {
        self.ids.get(id).and_then(|e| e.first)
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

    #[test]
    fn a_reserved_id_answers_once_filled_and_goes_once_applied() {
        let mut recent = RecentIds::default();
        recent.reserve(["a", "b"], 0);
        assert_eq!(recent.get("a"), None, "not yet durable");
        recent.fill("a", first(5));
        assert_eq!(recent.get("a"), Some(first(5)));
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
        assert_eq!(recent.get("a"), Some(first(9)));
    }

    #[test]
    fn an_id_never_written_goes_once_stale_and_not_before() {
        let mut recent = RecentIds::default();
        recent.reserve(["a"], 1_000);
        recent.drop_stale(1_000 + STALE_AFTER_MS - 1);
        assert_eq!(recent.len(), 1);
        recent.drop_stale(1_000 + STALE_AFTER_MS);
        assert!(recent.is_empty());
    }
}
