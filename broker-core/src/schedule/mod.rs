//! Delayed messages: the schedule lives on disk, in one sled tree per topic, keyed by due time,
//! so millions of pending messages cost the metadata store's disk, not memory; only the next
//! due time is looked at. Each record is kept as a one-record CRC'd frame of the log's codec.
//!
//! Keys of the tree:
//! - `d` + due_ms + seq → partition + frame: the schedule, in due order;
//! - `i` + message id → due_ms + seq: for cancelling by id;
//! - `c` + partition → offset: the move checkpoint of the partition.
//!
//! A due message is moved by appending it to its partition, then removing it from the
//! schedule in one batch that also sets the partition's checkpoint to the end offset the
//! append started from; an idle mover also moves the checkpoints to the end offsets. sled
//! persists batches in order, so after a crash every message appended but still on the
//! schedule lies at or past its partition's checkpoint: a restart reads that tail and drops
//! what it finds from the schedule, so it neither loses nor duplicates a scheduled message,
//! and no flush waits on the delivery path.
//!
//! A cancel and the mover exclude each other per message: the mover claims the due messages
//! it read ([`DelayStore::claim_due`]) until it has moved them, and a cancel of a claimed
//! message finds nothing to cancel. So a cancel that succeeds always beats the move, and a
//! message is never both cancelled and delivered.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::error::{BrokerError, Result};
use crate::message::Record;
use crate::storage::codec;
use crate::sync::lock;

const DUE: u8 = b'd';
const ID: u8 = b'i';
const CHECKPOINT: u8 = b'c';

/// Name of the sled tree of a topic incarnation's schedule.
pub fn tree_name(topic_uid: u64) -> String {
    format!("delay/{topic_uid}")
}

/// One scheduled message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// When it is due, Unix epoch milliseconds.
    pub due_ms: u64,
    /// Tie-breaker among messages due at the same millisecond.
    pub seq: u64,
    /// The partition it goes to.
    pub partition: u32,
    /// The message.
    pub record: Record,
}

/// The schedule of one topic.
#[derive(Debug, Clone)]
pub struct DelayStore {
    tree: sled::Tree,
    /// Ids of the messages the mover has claimed and not yet released. Held only for sled
    /// calls, never across an await. Changed by single inserts and removes, after the sled
    /// calls that can fail, so a panicked holder cannot leave it half-done ([`crate::sync`]).
    moving: Arc<Mutex<HashSet<String>>>,
}

/// Due messages claimed by the mover: a cancel of one of them finds nothing to cancel until
/// the claim is dropped, by which time the mover has removed them from the schedule (or
/// failed to move them, and they are cancellable again).
#[derive(Debug)]
#[must_use = "the claim ends when it is dropped"]
pub struct MoveClaim {
    moving: Arc<Mutex<HashSet<String>>>,
    ids: Vec<String>,
}

impl Drop for MoveClaim {
    fn drop(&mut self) {
        let mut moving = lock(&self.moving);
        for id in &self.ids {
            moving.remove(id);
        }
    }
}

impl DelayStore {
    /// Wraps a topic's schedule tree.
    pub fn new(tree: sled::Tree) -> Self {
        DelayStore {
            tree,
            moving: Arc::default(),
        }
    }

    /// Adds messages to the schedule, atomically.
    pub fn schedule(&self, messages: &[Scheduled]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for message in messages {
            let key = due_key(message.due_ms, message.seq);
            let (_, frame) = codec::encode_batch(0, 0, std::slice::from_ref(&message.record))?;
            let mut value = message.partition.to_be_bytes().to_vec();
            value.extend_from_slice(&frame);
            batch.insert(&key[..], value);
            batch.insert(id_key(&message.record.id), &key[1..]);
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Removes a message that is not yet due; `false` if it is unknown, already delivered, or
    /// claimed by the mover ([`DelayStore::claim_due`]).
    pub fn cancel(&self, id: &str) -> Result<bool> {
        let moving = lock(&self.moving);
        if moving.contains(id) {
            return Ok(false);
        }
        let Some(at) = self.tree.get(id_key(id))? else {
            return Ok(false);
        };
        let mut key = vec![DUE];
        key.extend_from_slice(&at);
        let mut batch = sled::Batch::default();
        batch.remove(key);
        batch.remove(id_key(id));
        self.tree.apply_batch(batch)?;
        Ok(true)
    }

    /// The due time of the earliest scheduled message.
    pub fn next_due(&self) -> Result<Option<u64>> {
        match self.tree.scan_prefix([DUE]).next() {
            Some(item) => Ok(Some(parse_due_key(&item?.0)?.0)),
            None => Ok(None),
        }
    }

    /// Up to `max` messages due at or before `now_ms`, earliest first. Removes nothing.
    pub fn due(&self, now_ms: u64, max: usize) -> Result<Vec<Scheduled>> {
        let mut found = Vec::new();
        for item in self.tree.scan_prefix([DUE]) {
            let (key, value) = item?;
            let (due_ms, seq) = parse_due_key(&key)?;
            if due_ms > now_ms || found.len() >= max {
                break;
            }
            found.push(decode_scheduled(due_ms, seq, &value)?);
        }
        Ok(found)
    }

    /// [`DelayStore::due`], claiming the messages found for the mover: none of them can be
    /// cancelled while the claim lasts. Each message is read and claimed under the lock a
    /// cancel takes, so a message cancelled before is not found and one found is not
    /// cancelled after.
    pub fn claim_due(&self, now_ms: u64, max: usize) -> Result<(Vec<Scheduled>, MoveClaim)> {
        let mut moving = lock(&self.moving);
        let due = self.due(now_ms, max)?;
        let ids: Vec<String> = due.iter().map(|m| m.record.id.clone()).collect();
        moving.extend(ids.iter().cloned());
        drop(moving);
        let claim = MoveClaim {
            moving: Arc::clone(&self.moving),
            ids,
        };
        Ok((due, claim))
    }

    /// How many messages are scheduled. Walks the schedule: for stats, not hot paths.
    pub fn count(&self) -> usize {
        self.tree.scan_prefix([ID]).count()
    }

    /// Removes moved messages from the schedule and sets their partition's checkpoint to
    /// `end_before`, the end offset their append started from, atomically.
    pub fn finish_move(&self, moved: &[Scheduled], partition: u32, end_before: u64) -> Result<()> {
        let mut batch = sled::Batch::default();
        for message in moved {
            batch.remove(&due_key(message.due_ms, message.seq)[..]);
            batch.remove(id_key(&message.record.id));
        }
        batch.insert(
            &checkpoint_key(partition)[..],
            &end_before.to_be_bytes()[..],
        );
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Moves checkpoints forward while no move is in progress: `(partition, end offset)`.
    pub fn set_checkpoints(&self, ends: &[(u32, u64)]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for (partition, end) in ends {
            batch.insert(&checkpoint_key(*partition)[..], &end.to_be_bytes()[..]);
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Where a restart starts looking for messages that were appended but are still on the
    /// schedule (0 before the first checkpoint).
    pub fn checkpoint(&self, partition: u32) -> Result<u64> {
        match self.tree.get(checkpoint_key(partition))? {
            Some(value) => value
                .as_ref()
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| corrupt("checkpoint")),
            None => Ok(0),
        }
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.tree.scan_prefix([DUE]).next().transpose()?.is_none())
    }

    /// Removes the scheduled messages whose ids are in `appended` (they reached the log before
    /// a crash); returns how many it removed.
    pub fn remove_appended(&self, appended: &[String]) -> Result<usize> {
        let mut batch = sled::Batch::default();
        let mut removed = 0;
        for id in appended {
            if let Some(at) = self.tree.get(id_key(id))? {
                let mut key = vec![DUE];
                key.extend_from_slice(&at);
                batch.remove(key);
                batch.remove(id_key(id));
                removed += 1;
            }
        }
        self.tree.apply_batch(batch)?;
        Ok(removed)
    }
}

fn checkpoint_key(partition: u32) -> [u8; 5] {
    let mut key = [CHECKPOINT; 5];
    key[1..].copy_from_slice(&partition.to_be_bytes());
    key
}

fn due_key(due_ms: u64, seq: u64) -> [u8; 17] {
    let mut key = [DUE; 17];
    key[1..9].copy_from_slice(&due_ms.to_be_bytes());
    key[9..].copy_from_slice(&seq.to_be_bytes());
    key
}

fn parse_due_key(key: &[u8]) -> Result<(u64, u64)> {
    let due = key
        .get(1..9)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes);
    let seq = key
        .get(9..17)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes);
    due.zip(seq).ok_or_else(|| corrupt("schedule key"))
}

fn id_key(id: &str) -> Vec<u8> {
    let mut key = vec![ID];
    key.extend_from_slice(id.as_bytes());
    key
}

fn decode_scheduled(due_ms: u64, seq: u64, value: &[u8]) -> Result<Scheduled> {
    let partition = value
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| corrupt("schedule entry"))?;
    let frame = Bytes::copy_from_slice(&value[4..]);
    let mut batch = codec::decode_frame(frame).map_err(|_| corrupt("scheduled record"))?;
    let record = batch
        .records
        .pop()
        .ok_or_else(|| corrupt("scheduled record"))?;
    Ok(Scheduled {
        due_ms,
        seq,
        partition,
        record,
    })
}

fn corrupt(what: &str) -> BrokerError {
    BrokerError::Corrupt {
        path: "metadata".into(),
        position: 0,
        reason: format!("undecodable {what} in the delay schedule"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, due_ms: u64, seq: u64) -> Scheduled {
        Scheduled {
            due_ms,
            seq,
            partition: 1,
            record: Record {
                id: id.into(),
                timestamp_ms: 5,
                key: Some("k".into()),
                value: Bytes::from_static(b"v"),
                binary: false,
                scheduled: false,
                headers: vec![("h".into(), "v".into())],
                tags: vec!["t".into()],
            },
        }
    }

    fn store() -> DelayStore {
        let db = sled::Config::new().temporary(true).open().expect("sled");
        DelayStore::new(db.open_tree("d").expect("tree"))
    }

    #[test]
    fn messages_come_due_in_due_order_and_not_before() {
        let store = store();
        store
            .schedule(&[
                message("b", 200, 2),
                message("a", 100, 1),
                message("c", 200, 3),
            ])
            .expect("schedule");
        assert_eq!(store.next_due().expect("next"), Some(100));
        assert!(store.due(99, 10).expect("due").is_empty());
        let due: Vec<String> = store
            .due(200, 10)
            .expect("due")
            .into_iter()
            .map(|m| m.record.id)
            .collect();
        assert_eq!(due, vec!["a", "b", "c"]);
        assert_eq!(store.due(200, 2).expect("due").len(), 2);
        assert_eq!(store.due(100, 10).expect("due")[0], message("a", 100, 1));
    }

    #[test]
    fn a_cancelled_message_never_comes_due_and_cancel_is_once() {
        let store = store();
        store.schedule(&[message("a", 100, 1)]).expect("schedule");
        assert!(store.cancel("a").expect("cancel"));
        assert!(!store.cancel("a").expect("cancel"));
        assert!(!store.cancel("unknown").expect("cancel"));
        assert!(store.due(1_000, 10).expect("due").is_empty());
        assert_eq!(store.count(), 0);
    }

    #[test]
    fn a_claimed_message_cannot_be_cancelled_until_its_claim_ends() {
        let store = store();
        store
            .schedule(&[message("a", 100, 1), message("b", 300, 2)])
            .expect("schedule");
        let (due, claim) = store.claim_due(100, 10).expect("claim");
        assert_eq!(due, vec![message("a", 100, 1)]);
        assert!(!store.cancel("a").expect("cancel"), "a is being moved");
        assert!(store.cancel("b").expect("cancel"), "b was not claimed");
        drop(claim);
        assert!(
            store.cancel("a").expect("cancel"),
            "a move that did not finish leaves the message cancellable"
        );
    }

    #[test]
    fn a_cancelled_message_is_not_claimed() {
        let store = store();
        store.schedule(&[message("a", 100, 1)]).expect("schedule");
        assert!(store.cancel("a").expect("cancel"));
        let (due, _claim) = store.claim_due(100, 10).expect("claim");
        assert!(due.is_empty());
    }

    #[test]
    fn a_finished_move_removes_the_messages_and_sets_the_checkpoint() {
        let store = store();
        store
            .schedule(&[message("a", 100, 1), message("b", 300, 2)])
            .expect("schedule");
        assert_eq!(store.checkpoint(1).expect("checkpoint"), 0);
        let due = store.due(100, 10).expect("due");
        store.finish_move(&due, 1, 42).expect("finish");
        assert_eq!(store.checkpoint(1).expect("checkpoint"), 42);
        assert_eq!(store.next_due().expect("next"), Some(300));
        assert!(
            !store.cancel("a").expect("cancel"),
            "a moved message is no longer cancellable"
        );
        store
            .set_checkpoints(&[(1, 50), (2, 7)])
            .expect("checkpoints");
        assert_eq!(store.checkpoint(2).expect("checkpoint"), 7);
        assert_eq!(
            store
                .remove_appended(&["b".into(), "zz".into()])
                .expect("remove"),
            1
        );
        assert!(store.is_empty().expect("empty"));
    }
}
