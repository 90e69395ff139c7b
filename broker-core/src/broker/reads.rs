//! Reading a partition by offset, without leases (streams, replay, audit). In a cluster a
//! follower in sync serves it too (see `follower_reads`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Broker, PartitionRead, Topic, blocking};
use crate::clock::steady_ms;
use crate::error::{BrokerError, Result};
use crate::limits::{MAX_READ_BYTES, MAX_READ_RECORDS, MAX_WAIT_MS, check_range};
use crate::memory::AnswerMemory;
use crate::message::StoredRecord;
use crate::storage::PartitionHandle;

/// How long a read refused for a spent memory budget should wait before it is retried: the
/// answers holding the budget are written out within moments, or cut off by their writer.
const MEMORY_RETRY_AFTER_MS: u64 = 1_000;

/// Reserves room for an answer: the value bytes the read may take, or overloaded.
fn reserve_answer(memory: &AnswerMemory) -> Result<usize> {
    memory.reserve().ok_or_else(memory_overloaded)
}

/// The refusal of a read for which the memory budget has no room.
pub(super) fn memory_overloaded() -> BrokerError {
    BrokerError::Overloaded {
        resource: "the memory budget",
        retry_after_ms: MEMORY_RETRY_AFTER_MS,
    }
}

impl Broker {
    /// Reads up to `max` records from `offset` (from the start of the log if `offset` is older),
    /// waiting up to `wait_ms` for the first one when `offset` is the end of the log. The read
    /// stops before a delayed message that is in the log but not yet due. With `memory`, the
    /// read reserves room for its answer once it has something to read (the caller takes the
    /// charge from it), and takes no more value bytes than fit; a spent budget is
    /// [`BrokerError::Overloaded`].
    pub async fn read_partition(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
        max: usize,
        wait_ms: u64,
        memory: Option<&AnswerMemory>,
    ) -> Result<PartitionRead> {
        self.check_running()?;
        check_range("max", max, 1, MAX_READ_RECORDS)?;
        check_range("wait_ms", wait_ms, 0, MAX_WAIT_MS)?;
        let open = self.topic(topic)?;
        let partitions = open.config().partitions;
        let log = open
            .partitions
            .get(partition as usize)
            .cloned()
            .ok_or_else(|| BrokerError::PartitionNotFound {
                topic: topic.to_owned(),
                partition,
                partitions,
            })?;
        // A partition held elsewhere has an empty log here: its reads go to its leader.
        self.require_held(&open, partition)?;
        let reader = self.offset_reader(&open, partition).await?;
        if offset > log.end_offset() {
            reader.to_leader(format!(
                "offset {offset} of partition {partition} of topic '{topic}' (past this \
                 follower's end, {})",
                log.end_offset()
            ))?;
            return Err(BrokerError::OffsetOutOfRange {
                partition,
                offset,
                end_offset: log.end_offset(),
            });
        }
        let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms);
        self.wait_for_offset(&open, &log, offset, deadline).await;
        let max_bytes = match memory {
            Some(memory) if log.end_offset() > offset => reserve_answer(memory)?,
            _ => MAX_READ_BYTES,
        };
        let messages = read_visible(&log, offset, (max, max_bytes), deadline).await?;
        let start_offset = log.start_offset();
        let next_offset = messages
            .last()
            .map_or(offset.max(start_offset), |r| r.offset + 1);
        Ok(PartitionRead {
            messages,
            next_offset,
            start_offset,
            end_offset: log.end_offset(),
        })
    }

    /// Waits until `log` holds a record at `offset`, woken by its topic's commits, until
    /// `deadline`, shutdown or the topic's deletion.
    async fn wait_for_offset(
        &self,
        open: &Topic,
        log: &PartitionHandle,
        offset: u64,
        deadline: tokio::time::Instant,
    ) {
        loop {
            let committed = open.on_commit.notified();
            tokio::pin!(committed);
            committed.as_mut().enable();
            if log.end_offset() > offset || tokio::time::Instant::now() >= deadline {
                break;
            }
            if self.shutting_down.load(Ordering::SeqCst) || open.deleted.load(Ordering::SeqCst) {
                break;
            }
            tokio::select! {
                () = &mut committed => {}
                () = tokio::time::sleep_until(deadline) => {}
            }
        }
    }
}

/// Reads up to `max` records (`max_bytes` of values) from `offset`, up to the first delayed
/// message not yet due; when that is the first, waits for it if it is due by `deadline`.
async fn read_visible(
    log: &PartitionHandle,
    offset: u64,
    (max, max_bytes): (usize, usize),
    deadline: tokio::time::Instant,
) -> Result<Vec<StoredRecord>> {
    let messages = loop {
        let mut messages = read_range(log.clone(), offset, max, max_bytes).await?;
        // A delayed message appended ahead of its due time is not shown before then, and
        // neither is anything after it (offsets are read in order).
        let now = steady_ms();
        let Some((hidden, due)) = messages
            .iter()
            .enumerate()
            .find(|(_, r)| r.record.scheduled && r.record.timestamp_ms > now)
            .map(|(at, r)| (at, r.record.timestamp_ms))
        else {
            break messages;
        };
        messages.truncate(hidden);
        let visible_at = tokio::time::Instant::now() + Duration::from_millis(due - now);
        if !messages.is_empty() || visible_at > deadline {
            break messages;
        }
        tokio::time::sleep_until(visible_at).await;
    };
    Ok(messages)
}

/// Reads up to `max` records from `from`: from memory (the partition's tail cache, or the
/// batch its last file read ended in) when that holds the read, else from the files on the
/// blocking pool. A memory read that drained the last-read batch starts reading the next
/// frame on the blocking pool, unawaited, so a reader walking a deep backlog finds it decoded.
/// Every read of records goes through here.
pub(super) async fn read_range(
    log: crate::storage::PartitionHandle,
    from: u64,
    max: usize,
    max_bytes: usize,
) -> Result<Vec<crate::message::StoredRecord>> {
    if let Some(records) = log.read_cached(from, max, max_bytes) {
        if log.prefetch_due() {
            drop(tokio::task::spawn_blocking(move || {
                if let Err(error) = log.prefetch() {
                    // The reader that needs the frame reads it again and reports the error.
                    tracing::debug!(%error, "reading ahead failed");
                }
            }));
        }
        return Ok(records);
    }
    blocking(move || log.read(from, max, max_bytes)).await
}
