//! Placing a produced batch before anything is written (see `produce`): a message repeating
//! an id stored before (or earlier in the batch) answers with the first result, the rest go
//! to their partition's share or, delayed, on the schedule.

use std::collections::HashMap;
use std::sync::Arc;

use super::produce::due;
use super::produce_ids::{ClaimedIds, id_partition, resolve};
use super::{NewMessage, Produced, Topic};
use crate::dedup::{FirstResult, Seen};
use crate::error::{BrokerError, Result};
use crate::in_flight::Claims;
use crate::message::{Origin, Record};
use crate::schedule::Scheduled;
use crate::topic::TopicConfig;

/// Where each message of a batch ended up, before offsets are known.
pub(super) enum Placement {
    /// Appended: the `index`-th record of its partition's share.
    Appended { partition: u32, index: u64 },
    /// On the schedule.
    Delayed { partition: u32, due_ms: u64 },
    /// A repeat of an id produced before.
    Duplicate(FirstResult),
}

/// When and by whom a batch is produced: every record it stores carries them.
pub(super) struct Stamp {
    /// The wall clock at the produce: the records' timestamp.
    pub(super) now: u64,
    /// The steady clock at the produce, which delays count from.
    pub(super) steady: u64,
    /// Who produced the batch.
    pub(super) origin: Option<Arc<Origin>>,
}

/// A batch placed message by message, nothing written yet.
pub(super) struct Plan {
    /// Each partition's records to append, in batch order.
    pub(super) shares: Vec<Vec<Record>>,
    /// The delayed messages, for the schedule.
    pub(super) scheduled: Vec<Scheduled>,
    /// Each message's placement, and whether it repeats an id.
    pub(super) placements: Vec<(Placement, bool)>,
    /// Each message's id: its client id, or a new one.
    pub(super) ids: Vec<String>,
    /// Whether each message's client id is remembered (stored by this batch on a topic that
    /// remembers ids).
    pub(super) remember: Vec<bool>,
}

/// Places each message of a batch in order, looking its client id up among the ids stored
/// meanwhile, then in the dedup index: refuses an id whose first produce's outcome is unknown.
pub(super) fn plan(
    open: &Topic,
    config: &TopicConfig,
    nearby: &[u32],
    messages: Vec<NewMessage>,
    claimed: &ClaimedIds,
    stamp: &Stamp,
) -> Result<Plan> {
    let remembers_ids = config.dedup_window_ms > 0;
    let mut plan = Plan {
        shares: vec![Vec::new(); open.partitions.len()],
        scheduled: Vec::new(),
        placements: Vec::with_capacity(messages.len()),
        ids: Vec::with_capacity(messages.len()),
        remember: Vec::with_capacity(messages.len()),
    };
    let mut first_in_batch: HashMap<String, usize> = HashMap::new();
    for message in messages {
        let client_id = message.id.clone();
        if let Some(id) = &client_id {
            let seen = match claimed.stored_meanwhile.get(id) {
                Some(first) => Seen::Stored(*first),
                None => open.dedup.lookup(id, stamp.now, config.dedup_window_ms)?,
            };
            let claims = claimed.claims.as_ref();
            if let Some(placement) = plan.repeat(id, seen, claims, &first_in_batch)? {
                plan.placements.push((placement, true));
                plan.ids.push(id.clone());
                plan.remember.push(false);
                continue;
            }
            first_in_batch.insert(id.clone(), plan.placements.len());
        }
        let client_id_kept = client_id.is_some() && remembers_ids;
        plan.remember.push(client_id_kept);
        let partition = match id_partition(open, &message, config.partitions, remembers_ids) {
            Some(partition) => partition,
            None => {
                open.partitioner
                    .choose_among(message.key.as_deref(), config.partitions, nearby)
            }
        };
        let due_ms = message
            .delay
            .map(|d| due(d, stamp.now, stamp.steady))
            .filter(|due| *due > stamp.steady);
        let record = stamp.record(message, client_id, client_id_kept);
        plan.ids.push(record.id.clone());
        plan.place(open, stamp.now, partition, due_ms, record);
    }
    Ok(plan)
}

impl Plan {
    /// The placement of a message with client `id`, `seen` as it was: a repeat of the first
    /// result if stored (resolving its claim), or of the same id earlier in the batch; `None`
    /// for a new id; refused while the first produce's outcome is unknown.
    fn repeat(
        &self,
        id: &str,
        seen: Seen,
        claims: Option<&Claims>,
        first_in_batch: &HashMap<String, usize>,
    ) -> Result<Option<Placement>> {
        Ok(match seen {
            Seen::Stored(first) => {
                resolve(claims, id, first);
                Some(Placement::Duplicate(first))
            }
            Seen::Pending => {
                return Err(BrokerError::OutcomePending { id: id.to_owned() });
            }
            Seen::New => first_in_batch
                .get(id)
                .map(|earlier| self.placements[*earlier].0.repeated()),
        })
    }

    /// Puts a message's record on the schedule when it is due later (`due_ms`), else at the
    /// end of its partition's share.
    fn place(
        &mut self,
        open: &Topic,
        now: u64,
        partition: u32,
        due_ms: Option<u64>,
        record: Record,
    ) {
        match due_ms {
            Some(due_ms) => {
                self.placements
                    .push((Placement::Delayed { partition, due_ms }, false));
                self.scheduled.push(Scheduled {
                    due_ms,
                    seq: open.delays.next_seq(now, partition),
                    partition,
                    record,
                });
            }
            None => {
                let share = &mut self.shares[partition as usize];
                self.placements.push((
                    Placement::Appended {
                        partition,
                        index: share.len() as u64,
                    },
                    false,
                ));
                share.push(record);
            }
        }
    }

    /// The remembered client ids the batch stores, each with its partition.
    pub(super) fn kept_ids(&self) -> Vec<(String, u32)> {
        self.ids
            .iter()
            .zip(&self.remember)
            .zip(&self.placements)
            .filter(|((_, kept), _)| **kept)
            .filter_map(|((id, _), (placement, _))| Some((id.clone(), placement.partition()?)))
            .collect()
    }

    /// The bytes of value the batch stores: its shares and its delayed messages.
    pub(super) fn stored_bytes(&self) -> usize {
        self.shares
            .iter()
            .flatten()
            .chain(self.scheduled.iter().map(|s| &s.record))
            .map(|r| r.value.len())
            .sum()
    }
}

impl Stamp {
    /// The record a message is stored as: under its client id (kept or not) or a new one,
    /// stamped with the batch's time and origin.
    fn record(
        &self,
        message: NewMessage,
        client_id: Option<String>,
        client_id_kept: bool,
    ) -> Record {
        Record {
            id: client_id.unwrap_or_else(|| uuid::Uuid::now_v7().simple().to_string()),
            timestamp_ms: self.now,
            key: message.key,
            value: message.value,
            binary: message.binary,
            scheduled: false,
            client_id: client_id_kept,
            headers: message.headers,
            tags: message.tags,
            trace: message.trace,
            origin: self.origin.clone(),
        }
    }
}

impl Placement {
    /// The partition a message is stored in, unless it repeats an id stored before.
    fn partition(&self) -> Option<u32> {
        match *self {
            Placement::Appended { partition, .. } | Placement::Delayed { partition, .. } => {
                Some(partition)
            }
            Placement::Duplicate(_) => None,
        }
    }

    /// The placement of a later message of the batch with the same id: the same, as a repeat.
    fn repeated(&self) -> Placement {
        match *self {
            Placement::Appended { partition, index } => Placement::Appended { partition, index },
            Placement::Delayed { partition, due_ms } => Placement::Delayed { partition, due_ms },
            Placement::Duplicate(first) => Placement::Duplicate(first),
        }
    }
}

/// A message's entry in the reply, given each partition's base offset.
pub(super) fn produced(
    id: String,
    (placement, duplicate): (Placement, bool),
    bases: &[Option<u64>],
) -> Produced {
    match placement {
        Placement::Appended { partition, index } => Produced {
            id,
            partition,
            offset: bases[partition as usize].map(|base| base + index),
            deliver_at_ms: None,
            duplicate,
        },
        Placement::Delayed { partition, due_ms } => Produced {
            id,
            partition,
            offset: None,
            deliver_at_ms: Some(due_ms),
            duplicate,
        },
        Placement::Duplicate(first) => Produced {
            id,
            partition: first.partition,
            offset: first.offset,
            deliver_at_ms: first.deliver_at_ms,
            duplicate: true,
        },
    }
}
