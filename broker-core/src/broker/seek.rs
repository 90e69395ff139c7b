//! Seek: move a subscription to the start, the end, a point in time, or explicit offsets
//! (message reset and replay). The leases of the partitions moved are dropped: their receipts
//! stop working and their messages are delivered again from the new position.

use std::collections::BTreeMap;

use super::{Broker, Topic, blocking};
use crate::error::{BrokerError, Result};
use crate::storage::{PartitionHandle, PendingAppend};
use crate::subscription::Subscription;
use crate::subscription::events::SubscriptionEvent;

/// Where a seek moves a subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeekTarget {
    /// The oldest stored message of every partition.
    Earliest,
    /// The end of every partition: only messages published from now on.
    Latest,
    /// The first message of every partition published at or after this Unix epoch millisecond.
    Timestamp(u64),
    /// These offsets, for these partitions only (each within the partition's stored range).
    Offsets(BTreeMap<u32, u64>),
}

impl Broker {
    /// Moves a subscription; returns the new position of every partition it moved.
    pub async fn seek(
        &self,
        topic: &str,
        subscription: &str,
        target: SeekTarget,
    ) -> Result<BTreeMap<u32, u64>> {
        self.seek_partitions(topic, subscription, target, false)
            .await
    }

    /// In a cluster, [`Broker::seek`] of only the partitions this node leads (`earliest`,
    /// `latest` and a time move those; explicit offsets must name only those): the gateway
    /// sends a seek to every leader of the topic's partitions and merges their answers.
    pub async fn seek_led(
        &self,
        topic: &str,
        subscription: &str,
        target: SeekTarget,
    ) -> Result<BTreeMap<u32, u64>> {
        self.seek_partitions(topic, subscription, target, true)
            .await
    }

    /// Moves a subscription, with `led_only` skipping the partitions this node does not lead
    /// (unless named by offset); returns the new position of every partition it moved.
    async fn seek_partitions(
        &self,
        topic: &str,
        subscription: &str,
        target: SeekTarget,
        led_only: bool,
    ) -> Result<BTreeMap<u32, u64>> {
        self.check_running()?;
        let open = self.topic(topic)?;
        let sub = self.subscription_in(&open, subscription)?;
        let partitions = open.config().partitions;
        let mut positions = BTreeMap::new();
        for (partition, log) in (0u32..).zip(&open.partitions) {
            let named = matches!(&target, SeekTarget::Offsets(o) if o.contains_key(&partition));
            if led_only
                && !named
                && !self
                    .serve_partition(&open, &sub, partition as usize)
                    .await?
            {
                continue;
            }
            let Some(position) = target_position(log, partition, &target).await? else {
                continue;
            };
            positions.insert(partition, position);
        }
        if let SeekTarget::Offsets(offsets) = &target
            && let Some(unknown) = offsets.keys().find(|p| **p >= partitions)
        {
            return Err(BrokerError::PartitionNotFound {
                topic: topic.to_owned(),
                partition: *unknown,
                partitions,
            });
        }
        // In a cluster, every partition moved must be led here (the gateway sends each
        // partition's share to its leader).
        for partition in positions.keys() {
            self.require_partition(&open, &sub, *partition as usize)
                .await?;
        }
        let appends = move_partitions(&open, &sub, &positions)?;
        sub.forget_attempts();
        for append in appends {
            append.wait().await?;
        }
        open.on_commit.notify_waiters();
        Ok(positions)
    }
}

/// Where `target` moves partition `partition` (its log `log`): `None` for a partition that
/// explicit offsets do not name; an offset outside the stored range is refused.
async fn target_position(
    log: &PartitionHandle,
    partition: u32,
    target: &SeekTarget,
) -> Result<Option<u64>> {
    let (start, end) = (log.start_offset(), log.end_offset());
    let position = match target {
        SeekTarget::Earliest => start,
        SeekTarget::Latest => end,
        SeekTarget::Timestamp(at) => {
            let (reader, at) = (log.clone(), *at);
            blocking(move || reader.offset_for_timestamp(at))
                .await?
                .clamp(start, end)
        }
        SeekTarget::Offsets(offsets) => match offsets.get(&partition) {
            Some(offset) if (start..=end).contains(offset) => *offset,
            Some(offset) => {
                return Err(BrokerError::invalid(
                    "offsets",
                    format!(
                        "offset {offset} of partition {partition} is outside its stored range {start}..={end}"
                    ),
                ));
            }
            None => return Ok(None),
        },
    };
    Ok(Some(position))
}

/// Moves each partition of `positions` to its position in its lease table, recording a
/// `sought` event in its log; returns the appends of the events.
fn move_partitions(
    open: &Topic,
    sub: &Subscription,
    positions: &BTreeMap<u32, u64>,
) -> Result<Vec<PendingAppend>> {
    let mut appends = Vec::with_capacity(positions.len());
    for (partition, position) in positions {
        let log = &open.partitions[*partition as usize];
        let event = SubscriptionEvent::Sought {
            subscription: sub.config.uid,
            offset: *position,
        };
        let ((), append) = sub.change_durably(*partition as usize, log, |table| {
            table.reset(*position);
            ((), vec![event])
        })?;
        appends.extend(append);
    }
    Ok(appends)
}
