//! Delayed messages: the schedule lives on disk, in one sled tree per topic, keyed by due time,
//! so millions of pending messages cost the metadata store's disk, not memory; only the next
//! due time is looked at. Each record is kept as a one-record CRC'd frame of the log's codec.
//!
//! Keys of the tree:
//! - `d` + due_ms + seq → partition + frame: the schedule, in due order;
//! - `i` + message id → due_ms + seq: for cancelling by id;
//! - `m` → partition + end offset before: the move in progress (see [`DelayStore::begin_move`]).
//!
//! A due message is moved by: writing the move marker, appending to the partition, then
//! removing the entries and the marker in one batch. After a crash in between, the marker
//! says where to look in the log for what was already appended, so a restart neither loses
//! nor duplicates a scheduled message.

use bytes::Bytes;

use crate::error::{BrokerError, Result};
use crate::message::Record;
use crate::storage::codec;

const DUE: u8 = b'd';
const ID: u8 = b'i';
const MOVE: &[u8] = b"m";

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

/// A move in progress: due messages being appended to `partition`, whose end offset was
/// `end_before` when the move began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingMove {
    /// The partition appended to.
    pub partition: u32,
    /// Its end offset before the append.
    pub end_before: u64,
}

/// The schedule of one topic.
#[derive(Debug, Clone)]
pub struct DelayStore {
    tree: sled::Tree,
}

impl DelayStore {
    /// Wraps a topic's schedule tree.
    pub fn new(tree: sled::Tree) -> Self {
        DelayStore { tree }
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

    /// Removes a message that is not yet due; `false` if it is unknown or already delivered.
    pub fn cancel(&self, id: &str) -> Result<bool> {
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

    /// How many messages are scheduled. Walks the schedule: for stats, not hot paths.
    pub fn count(&self) -> usize {
        self.tree.scan_prefix([ID]).count()
    }

    /// Records that `moved` messages are about to be appended to a partition whose end offset
    /// is `end_before`.
    pub fn begin_move(&self, pending: PendingMove) -> Result<()> {
        let mut value = pending.partition.to_be_bytes().to_vec();
        value.extend_from_slice(&pending.end_before.to_be_bytes());
        self.tree.insert(MOVE, value)?;
        Ok(())
    }

    /// The move a crash interrupted, if any.
    pub fn pending_move(&self) -> Result<Option<PendingMove>> {
        let Some(value) = self.tree.get(MOVE)? else {
            return Ok(None);
        };
        let partition = value
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes);
        let end = value
            .get(4..12)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes);
        match (partition, end) {
            (Some(partition), Some(end_before)) => Ok(Some(PendingMove {
                partition,
                end_before,
            })),
            _ => Err(corrupt("move marker")),
        }
    }

    /// Removes moved messages from the schedule and clears the move marker, atomically.
    pub fn finish_move(&self, moved: &[Scheduled]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for message in moved {
            batch.remove(&due_key(message.due_ms, message.seq)[..]);
            batch.remove(id_key(&message.record.id));
        }
        batch.remove(MOVE);
        self.tree.apply_batch(batch)?;
        Ok(())
    }
}

impl DelayStore {
    /// Finishes a move a crash interrupted: removes the scheduled messages whose ids are in
    /// `appended` (they reached the log) and clears the marker. The others stay scheduled.
    pub fn finish_interrupted_move(&self, appended: &[String]) -> Result<usize> {
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
        batch.remove(MOVE);
        self.tree.apply_batch(batch)?;
        Ok(removed)
    }
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
    fn a_finished_move_removes_the_messages_and_the_marker() {
        let store = store();
        store
            .schedule(&[message("a", 100, 1), message("b", 300, 2)])
            .expect("schedule");
        let due = store.due(100, 10).expect("due");
        store
            .begin_move(PendingMove {
                partition: 1,
                end_before: 42,
            })
            .expect("begin");
        assert_eq!(
            store.pending_move().expect("marker"),
            Some(PendingMove {
                partition: 1,
                end_before: 42
            })
        );
        store.finish_move(&due).expect("finish");
        assert_eq!(store.pending_move().expect("marker"), None);
        assert_eq!(store.next_due().expect("next"), Some(300));
        assert!(
            !store.cancel("a").expect("cancel"),
            "a moved message is no longer cancellable"
        );
    }
}
