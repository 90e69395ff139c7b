//! What the schedule in memory knows that sled may not yet: the pure bookkeeping between the
//! request paths, which change the schedule once their event is durable in the log, and the
//! background applier, which copies the log into sled ([`crate::schedule`]).
//!
//! Memory lets go of a change only when the applier has written the event that makes it to
//! sled ([`ScheduleOverlay::applied`]), never by time or by guess: so whatever the fsync policy
//! (under an interval, a write is answered before the applier can see it), a lookup finds
//! every durable change in memory or in sled. A message the mover claims or a cancel takes
//! is hidden at once, before its record or event is queued, and stays hidden until sled no
//! longer has it; a move or cancel that fails shows it again.

use std::collections::{BTreeMap, HashMap};

use super::Scheduled;

/// A scheduled message's place: due time, then tie-breaker.
pub type DueKey = (u64, u64);

/// Why a message is hidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hidden {
    /// The mover claimed it and is appending it.
    Moving,
    /// A cancel is writing its event.
    Cancelling,
    /// Moved or cancelled; sled may still have it.
    Gone,
}

/// The schedule's changes not yet known to be in sled.
#[derive(Debug, Default)]
pub struct ScheduleOverlay {
    /// Durable scheduled messages.
    pending: BTreeMap<DueKey, Scheduled>,
    pending_ids: HashMap<String, DueKey>,
    pending_bytes: usize,
    /// Messages being moved or cancelled, or moved or cancelled and maybe still in sled.
    hidden: HashMap<DueKey, Hidden>,
}

impl ScheduleOverlay {
    /// Adds messages whose scheduled events are durable.
    pub fn add(&mut self, messages: impl IntoIterator<Item = Scheduled>) {
        for message in messages {
            let key = (message.due_ms, message.seq);
            self.pending_bytes += message.record.approx_size();
            self.pending_ids.insert(message.record.id.clone(), key);
            if let Some(old) = self.pending.insert(key, message) {
                self.pending_bytes -= old.record.approx_size();
            }
        }
    }

    /// The applier wrote these changes to sled (`true`: the message is scheduled there;
    /// `false`: it was removed there): memory lets go of them.
    pub fn applied(&mut self, changes: impl IntoIterator<Item = (DueKey, bool)>) {
        for (key, scheduled) in changes {
            if let Some(message) = self.pending.remove(&key) {
                self.pending_bytes -= message.record.approx_size();
                if self.pending_ids.get(&message.record.id) == Some(&key) {
                    self.pending_ids.remove(&message.record.id);
                }
            }
            if !scheduled {
                self.hidden.remove(&key);
            }
        }
    }

    /// Whether the mover and cancels must not see `key`.
    pub fn hidden(&self, key: DueKey) -> bool {
        self.hidden.contains_key(&key)
    }

    /// The place and partition of a pending message with this id.
    pub fn pending_with_id(&self, id: &str) -> Option<(DueKey, u32)> {
        let key = *self.pending_ids.get(id)?;
        let message = self.pending.get(&key)?;
        Some((key, message.partition))
    }

    /// Pending messages due at or before `horizon`, in due order, not hidden; at most `max`.
    pub fn due(&self, horizon: u64, max: usize) -> Vec<Scheduled> {
        self.due_of(horizon, max, |_| true)
    }

    /// As [`ScheduleOverlay::due`], of the partitions `moves` accepts only.
    pub fn due_of(&self, horizon: u64, max: usize, moves: impl Fn(u32) -> bool) -> Vec<Scheduled> {
        self.pending
            .range(..=(horizon, u64::MAX))
            .filter(|(key, message)| !self.hidden(**key) && moves(message.partition))
            .take(max)
            .map(|(_, message)| message.clone())
            .collect()
    }

    /// The earliest due time of a pending message that is not hidden.
    pub fn next_due(&self) -> Option<u64> {
        self.pending
            .keys()
            .find(|key| !self.hidden(**key))
            .map(|(due, _)| *due)
    }

    /// Hides a message whose cancel is being written.
    pub fn begin_cancel(&mut self, key: DueKey) {
        self.hidden.insert(key, Hidden::Cancelling);
    }

    /// Ends a cancel: the message stays hidden once its event is durable (unless sled has
    /// already let go of it), and shows again if the event failed.
    pub fn end_cancel(&mut self, key: DueKey, durable: bool) {
        self.end(key, Hidden::Cancelling, durable);
    }

    /// Hides messages the mover claimed.
    pub fn claim(&mut self, keys: impl IntoIterator<Item = DueKey>) {
        self.hidden
            .extend(keys.into_iter().map(|key| (key, Hidden::Moving)));
    }

    /// Ends claims: the messages were appended if `moved` (they stay hidden until sled lets
    /// go of them), else they show again.
    pub fn release(&mut self, keys: &[DueKey], moved: bool) {
        for key in keys {
            self.end(*key, Hidden::Moving, moved);
        }
    }

    fn end(&mut self, key: DueKey, was: Hidden, done: bool) {
        if self.hidden.get(&key) == Some(&was) {
            if done {
                self.hidden.insert(key, Hidden::Gone);
            } else {
                self.hidden.remove(&key);
            }
        }
    }

    /// Bytes of the records pending.
    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    /// Messages pending, and messages hidden.
    pub fn len(&self) -> (usize, usize) {
        (self.pending.len(), self.hidden.len())
    }

    /// Whether a message is hidden: only then can the logs hold a moved message the applier
    /// has not yet applied.
    pub fn has_removals(&self) -> bool {
        !self.hidden.is_empty()
    }

    /// Whether nothing is pending or hidden.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.hidden.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, due_ms: u64, seq: u64) -> Scheduled {
        crate::schedule::test_message(id, due_ms, seq, 3, b"vv")
    }

    fn ids(messages: &[Scheduled]) -> Vec<&str> {
        messages.iter().map(|m| m.record.id.as_str()).collect()
    }

    #[test]
    fn pending_messages_come_due_in_order_and_only_what_sled_has_is_let_go() {
        let mut overlay = ScheduleOverlay::default();
        overlay.add([
            message("b", 20, 1),
            message("a", 10, 2),
            message("c", 30, 3),
        ]);
        assert_eq!(ids(&overlay.due(20, 10)), vec!["a", "b"]);
        assert_eq!(overlay.next_due(), Some(10));
        assert_eq!(overlay.pending_with_id("c"), Some(((30, 3), 3)));

        overlay.applied([((20, 1), true), ((10, 2), true)]);

        assert_eq!(ids(&overlay.due(u64::MAX, 10)), vec!["c"]);
        assert_eq!(overlay.pending_with_id("a"), None);
        assert_eq!(overlay.pending_bytes(), 3, "only c's id and value are held");
    }

    #[test]
    fn a_cancel_hides_its_message_until_sled_has_removed_it() {
        let mut overlay = ScheduleOverlay::default();
        overlay.add([message("a", 10, 1)]);
        overlay.begin_cancel((10, 1));
        assert!(overlay.due(10, 10).is_empty());
        overlay.applied([((10, 1), true)]);
        assert!(
            overlay.hidden((10, 1)),
            "sled has it scheduled: still hidden"
        );
        overlay.end_cancel((10, 1), true);
        assert!(overlay.hidden((10, 1)));
        overlay.applied([((10, 1), false)]);
        assert!(overlay.is_empty());
    }

    #[test]
    fn a_cancel_the_applier_finished_first_leaves_nothing_behind() {
        let mut overlay = ScheduleOverlay::default();
        overlay.begin_cancel((10, 1));
        overlay.applied([((10, 1), false)]);
        overlay.end_cancel((10, 1), true);
        assert!(overlay.is_empty(), "a late end must not hide it again");
    }

    #[test]
    fn a_failed_cancel_shows_its_message_again() {
        let mut overlay = ScheduleOverlay::default();
        overlay.add([message("a", 10, 1)]);
        overlay.begin_cancel((10, 1));
        overlay.end_cancel((10, 1), false);
        assert_eq!(ids(&overlay.due(10, 10)), vec!["a"]);
    }

    #[test]
    fn claimed_messages_are_hidden_until_released_and_stay_hidden_once_moved() {
        let mut overlay = ScheduleOverlay::default();
        overlay.add([message("a", 10, 1), message("b", 10, 2)]);
        overlay.claim([(10, 1), (10, 2)]);
        assert!(overlay.due(10, 10).is_empty());
        overlay.release(&[(10, 1)], false);
        overlay.release(&[(10, 2)], true);
        assert_eq!(ids(&overlay.due(10, 10)), vec!["a"]);
        assert!(overlay.hidden((10, 2)));
        assert_eq!(overlay.len(), (2, 1));
        assert!(overlay.has_removals());
        overlay.applied([((10, 2), false)]);
        assert!(!overlay.has_removals());
    }
}
