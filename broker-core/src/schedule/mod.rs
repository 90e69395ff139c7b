//! Delayed messages: the truth is the schedule events in each partition's log
//! ([`ScheduleEvent`]: scheduled, cancelled) and the moved messages themselves (records marked
//! [`Record::scheduled`]); the schedule here is derived from them. It lives in one sled tree
//! per topic, keyed by due time, so millions of pending messages cost the metadata store's
//! disk, not memory; only the next due time is looked at. Each record is kept as a one-record
//! CRC'd frame of the log's codec.
//!
//! Keys of the tree:
//! - `d` + due_ms + seq → partition + frame: the schedule, in due order;
//! - `i` + message id → due_ms + seq: for cancelling by id;
//! - `p` + partition → log position: how far into that partition's log the tree reflects,
//!   written in the same batch as the changes it covers.
//!
//! Only the background applier writes the tree (`broker::tables`): it replays each partition's
//! log from the tree's position and writes the changes with the new position in one batch. A
//! request changes the schedule once its event is durable, in memory ([`ScheduleOverlay`]);
//! lookups see sled and memory together, and memory lets go of a change once the applier has
//! written it to sled. A
//! restart replays the log from the stored positions before the topic serves anything, so a
//! crash loses nothing the log has, and a replica that applies the same log gets the same
//! schedule.
//!
//! A cancel and the mover exclude each other per message: the mover claims the due messages
//! it read ([`DelayStore::claim_due`]) until it has moved them, and a cancel of a claimed
//! message finds nothing to cancel; a cancel hides its message from the mover before its
//! event is queued. So a cancel that succeeds always beats the move, and a message is never
//! both cancelled and delivered.

mod changes;
mod events;
mod overlay;
mod seq;

use std::sync::{Arc, Mutex};

use bytes::Bytes;

pub use changes::ScheduleChanges;
pub use events::{ScheduleDecodeError, ScheduleEvent};
pub use overlay::{DueKey, ScheduleOverlay};
pub use seq::SeqCounter;

use crate::derived_position::{apply_in_order, read_position};
use crate::error::{BrokerError, Result};
use crate::message::Record;
use crate::storage::{LogPosition, codec};
use crate::sync::lock;

const DUE: u8 = b'd';
const ID: u8 = b'i';

/// Most bytes of delayed records held in memory until the applier has them in sled: a
/// quarter of a second of delayed produces at 32 MiB/s, while the applier runs every
/// [`crate::derived_position::APPLY_EVERY_MS`]; past it, delayed produces wait for the applier (up to
/// [`crate::limits::WRITER_ENQUEUE_TIMEOUT_MS`]) and are then refused with `Overloaded` (a stuck sled
/// must not turn into unbounded memory).
pub const MAX_UNAPPLIED_BYTES: usize = 8 * 1024 * 1024;
/// Most delayed messages held in memory until the applier has them in sled, however small:
/// each costs some 300 bytes of maps besides its record, and every apply round decodes
/// what it holds once more. Measured with 1,000,000 100-byte messages scheduled at full
/// speed: at 100,000 the peak RSS was 264 MiB, at 20,000 it was 131 MiB, for about the same
/// produce rate (the applier's pace, 40,000–45,000 a second, bounds it either way). With an
/// 8 MiB sled cache, 20,000 left the growth at +83 to +101 MiB and 10,000 at +72 to +77
/// MiB; the producers then wait for the applier more often (48,000 a second against
/// 62,000 here), and 15,000 saved nothing measurable.
pub const MAX_UNAPPLIED_MESSAGES: usize = 10_000;
/// Most cancels and moves held in memory until the applier has them in sled (tens of bytes
/// each): the mover pauses, and cancels are refused, past it.
pub const MAX_UNAPPLIED_REMOVALS: usize = 100_000;

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

/// The schedule of one topic: the derived tree and what memory knows ahead of it.
#[derive(Debug, Clone)]
pub struct DelayStore {
    tree: sled::Tree,
    /// Held for sled reads and map updates, never across an await. Each method leaves the
    /// overlay whole before it can fail or panic ([`crate::sync`]).
    overlay: Arc<Mutex<ScheduleOverlay>>,
    /// Tie-breakers: every seq the schedule takes in raises it (see [`seq`]).
    seqs: Arc<SeqCounter>,
}

/// Due messages claimed by the mover: a cancel of one of them finds nothing to cancel until
/// the claim ends, with [`MoveClaim::moved`] once they are appended (they stay hidden until
/// sled has their removal) or by dropping it (they are cancellable again).
#[derive(Debug)]
#[must_use = "the claim ends when it is dropped"]
pub struct MoveClaim {
    overlay: Arc<Mutex<ScheduleOverlay>>,
    keys: Vec<DueKey>,
}

impl MoveClaim {
    /// These claimed messages were appended to their partition: their claims end, and they
    /// stay hidden until sled has their removal.
    pub fn moved(&mut self, moved: &[DueKey]) {
        self.keys.retain(|key| !moved.contains(key));
        lock(&self.overlay).release(moved, true);
    }
}

impl Drop for MoveClaim {
    fn drop(&mut self) {
        if !self.keys.is_empty() {
            lock(&self.overlay).release(&self.keys, false);
        }
    }
}

/// A cancel under way: its message is hidden from the mover until [`DelayStore::end_cancel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelling {
    /// The message's place.
    pub key: DueKey,
    /// Its partition, whose log gets the cancelled event.
    pub partition: u32,
}

impl DelayStore {
    /// Wraps a topic's schedule tree.
    pub fn new(tree: sled::Tree) -> Self {
        DelayStore {
            tree,
            overlay: Arc::default(),
            seqs: Arc::default(),
        }
    }

    /// A fresh tie-breaker for a message of `partition` scheduled at clock time `now_ms`:
    /// unique in this topic's schedule (see the `seq` module).
    pub fn next_seq(&self, now_ms: u64, partition: u32) -> u64 {
        self.seqs.next(now_ms, partition)
    }

    /// `Overloaded` when memory holds as much as it may until the applier catches up.
    pub fn check_room(&self) -> Result<()> {
        let overlay = lock(&self.overlay);
        let (pending, removals) = overlay.len();
        if overlay.pending_bytes() >= MAX_UNAPPLIED_BYTES
            || pending >= MAX_UNAPPLIED_MESSAGES
            || removals >= MAX_UNAPPLIED_REMOVALS
        {
            return Err(BrokerError::Overloaded {
                resource: "delay schedule (changes not yet applied)",
                retry_after_ms: crate::derived_position::APPLY_EVERY_MS,
            });
        }
        Ok(())
    }

    /// Adds messages whose scheduled events are durable in their partitions' logs.
    pub fn scheduled(&self, messages: Vec<Scheduled>) {
        messages.iter().for_each(|m| self.seqs.observe(m.seq));
        lock(&self.overlay).add(messages);
    }

    /// Starts cancelling the message with this id: `None` if it is unknown, already moved or
    /// cancelled, or claimed by the mover ([`DelayStore::claim_due`]). Otherwise the message
    /// is hidden until [`DelayStore::end_cancel`].
    pub fn begin_cancel(&self, id: &str) -> Result<Option<Cancelling>> {
        let mut overlay = lock(&self.overlay);
        let found = match overlay.pending_with_id(id) {
            Some((key, partition)) => Some(Cancelling { key, partition }),
            None => self.stored_with_id(id)?,
        };
        let Some(found) = found.filter(|c| !overlay.hidden(c.key)) else {
            return Ok(None);
        };
        overlay.begin_cancel(found.key);
        Ok(Some(found))
    }

    /// Ends a cancel: `durable` once its event is, else the message is scheduled again.
    pub fn end_cancel(&self, cancelling: Cancelling, durable: bool) {
        lock(&self.overlay).end_cancel(cancelling.key, durable);
    }

    fn stored_with_id(&self, id: &str) -> Result<Option<Cancelling>> {
        let Some(key) = self.lookup_id(id)? else {
            return Ok(None);
        };
        let Some(value) = self.tree.get(due_key(key.0, key.1))? else {
            return Ok(None);
        };
        let partition = value
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes)
            .ok_or_else(|| corrupt("schedule entry"))?;
        Ok(Some(Cancelling { key, partition }))
    }

    /// Where sled holds the message with this id.
    pub fn lookup_id(&self, id: &str) -> Result<Option<DueKey>> {
        match self.tree.get(id_key(id))? {
            Some(at) => {
                let mut key = vec![DUE];
                key.extend_from_slice(&at);
                parse_due_key(&key).map(Some)
            }
            None => Ok(None),
        }
    }

    /// The due time of the earliest scheduled message that is not hidden.
    pub fn next_due(&self) -> Result<Option<u64>> {
        let overlay = lock(&self.overlay);
        let stored = self
            .scan_due(&overlay, u64::MAX, 1, &|_| true)?
            .first()
            .map(|m| m.due_ms);
        Ok(match (stored, overlay.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    /// Up to `max` messages due at or before `now_ms`, earliest first, not hidden. Removes
    /// nothing. Only the tests look without claiming; the mover uses
    /// [`DelayStore::claim_due`].
    #[cfg(test)]
    pub(crate) fn due(&self, now_ms: u64, max: usize) -> Result<Vec<Scheduled>> {
        let overlay = lock(&self.overlay);
        self.merged_due(&overlay, now_ms, max, &|_| true)
    }

    fn merged_due(
        &self,
        overlay: &ScheduleOverlay,
        now_ms: u64,
        max: usize,
        moves: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<Scheduled>> {
        let mut found: std::collections::BTreeMap<DueKey, Scheduled> = overlay
            .due_of(now_ms, max, moves)
            .into_iter()
            .map(|m| ((m.due_ms, m.seq), m))
            .collect();
        for message in self.scan_due(overlay, now_ms, max, moves)? {
            found.insert((message.due_ms, message.seq), message);
        }
        Ok(found.into_values().take(max).collect())
    }

    /// Up to `max` messages of sled due at or before `now_ms`, not hidden, of the partitions
    /// `moves` accepts.
    fn scan_due(
        &self,
        overlay: &ScheduleOverlay,
        now_ms: u64,
        max: usize,
        moves: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<Scheduled>> {
        let mut found = Vec::new();
        for item in self.tree.scan_prefix([DUE]) {
            let (key, value) = item?;
            let (due_ms, seq) = parse_due_key(&key)?;
            if due_ms > now_ms || found.len() >= max {
                break;
            }
            if !overlay.hidden((due_ms, seq)) {
                let message = decode_scheduled(due_ms, seq, &value)?;
                if moves(message.partition) {
                    found.push(message);
                }
            }
        }
        Ok(found)
    }

    /// Up to `max` messages due at or before `now_ms`, earliest first, not hidden, claimed for
    /// the mover: none of them can be cancelled while the claim lasts. Each message is read
    /// and claimed under the lock a cancel takes, so a message cancelled before is not found
    /// and one found is not cancelled after. Finds nothing while memory holds [`MAX_UNAPPLIED_REMOVALS`].
    pub fn claim_due(&self, now_ms: u64, max: usize) -> Result<(Vec<Scheduled>, MoveClaim)> {
        self.claim_due_of(now_ms, max, &|_| true)
    }

    /// As [`DelayStore::claim_due`], of the partitions `moves` accepts only: in a cluster
    /// every replica holds the topic's whole schedule, and a node moves the messages of the
    /// partitions it leads (the others' leaders move theirs, and the removal replicates).
    pub fn claim_due_of(
        &self,
        now_ms: u64,
        max: usize,
        moves: &dyn Fn(u32) -> bool,
    ) -> Result<(Vec<Scheduled>, MoveClaim)> {
        let mut overlay = lock(&self.overlay);
        let (_, removals) = overlay.len();
        let room = MAX_UNAPPLIED_REMOVALS.saturating_sub(removals);
        let due = self.merged_due(&overlay, now_ms, max.min(room), moves)?;
        let keys: Vec<DueKey> = due.iter().map(|m| (m.due_ms, m.seq)).collect();
        overlay.claim(keys.iter().copied());
        drop(overlay);
        let claim = MoveClaim {
            overlay: Arc::clone(&self.overlay),
            keys,
        };
        Ok((due, claim))
    }

    /// How many messages sled holds. Walks the schedule: for a start, not hot paths.
    pub fn count(&self) -> usize {
        self.tree.scan_prefix([DUE]).count()
    }

    /// How many messages sled holds for each of `partitions` partitions. Walks the schedule:
    /// for stats in a cluster, where the topic-wide counter is this node's alone.
    pub fn count_by_partition(&self, partitions: usize) -> Result<Vec<u64>> {
        let mut counts = vec![0; partitions];
        for entry in self.tree.scan_prefix([DUE]) {
            let (_, value) = entry?;
            let Some(word) = value.get(..4) else { continue };
            let mut bytes = [0; 4];
            bytes.copy_from_slice(word);
            if let Some(count) = counts.get_mut(u32::from_be_bytes(bytes) as usize) {
                *count += 1;
            }
        }
        Ok(counts)
    }

    /// Every message sled holds for `partition`, as `(due_ms, seq, entry)` with the entry as
    /// sled stores it (partition and one-record frame): what a snapshot of the partition
    /// carries (`broker::cluster_retention`). Walks the schedule.
    pub fn partition_image(&self, partition: u32) -> Result<Vec<(u64, u64, Vec<u8>)>> {
        let mut image = Vec::new();
        for item in self.tree.scan_prefix([DUE]) {
            let (key, value) = item?;
            if value.get(..4) == Some(&partition.to_be_bytes()[..]) {
                let (due_ms, seq) = parse_due_key(&key)?;
                image.push((due_ms, seq, value.to_vec()));
            }
        }
        Ok(image)
    }

    /// Makes `partition`'s schedule in sled `image` (a snapshot's
    /// [`DelayStore::partition_image`]), reflecting its log up to `position`: the partition's
    /// messages sled holds that the image lacks are removed.
    pub fn replace_partition(
        &self,
        partition: u32,
        image: &[(u64, u64, Vec<u8>)],
        position: LogPosition,
    ) -> Result<()> {
        let mut changes = ScheduleChanges::default();
        for (due_ms, seq, entry) in self.partition_image(partition)? {
            let held = decode_scheduled(due_ms, seq, &entry)?;
            changes.cancelled((due_ms, seq), &held.record.id);
        }
        for (due_ms, seq, entry) in image {
            let message = decode_scheduled(*due_ms, *seq, entry)?;
            if message.partition != partition {
                return Err(corrupt("snapshot schedule entry of another partition"));
            }
            changes.scheduled(message);
        }
        self.apply(partition, &changes, position)
    }

    /// Whether a message is being moved, or was moved or cancelled and sled still has it: only
    /// then can the logs hold moved messages the applier has not yet applied (see
    /// `broker::tables`).
    pub fn has_unapplied_removals(&self) -> bool {
        lock(&self.overlay).has_removals()
    }

    /// Whether memory holds no change that sled lacks.
    pub fn is_overlay_empty(&self) -> bool {
        lock(&self.overlay).is_empty()
    }

    /// How far into `partition`'s log the tree reflects; `None` before the first apply.
    pub fn position(&self, partition: u32) -> Result<Option<LogPosition>> {
        read_position(&self.tree, partition)
    }

    /// Writes one round's changes of `partition`, one at a time (`apply_in_order`), and then
    /// the position they reach; then memory lets go of them.
    /// A crash in between leaves the old position: the stretch is applied again at the next
    /// start.
    pub fn apply(
        &self,
        partition: u32,
        changes: &ScheduleChanges,
        position: LogPosition,
    ) -> Result<()> {
        let mut writes: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        for (key, change) in &changes.due {
            self.seqs.observe(key.1);
            let key = due_key(key.0, key.1).to_vec();
            let value = match change {
                Some(message) => {
                    let (_, frame) =
                        codec::encode_batch(0, 0, std::slice::from_ref(&message.record))?;
                    let mut value = message.partition.to_be_bytes().to_vec();
                    value.extend_from_slice(&frame);
                    Some(value)
                }
                None => None,
            };
            writes.push((key, value));
        }
        for (id, change) in &changes.ids {
            let value = change.map(|key| due_key(key.0, key.1)[1..].to_vec());
            writes.push((id_key(id), value));
        }
        apply_in_order(&self.tree, writes, partition, position)?;
        let applied = changes.due.iter().map(|(key, c)| (*key, c.is_some()));
        lock(&self.overlay).applied(applied);
        Ok(())
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
    due.zip(seq)
        .filter(|_| key.len() == 17)
        .ok_or_else(|| corrupt("schedule key"))
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
mod tests;

/// A delayed message for the unit tests of the schedule's parts.
#[cfg(test)]
pub(crate) fn test_message(
    id: &str,
    due_ms: u64,
    seq: u64,
    partition: u32,
    value: &'static [u8],
) -> Scheduled {
    Scheduled {
        due_ms,
        seq,
        partition,
        record: Record {
            id: id.into(),
            timestamp_ms: 1,
            key: None,
            value: Bytes::from_static(value),
            binary: false,
            scheduled: false,
            client_id: false,
            headers: Vec::new(),
            tags: Vec::new(),
            trace: None,
            origin: None,
        },
    }
}
