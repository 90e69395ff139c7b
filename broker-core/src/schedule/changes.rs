//! One apply round's changes to a partition's schedule, gathered from the log in log order
//! before they go to sled in one batch: pure, so the order rules are tested without I/O.
//!
//! A scheduled event adds its message, a cancelled event removes it, and a moved message (a
//! record marked [`crate::message::Record::scheduled`]) removes the scheduled message with its
//! id, found among this round's changes first and in sled (through `lookup`) otherwise.

use std::collections::{BTreeMap, HashMap};

use super::Scheduled;
use super::overlay::DueKey;
use crate::error::Result;

/// The changes of one round: `None` removes.
#[derive(Debug, Default)]
pub struct ScheduleChanges {
    /// Schedule entries to write or remove.
    pub due: BTreeMap<DueKey, Option<Scheduled>>,
    /// Id index entries to write or remove.
    pub ids: HashMap<String, Option<DueKey>>,
}

impl ScheduleChanges {
    /// A scheduled event.
    pub fn scheduled(&mut self, message: Scheduled) {
        let key = (message.due_ms, message.seq);
        self.ids.insert(message.record.id.clone(), Some(key));
        self.due.insert(key, Some(message));
    }

    /// A cancelled event.
    pub fn cancelled(&mut self, key: DueKey, id: &str) {
        self.due.insert(key, None);
        self.ids.insert(id.to_owned(), None);
    }

    /// A moved message with this id: removes the scheduled message it was, if any.
    pub fn moved(
        &mut self,
        id: &str,
        lookup: impl FnOnce(&str) -> Result<Option<DueKey>>,
    ) -> Result<()> {
        let key = match self.ids.get(id) {
            Some(known) => *known,
            None => lookup(id)?,
        };
        if let Some(key) = key {
            self.cancelled(key, id);
        }
        Ok(())
    }

    /// Whether the round changes nothing.
    pub fn is_empty(&self) -> bool {
        self.due.is_empty() && self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, due_ms: u64, seq: u64) -> Scheduled {
        crate::schedule::test_message(id, due_ms, seq, 0, b"")
    }

    fn nothing_in_sled(_: &str) -> Result<Option<DueKey>> {
        Ok(None)
    }

    #[test]
    fn a_message_scheduled_and_moved_in_one_round_is_removed_without_asking_sled() {
        let mut changes = ScheduleChanges::default();
        changes.scheduled(message("a", 10, 1));
        changes
            .moved("a", |_| panic!("the round knows a"))
            .expect("moved");
        assert_eq!(changes.due.get(&(10, 1)), Some(&None));
        assert_eq!(changes.ids.get("a"), Some(&None));
    }

    #[test]
    fn a_moved_message_scheduled_in_an_earlier_round_is_found_in_sled() {
        let mut changes = ScheduleChanges::default();
        changes.moved("a", |_| Ok(Some((10, 1)))).expect("moved");
        changes.moved("b", nothing_in_sled).expect("moved");
        assert_eq!(changes.due.len(), 1);
        assert_eq!(changes.due.get(&(10, 1)), Some(&None));
    }

    #[test]
    fn a_cancel_after_the_schedule_removes_and_a_later_schedule_of_the_id_stays() {
        let mut changes = ScheduleChanges::default();
        changes.scheduled(message("a", 10, 1));
        changes.cancelled((10, 1), "a");
        changes.scheduled(message("a", 20, 2));
        changes.moved("gone", nothing_in_sled).expect("moved");
        assert_eq!(changes.due.get(&(10, 1)), Some(&None));
        assert!(matches!(changes.due.get(&(20, 2)), Some(Some(_))));
        assert_eq!(changes.ids.get("a"), Some(&Some((20, 2))));
    }
}
