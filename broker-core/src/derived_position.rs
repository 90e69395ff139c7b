//! Where a derived table (a sled tree the broker keeps from its partitions' logs: the delay
//! schedule, the dedup index) has applied each partition's log up to, and the one way its
//! changes and that position are written (`apply_in_order`), so a restart replays exactly
//! the stretch after it.

use crate::error::{BrokerError, Result};
use crate::storage::LogPosition;

/// How often the applier copies the logs' new schedule and dedup changes into sled: the
/// changes held in memory meanwhile are about this long a stretch of produces (bounded by
/// [`crate::schedule::MAX_UNAPPLIED_BYTES`] and [`crate::dedup::MAX_UNAPPLIED_IDS`]); also
/// the `Retry-After` of a produce refused while they are full.
pub const APPLY_EVERY_MS: u64 = 100;

/// The key prefix of a partition's position in a derived tree.
const POSITION: u8 = b'p';

/// Writes `writes` (a value, or `None` to remove) one at a time, in order, and then the
/// position they reach in `partition`'s log. A crash in between leaves the old position (sled
/// recovers a prefix of its writes): the next start replays the stretch again, which applies
/// the same changes in the same order.
///
/// Not `sled::Batch`: sled applies a batch under a process-wide write lock that every other
/// sled read and write waits for, and a scan takes that lock's shared side at each step, so
/// the delay mover's scans of the schedule advanced a step per batch of the first apply round
/// after a burst of 10,000 scheduled messages (68 ms for one look, deliveries 36 ms late).
/// Single writes take the shared side, and each reclaims its node copies as it ends, where a
/// batch held them all until its end (one batch of 6,000 peaked at over 1 GiB of RSS).
pub(crate) fn apply_in_order(
    tree: &sled::Tree,
    writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    partition: u32,
    position: LogPosition,
) -> Result<()> {
    for (key, value) in writes {
        match value {
            Some(value) => tree.insert(key, value)?,
            None => tree.remove(key)?,
        };
    }
    tree.insert(
        &position_key(POSITION, partition)[..],
        &encode_position(position)[..],
    )?;
    Ok(())
}

/// The stored position of `partition` under the `p` key of a derived tree.
pub(crate) fn read_position(tree: &sled::Tree, partition: u32) -> Result<Option<LogPosition>> {
    let Some(value) = tree.get(position_key(POSITION, partition))? else {
        return Ok(None);
    };
    let half = |at: usize| {
        value
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
    };
    match (value.len(), half(0), half(8)) {
        (16, Some(segment_base), Some(position)) => Ok(Some(LogPosition {
            segment_base,
            position,
        })),
        _ => Err(BrokerError::Corrupt {
            path: "metadata".into(),
            position: 0,
            reason: format!("undecodable log position of partition {partition} in a derived table"),
        }),
    }
}

/// A log position as a derived tree stores it.
pub(crate) fn encode_position(position: LogPosition) -> [u8; 16] {
    let mut bytes = [0; 16];
    bytes[..8].copy_from_slice(&position.segment_base.to_be_bytes());
    bytes[8..].copy_from_slice(&position.position.to_be_bytes());
    bytes
}

fn position_key(prefix: u8, partition: u32) -> [u8; 5] {
    let mut key = [prefix; 5];
    key[1..].copy_from_slice(&partition.to_be_bytes());
    key
}
